import type { Caller } from '../executions/execution-model.js';

/**
 * One resource (or resource template) of a face. `read` returns a JSON value or throws a DomainFailure;
 * the protocol layer turns "not found" failures into MCP resource-not-found errors.
 */
export interface ResourceDefinition {
  name: string;
  /** A fixed URI, or an RFC 6570 template such as `workflowlookup://workflow/current_step/{executionId}`. */
  uri: string;
  title: string;
  description: string;
  /** Default application/json (read returns a JSON value); otherwise read returns the text itself. */
  mimeType?: string;
  /** `_meta` of the resource in listings and of its contents (e.g. MCP Apps' `ui` settings). */
  meta?: Record<string, unknown>;
  /** Concrete resources of a template, for resources/list. */
  list?: (caller: Caller) => Promise<{ uri: string; name: string; description?: string }[]>;
  /** Completions for template variables. */
  complete?: Record<string, (value: string, caller: Caller) => Promise<string[]>>;
  read: (variables: Record<string, string>, uri: URL, caller: Caller) => Promise<unknown>;
}
