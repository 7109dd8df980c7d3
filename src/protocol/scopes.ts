/**
 * OAuth scopes of an authenticated server: what a principal may do. Stdio has one local user and
 * checks none of them.
 */
export const SCOPES = ['read', 'run', 'author', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export const SCOPE_DESCRIPTIONS: Readonly<Record<Scope, string>> = {
  read: 'list and read workflows, guidance, resources and prompts',
  run: 'start and advance executions, runs and tasks; read their state',
  author: 'save, rename and delete workflows',
  admin: 'import and remove catalogs, purge history',
};

/** The scope each tool needs. A tool missing here needs `admin` (a test keeps the table complete). */
export const TOOL_SCOPES: Readonly<Record<string, Scope>> = {
  workflow_list: 'read',
  workflow_get: 'read',
  workflow_next: 'read',
  workflow_validate: 'read',
  workflow_validate_manifest: 'read',
  workflow_preview_inputs: 'read',
  workflow_resolve_inputs: 'read',
  workflow_preview_rendered: 'read',
  workflow_step_plan: 'read',
  command_list: 'read',
  provider_list: 'read',
  workflow_tools: 'read',
  workflow_start: 'run',
  workflow_next_step: 'run',
  workflow_set_state: 'run',
  workflow_resume: 'run',
  workflow_executions: 'run',
  workflow_run: 'run',
  workflow_execute: 'run',
  workflow_cancel: 'run',
  workflow_author_and_run: 'author',
  workflow_repair_and_rerun: 'author',
  workflow_save: 'author',
  workflow_rename: 'author',
  workflow_delete: 'author',
  catalog_validate_openapi: 'admin',
  catalog_preview_import: 'admin',
  catalog_import_openapi: 'admin',
  catalog_set_enabled: 'admin',
  catalog_remove: 'admin',
  workflow_purge_history: 'admin',
};

/** Execution resources: what a principal's executions are doing. */
const RUN_RESOURCES =
  /^workflowlookup:\/\/workflow\/(current_step|workflow_status|step_history|workflow_artifacts|telemetry)\b/;

type Json = Record<string, unknown>;

/**
 * The scope a JSON-RPC request needs: a tool's (by canonical name, through its aliases, as
 * `tools/call` or as a direct method), `run` for execution resources and tasks, `read` otherwise.
 */
export function scopeFor(message: unknown, aliases: Readonly<Record<string, string>>): Scope {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return 'read';
  const { method, params } = message as { method?: unknown; params?: unknown };
  if (typeof method !== 'string') return 'read';
  const p = (params !== null && typeof params === 'object' ? params : {}) as Json;
  const tool = (name: string) => TOOL_SCOPES[aliases[name] ?? name] ?? 'admin';
  if (method === 'tools/call') return typeof p.name === 'string' ? tool(p.name) : 'read';
  if (method === 'resources/read')
    return typeof p.uri === 'string' && RUN_RESOURCES.test(p.uri) ? 'run' : 'read';
  if (method.startsWith('tasks/')) return 'run';
  const canonical = aliases[method] ?? method;
  if (canonical in TOOL_SCOPES) return tool(canonical);
  return 'read';
}

/** Each scope stands alone (a token lists every scope it grants): `admin` alone does not imply `read`. */
export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes(needed);
}
