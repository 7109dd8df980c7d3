/**
 * The web dashboard: executions, one execution live, runs, workflows with their diagrams. A plain
 * request handler, so `workflowlookup dashboard` serves it alone on loopback (serveDashboard) and an
 * HTTP transport can mount it under a path behind its own authentication, passing who asks with each
 * request. This file composes the parts: the router (router.ts), the controllers (controllers/), the
 * pages (pages/, one file each), form tokens (csrf.ts), assets (assets.ts) and live updates (live.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { localhostAllowedHostnames, validateHostHeader } from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import { ConfigError } from '../config.js';
import type { ExecutionQueries } from '../executions/execution-queries.js';
import { Assets, isAssetPath } from './assets.js';
import { approvalsController } from './controllers/approvals.js';
import type { ControllerDeps } from './controllers/controller-kit.js';
import { eventsController } from './controllers/events.js';
import { executionsController } from './controllers/executions.js';
import { tasksController } from './controllers/tasks.js';
import { workflowsController } from './controllers/workflows.js';
import { FormTokens } from './csrf.js';
import { type LiveOptions, LiveUpdates } from './live.js';
import { errorPage } from './pages/error-page.js';
import type { DrawDiagram, PageContext } from './pages/page-kit.js';
import { Redactor } from './redact.js';
import { HttpError, redirect, sendHtml } from './responses.js';
import { createRouter } from './router.js';
import { ANONYMOUS, OWNER, type Viewer } from './viewer.js';

export { HttpError } from './responses.js';
export type { Viewer } from './viewer.js';

export interface DashboardOptions {
  /** Path prefix when mounted (e.g. '/dashboard'); '' (default) serves at the root. */
  basePath?: string;
  /**
   * The read side (default: the app's execution service). The `dashboard` command passes the app's
   * read-only reader (app.services.readQueries).
   */
  queries?: () => Promise<ExecutionQueries>;
  live?: LiveOptions;
  /** Where dashboard.js and dashboard.css are (default: dist/dashboard in the package). */
  assetsDir?: string;
}

export interface Dashboard {
  /**
   * Serves one request (paths under basePath) for `viewer`. Default: the local user, who owns the data
   * dir and may look at every principal (the standalone dashboard). A mounting transport passes the
   * authenticated viewer, or ANONYMOUS: then only the assets are served, anything else answers 401.
   */
  handle(req: IncomingMessage, res: ServerResponse, viewer?: Viewer): void;
  /** Ends live streams and stops polling; call before closing the HTTP server. */
  close(): void;
}

export function createDashboard(app: App, options: DashboardOptions = {}): Dashboard {
  const base = options.basePath ?? '';
  if (base !== '' && !/^(\/[A-Za-z0-9._-]+)+$/.test(base))
    throw new Error(`invalid dashboard base path: ${base}`);
  const queries = options.queries ?? (async () => (await app.services.executions()).queries);
  const redact = Redactor.forEnvironment(app.config.dataDir, app.config.env, app.config.tokenSecret);
  const live = new LiveUpdates(queries, (t) => redact.text(t), {
    log: app.log,
    maxStreams: app.config.limits.streams,
    maxStreamsPerPrincipal: app.config.limits.streamsPerPrincipal,
    ...options.live,
  });
  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) =>
    sendHtml(res, status, redact.text(body), headers);
  const deps: ControllerDeps = {
    app,
    queries,
    live,
    forms: new FormTokens(app.config.tokenSecret),
    send,
    redirect: (res, location) => redirect(res, location),
    path: (p, params = {}) => {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
      const text = q.toString();
      return `${base}${p}${text ? `?${text}` : ''}`;
    },
  };
  const route = createRouter(base, {
    executions: executionsController(deps),
    tasks: tasksController(deps),
    workflows: workflowsController(deps),
    events: eventsController(deps),
    approvals: approvalsController(deps),
    assets: new Assets(options.assetsDir ?? join(app.config.packageRoot, 'dist', 'dashboard')),
    redirect: deps.redirect,
  });

  // The diagram renderer (with dagre) loads on first use, so `serve` never parses it.
  let drawing: Promise<DrawDiagram> | undefined;
  const draw = () => {
    drawing ??= import('./svg.js').then((m) => m.diagramSvg);
    return drawing;
  };
  const undrawn: DrawDiagram = () => '';

  return {
    handle(req, res, asking = OWNER) {
      // The stylesheet, script and icon hold no data: the sign-in page needs them before anyone is known.
      const asset = isAssetPath(req.url, base);
      const viewer = asset ? ANONYMOUS : asking;
      const ctx: PageContext = { base, viewer, redact, draw: undrawn, now: Date.now() };
      if (!asset && viewer.principal === '') {
        send(res, 401, errorPage(ctx, 401, 'Sign in to see the dashboard.'));
        return;
      }
      draw()
        .then((drawn) => route(req, res, { ...ctx, draw: drawn }))
        .catch((error: unknown) => {
          const status = error instanceof HttpError ? error.status : 500;
          if (status === 500) app.log.error({ err: error }, `dashboard: ${req.method} ${req.url}`);
          if (res.headersSent) {
            res.destroy();
            return;
          }
          // A request body left unread would stall the connection: answer and close it.
          send(
            res,
            status,
            errorPage(
              ctx,
              status,
              status === 500
                ? 'Something went wrong; the server log has the details.'
                : (error as Error).message,
            ),
            status === 405 ? { allow: 'GET, HEAD, POST', connection: 'close' } : { connection: 'close' },
          );
        });
    },
    close() {
      live.close();
    },
  };
}

export interface RunningDashboard {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves a dashboard alone on loopback. Requests whose Host is not a loopback name are refused (421), so
 * a web page elsewhere cannot reach it through DNS rebinding.
 */
export function serveDashboard(dashboard: Dashboard, port: number): Promise<RunningDashboard> {
  const allowed = localhostAllowedHostnames();
  const server = createServer((req, res) => {
    if (!validateHostHeader(req.headers.host, allowed).ok) {
      res.writeHead(421, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end('Misdirected request: the dashboard answers to localhost only.\n');
      return;
    }
    dashboard.handle(req, res);
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE'
          ? new ConfigError(
              `port ${port} on 127.0.0.1 is in use: choose another with --port or WORKFLOWLOOKUP_DASHBOARD_PORT (0 picks a free one)`,
            )
          : error,
      );
    });
    server.listen(port, '127.0.0.1', () => {
      const { port: actual } = server.address() as AddressInfo;
      let closing: Promise<void> | undefined;
      resolve({
        url: `http://127.0.0.1:${actual}/`,
        port: actual,
        close: () => {
          // Live streams never end by themselves, so they are ended first; then idle keep-alive sockets.
          closing ??= new Promise<void>((done) => {
            dashboard.close();
            server.close(() => done());
            server.closeAllConnections();
          });
          return closing;
        },
      });
    });
  });
}
