import * as z from 'zod';
import { contextNeeds, expectedValue } from '../engine/context-needs.js';
import { DomainFailure, fail } from '../engine/errors.js';
import type { InputResolution } from '../engine/inputs.js';
import type { Workflow } from '../model/workflow.js';

/**
 * The call an agent should make next, ready to send: `arguments` as is, plus, under `fill`, the
 * arguments only the agent can supply (dotted path → what to put there).
 */
export interface NextCall {
  tool: string;
  arguments: Record<string, unknown>;
  fill?: Record<string, string>;
}

export const NextSchema = z
  .array(
    z.object({
      tool: z.string().describe('Tool to call'),
      arguments: z.record(z.string(), z.unknown()).describe('Arguments to send as they are'),
      fill: z
        .record(z.string(), z.string())
        .optional()
        .describe('Arguments only you can supply: dotted path -> what to put there'),
    }),
  )
  .describe('What to call next, first choice first (empty when there is nothing left to do)');

export const next = (
  tool: string,
  args: Record<string, unknown>,
  fill?: Record<string, string>,
): NextCall => ({ tool, arguments: args, ...(fill ? { fill } : {}) });

/**
 * workflow_resolve_inputs again: the values that were fine, ready to send, and a `fill` entry (the
 * reason, or "choose one of the listed values") for each input that is missing, wrong or needs a choice.
 */
export function resolveInputsCall(workflowId: string, inputs: readonly InputResolution[]): NextCall {
  const given: Record<string, unknown> = {};
  const fill: Record<string, string> = {};
  for (const input of inputs) {
    if (input.status === 'provided') given[input.name] = input.value;
    // Nothing to fill for a value the workflow never asked for: the call simply leaves it out.
    if (['provided', 'default', 'unset', 'undeclared'].includes(input.status)) continue;
    fill[`inputs.${input.name}`] = input.message ?? input.status;
  }
  return next(
    'workflow_resolve_inputs',
    { workflow_id: workflowId, inputs: given },
    Object.keys(fill).length > 0 ? fill : undefined,
  );
}

/**
 * What only the start context can set in time: variables the workflow reads before any step can set
 * them (`context.<var>`, optional: unset, they take the paths where their conditions do not hold).
 */
export function startFill(workflow: Workflow): Record<string, string> | undefined {
  const early = contextNeeds(workflow).variables.filter((v) => v.atStart);
  if (early.length === 0) return undefined;
  return Object.fromEntries(
    early.map((v) => [`context.${v.path}`, `optional: ${expectedValue(v)} (read before the first step)`]),
  );
}

/**
 * Starting a workflow: at once when it needs no inputs; otherwise its inputs are resolved first, with
 * a `fill` entry for each required one that has no default.
 */
export function startCall(workflow: Workflow): NextCall {
  const needed = Object.entries(workflow.inputs ?? {}).filter(
    ([, spec]) => spec.required === true && spec.default === undefined,
  );
  if (workflow.inputs === undefined)
    return next('workflow_start', { workflow_id: workflow.id }, startFill(workflow));
  return next(
    'workflow_resolve_inputs',
    { workflow_id: workflow.id, inputs: {} },
    needed.length > 0
      ? Object.fromEntries(needed.map(([name, spec]) => [`inputs.${name}`, spec.description]))
      : undefined,
  );
}

/**
 * Runs a call whose context may miss a variable the workflow needs (PRECONDITION_FAILED); the failure
 * then carries the same call as its fix, without the refused value and with `fill` naming the variable
 * (`context.<path>`), so nothing is left to guess.
 */
export async function retryingContext<T>(
  tool: string,
  args: Record<string, unknown>,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof DomainFailure) || error.error.code !== 'precondition_failed' || error.error.retry)
      throw error;
    const e = error.error;
    const retry = structuredClone(args);
    const keys = ['context', ...e.variable.split('.')];
    let at: unknown = retry;
    for (const key of keys.slice(0, -1)) at = (at as Record<string, unknown> | undefined)?.[key];
    if (at !== null && typeof at === 'object') delete (at as Record<string, unknown>)[keys.at(-1) as string];
    return fail({
      ...e,
      retry: { tool, arguments: retry, fill: { [`context.${e.variable}`]: e.expected } },
    });
  }
}
