/**
 * The Prometheus registry behind `/metrics` (prom-client): counters and histograms the code feeds
 * through metrics.ts, gauges read from the running server when scraped, and prom-client's default
 * process and Node.js metrics (memory, CPU, event loop lag, GC). Loaded only by `serve --http`.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { echoedName, type Metrics, type MetricsSink } from './metrics.js';

/** What the gauges read at scrape time; each may fail (the store is down), leaving the gauge empty. */
export interface MetricSources {
  executionsByState(): Promise<Record<string, number>>;
  /** Child executions (those a delegating step created), by state; absent: the gauge stays empty. */
  childrenByState?(): Promise<Record<string, number>>;
  /** MCP tasks not finished (working or waiting for input). */
  taskQueueDepth(): Promise<number>;
  sessionsByPrincipal(): ReadonlyMap<string, number>;
  /** The store's own figures: SQLite's WAL size, PostgreSQL's pool. */
  store(): Promise<StoreFigures | undefined>;
  /** Each git source (by its repository and ref): a refused commit, a failing sync; absent: no gauges. */
  gitSources?(): readonly { source: string; refused: boolean; failing: boolean }[];
}

export interface StoreFigures {
  walBytes?: number | undefined;
  pool?: { total: number; idle: number; waiting: number; max: number } | undefined;
}

export const PREFIX = 'workflowlookup_';
/** Step and request latencies: sub-millisecond steps up to command steps that wait on an API. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Distinct values a label may take before the rest count as `other` (principals, say, are many). */
const MAX_LABEL_VALUES = 200;

/**
 * One label's values, bounded: each cut as echoed names are (`echoedName`), the first MAX_LABEL_VALUES
 * distinct ones kept and the rest counted as `other`. prom-client keeps every label set it was given
 * for the life of the process, and a scrape writes each one out with every series of its metric, so a
 * label's values are what a client could make the server hold and write (megabyte method names once
 * held 185 MB and stalled /metrics). Every label whose values come from outside this file goes
 * through one, whatever those values are today.
 */
function bounded(): (value: string) => string {
  const seen = new Set<string>();
  return (raw) => {
    const value = echoedName(raw);
    if (seen.has(value)) return value;
    if (seen.size >= MAX_LABEL_VALUES) return 'other';
    seen.add(value);
    return value;
  };
}

export interface Prometheus {
  registry: Registry;
  sink: MetricsSink;
  /** The exposition: content type and text. */
  scrape(): Promise<{ contentType: string; body: string }>;
  /** Stops recording (the sink is removed). */
  close(): void;
}

export function createPrometheus(sources: MetricSources, metrics: Metrics): Prometheus {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // One bound per label: a method and its tool are counted under the same values in every metric.
  const method = bounded();
  const tool = bounded();
  const principal = bounded();
  const toolOutcome = bounded();
  const stepOutcome = bounded();
  const state = bounded();
  const status = bounded();
  const store = bounded();

  const requests = new Counter({
    name: `${PREFIX}mcp_requests_total`,
    help: 'MCP requests answered, by JSON-RPC method and tool (tools/call and direct tool methods)',
    labelNames: ['method', 'tool'],
    registers: [registry],
  });
  const requestErrors = new Counter({
    name: `${PREFIX}mcp_request_errors_total`,
    help: 'MCP requests answered with an error (a JSON-RPC error, or a tool result with isError)',
    labelNames: ['method', 'tool'],
    registers: [registry],
  });
  const requestSeconds = new Histogram({
    name: `${PREFIX}mcp_request_duration_seconds`,
    help: 'Time from an MCP request read to its answer written, by method',
    labelNames: ['method'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const toolCalls = new Counter({
    name: `${PREFIX}tool_calls_total`,
    help: 'Tool calls, by tool and outcome (ok, or the error code answered)',
    labelNames: ['tool', 'outcome'],
    registers: [registry],
  });
  const toolSeconds = new Histogram({
    name: `${PREFIX}tool_call_duration_seconds`,
    help: 'Tool handler time, by tool',
    labelNames: ['tool'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const stepSeconds = new Histogram({
    name: `${PREFIX}step_duration_seconds`,
    help: 'Durable step submissions (workflow_next_step), by outcome: the step latency agents see',
    labelNames: ['outcome'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const retries = new Counter({
    name: `${PREFIX}store_transaction_retries_total`,
    help: 'Store transactions run again after a conflict (PostgreSQL serialization failure, deadlock, duplicate key)',
    labelNames: ['store'],
    registers: [registry],
  });
  const commandCalls = new Counter({
    name: `${PREFIX}command_calls_total`,
    help: "Command steps' HTTP calls, by status class (2xx, 4xx, 5xx) or error",
    labelNames: ['status'],
    registers: [registry],
  });
  const commandSeconds = new Histogram({
    name: `${PREFIX}command_call_duration_seconds`,
    help: "Command steps' HTTP call time (retries included)",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });

  new Gauge({
    name: `${PREFIX}executions`,
    help: 'Durable executions in the store, by state',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      this.reset();
      const counts = await sources.executionsByState().catch(() => undefined);
      for (const [name, n] of Object.entries(counts ?? {})) this.set({ state: state(name) }, n);
    },
  });
  new Gauge({
    name: `${PREFIX}child_executions`,
    help: 'Child executions in the store (created by delegating steps), by state',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      this.reset();
      const counts = await sources.childrenByState?.().catch(() => undefined);
      for (const [name, n] of Object.entries(counts ?? {})) this.set({ state: state(name) }, n);
    },
  });
  new Gauge({
    name: `${PREFIX}task_queue_depth`,
    help: 'MCP tasks not finished (working or waiting for input)',
    registers: [registry],
    async collect() {
      const depth = await sources.taskQueueDepth().catch(() => undefined);
      if (depth !== undefined) this.set(depth);
    },
  });
  new Gauge({
    name: `${PREFIX}http_sessions`,
    help: 'Open Streamable HTTP sessions (2025-11-25 era), by principal',
    labelNames: ['principal'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [who, n] of sources.sessionsByPrincipal()) this.set({ principal: principal(who) }, n);
    },
  });
  // Git sources are the operator's configuration, a handful: bounded all the same.
  const gitSource = bounded();
  new Gauge({
    name: `${PREFIX}git_source_refused_commit`,
    help: 'Per git source: 1 while its newest commit is refused (a file in it is broken) and the last good one is served',
    labelNames: ['source'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of sources.gitSources?.() ?? [])
        this.set({ source: gitSource(s.source) }, s.refused ? 1 : 0);
    },
  });
  new Gauge({
    name: `${PREFIX}git_source_sync_failing`,
    help: 'Per git source: 1 while its last sync failed (remote down, ref gone, over the size cap)',
    labelNames: ['source'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of sources.gitSources?.() ?? [])
        this.set({ source: gitSource(s.source) }, s.failing ? 1 : 0);
    },
  });
  let figures: Promise<StoreFigures | undefined> | undefined;
  // One store read per scrape, shared by the gauges below.
  const storeFigures = () => {
    figures ??= sources
      .store()
      .catch(() => undefined)
      .finally(() => setImmediate(() => (figures = undefined)));
    return figures;
  };
  new Gauge({
    name: `${PREFIX}sqlite_wal_bytes`,
    help: 'Size of the SQLite write-ahead log (checkpoints shrink it back); 0 with PostgreSQL',
    registers: [registry],
    async collect() {
      const wal = (await storeFigures())?.walBytes;
      if (wal !== undefined) this.set(wal);
    },
  });
  new Gauge({
    name: `${PREFIX}postgres_pool_connections`,
    help: 'PostgreSQL pool: connections open (total), idle, callers waiting for one (waiting), and the most allowed (max)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      this.reset();
      const pool = (await storeFigures())?.pool;
      if (pool === undefined) return;
      for (const state of ['total', 'idle', 'waiting', 'max'] as const) this.set({ state }, pool[state]);
    },
  });

  const sink: MetricsSink = {
    request(m, t, failed, seconds) {
      const labels = { method: method(m), tool: t === undefined ? '' : tool(t) };
      requests.inc(labels);
      if (failed) requestErrors.inc(labels);
      requestSeconds.observe({ method: labels.method }, seconds);
    },
    toolCall(t, errorCode, seconds) {
      const name = tool(t);
      toolCalls.inc({ tool: name, outcome: toolOutcome(errorCode ?? 'ok') });
      toolSeconds.observe({ tool: name }, seconds);
    },
    step(outcome, seconds) {
      stepSeconds.observe({ outcome: stepOutcome(outcome) }, seconds);
    },
    transactionRetry(name) {
      retries.inc({ store: store(name) });
    },
    commandCall(code, seconds) {
      commandCalls.inc({ status: status(code) });
      commandSeconds.observe(seconds);
    },
  };
  // Retries start at zero for both stores, so "no retries" is a series, not an absence.
  retries.inc({ store: store('sqlite') }, 0);
  retries.inc({ store: store('postgres') }, 0);
  const detach = metrics.attach(sink);
  return {
    registry,
    sink,
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    close() {
      detach();
    },
  };
}
