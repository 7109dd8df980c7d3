import type { ToolDefinition, ToolScope } from '../faces/tool.js';

/**
 * OAuth scopes of an authenticated server: what a principal may do. Stdio has one local user and
 * checks none of them.
 */
// A tool needs one of the first four; `approve` is a person's, never a tool's (approvals).
export const SCOPES = ['read', 'run', 'author', 'admin', 'approve'] as const satisfies readonly (
  | ToolScope
  | 'approve'
)[];
export type Scope = (typeof SCOPES)[number];

export const SCOPE_DESCRIPTIONS: Readonly<Record<Scope, string>> = {
  read: 'list and read workflows, guidance, resources and prompts',
  run: 'start and advance executions, runs and tasks; read their state',
  author: 'save, rename and delete workflows',
  admin: 'import and remove catalogs, purge history',
  // Held by people, never by an agent's credential: it is what makes an approval a person's.
  approve: "approve or reject step outputs that wait for a person (the dashboard's Approvals page)",
};

/**
 * The scope reading each resource (or template) needs, by resource name: what a principal's
 * executions are doing is `run`'s, definitions and guides `read`'s. A resource missing here needs
 * `admin` (a test keeps the table complete).
 */
export const RESOURCE_SCOPES: ReadonlyMap<string, Scope> = new Map<string, Scope>([
  ['available_workflows', 'read'],
  ['workflow_details', 'read'],
  ['workflow.spec', 'read'],
  ['workflow.schema', 'read'],
  ['workflow.test-schema', 'read'],
  ['workflow.manifests', 'read'],
  ['workflow.manifest', 'read'],
  ['command.catalog', 'read'],
  ['provider.catalog', 'read'],
  ['execution_progress_view', 'read'],
  ['current_step', 'run'],
  ['workflow_status', 'run'],
  ['execution_progress', 'run'],
  ['step_history', 'run'],
  ['workflow_artifacts', 'run'],
  ['workflow_step_artifacts', 'run'],
  ['execution_record', 'run'],
  ['telemetry', 'run'],
  ['telemetry_query', 'run'],
  ['execution_telemetry', 'run'],
]);

/** The scope a tool needs: its definition's, `admin` when it says nothing. */
export const toolScope = (tool: Pick<ToolDefinition, 'scope'>): Scope => tool.scope ?? 'admin';
export const resourceScope = (name: string): Scope => RESOURCE_SCOPES.get(name) ?? 'admin';

type Json = Record<string, unknown>;

export interface ScopeTables {
  /** The tools by canonical name (callable as direct methods). A Map: looked up with the client's text. */
  tools: ReadonlyMap<string, Pick<ToolDefinition, 'scope'>>;
  /** Alias → canonical tool. */
  aliases: ReadonlyMap<string, string>;
  /**
   * The name of the resource a URI resolves to, as the SDK resolves it (`new URL()`, then the fixed
   * URIs, then the templates in order); undefined when none does (the SDK answers not found).
   */
  resourceOf: (uri: string) => string | undefined;
  /** The name of the resource template whose template text is exactly `template` (completion refs). */
  templateNamed: (template: string) => string | undefined;
}

/**
 * The scope a JSON-RPC request needs: a tool's (by canonical name, through its aliases, as
 * `tools/call` or as a direct method), a resource's for resources/read and resources/subscribe (the
 * resource the URI resolves to, never its spelling) and for completions of its template, `run` for
 * tasks, `read` otherwise.
 */
export function scopeFor(message: unknown, tables: ScopeTables): Scope {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return 'read';
  const { method, params } = message as { method?: unknown; params?: unknown };
  if (typeof method !== 'string') return 'read';
  const p = (params !== null && typeof params === 'object' ? params : {}) as Json;
  const { aliases } = tables;
  // An unknown tool runs nothing (the rules answer "unknown tool", with hints): `read` suffices.
  const tool = (name: string) => {
    const found = tables.tools.get(aliases.get(name) ?? name);
    return found === undefined ? 'read' : toolScope(found);
  };
  if (method === 'tools/call') return typeof p.name === 'string' ? tool(p.name) : 'read';
  if (method === 'resources/read' || method === 'resources/subscribe') {
    const name = typeof p.uri === 'string' ? tables.resourceOf(p.uri) : undefined;
    return name === undefined ? 'read' : resourceScope(name);
  }
  if (method === 'completion/complete') {
    const ref = (p.ref !== null && typeof p.ref === 'object' ? p.ref : {}) as Json;
    const name =
      ref.type === 'ref/resource' && typeof ref.uri === 'string' ? tables.templateNamed(ref.uri) : undefined;
    return name === undefined ? 'read' : resourceScope(name);
  }
  if (method.startsWith('tasks/')) return 'run';
  return tool(method);
}

/** Each scope stands alone (a token lists every scope it grants): `admin` alone does not imply `read`. */
export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes(needed);
}
