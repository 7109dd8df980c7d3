// Who looks at the dashboard, passed with every request (Dashboard.handle's third argument).
import { LOCAL_PRINCIPAL } from '../executions/execution-model.js';

/** Who looks: executions are scoped to `principal`; the owner of the store may look at every principal. */
export interface Viewer {
  principal: string;
  allPrincipals: boolean;
  /** What the viewer may do (`run`: actions); undefined: everything (no authentication). */
  scopes?: readonly string[] | undefined;
  /** Signed in with a session cookie: the header offers to sign out. */
  session?: boolean | undefined;
  /** When the viewer's session ends (ms since the epoch): live streams end then. */
  expiresAt?: number | undefined;
}

/** Whether the viewer holds a scope (every scope without authentication). */
export const may = (viewer: Viewer, scope: string) =>
  viewer.scopes === undefined || viewer.scopes.includes(scope);

/** Nobody yet: the viewer of the sign-in pages and of the assets; any other page answers 401. */
export const ANONYMOUS: Viewer = { principal: '', allPrincipals: false, scopes: [] };

/** The local user, who owns the data dir: may look at every principal (the standalone dashboard). */
export const OWNER: Viewer = { principal: LOCAL_PRINCIPAL, allPrincipals: true };
