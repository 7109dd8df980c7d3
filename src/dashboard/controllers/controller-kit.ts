// What the controllers share: the app, the read side, live updates, form tokens and how to answer.
import type { ServerResponse } from 'node:http';
import type { App } from '../../app.js';
import type { ExecutionQueries } from '../../executions/execution-queries.js';
import type { FormTokens } from '../csrf.js';
import type { LiveUpdates } from '../live.js';

export interface ControllerDeps {
  app: App;
  /** The read side the pages use (the app's service, or the standalone dashboard's read-only reader). */
  queries: () => Promise<ExecutionQueries>;
  live: LiveUpdates;
  forms: FormTokens;
  /** Sends a page, redacted (secrets of the environment never leave in a page). */
  send: (res: ServerResponse, status: number, body: string) => void;
  redirect: (res: ServerResponse, location: string) => void;
  /** A dashboard path with its query (`undefined` values left out), under the mount's base path. */
  path: (p: string, params?: Record<string, string | undefined>) => string;
}
