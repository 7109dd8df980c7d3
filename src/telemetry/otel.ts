/**
 * The OpenTelemetry SDK, loaded only when traces are configured (setup.ts imports this module
 * dynamically): a tracer provider with the service's resource, W3C trace context propagation, an
 * AsyncLocalStorage context manager (so a span's children are found across awaits), and the OTLP/HTTP
 * exporter, which reads its endpoint, headers and timeout from the standard `OTEL_EXPORTER_OTLP_*`
 * variables itself. Sampling follows `OTEL_TRACES_SAMPLER` (read by the provider).
 */
import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { setRequestScopes } from './context.js';
import { setTracingApi } from './trace.js';

export interface TracingOptions {
  /** The service's version, a resource attribute. */
  version: string;
  /** An exporter of the caller's (tests: an in-memory one); default OTLP over HTTP. */
  exporter?: SpanExporter;
  /** Export each span as it ends instead of in batches (tests). */
  immediate?: boolean;
}

export interface Tracing {
  /** Exports what is buffered and stops recording. */
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
}

export function startTracing(env: NodeJS.ProcessEnv, options: TracingOptions): Tracing {
  const exporter = options.exporter ?? new OTLPTraceExporter();
  const resource = resourceFromAttributes({
    'service.name': env.OTEL_SERVICE_NAME || 'workflowlookup',
    'service.version': options.version,
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [
      options.immediate ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contextManager);
  api.propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  api.trace.setGlobalTracerProvider(provider);
  setTracingApi(api);
  setRequestScopes(true);
  return {
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      setTracingApi(undefined);
      await provider.shutdown();
      // The API's globals can be set once; disabling them lets a test (or a restart in-process) set them again.
      api.trace.disable();
      api.propagation.disable();
      api.context.disable();
    },
  };
}
