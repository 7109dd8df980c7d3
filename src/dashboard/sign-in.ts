/**
 * The dashboard mounted under `serve --http` at /dashboard, behind the server's authentication. A
 * request with a bearer token is the transport's business (it checks it as for MCP); browsers, which
 * cannot send one when they navigate, sign in once on /dashboard/login with a static token or a JWT,
 * checked by the same authenticator, and then carry a signed session cookie.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OAuthError } from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import { loadTokenSecret } from '../executions/tokens.js';
import type { Mount, MountContext } from '../transports/http.js';
import { createDashboard, type DashboardOptions } from './dashboard.js';
import { continuePage } from './pages/continue-page.js';
import { errorPage } from './pages/error-page.js';
import { loginPage, SESSION_HOURS } from './pages/login-page.js';
import type { PageContext } from './pages/page-kit.js';
import { signOutPage } from './pages/sign-out-page.js';
import { Redactor } from './redact.js';
import { HttpError, readForm, redirect, refuseCrossSite, sendHtml } from './responses.js';
import { ANONYMOUS, may, type Viewer } from './viewer.js';

export const DASHBOARD_PATH = '/dashboard';
export const SESSION_COOKIE = 'wl_dashboard';
const SESSION_MS = SESSION_HOURS * 3_600_000;
/** Longer pasted text is no token this server issues or accepts. */
const MAX_TOKEN_CHARS = 7000;

/** Who a session cookie names: principal, scopes, when it ends, and the static token it came from. */
export interface Session {
  principal: string;
  scopes: string[];
  /** ms since the epoch. */
  expiresAt: number;
  /** A static token's credential (see Authenticator.current): the session ends when the token is removed. */
  credential?: string | undefined;
}

const isStrings = (value: unknown, max: number): value is string[] =>
  Array.isArray(value) && value.length <= 16 && value.every((v) => typeof v === 'string' && v.length <= max);

/**
 * Session cookies: `v1.<base64url JSON>.<base64url HMAC-SHA256>`, signed with a key derived from the
 * token secret, so every replica sharing WORKFLOWLOOKUP_TOKEN_SECRET (or a data dir) accepts them.
 * Signed, not encrypted: they hold nothing secret (principal, scopes, expiry, a token's credential).
 */
export class SessionCookies {
  private readonly key: Buffer;

  constructor(tokenSecret: Buffer) {
    this.key = createHmac('sha256', tokenSecret).update('workflowlookup dashboard sessions').digest();
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(`v1.${payload}`).digest();
  }

  seal(session: Session): string {
    const payload = Buffer.from(
      JSON.stringify({
        p: session.principal,
        s: session.scopes,
        x: Math.floor(session.expiresAt / 1000),
        ...(session.credential !== undefined ? { c: session.credential } : {}),
      }),
    ).toString('base64url');
    return `v1.${payload}.${this.mac(payload).toString('base64url')}`;
  }

  /** The session a cookie value names, or undefined when it is forged, altered, malformed or expired. */
  open(value: string, now = Date.now()): Session | undefined {
    if (value.length > 4096) return undefined;
    const [version, payload, mac, ...extra] = value.split('.');
    if (version !== 'v1' || payload === undefined || mac === undefined || extra.length > 0) return undefined;
    const given = Buffer.from(mac, 'base64url');
    const expected = this.mac(payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let data: unknown;
    try {
      data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    const { p, s, x, c } = (data ?? {}) as Record<string, unknown>;
    if (typeof p !== 'string' || p === '' || p.length > 256 || !isStrings(s, 64)) return undefined;
    if (typeof x !== 'number' || !Number.isInteger(x)) return undefined;
    const expiresAt = x * 1000;
    // Expired, or (a key gone astray) longer than any session this server issues.
    if (expiresAt <= now || expiresAt > now + SESSION_MS + 60_000) return undefined;
    if (c !== undefined && (typeof c !== 'string' || c.length > 64)) return undefined;
    return { principal: p, scopes: s, expiresAt, ...(c !== undefined ? { credential: c } : {}) };
  }
}

/** The values of one cookie (a browser may send several with the same name). */
function cookieValues(header: string | undefined, name: string): string[] {
  if (header === undefined || header.length > 16_384) return [];
  return header
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`${name}=`))
    .map((part) => part.slice(name.length + 1));
}

/** Where to go after signing in: a dashboard path of this server, else the executions page. */
export function safeNext(value: string | null | undefined): string {
  const fallback = `${DASHBOARD_PATH}/`;
  if (!value || value.length > 2048 || !value.startsWith(`${DASHBOARD_PATH}/`)) return fallback;
  let url: URL;
  try {
    url = new URL(value, 'http://dashboard.invalid');
  } catch {
    return fallback;
  }
  const page = url.pathname.slice(DASHBOARD_PATH.length);
  if (
    url.origin !== 'http://dashboard.invalid' ||
    !page.startsWith('/') ||
    page.startsWith('//') ||
    /^\/(login|logout|assets\/)/.test(page) ||
    /\/events$/.test(page)
  ) {
    return fallback;
  }
  return `${url.pathname}${url.search}`;
}

/** A navigation (a page the browser shows), as opposed to the page's own fetches and event streams. */
function isNavigation(req: IncomingMessage): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const mode = req.headers['sec-fetch-mode'];
  if (mode !== undefined) return mode === 'navigate';
  return (req.headers.accept ?? '').includes('text/html');
}

export interface DashboardMount extends Mount {
  /** The session cookies of this dashboard (for tests and tools that must mint one). */
  readonly sessions: () => SessionCookies;
}

/**
 * The dashboard as a mount of `serve --http` at /dashboard: callers the transport identified (a bearer
 * token, or the local user without authentication) go straight in; browsers sign in. Pages need the
 * `read` scope, actions `run`; everyone sees only their own executions and runs.
 */
export function dashboardMount(
  app: App,
  options: Pick<DashboardOptions, 'live' | 'assetsDir'> = {},
): DashboardMount {
  const dashboard = createDashboard(app, { ...options, basePath: DASHBOARD_PATH });
  let cookies: SessionCookies | undefined;
  const sessions = () => {
    cookies ??= new SessionCookies(loadTokenSecret(app.config.dataDir, app.config.tokenSecret));
    return cookies;
  };
  const pageContext = (viewer: Viewer = ANONYMOUS): PageContext => ({
    base: DASHBOARD_PATH,
    viewer,
    // These pages show no data: nothing to redact, no diagram to draw.
    redact: new Redactor([]),
    draw: () => '',
  });

  const cookie = (value: string, maxAgeSeconds: number, secure: boolean) =>
    `${SESSION_COOKIE}=${value}; Path=${DASHBOARD_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;

  /** The session of a request's cookie; `stale` when it carried one that no longer works (to clear it). */
  const sessionOf = (req: IncomingMessage, context: MountContext): { session?: Session; stale: boolean } => {
    const values = cookieValues(req.headers.cookie, SESSION_COOKIE);
    for (const value of values) {
      const session = sessions().open(value);
      if (session === undefined) continue;
      if (session.credential === undefined) return { session, stale: false };
      // A static token: it must still be in the tokens file, and its scopes now are what counts.
      const now = context.current(session.credential);
      if (now === undefined || now.principal !== session.principal) continue;
      return { session: { ...session, scopes: [...now.scopes] }, stale: false };
    }
    return { stale: values.length > 0 };
  };

  async function signIn(req: IncomingMessage, res: ServerResponse, context: MountContext, secure: boolean) {
    refuseCrossSite(req);
    const form = await readForm(req);
    const next = safeNext(form.get('next'));
    const token = (form.get('token') ?? '').trim();
    const again = (status: number, message: string) =>
      sendHtml(res, status, loginPage(pageContext(), { next, message }));
    if (token === '') return again(400, 'Paste a token to sign in.');
    if (token.length > MAX_TOKEN_CHARS)
      return again(400, 'That is longer than any token this server accepts.');
    let verified: Awaited<ReturnType<MountContext['verify']>>;
    try {
      verified = await context.verify(token);
    } catch (error) {
      // The authenticator's reasons are its own fixed words (never the token).
      const reason = error instanceof OAuthError ? error.message : 'it could not be checked';
      return again(401, `That token was not accepted: ${reason}.`);
    }
    if (!verified.scopes.includes('read')) {
      return again(
        403,
        `That token does not grant the read scope the dashboard needs (it grants: ${verified.scopes.join(', ') || 'nothing'}).`,
      );
    }
    const now = Date.now();
    const expiresAt = Math.min(
      now + SESSION_MS,
      verified.expiresAt === undefined ? Number.POSITIVE_INFINITY : verified.expiresAt * 1000,
    );
    if (expiresAt - now < 60_000) return again(401, 'That token expires within a minute; get a fresh one.');
    const value = sessions().seal({
      principal: verified.principal,
      scopes: [...verified.scopes],
      expiresAt,
      credential: verified.credential,
    });
    redirect(res, next, cookie(value, Math.floor((expiresAt - now) / 1000), secure));
  }

  /**
   * Works out who asks (`asking.viewer`, which the error page of a failed request names), signs in and
   * out, and hands every other request to the dashboard with its viewer.
   */
  async function guard(
    req: IncomingMessage,
    res: ServerResponse,
    context: MountContext,
    asking: { viewer?: Viewer | undefined },
  ): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const page = url.pathname.slice(DASHBOARD_PATH.length);
    const method = req.method ?? 'GET';
    const secure = context.publicUrl.protocol === 'https:';
    const clear = cookie('', 0, secure);

    let viewer: Viewer | undefined;
    let stale = false;
    if (context.caller !== undefined) {
      viewer = {
        principal: context.caller.principal,
        allPrincipals: false,
        scopes: context.authRequired ? context.caller.scopes : undefined,
      };
    } else {
      const found = sessionOf(req, context);
      stale = found.stale;
      if (found.session !== undefined) {
        viewer = {
          principal: found.session.principal,
          allPrincipals: false,
          scopes: found.session.scopes,
          session: true,
          expiresAt: found.session.expiresAt,
        };
      }
      // The transport counted callers it identified; these count against their principal, or the
      // address they come from until they sign in.
      const wait = context.take(viewer?.principal ?? `anonymous ${req.socket.remoteAddress ?? ''}`);
      if (wait > 0) {
        sendHtml(
          res,
          429,
          errorPage(pageContext(viewer), 429, `Too many requests; try again in ${wait} s.`),
          { 'retry-after': String(wait), connection: 'close' },
        );
        return;
      }
    }
    const staleCookie: Record<string, string> = stale ? { 'set-cookie': clear } : {};

    if (page === '/login') {
      if (!context.authRequired || viewer !== undefined) {
        return redirect(res, safeNext(url.searchParams.get('next')));
      }
      if (method === 'POST') return signIn(req, res, context, secure);
      if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'Method not allowed.');
      return sendHtml(
        res,
        200,
        loginPage(pageContext(), {
          next: safeNext(url.searchParams.get('next')),
          signedOut: url.searchParams.has('out'),
        }),
        staleCookie,
      );
    }
    if (page === '/logout') {
      if (method === 'POST') {
        refuseCrossSite(req);
        return redirect(res, `${DASHBOARD_PATH}/login?out`, clear);
      }
      if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'Method not allowed.');
      if (viewer?.session) return sendHtml(res, 200, signOutPage(pageContext(viewer)));
      return redirect(res, `${DASHBOARD_PATH}/login`, stale ? clear : undefined);
    }

    if (viewer === undefined && !page.startsWith('/assets/')) {
      const here = `${url.pathname}${url.search}`;
      if (isNavigation(req) && !/\/events$/.test(page)) {
        // Followed from another site: a SameSite=Strict cookie was held back; one hop from here sends it.
        const site = req.headers['sec-fetch-site'];
        if ((site === 'cross-site' || site === 'same-site') && !stale) {
          return sendHtml(res, 200, continuePage(pageContext(), safeNext(here)));
        }
        return redirect(
          res,
          `${DASHBOARD_PATH}/login?${new URLSearchParams({ next: safeNext(here) })}`,
          stale ? clear : undefined,
        );
      }
      return sendHtml(res, 401, errorPage(pageContext(), 401, 'Sign in to see the dashboard.'), {
        ...staleCookie,
        connection: 'close',
      });
    }
    if (viewer !== undefined && !may(viewer, 'read')) {
      throw new HttpError(403, 'The dashboard needs the read scope, which your token does not grant.');
    }
    asking.viewer = viewer;
    // Without a viewer only the assets get here (they hold no data); the dashboard refuses anything else.
    dashboard.handle(req, res, viewer ?? ANONYMOUS);
  }

  return {
    sessions,
    handle(req, res, context) {
      const asking: { viewer?: Viewer | undefined } = {};
      return guard(req, res, context, asking).catch((error: unknown) => {
        const status = error instanceof HttpError ? error.status : 500;
        if (status === 500) app.log.error({ err: error }, `dashboard: ${req.method} ${req.url}`);
        if (res.headersSent) {
          res.destroy();
          return;
        }
        const message =
          status === 500 ? 'Something went wrong; the server log has the details.' : (error as Error).message;
        // A request body left unread would stall the connection: answer and close it.
        sendHtml(res, status, errorPage(pageContext(asking.viewer), status, message), {
          connection: 'close',
          ...(status === 405 ? { allow: 'GET, HEAD, POST' } : {}),
        });
      });
    },
    close: () => dashboard.close(),
  };
}
