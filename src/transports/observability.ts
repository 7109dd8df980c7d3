/**
 * What operators point their tools at under `serve --http`: `/healthz` and `/readyz` for load
 * balancers, `/metrics` for Prometheus (on the MCP port behind the `admin` scope, and on a listener of
 * its own without authentication when WORKFLOWLOOKUP_METRICS_PORT is set). prom-client is loaded here,
 * never on the stdio path.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { App } from '../app.js';
import { ConfigError, integerSetting } from '../config.js';
import { Health, type ReadinessCheck } from '../telemetry/health.js';
import type { MetricSources, Prometheus } from '../telemetry/prometheus.js';
import type { Mount, RunningHttp } from './http.js';

/** Scopes that may read /metrics on the MCP port (`metrics`: a JWT scope for scrapers only). */
const METRICS_SCOPES = ['admin', 'metrics'];

export interface Observability {
  health: Health;
  /** For startHttp's `probes`: answers /healthz and /readyz. */
  probes: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** `/metrics` on the MCP port, behind its authentication. */
  metricsMount: Mount;
  /** The registry behind /metrics (exported over OTLP too when OTEL_* asks: telemetry/setup.ts). */
  registry: Registry;
  /** Tells the gauges about the running HTTP server (its sessions). */
  attach(http: RunningHttp): void;
  /** The separate metrics listener's base URL, when WORKFLOWLOOKUP_METRICS_PORT is set. */
  metricsUrl: string | undefined;
  close(): Promise<void>;
}

/** The readiness checks: the store answers with the schema this build expects; the workflows are loaded. */
export function readinessChecks(app: App): ReadinessCheck[] {
  let workflows: string | undefined = 'loading';
  app.services.registry.ready().then(
    () => {
      workflows = undefined;
    },
    (error: unknown) => {
      workflows = `loading failed: ${(error as Error)?.message ?? String(error)}`;
    },
  );
  return [
    {
      name: 'store',
      async check() {
        const store = await app.services.store();
        const figures = await store.figures?.();
        if (figures === undefined) {
          await store.schemaVersion();
          return undefined;
        }
        return figures.schemaVersion === figures.expectedSchemaVersion
          ? undefined
          : `schema version ${figures.schemaVersion}, this build expects ${figures.expectedSchemaVersion} (run the migrations: start one server of this version)`;
      },
    },
    { name: 'workflows', check: async () => workflows },
  ];
}

/** What the gauges read: the app's store and, under HTTP, its sessions. */
export function metricSources(app: App, sessions: () => ReadonlyMap<string, number>): MetricSources {
  return {
    async executionsByState() {
      const counts = await (await app.services.store()).countExecutions({});
      return Object.fromEntries(Object.entries(counts).filter(([, n]) => n !== undefined)) as Record<
        string,
        number
      >;
    },
    async childrenByState() {
      const counts = await (await app.services.store()).countChildren();
      return Object.fromEntries(Object.entries(counts).filter(([, n]) => n !== undefined)) as Record<
        string,
        number
      >;
    },
    async taskQueueDepth() {
      const store = await app.services.store();
      return (await store.listTasks({ statuses: ['working', 'input_required'], limit: 10_000 })).length;
    },
    sessionsByPrincipal: sessions,
    gitSources: () =>
      app.services.gitSources.status().map((s) => ({
        source: `${s.repository}#${s.ref}`,
        refused: s.broken !== undefined,
        failing: s.lastError !== undefined,
      })),
    async store() {
      const figures = await (await app.services.store()).figures?.();
      return figures && { walBytes: figures.walBytes, pool: figures.pool };
    },
  };
}

async function answerMetrics(prometheus: Prometheus, req: IncomingMessage, res: ServerResponse) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' });
    res.end();
    return;
  }
  const { contentType, body } = await prometheus.scrape();
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : body);
}

export async function startObservability(app: App): Promise<Observability> {
  const env = app.config.env;
  const health = new Health(readinessChecks(app));
  let http: RunningHttp | undefined;
  const { createPrometheus } = await import('../telemetry/prometheus.js');
  const prometheus = createPrometheus(
    metricSources(app, () => http?.sessionsByPrincipal() ?? new Map()),
    app.metrics,
  );

  const metricsMount: Mount = {
    async handle(req, res, context) {
      if (context.caller === undefined) {
        res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' });
        res.end('/metrics needs a bearer token with the admin (or metrics) scope\n');
        return;
      }
      if (!context.caller.scopes.some((s) => METRICS_SCOPES.includes(s))) {
        res.writeHead(403, {
          'www-authenticate': 'Bearer error="insufficient_scope", scope="admin"',
          'content-type': 'text/plain',
        });
        res.end('/metrics needs the admin (or metrics) scope\n');
        return;
      }
      await answerMetrics(prometheus, req, res);
    },
  };

  let server: Server | undefined;
  let metricsUrl: string | undefined;
  if (env.WORKFLOWLOOKUP_METRICS_PORT !== undefined && env.WORKFLOWLOOKUP_METRICS_PORT.trim() !== '') {
    const port = integerSetting(env.WORKFLOWLOOKUP_METRICS_PORT, 'WORKFLOWLOOKUP_METRICS_PORT', {
      min: 0,
      max: 65_535,
      fallback: 0,
    });
    const host = env.WORKFLOWLOOKUP_METRICS_HOST?.trim() || '127.0.0.1';
    const listening = createServer((req, res) => {
      if (health.handle(req, res)) return;
      if ((req.url ?? '/').split('?')[0] === '/metrics') {
        answerMetrics(prometheus, req, res).catch((error: unknown) => {
          app.log.error({ err: error }, 'metrics: the scrape failed');
          if (!res.headersSent) res.writeHead(500);
          res.end();
        });
        return;
      }
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('this listener serves /metrics, /healthz and /readyz\n');
    });
    await new Promise<void>((resolve, reject) => {
      const failed = (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'EADDRINUSE'
            ? new ConfigError(
                `port ${port} on ${host} (/metrics and the probes) is in use: choose another with WORKFLOWLOOKUP_METRICS_PORT, or leave it unset`,
              )
            : error,
        );
      listening.once('error', failed);
      listening.listen(port, host, () => {
        listening.off('error', failed);
        resolve();
      });
    });
    server = listening;
    const bound = (listening.address() as AddressInfo).port;
    metricsUrl = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  }

  return {
    health,
    probes: (req, res) => health.handle(req, res),
    metricsMount,
    registry: prometheus.registry,
    attach(running) {
      http = running;
    },
    metricsUrl,
    async close() {
      prometheus.close();
      if (server !== undefined) {
        const closing = new Promise<void>((resolve) => server?.close(() => resolve()));
        server.closeAllConnections();
        await closing;
      }
    },
  };
}

/** Seconds to keep serving after SIGTERM with /readyz at 503 (WORKFLOWLOOKUP_DRAIN_SECONDS, default 0). */
export function drainSeconds(env: NodeJS.ProcessEnv): number {
  return integerSetting(env.WORKFLOWLOOKUP_DRAIN_SECONDS, 'WORKFLOWLOOKUP_DRAIN_SECONDS', {
    min: 0,
    max: 3_600,
    fallback: 0,
  });
}
