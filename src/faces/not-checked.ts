import { DomainFailure, fail } from '../engine/errors.js';
import type { SuiteResult } from '../executions/workflow-tests.js';

/** The call an authoring tool answers a `validation_not_checked` with: itself, to send again. */
export interface SameCall {
  tool: string;
  /** The arguments to send as they are (never the manifest text: the agent has it). */
  arguments: Record<string, unknown>;
  /** What the agent sends again itself, e.g. `{content: 'the same manifest text'}`. */
  fill: Record<string, string>;
}

/**
 * Runs a check; when its regex and JSON Schema rules were not checked in time (a retryable error, never
 * a verdict on the manifest), the error carries `call` as the call to send again.
 */
export async function retryingNotChecked<T>(call: SameCall, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof DomainFailure) || error.error.code !== 'validation_not_checked') throw error;
    return fail({ ...error.error, retry: { tool: call.tool, arguments: call.arguments, fill: call.fill } });
  }
}

/**
 * Workflow tests whose scenario stopped because a step's rules were not checked in time decided
 * nothing about that scenario: the whole run is the retryable error (with `call`), never a failed test.
 */
export function refuseUncheckedScenarios(result: SuiteResult, call: SameCall): void {
  const unchecked = result.scenarios.find((s) => s.error?.code === 'validation_not_checked');
  if (unchecked?.error === undefined) return;
  fail({
    code: 'validation_not_checked',
    message: `The regex and JSON Schema rules of scenario "${unchecked.name}" were not checked in time, so nothing was decided about it; send the same call again.`,
    details: unchecked.error.message,
    retry: { tool: call.tool, arguments: call.arguments, fill: call.fill },
  });
}
