import { afterEach, describe, expect, it } from 'vitest';
import { Metrics } from './metrics.js';
import { createPrometheus, type MetricSources, type Prometheus } from './prometheus.js';

// Labels the protocol cannot reach with made-up text today (outcomes, states, principals, stores,
// status classes) are bounded all the same: a value that one day comes from a client, a store or a
// JWT claim must not be able to grow the registry. test/observability.test.ts floods the MCP side.

let open: Prometheus | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

// Distinct in their first characters, so cutting them does not make them one.
const long = (c: string, i: number) => `${i}-${c.repeat(1_000)}`;

function registry(sources: Partial<MetricSources> = {}): Prometheus {
  open = createPrometheus(
    {
      executionsByState: async () => ({}),
      taskQueueDepth: async () => 0,
      sessionsByPrincipal: () => new Map(),
      store: async () => undefined,
      ...sources,
    },
    new Metrics(),
  );
  return open;
}

/** The label values of one metric's series in an exposition. */
function valuesOf(text: string, metric: string, label: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`))
    .map((line) => new RegExp(`${label}="([^"]*)"`).exec(line)?.[1] ?? '');
}

describe('every label is bounded', () => {
  it('values are cut to 200 characters and `…`; past 200 distinct ones the rest count as `other`', async () => {
    const states = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [long('s', i), 1]));
    const principals = new Map(Array.from({ length: 300 }, (_, i) => [long('p', i), 1]));
    const p = registry({
      executionsByState: async () => states,
      childrenByState: async () => states,
      sessionsByPrincipal: () => principals,
    });
    for (let i = 0; i < 300; i++) {
      p.sink.toolCall('workflow_get', long('o', i), 0.001);
      p.sink.step(long('x', i), 0.001);
      p.sink.commandCall(long('c', i), 0.001);
      p.sink.transactionRetry(long('r', i) as 'sqlite');
    }
    const { body } = await p.scrape();
    const checks: [string, string][] = [
      ['workflowlookup_tool_calls_total', 'outcome'],
      ['workflowlookup_step_duration_seconds_count', 'outcome'],
      ['workflowlookup_command_calls_total', 'status'],
      ['workflowlookup_store_transaction_retries_total', 'store'],
      ['workflowlookup_executions', 'state'],
      ['workflowlookup_child_executions', 'state'],
      ['workflowlookup_http_sessions', 'principal'],
    ];
    for (const [metric, label] of checks) {
      const values = valuesOf(body, metric, label);
      // 200 kept (the store label's first two are sqlite and postgres), and `other`.
      expect(new Set(values).size, metric).toBe(201);
      expect(values, metric).toContain('other');
      expect(Math.max(...values.map((v) => v.length)), metric).toBe(201);
    }
    expect(valuesOf(body, 'workflowlookup_tool_calls_total', 'outcome')).toContain(`0-${'o'.repeat(198)}…`);
  });

  it('names that share their first 200 characters share a series', async () => {
    const p = registry();
    p.sink.request('tools/call', `${'t'.repeat(200)}-one`, false, 0.001);
    p.sink.request('tools/call', `${'t'.repeat(200)}-two`, true, 0.001);
    const { body } = await p.scrape();
    expect(body).toContain(
      `workflowlookup_mcp_requests_total{method="tools/call",tool="${'t'.repeat(200)}…"} 2`,
    );
    expect(body).toContain(
      `workflowlookup_mcp_request_errors_total{method="tools/call",tool="${'t'.repeat(200)}…"} 1`,
    );
  });
});
