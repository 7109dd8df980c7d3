/**
 * OAuth scopes of an authenticated server: what a principal may do. Stdio has one local user and
 * checks none of them.
 */
export const SCOPES = ['read', 'run', 'author', 'admin', 'approve'] as const;
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
 * The scope each tool needs. A tool missing here needs `admin` (a test keeps the table complete).
 * A Map: it is looked up with the client's text, where a plain object would answer `constructor`.
 */
export const TOOL_SCOPES: ReadonlyMap<string, Scope> = new Map<string, Scope>([
  ['workflow_list', 'read'],
  ['workflow_get', 'read'],
  ['workflow_next', 'read'],
  ['workflow_validate', 'read'],
  ['workflow_validate_manifest', 'read'],
  // Runs a definition's tests in a scratch store of its own: nothing is saved, no execution is kept.
  ['workflow_test', 'read'],
  ['workflow_preview_inputs', 'read'],
  ['workflow_resolve_inputs', 'read'],
  ['workflow_preview_rendered', 'read'],
  ['workflow_step_plan', 'read'],
  ['command_list', 'read'],
  ['provider_list', 'read'],
  ['workflow_tools', 'read'],
  ['workflow_start', 'run'],
  ['workflow_next_step', 'run'],
  ['workflow_set_state', 'run'],
  ['workflow_resume', 'run'],
  ['workflow_executions', 'run'],
  ['workflow_run', 'run'],
  ['workflow_execute', 'run'],
  ['workflow_cancel', 'run'],
  ['workflow_author_and_run', 'author'],
  ['workflow_repair_and_rerun', 'author'],
  ['workflow_save', 'author'],
  ['workflow_rename', 'author'],
  ['workflow_delete', 'author'],
  ['catalog_validate_openapi', 'admin'],
  ['catalog_preview_import', 'admin'],
  ['catalog_import_openapi', 'admin'],
  ['catalog_set_enabled', 'admin'],
  ['catalog_remove', 'admin'],
  ['workflow_purge_history', 'admin'],
]);

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
  ['telemetry', 'run'],
  ['telemetry_query', 'run'],
  ['execution_telemetry', 'run'],
]);

export const toolScope = (name: string): Scope => TOOL_SCOPES.get(name) ?? 'admin';
export const resourceScope = (name: string): Scope => RESOURCE_SCOPES.get(name) ?? 'admin';

type Json = Record<string, unknown>;

export interface ScopeTables {
  /** The tools' canonical names (callable as direct methods). */
  tools: ReadonlySet<string>;
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
    const canonical = aliases.get(name) ?? name;
    return tables.tools.has(canonical) ? toolScope(canonical) : 'read';
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
