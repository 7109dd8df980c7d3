/**
 * Spans through the OpenTelemetry API. The API alone records nothing; the SDK and an exporter are
 * loaded (otel.ts, a dynamic import) only when an `OTEL_*` variable asks for traces, so a server
 * without them pays one boolean test per span site.
 */
import type * as Api from '@opentelemetry/api';
import type { Attributes, Context, Span } from '@opentelemetry/api';
import { echoedName } from './metrics.js';

export type { Attributes, Span };

/** The API's SpanKind values, so that this module needs no import of the API while traces are off. */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2 } as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];
/** SpanStatusCode.ERROR. */
const STATUS_ERROR = 2;

/**
 * The OpenTelemetry API, once otel.ts has installed the SDK behind it; undefined while traces are off
 * (then not even the API is loaded: only types are imported above).
 */
let api: typeof Api | undefined;

/** Whether spans are recorded (an SDK is installed); set by otel.ts. */
export function tracingEnabled(): boolean {
  return api !== undefined;
}

/** Called by otel.ts once its provider, propagator and context manager are the global ones (undefined: off). */
export function setTracingApi(next: typeof Api | undefined): void {
  api = next;
}

const tracer = (a: typeof Api) => a.trace.getTracer('workflowlookup');

/** Keys of the attributes spans carry: what an operator filters on. Never a token or a secret. */
export const ATTR = {
  workflow: 'workflowlookup.workflow.id',
  execution: 'workflowlookup.execution.id',
  step: 'workflowlookup.step.id',
  principal: 'enduser.id',
  tool: 'gen_ai.tool.name',
  method: 'mcp.method.name',
  requestId: 'jsonrpc.request.id',
  session: 'mcp.session.id',
  correlation: 'workflowlookup.correlation_id',
  check: 'workflowlookup.check.name',
  approval: 'workflowlookup.approval.id',
  /** On a span link to a parent's delegating step: the child's name there. */
  child: 'workflowlookup.delegation.child',
} as const;

/** Attributes without the undefined ones (the API drops them anyway; this keeps types exact). */
function clean(attributes: Record<string, string | number | boolean | undefined>): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * Runs `fn` in a span that ends when it settles; a thrown error marks the span failed. Without an SDK,
 * `fn` runs as it is, given no span.
 */
export function inSpan<T>(
  name: string,
  attributes: Record<string, string | number | boolean | undefined>,
  fn: (span: Span | undefined) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (api === undefined) return fn(undefined);
  return tracer(api).startActiveSpan(name, { kind, attributes: clean(attributes) }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** `inSpan` for synchronous work (a validation check). */
export function inSpanSync<T>(
  name: string,
  attributes: Record<string, string | number | boolean | undefined>,
  fn: (span: Span | undefined) => T,
): T {
  if (api === undefined) return fn(undefined);
  return tracer(api).startActiveSpan(name, { attributes: clean(attributes) }, (span) => {
    try {
      return fn(span);
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Marks a span failed with what was thrown (its message only: a stack says nothing to an operator). */
export function failed(span: Span | undefined, error: unknown): void {
  if (span === undefined) return;
  const message = error instanceof Error ? error.message : String(error);
  span.recordException({ name: (error as Error)?.name ?? 'Error', message });
  span.setStatus({ code: STATUS_ERROR, message });
}

/**
 * What went wrong, by a JSON-RPC answer, for its request span's status; undefined when it succeeded.
 * A JSON-RPC error gives its message; a tools/call result with `isError` gives the tool error's
 * message (`structuredContent.error.message`, the one a direct call's JSON-RPC error carries), else
 * the first line of its first text (a result made by the SDK), cut as echoed names are: the span
 * says what the tool span says, not merely that the result was an error.
 */
export function answerFailure(answer: Record<string, unknown>): string | undefined {
  const error = answer.error as { message?: unknown } | undefined;
  if (error !== undefined) return String(error.message);
  const result = answer.result as
    | { isError?: unknown; structuredContent?: unknown; content?: unknown }
    | undefined;
  if (result?.isError !== true) return undefined;
  const structured = (result.structuredContent as { error?: { message?: unknown } } | undefined)?.error;
  if (typeof structured?.message === 'string') return structured.message;
  const first = Array.isArray(result.content)
    ? (result.content[0] as { text?: unknown } | undefined)
    : undefined;
  const line = typeof first?.text === 'string' ? (first.text.split('\n', 1)[0] ?? '') : '';
  return line === '' ? 'tool error' : echoedName(line);
}

/** A span whose end is up to the caller (an MCP request ends when its answer is written). */
export interface OpenSpan {
  span: Span;
  context: Context;
  /** Runs `fn` with this span as the active one, so spans it starts (and their awaits) are children. */
  run<T>(fn: () => T): T;
  end(error?: string): void;
}

/** The W3C trace context a carrier (HTTP headers, an MCP `_meta`) names, over the active context. */
function parentFrom(a: typeof Api, carrier: Record<string, unknown> | undefined): Context {
  const active = a.context.active();
  if (carrier === undefined || typeof carrier.traceparent !== 'string') return active;
  return a.propagation.extract(active, carrier, {
    keys: (c) => Object.keys(c),
    get: (c, key) => {
      const value = c[key];
      return typeof value === 'string' ? value : undefined;
    },
  });
}

/**
 * Starts the span of one MCP request, as a child of the trace context in its `_meta` (`traceparent`,
 * `tracestate`) when there is one, else of the active context (an HTTP request's headers).
 */
export function startRequestSpan(
  name: string,
  attributes: Record<string, string | number | boolean | undefined>,
  meta: Record<string, unknown> | undefined,
): OpenSpan | undefined {
  const a = api;
  if (a === undefined) return undefined;
  const parent = parentFrom(a, meta);
  // The method is the client's text, megabytes if it likes, and the exporter queues thousands of
  // spans: the name and attributes keep what an error's details would quote of it.
  const bounded = Object.fromEntries(
    Object.entries(attributes).map(([key, value]) => [
      key,
      typeof value === 'string' ? echoedName(value) : value,
    ]),
  );
  const span = tracer(a).startSpan(
    echoedName(name),
    { kind: SpanKind.SERVER, attributes: clean(bounded) },
    parent,
  );
  const ctx = a.trace.setSpan(parent, span);
  return {
    span,
    context: ctx,
    run: (fn) => a.context.with(ctx, fn),
    end(error) {
      if (error !== undefined) span.setStatus({ code: STATUS_ERROR, message: error });
      span.end();
    },
  };
}

/** Runs `fn` in the trace context of incoming HTTP headers (`traceparent`, `tracestate`), if any. */
export function withIncomingHeaders<T>(headers: Record<string, unknown>, fn: () => T): T {
  if (api === undefined || typeof headers.traceparent !== 'string') return fn();
  return api.context.with(parentFrom(api, headers), fn);
}

/** Adds the active trace context to outgoing HTTP headers (a command step's call). */
export function injectTraceHeaders(headers: Record<string, string>): void {
  api?.propagation.inject(api.context.active(), headers);
}

/** Sets attributes on the active span (the request's, or a step's), for what becomes known later. */
export function annotate(attributes: Record<string, string | number | boolean | undefined>): void {
  api?.trace.getActiveSpan()?.setAttributes(clean(attributes));
}

/** Records an event (an approval requested or decided) on the active span, with its attributes. */
export function spanEvent(
  name: string,
  attributes: Record<string, string | number | boolean | undefined>,
): void {
  api?.trace.getActiveSpan()?.addEvent(name, clean(attributes));
}

/**
 * The active span's W3C trace context as a `traceparent` string (`00-<trace id>-<span id>-<flags>`),
 * to keep with what a span creates and a later trace links back to (a child execution keeps the span
 * that created it: its steps' spans link to it, long after it ended). Undefined while traces are off.
 */
export function currentTraceparent(): string | undefined {
  if (api === undefined) return undefined;
  const span = api.trace.getSpan(api.context.active());
  if (span === undefined) return undefined;
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!api.trace.isSpanContextValid({ traceId, spanId, traceFlags })) return undefined;
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Links `span` to the span a kept `traceparent` names (see currentTraceparent), with attributes saying
 * what that span was. Nothing when traces are off, or the value is not a valid traceparent.
 */
export function linkSpan(
  span: Span | undefined,
  traceparent: unknown,
  attributes: Record<string, string | number | boolean | undefined>,
): void {
  if (api === undefined || span === undefined || typeof traceparent !== 'string') return;
  const parsed = TRACEPARENT.exec(traceparent);
  if (parsed === null) return;
  const context = {
    traceId: parsed[1] as string,
    spanId: parsed[2] as string,
    traceFlags: Number.parseInt(parsed[3] as string, 16),
    isRemote: true,
  };
  if (!api.trace.isSpanContextValid(context)) return;
  span.addLink({ context, attributes: clean(attributes) });
}

/** The active trace and span ids, for log lines. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  if (api === undefined) return undefined;
  const span = api.trace.getSpan(api.context.active());
  if (span === undefined) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
