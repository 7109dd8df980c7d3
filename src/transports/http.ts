import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostHeaderValidation, originValidation } from '@modelcontextprotocol/node';
import type { App } from '../app.js';
import type { HttpSettings } from '../config.js';
import { SCOPES } from '../protocol/scopes.js';
import { json, rpcError } from './http/answers.js';
import { type AuthedRequest, HttpAuthentication } from './http/authentication.js';
import { eraOf, readMessage, scopeTablesOf } from './http/messages.js';
import { type Mount, type MountCaller, type MountContext, MountTable } from './http/mounts.js';
import { listenNode } from './http/node-server.js';
import { protectedResourceMetadata } from './http/oauth-metadata.js';
import { Sessions, sdkSessions } from './http/sessions.js';
import { statelessEra } from './http/stateless.js';
import { RateLimiter } from './rate-limit.js';

// The transport's parts live in ./http/, one concern each; this file composes them, and keeps the
// names the dashboard, the observability module, the CLI and the tests import from here.
export type { Mount, MountCaller, MountContext, VerifiedToken } from './http/mounts.js';
export { clientErrorAnswer } from './http/node-server.js';

export interface RunningHttp {
  /** The MCP endpoint as bound (the real port when 0 was asked for). */
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then ends streams and sessions. */
  close(graceMs?: number): Promise<void>;
  /** Open 2025-11-25 sessions per principal (the sessions gauge of /metrics). */
  sessionsByPrincipal(): Map<string, number>;
}

/**
 * Streamable HTTP on node:http, in both eras: 2025-11-25 sessions (initialize, Mcp-Session-Id, SSE
 * streams with resumption, DELETE) and the stateless 2026-07-28 per-request envelope, through the SDK's
 * transports. Every connection passes through the same protocol rules as stdio. In front of them:
 * Host/Origin checks against DNS rebinding, bearer authentication (JWT or static tokens) with RFC 9728
 * metadata, scopes per tool, a body limit and a rate limit per principal.
 */
export async function startHttp(
  app: App,
  settings: HttpSettings,
  options: {
    mounts?: Record<string, Mount>;
    /**
     * Answers load balancer probes (/healthz, /readyz) before anything else: no Host check (a probe
     * names the pod's address), no authentication, and still while the server drains. False: not one.
     */
    probes?: (req: IncomingMessage, res: ServerResponse) => boolean;
  } = {},
): Promise<RunningHttp> {
  const maxBody = app.config.maxMessageBytes;
  const validateHost = hostHeaderValidation(settings.allowedHosts);
  const validateOrigin = originValidation(settings.allowedOrigins);
  const limiter = new RateLimiter(settings.rateLimit);
  const auth = await HttpAuthentication.create(settings, new URL(settings.publicUrl));
  const routes = new MountTable(settings.path, options.mounts, auth.required);
  const messages = { maxBody, scopeTables: scopeTablesOf(app), resourceMetadataUrl: () => auth.metadataUrl };
  const stateless = statelessEra(app, maxBody);
  const sessions = new Sessions(sdkSessions(app), settings);
  let closing = false;

  const mountContext = (caller: MountCaller | undefined): MountContext => ({
    caller,
    authRequired: auth.required,
    verify: (token) => auth.verify(token),
    current: (credential) => auth.current(credential),
    take: (key) => limiter.take(key),
    publicUrl: auth.publicUrl,
  });

  /** One request, in order: probes, guards, routing, authentication, rate limit, then a mount or an era. */
  const listener = async (req: AuthedRequest, res: ServerResponse): Promise<void> => {
    if (options.probes?.(req, res)) return;
    if (closing)
      return json(res, 503, rpcError(-32000, 'The server is shutting down'), { connection: 'close' });
    // DNS rebinding: a page elsewhere must not reach a local server through a hostile name.
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    const route = routes.route(new URL(req.url ?? '/', 'http://localhost').pathname);
    if (route.kind === 'metadata')
      return json(res, 200, protectedResourceMetadata(auth.publicUrl, settings.auth));
    if (route.kind === 'not-found') {
      return json(res, 404, rpcError(-32601, `Not found: the MCP endpoint is ${settings.path}`));
    }
    // A browser cannot send a bearer token when it navigates: a mount authenticates those itself.
    const bearer = !auth.required || req.headers.authorization !== undefined;
    if (route.kind === 'mount' && !bearer) return route.mount.handle(req, res, mountContext(undefined));
    const principal = await auth.authenticate(req, res);
    if (principal === undefined) return;
    const wait = limiter.take(principal);
    if (wait > 0) {
      return json(res, 429, rpcError(-32000, `Too many requests; retry in ${wait} s`), {
        'retry-after': String(wait),
      });
    }
    if (route.kind === 'mount') {
      const scopes = req.auth === undefined ? SCOPES : req.auth.scopes;
      return route.mount.handle(req, res, mountContext({ principal, scopes }));
    }
    let body: unknown;
    if (req.method === 'POST') {
      const message = await readMessage(req, res, req.auth?.scopes, messages);
      if (message === undefined) return;
      body = message.body;
    }
    if (req.method !== 'POST' || eraOf(req, body) === 'legacy')
      return sessions.handle(req, res, body, principal);
    return stateless.handle(req, res, body);
  };

  const node = await listenNode(settings, listener, app.log);
  const port = node.port;
  if (settings.port === 0 && !app.config.env.WORKFLOWLOOKUP_PUBLIC_URL) {
    // An ephemeral port is only known now; the resource the tokens name follows it.
    await auth.rebind(new URL(auth.publicUrl.href.replace(/:0(?=\/)/, `:${port}`)));
  }
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;

  return {
    url: `http://${host}:${port}${settings.path}`,
    port,
    sessionsByPrincipal: () => sessions.byPrincipal(),
    async close(graceMs = 10_000) {
      closing = true;
      stateless.stop();
      sessions.stop();
      auth.stop();
      // Mounts first: their live streams never end by themselves.
      await routes.close();
      node.stopAccepting();
      // In-flight requests finish first (up to the grace period); then streams and sessions end.
      await node.drain(graceMs);
      await stateless.close();
      await sessions.close();
      await node.end();
    },
  };
}
