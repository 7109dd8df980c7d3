/**
 * Extra paths served beside the MCP endpoint (the dashboard, /metrics) behind the same Host/Origin
 * guards and authentication, and the routing of a request's path: the OAuth metadata, a mount, the
 * endpoint, or nothing (404). Probes are answered before any of this (see `startHttp`'s `probes`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isMetadataPath } from './oauth-metadata.js';

/** Who a request comes from and what they may do. */
export interface MountCaller {
  principal: string;
  scopes: readonly string[];
}

/** A token checked as the MCP endpoint checks it. */
export interface VerifiedToken extends MountCaller {
  /** When the token itself expires (seconds since the epoch); undefined for static tokens. */
  expiresAt: number | undefined;
  /** Names a static token, so what was opened with it can end with it (see MountContext.current). */
  credential: string | undefined;
}

/**
 * What a mounted handler gets besides the request: the caller when the transport knows it, and the
 * means to authenticate the others itself.
 */
export interface MountContext {
  /**
   * The caller a valid `Authorization: Bearer` header names, or the local user with every scope when
   * the server has no authentication; such requests were rate-limited already. Undefined when the
   * request has no Authorization header (a browser): the mount authenticates it (a session cookie).
   */
  caller: MountCaller | undefined;
  /** Whether callers must authenticate (WORKFLOWLOOKUP_AUTH is set). */
  authRequired: boolean;
  /** Checks a token with the endpoint's own authenticator; throws an OAuthError when it is not good. */
  verify(token: string): Promise<VerifiedToken>;
  /** Who a static token's credential acts as now; undefined once the token is removed. */
  current(credential: string): MountCaller | undefined;
  /** Takes one request from `key`'s budget (the per-principal rate limit): 0, or seconds to wait. */
  take(key: string): number;
  /** The endpoint as clients reach it (https: cookies must be Secure). */
  publicUrl: URL;
}

/** Serves extra paths (the dashboard) behind the same Host/Origin guards, sharing the authentication. */
export interface Mount {
  handle(req: IncomingMessage, res: ServerResponse, context: MountContext): void | Promise<void>;
  /** Ends what the mount keeps open (live streams); called first when the server closes. */
  close?(): void | Promise<void>;
}

/** Where a request's path leads. */
export type Route =
  | { kind: 'metadata' }
  | { kind: 'mount'; prefix: string; mount: Mount }
  | { kind: 'endpoint' }
  | { kind: 'not-found' };

/** The paths one server answers: its MCP endpoint, its mounts by prefix, and the OAuth metadata. */
export class MountTable {
  private readonly entries: [string, Mount][];

  constructor(
    /** The MCP endpoint's path (`/mcp`). */
    private readonly endpoint: string,
    mounts: Record<string, Mount> = {},
    /** Whether the OAuth metadata is published (the server authenticates). */
    private readonly metadata = false,
  ) {
    this.entries = Object.entries(mounts);
  }

  route(pathname: string): Route {
    if (this.metadata && isMetadataPath(pathname)) return { kind: 'metadata' };
    // A mount owns its prefix and everything below it, never a path that merely starts alike.
    const entry = this.entries.find(([prefix]) => pathname === prefix || pathname.startsWith(`${prefix}/`));
    // A mount wins over the endpoint when both claim a path (an endpoint configured as `/metrics`).
    if (entry !== undefined) return { kind: 'mount', prefix: entry[0], mount: entry[1] };
    return pathname === this.endpoint ? { kind: 'endpoint' } : { kind: 'not-found' };
  }

  /** Ends what every mount keeps open; a mount that fails to close does not stop the others. */
  async close(): Promise<void> {
    await Promise.allSettled(this.entries.map(async ([, mount]) => mount.close?.()));
  }
}
