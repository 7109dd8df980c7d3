/**
 * What a delegating step (`delegate`) reads from and writes to its parent's context, for the analysis of
 * what a workflow needs the agent to set (context-needs.ts) and validate's warnings.
 */
import type { PromptStep, Workflow } from '../model/workflow.js';
import { type Context, readPath } from './conditions.js';
import { MAX_DEPTH } from './json-text.js';
import { serverOwnedKeys } from './next-step.js';

/**
 * Context keys the server sets, which no agent is asked for: serverOwnedKeys (where each delegating step
 * puts its children's results, `delegate.into`, default the step id, included).
 */
export function contextKeysTheServerSets(workflow: Workflow): Set<string> {
  return serverOwnedKeys(workflow);
}

/** Every string of a delegation's context and its children's (where `{{var}}` reads the parent's context). */
export function delegationTexts(delegate: NonNullable<PromptStep['delegate']>): string[] {
  const out: string[] = [];
  const visit = (value: unknown, depth: number) => {
    if (typeof value === 'string') out.push(value);
    else if (value !== null && typeof value === 'object' && depth < MAX_DEPTH)
      for (const v of Object.values(value)) visit(v, depth + 1);
  };
  visit(delegate.context, 0);
  for (const child of delegate.children ?? []) visit(child.context, 0);
  return out;
}

/**
 * What the stateless face says of a delegating step: it keeps no executions, so it cannot create, track
 * or join children; the client does each child's workflow itself (or hands it to a subagent), puts their
 * results in the context under `into`, and reports the step done. Durable executions do this for it.
 */
export function statelessDelegation(step: PromptStep, context: Context): string[] {
  const d = step.delegate;
  if (d === undefined) return [];
  const into = d.into ?? step.id;
  const who = (workflow: string | undefined) => `the workflow "${workflow ?? d.workflow}"`;
  const lines =
    d.children !== undefined
      ? d.children.map(
          (c) => `- ${c.name}: ${who(c.workflow)}${c.context ? ` with ${JSON.stringify(c.context)}` : ''}`,
        )
      : d.count !== undefined
        ? [`- ${d.count} times: ${who(undefined)}`]
        : [
            `- once per item of context.${d.forEach}${Array.isArray(readPath(context, d.forEach ?? '')) ? ` (${(readPath(context, d.forEach ?? '') as unknown[]).length} items)` : ''}: ${who(undefined)}, the item as ${d.as ?? 'item'}`,
          ];
  return [
    [
      'This step hands its work to child workflows. This stateless session keeps no executions, so nothing creates, tracks or joins them for you: do each one yourself (workflow_next on it), one after another or through subagents of your own,',
      ...lines,
      `then put their results in context.${into} (by child name) and report this step done. For children the server creates, tracks and joins, run the workflow with workflow_start.`,
    ].join('\n'),
  ];
}
