import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { specTypeSchemas } from '@modelcontextprotocol/client';
import {
  AggregationTemporality,
  DataPointType,
  type HistogramMetricData,
  InMemoryMetricExporter,
  type MetricData,
  type SumMetricData,
} from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { Metrics } from '../src/telemetry/metrics.js';
import { startOtelMetrics } from '../src/telemetry/otel-metrics.js';
import { createPrometheus, type MetricSources } from '../src/telemetry/prometheus.js';
import { setupOtelMetrics } from '../src/telemetry/setup.js';
import { inProcessClient } from './helpers/in-process.js';
import { callTool, sandbox, tokenOf, twoSteps } from './helpers/server.js';

// The instruments of /metrics exported through OpenTelemetry: the prom-client registry is read by the
// SDK at each export (one set of definitions), here into an in-memory exporter, after a real step
// through the MCP protocol (in-process SDK client).

const WORKFLOW = twoSteps('metered', 'Metered');

const SOURCES: MetricSources = {
  executionsByState: async () => ({ running: 2, completed: 5 }),
  taskQueueDepth: async () => 1,
  sessionsByPrincipal: () => new Map(),
  store: async () => ({ walBytes: 4096 }),
};

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const byName = (metrics: MetricData[], name: string) => {
  const found = metrics.find((m) => m.descriptor.name === name);
  expect(found, name).toBeDefined();
  return found as MetricData;
};

describe('metrics over OTLP (OpenTelemetry SDK reading the Prometheus registry)', () => {
  it("a step's latency histogram, the request counter and the gauges arrive as OTel data", async () => {
    const sb = sandbox();
    cleanups.push(() => sb.cleanup());
    writeFileSync(join(sb.runtime, 'metered.yaml'), WORKFLOW);
    const { client, close, app } = await inProcessClient(sb);
    cleanups.push(close);
    // The app's own instruments record into this registry (one per app, never a process-wide one).
    const prometheus = createPrometheus(SOURCES, app.metrics);
    cleanups.push(() => prometheus.close());
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const otel = startOtelMetrics({ OTEL_SERVICE_NAME: 'wl-metrics' }, prometheus.registry, {
      version: 'test',
      exporter,
      intervalMs: 3_600_000,
    });
    cleanups.push(() => otel.shutdown());

    const started = await callTool(client, 'workflow_start', { workflow_id: 'metered' });
    await callTool(client, 'workflow_next_step', { token: tokenOf(started), output: { summary: 'done' } });

    await otel.forceFlush();
    const exported = exporter.getMetrics().at(-1);
    expect(exported?.resource.attributes['service.name']).toBe('wl-metrics');
    const metrics = exported?.scopeMetrics.flatMap((s) => s.metrics) ?? [];

    const step = byName(metrics, 'workflowlookup_step_duration_seconds') as HistogramMetricData;
    expect(step.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(step.descriptor.unit).toBe('s');
    // The submission moved to the next step: outcome `step`.
    const advanced = step.dataPoints.find((p) => p.attributes.outcome === 'step');
    expect(advanced?.value.count).toBe(1);
    // prom-client's buckets, as boundaries and per-bucket counts (+Inf last) that add up to the count.
    expect(advanced?.value.buckets.boundaries[0]).toBe(0.0005);
    expect(advanced?.value.buckets.counts.length).toBe((advanced?.value.buckets.boundaries.length ?? 0) + 1);
    expect(advanced?.value.buckets.counts.reduce((a, b) => a + b, 0)).toBe(1);
    expect(advanced?.value.sum).toBeGreaterThan(0);

    const requests = byName(metrics, 'workflowlookup_mcp_requests_total') as SumMetricData;
    expect(requests.dataPointType).toBe(DataPointType.SUM);
    expect(requests.isMonotonic).toBe(true);
    const calls = requests.dataPoints.find(
      (p) => p.attributes.method === 'tools/call' && p.attributes.tool === 'workflow_next_step',
    );
    expect(calls?.value).toBe(1);

    const executions = byName(metrics, 'workflowlookup_executions');
    expect(executions.dataPointType).toBe(DataPointType.GAUGE);
    expect(executions.dataPoints.map((p) => [p.attributes.state, p.value])).toEqual(
      expect.arrayContaining([
        ['running', 2],
        ['completed', 5],
      ]),
    );
    // prom-client's process metrics come along (memory), under their usual names.
    expect(byName(metrics, 'process_resident_memory_bytes').dataPoints.length).toBe(1);
  });

  it('made-up methods and tools arrive as one `unknown` attribute value; no attribute is longer than an echoed name', async () => {
    const sb = sandbox();
    cleanups.push(() => sb.cleanup());
    const { client, close, app } = await inProcessClient(sb);
    cleanups.push(close);
    const prometheus = createPrometheus(SOURCES, app.metrics);
    cleanups.push(() => prometheus.close());
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const otel = startOtelMetrics({}, prometheus.registry, {
      version: 'test',
      exporter,
      intervalMs: 3_600_000,
    });
    cleanups.push(() => otel.shutdown());
    // 20 methods and 20 tools nobody serves, 50 KB each and each distinct.
    for (let i = 0; i < 20; i++) {
      await expect(
        client.request({ method: `${'m'.repeat(50_000)}${i}` }, specTypeSchemas.EmptyResult),
      ).rejects.toMatchObject({ code: -32601 });
      await expect(
        client.request(
          { method: 'tools/call', params: { name: `${'t'.repeat(50_000)}${i}`, arguments: {} } },
          specTypeSchemas.CallToolResult,
        ),
      ).rejects.toMatchObject({ code: -32602 });
    }
    await callTool(client, 'workflow_list', {});

    await otel.forceFlush();
    const metrics =
      exporter
        .getMetrics()
        .at(-1)
        ?.scopeMetrics.flatMap((s) => s.metrics) ?? [];
    const requests = byName(metrics, 'workflowlookup_mcp_requests_total') as SumMetricData;
    const count = (method: string, tool: string) =>
      requests.dataPoints.find((p) => p.attributes.method === method && p.attributes.tool === tool)?.value;
    expect(count('unknown', '')).toBe(20);
    expect(count('tools/call', 'unknown')).toBe(20);
    expect(count('tools/call', 'workflow_list')).toBe(1);
    const values = metrics.flatMap((m) =>
      (m.dataPoints as { attributes: Record<string, unknown> }[]).flatMap((p) => Object.values(p.attributes)),
    );
    expect(Math.max(...values.map((v) => String(v).length))).toBeLessThanOrEqual(201);
  });

  it('off unless OTEL_* asks: the registry is not even asked for', async () => {
    let asked = 0;
    const registry = async () => {
      asked++;
      return createPrometheus(SOURCES, new Metrics()).registry;
    };
    expect(await setupOtelMetrics({}, registry, { version: 't' })).toBeUndefined();
    expect(await setupOtelMetrics({ OTEL_SERVICE_NAME: 'x' }, registry, { version: 't' })).toBeUndefined();
    const warnings: string[] = [];
    expect(
      await setupOtelMetrics({ OTEL_METRICS_EXPORTER: 'prometheus' }, registry, { version: 't' }, (m) =>
        warnings.push(m),
      ),
    ).toBeUndefined();
    expect(warnings).toEqual([expect.stringMatching(/OTEL_METRICS_EXPORTER=prometheus is not supported/)]);
    expect(asked).toBe(0);
  });
});
