/**
 * Whether the environment asks for traces or metrics over OTLP, and starting them: the SDK and its
 * exporters are a dynamic import, so a server without `OTEL_*` variables never loads them
 * (test/telemetry-process.test.ts).
 */
import type { Registry } from 'prom-client';
import type { Tracing, TracingOptions } from './otel.js';
import type { OtelMetrics, OtelMetricsOptions } from './otel-metrics.js';

type Signal = 'traces' | 'metrics';

/**
 * A signal is on when an OTLP endpoint (the shared one or the signal's own) or
 * `OTEL_<SIGNAL>_EXPORTER=otlp` is set, unless `OTEL_SDK_DISABLED=true` or `OTEL_<SIGNAL>_EXPORTER=none`.
 * Other exporters (console, prometheus) are refused: stdout carries JSON-RPC, and `/metrics` is
 * already Prometheus's.
 */
function wanted(env: NodeJS.ProcessEnv, signal: Signal): { on: boolean; problem?: string } {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return { on: false };
  const SIGNAL = signal.toUpperCase();
  const exporter = env[`OTEL_${SIGNAL}_EXPORTER`]?.trim().toLowerCase();
  if (exporter === 'none') return { on: false };
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp') {
    return {
      on: false,
      problem: `OTEL_${SIGNAL}_EXPORTER=${exporter} is not supported (only otlp${signal === 'traces' ? ': stdout carries JSON-RPC' : '; Prometheus scrapes /metrics'}); ${signal} are off`,
    };
  }
  const protocol = (env[`OTEL_EXPORTER_OTLP_${SIGNAL}_PROTOCOL`] || env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  const on =
    exporter === 'otlp' ||
    Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT) ||
    Boolean(env[`OTEL_EXPORTER_OTLP_${SIGNAL}_ENDPOINT`]);
  if (on && protocol !== undefined && protocol !== '' && protocol !== 'http/json') {
    return {
      on: false,
      problem: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported (only http/json); ${signal} are off`,
    };
  }
  return { on };
}

export const tracesWanted = (env: NodeJS.ProcessEnv) => wanted(env, 'traces');
export const metricsWanted = (env: NodeJS.ProcessEnv) => wanted(env, 'metrics');

/** Starts tracing when the environment asks for it (or `options.exporter` is given); else does nothing. */
export async function setupTracing(
  env: NodeJS.ProcessEnv,
  options: TracingOptions,
  warn: (message: string) => void = () => undefined,
): Promise<Tracing | undefined> {
  const want = tracesWanted(env);
  if (want.problem !== undefined) warn(want.problem);
  if (!want.on && options.exporter === undefined) return undefined;
  const { startTracing } = await import('./otel.js');
  return startTracing(env, options);
}

/**
 * Exports the Prometheus registry's instruments over OTLP when the environment asks for metrics (or
 * `options.exporter` is given); else does nothing and `registry` is never called (so a stdio server
 * never loads prom-client).
 */
export async function setupOtelMetrics(
  env: NodeJS.ProcessEnv,
  registry: () => Promise<Registry>,
  options: OtelMetricsOptions,
  warn: (message: string) => void = () => undefined,
): Promise<OtelMetrics | undefined> {
  const want = metricsWanted(env);
  if (want.problem !== undefined) warn(want.problem);
  if (!want.on && options.exporter === undefined) return undefined;
  const [{ startOtelMetrics }, reg] = await Promise.all([import('./otel-metrics.js'), registry()]);
  return startOtelMetrics(env, reg, options);
}
