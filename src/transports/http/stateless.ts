/**
 * The 2026-07-28 era: every request stands alone, carrying its envelope. The SDK's handler asks for a
 * server per request, which the pool provides (an idle one of the request's principal, or a new one);
 * list and resource changes reach listening clients through the handler's `notify`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type NodeIncomingMessageLike, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { App } from '../../app.js';
import { principalOf } from '../../protocol/principal.js';
import type { AuthedRequest } from './authentication.js';
import { type PooledServer, ServerPool, sdkServers } from './server-pool.js';

export interface StatelessEra {
  /** Serves one request whose body was read and checked already. */
  handle(req: AuthedRequest, res: ServerResponse, body: unknown): Promise<void>;
  /** Stops hearing of the app's changes and taking servers back (the transport is closing). */
  stop(): void;
  /** Ends what the SDK's handler holds open, then drops the idle servers. */
  close(): Promise<void>;
  /** The servers kept between requests. */
  pool: ServerPool<PooledServer>;
}

export function statelessEra(app: App, maxBody: number): StatelessEra {
  const pool = new ServerPool(sdkServers(app));
  const modern = createMcpHandler((ctx) => pool.acquire(principalOf(ctx.authInfo)).server, {
    legacy: 'reject',
    maxRequestBodySize: maxBody,
    onerror: (e) => app.log.warn(`http: ${e.message}`),
  });
  const node = toNodeHandler(modern, { maxRequestBodySize: maxBody });
  // Definitions changed: tell 2026 listeners through the handler (2025 sessions hear it on their streams).
  const offChanged = app.onResourcesChanged(() => modern.notify.resourcesChanged());
  const offLists = app.onListChanged((kind) =>
    kind === 'tools' ? modern.notify.toolsChanged() : modern.notify.promptsChanged(),
  );
  return {
    // node:http's request is what the SDK's node adapter reads; its type is a structural subset.
    handle: (req, res, body) => node(req as IncomingMessage as unknown as NodeIncomingMessageLike, res, body),
    stop() {
      pool.stop();
      offChanged();
      offLists();
    },
    async close() {
      await modern.close();
      pool.clear();
    },
    pool,
  };
}
