import { deepEqual } from '../engine/conditions.js';
import { fail } from '../engine/errors.js';
import type { ToolDefinition } from '../faces/tool.js';

/**
 * One name per concept: the workflow id is `workflow_id`, the execution id `execution_id`, the
 * continuation token `token`, and tools have underscore names. The names the seeds used
 * (`workflow.start`, `workflow_name`, `workflowId`, `id`, `continuation_token`, …) stay accepted, as
 * the aliases each tool declares; answers use the canonical names only. The alias table of docs/tools.md is
 * generated from `aliasRows` (test/docs.test.ts keeps them in step).
 */

/**
 * Tool name aliases (the dotted names of seeds 003/004): alias → canonical tool. A Map, because it
 * is looked up with the client's text: on a plain object `constructor` or `__proto__` would be found.
 */
export function toolAliases(tools: readonly ToolDefinition[]): ReadonlyMap<string, string> {
  return new Map(tools.flatMap((t) => (t.aliases ?? []).map((a) => [a, t.name] as const)));
}

/**
 * The arguments under their canonical names. An alias and its canonical name given together must
 * agree (the same value twice is harmless; two different ones are a mistake worth reporting).
 */
export function canonicalArguments(tool: ToolDefinition, params: unknown): unknown {
  const aliases = tool.argumentAliases;
  if (aliases === undefined || params === null || typeof params !== 'object' || Array.isArray(params)) {
    return params;
  }
  let out: Record<string, unknown> | undefined;
  for (const [alias, canonical] of Object.entries(aliases)) {
    if (!Object.hasOwn(params, alias)) continue;
    out ??= { ...(params as Record<string, unknown>) };
    const value = out[alias];
    delete out[alias];
    if (Object.hasOwn(out, canonical) && !deepEqual(out[canonical], value)) {
      fail({
        code: 'invalid_params',
        message: 'Invalid params',
        details: `${canonical} and its alias ${alias} differ; give ${canonical} only`,
      });
    }
    out[canonical] ??= value;
  }
  return out ?? params;
}

export interface AliasRow {
  /** A tool name, or an argument of `tool`. */
  kind: 'tool' | 'argument';
  /** The tool (the canonical one for a tool alias). */
  tool: string;
  alias: string;
  canonical: string;
}

/** Every alias beside its canonical tool or argument: tool names first, then arguments, by tool. */
export function aliasRows(tools: readonly ToolDefinition[]): AliasRow[] {
  const sorted = [...tools].sort((a, b) => a.name.localeCompare(b.name));
  return [
    ...sorted
      .flatMap((t) =>
        (t.aliases ?? []).map((alias) => ({ kind: 'tool' as const, tool: t.name, alias, canonical: t.name })),
      )
      .sort((a, b) => a.alias.localeCompare(b.alias)),
    ...sorted.flatMap((t) =>
      Object.entries(t.argumentAliases ?? {}).map(([alias, canonical]) => ({
        kind: 'argument' as const,
        tool: t.name,
        alias,
        canonical,
      })),
    ),
  ];
}
