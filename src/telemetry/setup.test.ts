import { describe, expect, it } from 'vitest';
import { metricsWanted, tracesWanted } from './setup.js';

describe('which OTEL_* settings turn traces on', () => {
  it('an endpoint or OTEL_TRACES_EXPORTER=otlp; not OTEL_SERVICE_NAME alone; never when disabled', () => {
    expect(tracesWanted({})).toEqual({ on: false });
    expect(tracesWanted({ OTEL_SERVICE_NAME: 'x' })).toEqual({ on: false });
    expect(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({ on: true });
    expect(tracesWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual({
      on: true,
    });
    expect(tracesWanted({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({ on: true });
    expect(tracesWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })).toEqual({
      on: false,
    });
    expect(tracesWanted({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })).toEqual({
      on: false,
    });
  });

  it('says why an exporter or protocol it cannot serve leaves traces off', () => {
    expect(tracesWanted({ OTEL_TRACES_EXPORTER: 'console' })).toEqual({
      on: false,
      problem: expect.stringMatching(/console is not supported \(only otlp: stdout carries JSON-RPC\)/),
    });
    expect(
      tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).toEqual({ on: false, problem: expect.stringMatching(/grpc is not supported \(only http\/json\)/) });
  });

  it('metrics follow the same rules with their own variables; the shared endpoint turns on both', () => {
    expect(metricsWanted({})).toEqual({ on: false });
    expect(metricsWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({ on: true });
    expect(metricsWanted({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' })).toEqual({
      on: true,
    });
    expect(metricsWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual({
      on: false,
    });
    expect(metricsWanted({ OTEL_METRICS_EXPORTER: 'otlp' })).toEqual({ on: true });
    // Traces to the collector, metrics left to Prometheus scraping /metrics.
    const split = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_METRICS_EXPORTER: 'none' };
    expect(metricsWanted(split)).toEqual({ on: false });
    expect(tracesWanted(split)).toEqual({ on: true });
    expect(metricsWanted({ OTEL_METRICS_EXPORTER: 'prometheus' })).toEqual({
      on: false,
      problem: expect.stringMatching(
        /prometheus is not supported \(only otlp; Prometheus scrapes \/metrics\)/,
      ),
    });
    expect(
      metricsWanted({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      }),
    ).toEqual({ on: false, problem: expect.stringMatching(/http\/protobuf is not supported/) });
  });
});
