/**
 * Whether the environment asks for traces, and starting them: the SDK and its exporter are a dynamic
 * import, so a server without `OTEL_*` variables never loads them (test/telemetry-off.test.ts).
 */
import type { Tracing, TracingOptions } from './otel.js';

/**
 * Traces are on when an OTLP endpoint or `OTEL_TRACES_EXPORTER=otlp` is set, unless
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Other exporters (console) are refused: stdout
 * carries JSON-RPC.
 */
export function tracesWanted(env: NodeJS.ProcessEnv): { on: boolean; problem?: string } {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return { on: false };
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return { on: false };
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp') {
    return {
      on: false,
      problem: `OTEL_TRACES_EXPORTER=${exporter} is not supported (only otlp: stdout carries JSON-RPC); traces are off`,
    };
  }
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  const on =
    exporter === 'otlp' ||
    Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT) ||
    Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (on && protocol !== undefined && protocol !== '' && protocol !== 'http/json') {
    return {
      on: false,
      problem: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported (only http/json); traces are off`,
    };
  }
  return { on };
}

/** Starts tracing when the environment asks for it (or `options.exporter` is given); else does nothing. */
export async function setupTracing(
  env: NodeJS.ProcessEnv,
  options: TracingOptions,
  warn: (message: string) => void = () => undefined,
): Promise<Tracing | undefined> {
  const wanted = tracesWanted(env);
  if (wanted.problem !== undefined) warn(wanted.problem);
  if (!wanted.on && options.exporter === undefined) return undefined;
  const { startTracing } = await import('./otel.js');
  return startTracing(env, options);
}
