/**
 * The 2025-11-25 era: sessions, each a transport and a server bound to the principal that opened it
 * with `initialize`. The table caps them per principal and in total, closes those idle for 30 minutes,
 * forgets them however they end (DELETE, which the SDK's transport answers, or a closed connection),
 * and answers what comes before a session exists as stdio does.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { isInitializeRequest } from '@modelcontextprotocol/server';
import type { App } from '../../app.js';
import type { HttpSettings } from '../../config.js';
import { Quota } from '../../protocol/limits.js';
import { channelOf } from '../../protocol/transport-channel.js';
import { connectProtocol } from '../connect.js';
import { SessionEvents } from '../session-events.js';
import { json, rpcError } from './answers.js';
import type { AuthedRequest } from './authentication.js';
import { type Clock, systemClock } from './clock.js';

/** A session no request reached for this long is closed. */
export const SESSION_IDLE_MS = 30 * 60_000;
/** How often idle sessions are looked for. */
const SWEEP_MS = 60_000;

/** What the table needs of a session's transport. */
export interface SessionTransport {
  handleRequest(req: AuthedRequest, res: ServerResponse, body?: unknown): Promise<void>;
  close(): Promise<void>;
}

/** What opening a session reports back to the table. */
export interface SessionHooks {
  /**
   * The SDK named the session (its initialize was answered): from now on it is in the table. `server`
   * is kept with it, so the session holds what serves it for as long as it lives.
   */
  opened(id: string, transport: SessionTransport, server: unknown): void;
  /** It ended, whichever way (DELETE, a closed connection); may be called more than once. */
  closed(id: string | undefined): void;
}

/** Opens a new session's transport and server for `principal`, connected, before its initialize is served. */
export type OpenSession = (principal: string, hooks: SessionHooks) => Promise<SessionTransport>;

interface Session {
  transport: SessionTransport;
  server: unknown;
  principal: string;
  lastSeen: number;
}

export class Sessions {
  private readonly table = new Map<string, Session>();
  private readonly quota: Quota;
  private readonly stopSweep: () => void;

  constructor(
    private readonly open: OpenSession,
    limits: Pick<HttpSettings, 'maxSessions' | 'maxSessionsPerPrincipal'>,
    private readonly clock: Clock = systemClock,
    private readonly idleMs = SESSION_IDLE_MS,
  ) {
    // Per principal as well as in total: one principal cannot take every session.
    this.quota = new Quota(limits.maxSessions, limits.maxSessionsPerPrincipal);
    this.stopSweep = clock.every(SWEEP_MS, () => this.sweep());
  }

  /** Serves a 2025-11-25 request (any method) of `principal`, whose body was read and checked already. */
  async handle(req: AuthedRequest, res: ServerResponse, body: unknown, principal: string): Promise<void> {
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const s = this.table.get(sid);
      // Unknown, or another principal's: not found (never forbidden, which would confirm it exists).
      if (s === undefined || s.principal !== principal) {
        return json(res, 404, rpcError(-32001, 'Session not found'));
      }
      s.lastSeen = this.clock.now();
      return s.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) return beforeInitialize(res, body);
    const refused = this.quota.take(principal);
    if (refused === 'principal') {
      return json(
        res,
        429,
        rpcError(-32000, 'Too many open sessions for this principal', {
          details: `${principal} has ${this.quota.of(principal)} open sessions, the most allowed (WORKFLOWLOOKUP_HTTP_MAX_SESSIONS_PER_PRINCIPAL); end one with DELETE, or wait until an idle one closes (after 30 minutes)`,
          limit: this.quota.perPrincipal,
        }),
        { 'retry-after': '60' },
      );
    }
    if (refused === 'total') {
      return json(res, 503, rpcError(-32000, 'Too many open sessions; try again shortly'), {
        'retry-after': '5',
      });
    }
    let registered = false;
    try {
      const transport = await this.open(principal, {
        opened: (id, opened, server) => {
          this.table.set(id, { transport: opened, server, principal, lastSeen: this.clock.now() });
          registered = true;
        },
        closed: (id) => this.forget(id),
      });
      await transport.handleRequest(req, res, body);
    } finally {
      // An initialize that opened no session holds no place.
      if (!registered) this.quota.release(principal);
    }
  }

  /** Open sessions per principal (the sessions gauge of /metrics). */
  byPrincipal(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const s of this.table.values()) counts.set(s.principal, (counts.get(s.principal) ?? 0) + 1);
    return counts;
  }

  /** Open sessions, over every principal. */
  get size(): number {
    return this.table.size;
  }

  /** Closes the sessions idle longer than the idle time (the sweep runs this every minute). */
  sweep(): void {
    const cutoff = this.clock.now() - this.idleMs;
    for (const [id, s] of this.table) {
      if (s.lastSeen >= cutoff) continue;
      this.forget(id);
      void s.transport.close().catch(() => undefined);
    }
  }

  /** Stops looking for idle sessions (the transport is closing). */
  stop(): void {
    this.stopSweep();
  }

  /** Ends every session. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.table.values()].map((s) => s.transport.close()));
    this.table.clear();
  }

  /** Ends the bookkeeping of a session (once, whichever way it ends): its place in the quota is free. */
  private forget(id: string | undefined): void {
    const s = id === undefined ? undefined : this.table.get(id);
    if (id === undefined || s === undefined) return;
    this.table.delete(id);
    this.quota.release(s.principal);
  }
}

/** Seed 001's answers before initialize, as on stdio: ping works, anything else is refused. */
function beforeInitialize(res: ServerResponse, body: unknown): void {
  const message = body as { id?: unknown; method?: unknown } | undefined;
  if (message?.method === 'ping' && message.id !== undefined) {
    json(res, 200, { jsonrpc: '2.0', id: message.id, result: {} });
    return;
  }
  const method = typeof message?.method === 'string' ? message.method : undefined;
  json(res, 400, {
    jsonrpc: '2.0',
    id: message?.id ?? null,
    error: {
      code: -32600,
      message: 'Server not initialized',
      data: {
        details: `send initialize before ${method ?? 'other requests'}`,
        ...(method !== undefined ? { method } : {}),
      },
    },
  });
}

/** Opens the app's sessions: the SDK's Streamable HTTP transport, the protocol rules, a 2025 server. */
export function sdkSessions(app: App): OpenSession {
  return async (principal, hooks) => {
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // One store per session, kept so a client that lost its SSE stream can resume it.
      eventStore: new SessionEvents(),
      retryInterval: 1000,
      onsessioninitialized: (id) => hooks.opened(id, transport, server),
      onsessionclosed: (id) => hooks.closed(id),
    });
    const connection = connectProtocol(app, channelOf(transport), { kind: 'http', principal });
    const server = connection.server('legacy');
    connection.rules.onclose = () => hooks.closed(transport.sessionId);
    await server.connect(connection.rules);
    return transport;
  };
}
