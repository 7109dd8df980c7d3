import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  hostHeaderValidation,
  type NodeIncomingMessageLike,
  NodeStreamableHTTPServerTransport,
  originValidation,
  toNodeHandler,
} from '@modelcontextprotocol/node';
import {
  type AuthInfo,
  bearerAuthChallengeResponse,
  classifyInboundRequest,
  createMcpHandler,
  getOAuthProtectedResourceMetadataUrl,
  isInitializeRequest,
  isJsonContentType,
  type McpServer,
  OAuthError,
  OAuthErrorCode,
  type Transport,
} from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import type { HttpSettings } from '../config.js';
import { LOCAL_PRINCIPAL } from '../executions/execution-model.js';
import { Quota } from '../protocol/limits.js';
import { principalOf } from '../protocol/principal.js';
import { ResourceIndex } from '../protocol/resource-match.js';
import { inspect, type ProtocolRules } from '../protocol/rules.js';
import { SCOPE_DESCRIPTIONS, SCOPES, type ScopeTables } from '../protocol/scopes.js';
import type { ToolSwitch } from '../protocol/tool-switch.js';
import { channelOf } from '../protocol/transport-channel.js';
import { withIncomingHeaders } from '../telemetry/trace.js';
import { connectProtocol, protocolFacts } from './connect.js';
import { createAuthenticator } from './http-auth.js';
import { RateLimiter } from './rate-limit.js';
import { SessionEvents } from './session-events.js';

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

export interface RunningHttp {
  /** The MCP endpoint as bound (the real port when 0 was asked for). */
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then ends streams and sessions. */
  close(graceMs?: number): Promise<void>;
  /** Open 2025-11-25 sessions per principal (the sessions gauge of /metrics). */
  sessionsByPrincipal(): Map<string, number>;
}

interface Session {
  transport: NodeStreamableHTTPServerTransport;
  server: McpServer;
  principal: string;
  lastSeen: number;
}

/** A 2026-07-28 server kept between stateless requests of its principal. */
interface Pooled {
  server: McpServer;
  tools: ToolSwitch;
  principal: string;
  /** The rules of the exchange it serves now. */
  rules: ProtocolRules | undefined;
}
/**
 * Idle stateless servers kept, over every principal: about 80 KB each (measured), so 8 MB at most; as
 * many clients of one principal as that run at once without building one.
 */
const IDLE_SERVERS = 100;

type Req = IncomingMessage & { auth?: AuthInfo };
const like = (req: Req) => req as unknown as NodeIncomingMessageLike;
const SESSION_IDLE_MS = 30 * 60_000;
/** Tokens that verified lately, remembered (as hashes) so a flood of bad ones from a shared address spares them. */
const GOOD_TOKENS = 10_000;
const GOOD_TOKEN_MS = 10 * 60_000;

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const rpcError = (code: number, message: string, data?: unknown) => ({
  jsonrpc: '2.0',
  id: null,
  error: { code, message, ...(data !== undefined ? { data } : {}) },
});

async function sendWeb(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/** The body of a POST, or undefined past `max` bytes (the rest is not read). */
async function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > max) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The raw HTTP answer to a request node:http refused while reading it: 431 for a head over the size
 * limit (a large JWT), 408 for one too slow to arrive, 400 for anything unparsable; undefined when the
 * connection is gone anyway.
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException, maxHeaderBytes: number): string | undefined {
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return undefined;
  const [status, reason, details] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'Request Header Fields Too Large',
          `the request headers exceed ${maxHeaderBytes} bytes (WORKFLOWLOOKUP_HTTP_MAX_HEADER_BYTES); a bearer token that large needs a higher limit`,
        ]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'the request did not arrive in time']
        : [400, 'Bad Request', 'the request is not valid HTTP/1.1'];
  const body = JSON.stringify(rpcError(-32600, reason, { details }));
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return typeof value === 'string' ? value : value?.join(', ');
};

/**
 * Which era a POST (its body parsed already) belongs to, by the SDK's own classifier, read from the
 * node request: building a web Request to ask `isLegacyRequest` cost a copy of every request's
 * headers and body. A rejected request goes to the modern handler, which answers why.
 */
function eraOf(req: IncomingMessage, body: unknown): 'legacy' | 'modern' {
  const protocolVersionHeader = header(req, 'mcp-protocol-version');
  const mcpMethodHeader = header(req, 'mcp-method');
  const mcpNameHeader = header(req, 'mcp-name');
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    body,
    ...(protocolVersionHeader !== undefined ? { protocolVersionHeader } : {}),
    ...(mcpMethodHeader !== undefined ? { mcpMethodHeader } : {}),
    ...(mcpNameHeader !== undefined ? { mcpNameHeader } : {}),
  });
  return outcome.kind === 'legacy' ? 'legacy' : 'modern';
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
  const { log } = app;
  const maxBody = app.config.maxMessageBytes;
  const facts = protocolFacts(app);
  const validateHost = hostHeaderValidation(settings.allowedHosts);
  const validateOrigin = originValidation(settings.allowedOrigins);
  const limiter = new RateLimiter(settings.rateLimit);
  // Failed bearer tokens, per client address (the caller is unknown until a token verifies).
  const failures = new RateLimiter(settings.authFailureLimit);
  const goodTokens = new Map<string, number>();
  const sessionQuota = new Quota(settings.maxSessions, settings.maxSessionsPerPrincipal);
  const index = ResourceIndex.of(app.resources);
  const scopeTables: ScopeTables = {
    tools: facts.tools,
    aliases: facts.aliases,
    resourceOf: (uri) => index.resolve(uri)?.resource.name,
    templateNamed: (template) => index.templateNamed(template)?.name,
  };
  let publicUrl = new URL(settings.publicUrl);
  let metadataUrl = getOAuthProtectedResourceMetadataUrl(publicUrl);
  let authenticator = await createAuthenticator(settings, publicUrl);

  // 2026-07-28: every request stands alone, and the SDK's handler asks for a server for each. Building
  // one registers every tool, resource and prompt; so servers are kept between requests, per
  // principal (the profile is the app's): a request takes an idle one or builds one, and the end of
  // its exchange (the SDK closes the server with it) gives it back.
  const idle = new Map<string, Pooled[]>();
  let idleCount = 0;
  const release = (pooled: Pooled) => {
    // A request still running (its client went away) keeps its server: it could still send on it.
    if (closing || pooled.rules?.busy) return;
    pooled.rules = undefined;
    if (idleCount >= IDLE_SERVERS) {
      // Full: the principal that waited longest gives one up.
      const [oldest, servers] = idle.entries().next().value as [string, Pooled[]];
      servers.pop();
      idleCount--;
      if (servers.length === 0) idle.delete(oldest);
    }
    const list = idle.get(pooled.principal) ?? [];
    // The most recent principal last: the first to give one up is the one idle the longest.
    idle.delete(pooled.principal);
    idle.set(pooled.principal, list);
    list.push(pooled);
    idleCount++;
  };
  const build = (principal: string): Pooled => {
    const tools = app.toolSwitch();
    const server = app.serverFactory({ principal, era: 'modern', tools, transport: 'http' });
    const pooled: Pooled = { server, tools, principal, rules: undefined };
    const connect = server.connect.bind(server);
    server.connect = (transport: Transport) => {
      const { rules } = connectProtocol(app, channelOf(transport), {
        kind: 'http',
        server,
        tools,
        principal,
      });
      pooled.rules = rules;
      return connect(rules);
    };
    // After its first exchange the app no longer counts the server among its connected ones (for
    // list-changed notifications): nothing is lost, the SDK's per-request transport drops notifications
    // that belong to no request, and 2026-07-28 listeners hear of changes through `modern.notify`.
    const previous = server.server.onclose;
    server.server.onclose = () => {
      previous?.();
      release(pooled);
    };
    return pooled;
  };
  const acquire = (principal: string): McpServer => {
    const list = idle.get(principal);
    const kept = list?.pop();
    if (kept !== undefined) idleCount--;
    // Only principals with idle servers are kept: the one to give one up always has one.
    if (list?.length === 0) idle.delete(principal);
    const pooled = kept ?? build(principal);
    // What one request listed or told the server about its client must not carry over to the next:
    // the SDK seeds the client's identity from each request's envelope, but leaves what one omits.
    pooled.tools.reset();
    const sdk = pooled.server.server as unknown as {
      _clientCapabilities?: unknown;
      _clientVersion?: unknown;
    };
    sdk._clientCapabilities = undefined;
    sdk._clientVersion = undefined;
    return pooled.server;
  };
  const modern = createMcpHandler((ctx) => acquire(principalOf(ctx.authInfo)), {
    legacy: 'reject',
    maxRequestBodySize: maxBody,
    onerror: (e) => log.warn(`http: ${e.message}`),
  });
  const modernNode = toNodeHandler(modern, { maxRequestBodySize: maxBody });

  // 2025-11-25: sessions, each a transport and a server, bound to the principal that opened it.
  const sessions = new Map<string, Session>();
  /** Ends the bookkeeping of a session (once, whichever way it ends): its place in the quota is free. */
  const forget = (id: string | undefined) => {
    const s = id === undefined ? undefined : sessions.get(id);
    if (id === undefined || s === undefined) return;
    sessions.delete(id);
    sessionQuota.release(s.principal);
  };
  const legacy = async (req: Req, res: ServerResponse, body: unknown, principal: string) => {
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const s = sessions.get(sid);
      // Unknown, or another principal's: not found (never forbidden, which would confirm it exists).
      if (s === undefined || s.principal !== principal) {
        return json(res, 404, rpcError(-32001, 'Session not found'));
      }
      s.lastSeen = Date.now();
      return s.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      // Seed 001's answers before initialize, as on stdio: ping works, anything else is refused.
      const message = body as { id?: unknown; method?: unknown } | undefined;
      if (message?.method === 'ping' && message.id !== undefined) {
        return json(res, 200, { jsonrpc: '2.0', id: message.id, result: {} });
      }
      const method = typeof message?.method === 'string' ? message.method : undefined;
      return json(res, 400, {
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
    // Per principal as well as in total: one principal cannot take every session.
    const refused = sessionQuota.take(principal);
    if (refused === 'principal') {
      return json(
        res,
        429,
        rpcError(-32000, 'Too many open sessions for this principal', {
          details: `${principal} has ${sessionQuota.of(principal)} open sessions, the most allowed (WORKFLOWLOOKUP_HTTP_MAX_SESSIONS_PER_PRINCIPAL); end one with DELETE, or wait until an idle one closes (after 30 minutes)`,
          limit: settings.maxSessionsPerPrincipal,
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
      const transport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new SessionEvents(),
        retryInterval: 1000,
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server, principal, lastSeen: Date.now() });
          registered = true;
        },
        onsessionclosed: (id) => forget(id),
      });
      const connection = connectProtocol(app, channelOf(transport), { kind: 'http', principal });
      const server = connection.server('legacy');
      connection.rules.onclose = () => forget(transport.sessionId);
      await server.connect(connection.rules);
      await transport.handleRequest(req, res, body);
    } finally {
      // An initialize that opened no session holds no place.
      if (!registered) sessionQuota.release(principal);
    }
  };

  const sweep = setInterval(() => {
    const cutoff = Date.now() - SESSION_IDLE_MS;
    for (const [id, s] of sessions) {
      if (s.lastSeen >= cutoff) continue;
      forget(id);
      void s.transport.close().catch(() => undefined);
    }
    for (const [hash, until] of goodTokens) if (until < Date.now()) goodTokens.delete(hash);
  }, 60_000);
  sweep.unref();

  // Definitions changed: tell 2026 listeners through the handler, 2025 sessions on their streams.
  const offChanged = app.onResourcesChanged(() => modern.notify.resourcesChanged());
  const offLists = app.onListChanged((kind) =>
    kind === 'tools' ? modern.notify.toolsChanged() : modern.notify.promptsChanged(),
  );

  /**
   * The principal a request's bearer token names, or undefined once it was answered (401, or 429 for
   * an address that sent too many bad tokens lately). Past that budget, only tokens that verified in
   * the last minutes are still checked, so clients behind the same proxy as an attacker keep working.
   */
  const authenticate = async (req: Req, res: ServerResponse): Promise<string | undefined> => {
    if (authenticator === undefined) return LOCAL_PRINCIPAL;
    const header = req.headers.authorization;
    const address = req.socket.remoteAddress ?? '';
    const match = /^Bearer ([^\s]+)$/i.exec(header ?? '');
    const token = match?.[1];
    const hash = token === undefined ? undefined : createHash('sha256').update(token).digest('base64url');
    const wait = header === undefined ? 0 : failures.peek(address);
    if (wait > 0 && !(hash !== undefined && (goodTokens.get(hash) ?? 0) > Date.now())) {
      json(
        res,
        429,
        rpcError(-32000, `Too many failed authentication attempts; retry in ${wait} s`, {
          details: `this address sent more bad bearer tokens than WORKFLOWLOOKUP_AUTH_FAILURE_LIMIT allows (${settings.authFailureLimit} a minute)`,
        }),
        { 'retry-after': String(wait) },
      );
      return undefined;
    }
    try {
      if (token === undefined) {
        throw new OAuthError(
          OAuthErrorCode.InvalidToken,
          header ? 'the Authorization header must be "Bearer <token>"' : 'no bearer token',
        );
      }
      const auth = { ...(await authenticator.verify(token)), resourceMetadataUrl: metadataUrl };
      req.auth = auth;
      if (hash !== undefined) {
        goodTokens.delete(hash);
        goodTokens.set(hash, Date.now() + GOOD_TOKEN_MS);
        if (goodTokens.size > GOOD_TOKENS) goodTokens.delete(goodTokens.keys().next().value as string);
      }
      return principalOf(auth);
    } catch (error) {
      // Asking without a token is how clients discover the authorization server: not a failure.
      if (header !== undefined) failures.take(address);
      const challenge =
        error instanceof OAuthError ? error : new OAuthError(OAuthErrorCode.InvalidToken, 'invalid token');
      await sendWeb(res, bearerAuthChallengeResponse(challenge, { resourceMetadataUrl: metadataUrl }));
      return undefined;
    }
  };

  const mountContext = (caller: MountCaller | undefined): MountContext => ({
    caller,
    authRequired: authenticator !== undefined,
    async verify(token) {
      if (authenticator === undefined) throw new OAuthError(OAuthErrorCode.InvalidToken, 'no authentication');
      const auth = await authenticator.verify(token);
      const credential = auth.extra?.credential;
      return {
        principal: principalOf(auth),
        scopes: auth.scopes,
        // Static tokens do not expire (their AuthInfo carries a nominal hour); JWTs do.
        expiresAt: settings.auth.mode === 'jwt' ? auth.expiresAt : undefined,
        credential: typeof credential === 'string' ? credential : undefined,
      };
    },
    current: (credential) => authenticator?.current?.(credential),
    take: (key) => limiter.take(key),
    publicUrl,
  });

  let inflight = 0;
  let closing = false;
  let drained: (() => void) | undefined;

  const listener = async (req: Req, res: ServerResponse): Promise<void> => {
    if (options.probes?.(req, res)) return;
    if (closing)
      return json(res, 503, rpcError(-32000, 'The server is shutting down'), { connection: 'close' });
    // DNS rebinding: a page elsewhere must not reach a local server through a hostile name.
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (authenticator !== undefined && url.pathname.startsWith('/.well-known/oauth-protected-resource')) {
      return json(res, 200, {
        resource: publicUrl.href,
        ...(settings.auth.mode === 'jwt' ? { authorization_servers: [settings.auth.issuer] } : {}),
        scopes_supported: [...SCOPES],
        bearer_methods_supported: ['header'],
        resource_name: 'workflowlookup',
        scope_descriptions: SCOPE_DESCRIPTIONS,
      });
    }
    const mount = Object.entries(options.mounts ?? {}).find(
      ([prefix]) => url.pathname === prefix || url.pathname.startsWith(`${prefix}/`),
    );
    if (url.pathname !== settings.path && mount === undefined) {
      return json(res, 404, rpcError(-32601, `Not found: the MCP endpoint is ${settings.path}`));
    }
    // A browser cannot send a bearer token when it navigates: a mount authenticates those itself.
    const bearer = authenticator === undefined || req.headers.authorization !== undefined;
    if (mount !== undefined && !bearer) return mount[1].handle(req, res, mountContext(undefined));
    const principal = await authenticate(req, res);
    if (principal === undefined) return;
    const wait = limiter.take(principal);
    if (wait > 0) {
      return json(res, 429, rpcError(-32000, `Too many requests; retry in ${wait} s`), {
        'retry-after': String(wait),
      });
    }
    if (mount !== undefined) {
      const scopes = req.auth === undefined ? SCOPES : req.auth.scopes;
      return mount[1].handle(req, res, mountContext({ principal, scopes }));
    }

    let body: unknown;
    if (req.method === 'POST') {
      if (!isJsonContentType(req.headers['content-type'] ?? null)) {
        return json(
          res,
          415,
          rpcError(-32000, 'Unsupported Media Type: Content-Type must be application/json'),
        );
      }
      const text = await readBody(req, maxBody);
      if (text === undefined) {
        return json(
          res,
          413,
          rpcError(-32600, 'Invalid Request', { details: `the body exceeds ${maxBody} bytes` }),
        );
      }
      try {
        body = JSON.parse(text);
      } catch (error) {
        return json(
          res,
          400,
          rpcError(-32700, 'Parse error', { details: (error as Error).message.slice(0, 200) }),
        );
      }
      // The checks stdio makes (a malformed message gets the same JSON-RPC error, here with HTTP 400),
      // then the call's scope: made once, here; the rules behind do not classify the message again.
      const verdict = inspect(body, req.auth?.scopes, scopeTables);
      if (verdict.kind === 'reply') {
        return json(res, 400, { jsonrpc: '2.0', id: verdict.id, error: verdict.error });
      }
      if (verdict.kind === 'drop') return json(res, 202, {});
      if (verdict.kind === 'forbidden') {
        const { needed } = verdict;
        return sendWeb(
          res,
          bearerAuthChallengeResponse(
            new OAuthError(OAuthErrorCode.InsufficientScope, `this call needs the "${needed}" scope`),
            { requiredScopes: [needed], resourceMetadataUrl: metadataUrl },
          ),
        );
      }
    }
    if (req.method !== 'POST' || eraOf(req, body) === 'legacy') return legacy(req, res, body, principal);
    return modernNode(like(req), res, body);
  };

  const http: Server = createServer({ maxHeaderSize: settings.maxHeaderBytes }, (req, res) => {
    // A GET holds a notification stream open for as long as the client wants: not work to wait for.
    const counted = req.method !== 'GET';
    if (counted) inflight++;
    withIncomingHeaders(req.headers, () => listener(req as Req, res))
      .catch((error: unknown) => {
        log.error({ err: error }, 'http: the request failed');
        json(res, 500, rpcError(-32603, 'Internal error'));
      })
      .finally(() => {
        if (!counted) return;
        inflight--;
        if (inflight === 0) drained?.();
      });
  });
  // A request node:http cannot take gets an HTTP answer saying why, not a reset connection.
  http.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    const answer = clientErrorAnswer(error, settings.maxHeaderBytes);
    if (answer === undefined || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(answer);
  });

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(settings.port, settings.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const port = (http.address() as AddressInfo).port;
  if (settings.port === 0 && !app.config.env.WORKFLOWLOOKUP_PUBLIC_URL) {
    // An ephemeral port is only known now; the resource the tokens name follows it.
    publicUrl = new URL(publicUrl.href.replace(/:0(?=\/)/, `:${port}`));
    metadataUrl = getOAuthProtectedResourceMetadataUrl(publicUrl);
    authenticator = await createAuthenticator(settings, publicUrl);
  }
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;

  return {
    url: `http://${host}:${port}${settings.path}`,
    port,
    sessionsByPrincipal() {
      const counts = new Map<string, number>();
      for (const s of sessions.values()) counts.set(s.principal, (counts.get(s.principal) ?? 0) + 1);
      return counts;
    },
    async close(graceMs = 10_000) {
      closing = true;
      clearInterval(sweep);
      offChanged();
      offLists();
      // Mounts first: their live streams never end by themselves.
      await Promise.allSettled(Object.values(options.mounts ?? {}).map(async (m) => m.close?.()));
      const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
      // In-flight requests finish first (up to the grace period); then streams and sessions end.
      if (inflight > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve;
          setTimeout(resolve, graceMs).unref();
        });
      }
      await modern.close();
      idle.clear();
      idleCount = 0;
      await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
      sessions.clear();
      http.closeIdleConnections();
      const force = setTimeout(() => http.closeAllConnections(), 1000);
      force.unref();
      await stopped;
      clearTimeout(force);
    },
  };
}
