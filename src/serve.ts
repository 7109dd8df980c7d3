/**
 * The process wiring of the composition root: what `serve` runs around the app `createApp` built (see
 * docs/architecture.md, "One composition root"). `serveHttp` is what `serve --http` serves: the
 * Streamable HTTP transport with `/metrics`, the load balancer probes and the dashboard mount;
 * `serveProcess` adds traces and metrics over OTLP, stdio, and the drain a stop signal starts, and
 * closes everything in order once the transports ended. The CLI calls `serveProcess` and the in-process
 * tests call it too (test/helpers/in-process-http.ts), so both run the same server.
 *
 * It sits above the transports and the dashboard (which adapt the app), which app.ts may not import: the
 * composition root's builders are in app.ts, the process around them here. The HTTP transport, prom-client
 * and the dashboard load only with HTTP, never on the stdio start-up path.
 */
import type { App } from './app.js';
import type { HttpSettings } from './config.js';
import { setupOtelMetrics, setupTracing } from './telemetry/setup.js';
import type { startHttp } from './transports/http.js';
import { drainSeconds, metricSources, type Observability } from './transports/observability.js';
import { serveAppOnStdio } from './transports/stdio.js';
import type { PreludeHandoff } from './transports/stdio-prelude.js';

type RunningHttp = Awaited<ReturnType<typeof startHttp>>;

/** What `serve --http` serves on an app: the transport and what operators point their tools at. */
export interface HttpServing {
  /** The MCP endpoint as bound (the real port when 0 was asked for). */
  url: string;
  port: number;
  /** The dashboard's address, when it is mounted (WORKFLOWLOOKUP_HTTP_DASHBOARD). */
  dashboardUrl: string | undefined;
  /** The separate metrics listener's `/metrics`, when WORKFLOWLOOKUP_METRICS_PORT is set. */
  metricsUrl: string | undefined;
  http: RunningHttp;
  /** /healthz, /readyz and the registry behind /metrics. */
  observability: Observability;
}

/**
 * Serves the app over Streamable HTTP as `serve --http` does: the probes (/healthz, /readyz) first,
 * `/metrics` behind the `admin` scope (and on its own listener with WORKFLOWLOOKUP_METRICS_PORT), the
 * dashboard at `/dashboard` when `settings.dashboard`, and the gauges told of the server's sessions.
 * Closing it is `http.close` then `observability.close` (serveProcess does both, then closes the app).
 */
export async function serveHttp(app: App, settings: HttpSettings): Promise<HttpServing> {
  const [{ startHttp }, { startObservability }] = await Promise.all([
    import('./transports/http.js'),
    import('./transports/observability.js'),
  ]);
  const observability = await startObservability(app);
  // The dashboard (and its pages) load only with --http, never on the stdio start-up path.
  const dashboard = settings.dashboard
    ? (await import('./dashboard/sign-in.js')).dashboardMount(app)
    : undefined;
  const { recordKeysMount, RECORD_KEYS_PATH } = await import('./transports/http/record-keys.js');
  const http = await startHttp(app, settings, {
    mounts: {
      '/metrics': observability.metricsMount,
      [RECORD_KEYS_PATH]: recordKeysMount(app.services.records.keyring),
      ...(dashboard ? { '/dashboard': dashboard } : {}),
    },
    probes: observability.probes,
  });
  observability.attach(http);
  return {
    url: http.url,
    port: http.port,
    dashboardUrl: dashboard ? String(new URL('/dashboard/', http.url)) : undefined,
    metricsUrl: observability.metricsUrl ? `${observability.metricsUrl}/metrics` : undefined,
    http,
    observability,
  };
}

export interface ProcessOptions {
  /** Serve Streamable HTTP with these settings (`serve --http`). */
  http?: HttpSettings | undefined;
  /**
   * Serve stdio (`serve`, or `serve --http --stdio`); `prelude` hands over what the stdio prelude read
   * and answered, taken just before stdio is served (the prelude answers until then).
   */
  stdio?: { prelude?: (() => PreludeHandoff) | undefined } | undefined;
  /** Told once HTTP listens, before anything else starts (the CLI announces the addresses). */
  onListening?: (http: HttpServing) => void;
  /** Told just before stdio is served (the CLI tells a person at a terminal what it waits for). */
  onStdio?: () => void;
}

export interface ProcessServing {
  /** What serves HTTP, when asked for. */
  http: HttpServing | undefined;
  /**
   * A stop signal: /readyz answers 503 at once; with WORKFLOWLOOKUP_DRAIN_SECONDS (HTTP only) the server
   * keeps serving that long (a load balancer stops sending work) before it closes. Called again, it
   * closes at once.
   */
  stop(): void;
  /** Closes at once, HTTP with `graceMs` for requests in flight (default 10 s), and waits for `done`. */
  close(graceMs?: number): Promise<void>;
  /**
   * Resolves once every transport ended (stdio's client left, HTTP closed) and everything opened was
   * closed: the metrics exported and stopped, the app, then the traces flushed.
   */
  done: Promise<void>;
}

/**
 * Serves the app until stopped: traces over OTLP when OTEL_* asks (started first, so that every
 * request is traced), HTTP (`options.http`), metrics over OTLP (the registry behind /metrics, or, stdio
 * only, one made for the exporter alone), stdio (`options.stdio`). The app warms up once HTTP listens;
 * on stdio it does once a client initialized. What happens to the process is the caller's decision.
 */
export async function serveProcess(app: App, options: ProcessOptions): Promise<ProcessServing> {
  const { config } = app;
  // OpenTelemetry's SDK is loaded only when OTEL_* variables ask for traces (telemetry/setup.ts).
  const tracing = await setupTracing(config.env, { version: config.version }, (m) => app.log.warn(m));
  const stops: ((graceMs?: number) => void)[] = [];
  const finished: Promise<void>[] = [];
  let http: HttpServing | undefined;
  if (options.http) {
    const serving = await serveHttp(app, options.http);
    http = serving;
    options.onListening?.(serving);
    let ended: () => void = () => undefined;
    finished.push(new Promise<void>((resolve) => (ended = resolve)));
    stops.push((graceMs) => void serving.http.close(graceMs).then(ended, ended));
    app.warmUp();
  }
  // Metrics over OTLP when OTEL_* asks for them: the registry behind /metrics, or (stdio only) one
  // made for the exporter alone; neither prom-client nor the SDK is loaded otherwise.
  const otelMetrics = await setupOtelMetrics(
    config.env,
    async () =>
      http?.observability.registry ??
      (await import('./telemetry/prometheus.js')).createPrometheus(
        metricSources(app, () => new Map()),
        app.metrics,
      ).registry,
    { version: config.version },
    (m) => app.log.warn(m),
  );
  if (options.stdio) {
    options.onStdio?.();
    const stdio = serveAppOnStdio(app, {
      closeApp: !options.http,
      ...(options.stdio.prelude ? { prelude: options.stdio.prelude() } : {}),
    });
    finished.push(stdio.done);
    // With HTTP as well, the end of stdin ends only the stdio client's connection.
    stops.push(stdio.stop);
  }

  const done = (async () => {
    await Promise.all(finished);
    // The metrics as they stand are exported while the store their gauges read is still open.
    await otelMetrics?.shutdown().catch((error: unknown) => app.log.warn(`metrics: ${String(error)}`));
    await http?.observability.close();
    await app.close();
    // Spans still buffered are exported before the process ends.
    await tracing?.shutdown().catch((error: unknown) => app.log.warn(`traces: ${String(error)}`));
  })();

  const stopNow = (graceMs?: number) => {
    for (const s of stops) s(graceMs);
  };
  const drainMs = options.http ? drainSeconds(config.env) * 1000 : 0;
  let draining: NodeJS.Timeout | undefined;
  const stop = () => {
    http?.observability.health.drain();
    if (drainMs > 0 && draining === undefined) {
      app.log.info(`draining: closing in ${drainMs / 1000} s (signal again to close now)`);
      draining = setTimeout(stopNow, drainMs);
      return;
    }
    clearTimeout(draining);
    stopNow();
  };
  return {
    http,
    stop,
    close: async (graceMs) => {
      clearTimeout(draining);
      stopNow(graceMs);
      await done;
    },
    done,
  };
}
