/**
 * The Prometheus instruments exported over OTLP, loaded only when `OTEL_*` variables ask for metrics
 * (setup.ts imports this module dynamically). The prom-client registry (prometheus.ts) stays the one
 * definition of every instrument: an OpenTelemetry MetricProducer reads it at each export and hands
 * the SDK its counters, gauges and histograms as they are (same names, labels and buckets), so
 * `/metrics` and the OTLP collector always see the same series, with nothing kept twice.
 */
import { type Attributes, type HrTime, ValueType } from '@opentelemetry/api';
import { millisToHrTime } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import {
  detectResources,
  emptyResource,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AggregationTemporality,
  type CollectionResult,
  DataPointType,
  MeterProvider,
  type MetricData,
  type MetricProducer,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import type { MetricObjectWithValues, MetricValue, MetricValueWithName, Registry } from 'prom-client';

export interface OtelMetricsOptions {
  version: string;
  /** An exporter of the caller's (tests: an in-memory one); default OTLP over HTTP (OTEL_EXPORTER_OTLP_*). */
  exporter?: PushMetricExporter;
  /** Milliseconds between exports; default OTEL_METRIC_EXPORT_INTERVAL, else the SDK's 60 s. */
  intervalMs?: number;
}

export interface OtelMetrics {
  /** Exports now (a short stdio session exports before it exits). */
  forceFlush(): Promise<void>;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

type Labels = Partial<Record<string, string | number>>;

const attributesOf = (labels: Labels | undefined, leave?: string): Attributes => {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(labels ?? {}))
    if (key !== leave && value !== undefined) out[key] = value;
  return out;
};

const keyOf = (attributes: Attributes) => JSON.stringify(Object.entries(attributes).sort());

/**
 * One prom-client metric as OpenTelemetry data: counters are cumulative monotonic sums, gauges gauges,
 * histograms explicit-bucket histograms (prom-client's cumulative `le` buckets turned into per-bucket
 * counts). Summaries (prom-client's defaults have none) are left out.
 */
export function toMetricData(
  metric: MetricObjectWithValues<MetricValue<string>>,
  start: HrTime,
  end: HrTime,
) {
  const descriptor = { name: metric.name, description: metric.help, unit: '', valueType: ValueType.DOUBLE };
  const points = (values: MetricValue<string>[]) =>
    values.map((v) => ({
      startTime: start,
      endTime: end,
      attributes: attributesOf(v.labels),
      value: v.value,
    }));
  const type = String(metric.type);
  if (type === 'counter') {
    return {
      descriptor,
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.SUM,
      isMonotonic: true,
      dataPoints: points(metric.values),
    } satisfies MetricData;
  }
  if (type === 'gauge') {
    return {
      descriptor,
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.GAUGE,
      dataPoints: points(metric.values),
    } satisfies MetricData;
  }
  if (type !== 'histogram') return undefined;
  // One series per label set: its `_bucket` values (by `le`), `_sum` and `_count`.
  const series = new Map<
    string,
    { attributes: Attributes; buckets: [number, number][]; sum: number; count: number }
  >();
  for (const value of metric.values as MetricValueWithName<string>[]) {
    const attributes = attributesOf(value.labels, 'le');
    const key = keyOf(attributes);
    let s = series.get(key);
    if (s === undefined) {
      s = { attributes, buckets: [], sum: 0, count: 0 };
      series.set(key, s);
    }
    const name = value.metricName ?? '';
    if (name.endsWith('_bucket')) {
      const le = value.labels.le;
      s.buckets.push([
        le === '+Inf' || le === undefined ? Number.POSITIVE_INFINITY : Number(le),
        value.value,
      ]);
    } else if (name.endsWith('_sum')) s.sum = value.value;
    else if (name.endsWith('_count')) s.count = value.value;
  }
  return {
    descriptor: { ...descriptor, unit: metric.name.endsWith('_seconds') ? 's' : '' },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.HISTOGRAM,
    dataPoints: [...series.values()].map((s) => {
      const sorted = s.buckets.sort((a, b) => a[0] - b[0]);
      const boundaries = sorted.map(([le]) => le).filter((le) => Number.isFinite(le));
      const cumulative = sorted.map(([, n]) => n);
      if (cumulative.length === boundaries.length) cumulative.push(s.count);
      const counts = cumulative.map((n, i) => n - (i === 0 ? 0 : (cumulative[i - 1] ?? 0)));
      return {
        startTime: start,
        endTime: end,
        attributes: s.attributes,
        value: { buckets: { boundaries, counts }, sum: s.sum, count: s.count },
      };
    }),
  } satisfies MetricData;
}

/** The registry as a MetricProducer: read at each export, as a Prometheus scrape would. */
export function registryProducer(registry: Registry, version: string): MetricProducer {
  const start = millisToHrTime(Date.now());
  return {
    async collect(): Promise<CollectionResult> {
      const metrics = await registry.getMetricsAsJSON();
      const end = millisToHrTime(Date.now());
      return {
        // The reader keeps the provider's resource; this one is not used.
        resourceMetrics: {
          resource: emptyResource(),
          scopeMetrics: [
            {
              scope: { name: 'workflowlookup', version },
              metrics: metrics.flatMap((m) => toMetricData(m, start, end) ?? []),
            },
          ],
        },
        errors: [],
      };
    },
  };
}

export function startOtelMetrics(
  env: NodeJS.ProcessEnv,
  registry: Registry,
  options: OtelMetricsOptions,
): OtelMetrics {
  const resource = resourceFromAttributes({
    'service.name': env.OTEL_SERVICE_NAME || 'workflowlookup',
    'service.version': options.version,
  }).merge(detectResources({ detectors: [envDetector] }));
  const interval = options.intervalMs ?? (Number(env.OTEL_METRIC_EXPORT_INTERVAL) || undefined);
  const reader = new PeriodicExportingMetricReader({
    exporter: options.exporter ?? new OTLPMetricExporter(),
    metricProducers: [registryProducer(registry, options.version)],
    ...(interval !== undefined ? { exportIntervalMillis: interval } : {}),
    // The export timeout may not exceed the interval (a short test interval).
    ...(interval !== undefined ? { exportTimeoutMillis: Math.min(interval, 30_000) } : {}),
  });
  const provider = new MeterProvider({ resource, readers: [reader] });
  return {
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
