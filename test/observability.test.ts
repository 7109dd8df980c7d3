import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { loadConfig, loadHttpSettings } from '../src/config.js';
import { createTestDatabase, findTestServer, skipNotice } from '../src/store/postgres/test-database.js';
import { Health } from '../src/telemetry/health.js';
import { silentLogger } from '../src/telemetry/log.js';
import { startHttp } from '../src/transports/http.js';
import { addToken } from '../src/transports/http-auth.js';
import { startObservability } from '../src/transports/observability.js';
import { httpClient, post, STATELESS_ENVELOPE } from './helpers/http-server.js';
import { rawSession, staticTokens } from './helpers/in-process-http.js';
import { callTool, type Sandbox, sandbox, tokenOf, twoSteps } from './helpers/server.js';
import { validationWorkerUrl } from './helpers/validation-worker.js';

const DURABLE = twoSteps('observed', 'Observed');

const pg = await findTestServer();
if (pg.url === undefined) process.stderr.write(skipNotice('metrics on PostgreSQL', pg.why));

const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** `serve --http` as the CLI wires it: probes first, /metrics as a mount, the gauges told of the server. */
async function serveObserved(env: Record<string, string> = {}, files: Record<string, string> = {}) {
  const sb: Sandbox = sandbox();
  writeFileSync(join(sb.runtime, 'observed.yaml'), DURABLE);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(sb.runtime, name), text);
  const config = loadConfig({ env: { ...sb.env, WORKFLOWLOOKUP_RATE_LIMIT: '0', ...env }, cwd: sb.project });
  const app = createApp(config, {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
  });
  const observability = await startObservability(app);
  const http = await startHttp(app, loadHttpSettings(config, { port: '0' }), {
    mounts: { '/metrics': observability.metricsMount },
    probes: observability.probes,
  });
  observability.attach(http);
  app.warmUp();
  open.push(async () => {
    await http.close(0);
    await observability.close();
    await app.close();
    sb.cleanup();
  });
  const base = new URL(http.url).origin;
  return {
    sb,
    app,
    http,
    observability,
    base,
    get: (path: string, init?: RequestInit) => fetch(`${base}${path}`, init),
  };
}

/** Asks /readyz until it answers 200 (workflows load in the background); a bounded number of tries. */
async function ready(get: (path: string) => Promise<Response>): Promise<Response> {
  for (let i = 0; i < 200; i++) {
    const res = await get('/readyz');
    if (res.status === 200) return res;
    await new Promise((r) => setTimeout(r, 25));
  }
  return get('/readyz');
}

describe('/healthz and /readyz', () => {
  it('alive at once; ready once the store answers with the current schema and the workflows are loaded', async () => {
    const s = await serveObserved();
    const alive = await s.get('/healthz');
    expect(alive.status).toBe(200);
    expect(await alive.json()).toEqual({ status: 'ok', draining: false });
    const res = await ready(s.get);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      status: 'ready',
      ready: true,
      draining: false,
      checks: { store: 'ok', workflows: 'ok' },
    });
    // Probes name the pod's address, not an allowed host: answered; the MCP endpoint still refuses it.
    const probe = await s.get('/healthz', { headers: { host: '10.1.2.3:8080' } });
    expect(probe.status).toBe(200);
    const mcp = await s.get('/mcp', { headers: { host: '10.1.2.3:8080' } });
    expect(mcp.ok).toBe(false);
    const post = await s.get('/readyz', { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('readiness goes false while draining; liveness stays true', async () => {
    const s = await serveObserved();
    expect((await ready(s.get)).status).toBe(200);
    s.observability.health.drain();
    const res = await s.get('/readyz');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'draining', ready: false, draining: true });
    expect((await s.get('/healthz')).status).toBe(200);
  });

  it('a failing check makes readiness false and says why; a thrown error is the reason', async () => {
    const health = new Health([
      { name: 'store', check: async () => 'schema version 3, this build expects 4' },
      {
        name: 'workflows',
        check: async () => {
          throw new Error('loading failed: disk');
        },
      },
    ]);
    expect(await health.readiness()).toEqual({
      ready: false,
      draining: false,
      checks: { store: 'schema version 3, this build expects 4', workflows: 'loading failed: disk' },
    });
  });
});

describe('/metrics (Prometheus text format)', () => {
  it('counts requests, errors, tool calls and step latency; reads executions, sessions, tasks and the WAL', async () => {
    const s = await serveObserved();
    const client = await httpClient(s.http.url);
    try {
      const started = await callTool(client, 'workflow_start', { workflow_name: 'observed' });
      await callTool(client, 'workflow_next_step', { token: tokenOf(started), output: { summary: 'ok' } });
      const missing = await callTool(client, 'workflow_get', { id: 'no-such-workflow' });
      expect(missing.error.data.error_code).toBe('WORKFLOW_NOT_FOUND');
      const res = await s.get('/metrics');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      for (const line of [
        'workflowlookup_mcp_requests_total{method="tools/call",tool="workflow_start"} 1',
        'workflowlookup_mcp_requests_total{method="initialize",tool=""} 1',
        'workflowlookup_mcp_request_errors_total{method="tools/call",tool="workflow_get"} 1',
        'workflowlookup_tool_calls_total{tool="workflow_get",outcome="WORKFLOW_NOT_FOUND"} 1',
        'workflowlookup_tool_calls_total{tool="workflow_next_step",outcome="ok"} 1',
        'workflowlookup_step_duration_seconds_count{outcome="step"} 1',
        'workflowlookup_executions{state="running"} 1',
        'workflowlookup_http_sessions{principal="local"} 1',
        'workflowlookup_task_queue_depth 0',
        'workflowlookup_store_transaction_retries_total{store="postgres"} 0',
      ]) {
        expect(text).toContain(line);
      }
      expect(text).not.toContain(
        'workflowlookup_mcp_request_errors_total{method="tools/call",tool="workflow_start"}',
      );
      expect(text).toMatch(/^workflowlookup_sqlite_wal_bytes \d+$/m);
      expect(text).toMatch(/^process_resident_memory_bytes \d+$/m);
      expect(text).toMatch(
        /^workflowlookup_mcp_request_duration_seconds_bucket\{le="0.005",method="tools\/call"\} \d+$/m,
      );
      // SQLite has no pool: the PostgreSQL gauge has no series.
      expect(text).not.toMatch(/^workflowlookup_postgres_pool_connections\{/m);
    } finally {
      await client.close();
    }
  });

  it('counts child executions by state (a gauge read at scrape), apart from the executions that are no child', async () => {
    const routine = twoSteps('observed-routine', 'Observed routine');
    const fanOut = `id: observed-fan-out
name: Observed fan-out
description: Three children, then a synthesis
version: 1.0.0
steps:
  - id: reviews
    title: Reviews
    prompt: Three reviewers.
    delegate:
      workflow: observed-routine
      count: 3
  - id: synthesis
    title: Synthesis
    prompt: Combine.
`;
    const s = await serveObserved({}, { 'observed-routine.yaml': routine, 'observed-fan-out.yaml': fanOut });
    const client = await httpClient(s.http.url);
    try {
      const scrape = async () => (await (await s.get('/metrics')).text()).split('\n');
      const series = (lines: string[]) =>
        lines.filter((l) => l.startsWith('workflowlookup_child_executions{')).sort();
      // Before any delegation: the metric, with no series.
      const before = await scrape();
      expect(before).toContain('# TYPE workflowlookup_child_executions gauge');
      expect(series(before)).toEqual([]);
      const started = await callTool(client, 'workflow_start', { workflow_id: 'observed-fan-out' });
      expect(started.step_status).toBe('delegated');
      expect(series(await scrape())).toEqual(['workflowlookup_child_executions{state="running"} 3']);
      const [first] = started.next as { arguments: { execution_id: string } }[];
      await callTool(client, 'workflow_set_state', {
        execution_id: first?.arguments.execution_id,
        state: 'abandoned',
      });
      const after = await scrape();
      // The abandoned child failed the join (all): the parent failed, and its other children stopped.
      expect(series(after)).toEqual(['workflowlookup_child_executions{state="abandoned"} 3']);
      expect(after).toContain('workflowlookup_executions{state="failed"} 1');
    } finally {
      await client.close();
    }
  });

  it('behind authentication: needs the admin scope; probes need no token', async () => {
    const dir = sandbox();
    open.push(async () => dir.cleanup());
    const file = join(dir.root, 'tokens.json');
    const admin = await addToken(file, 'ops', ['admin'], 'ops');
    const reader = await addToken(file, 'reader', ['read'], 'reader');
    const s = await serveObserved({ WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: file });
    const none = await s.get('/metrics');
    expect(none.status).toBe(401);
    expect(await none.text()).toMatch(/admin \(or metrics\) scope/);
    const readOnly = await s.get('/metrics', { headers: { authorization: `Bearer ${reader}` } });
    expect(readOnly.status).toBe(403);
    expect(readOnly.headers.get('www-authenticate')).toMatch(/insufficient_scope/);
    const ok = await s.get('/metrics', { headers: { authorization: `Bearer ${admin}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('workflowlookup_mcp_requests_total');
    expect((await s.get('/healthz')).status).toBe(200);
  });

  it('WORKFLOWLOOKUP_METRICS_PORT: a listener of its own for scrapers, with the probes and nothing else', async () => {
    const s = await serveObserved({ WORKFLOWLOOKUP_METRICS_PORT: '0' });
    const url = s.observability.metricsUrl as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('workflowlookup_executions');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/mcp`)).status).toBe(404);
  });

  it('a bad WORKFLOWLOOKUP_METRICS_PORT is refused with its name', async () => {
    await expect(serveObserved({ WORKFLOWLOOKUP_METRICS_PORT: 'ninety' })).rejects.toThrow(
      /WORKFLOWLOOKUP_METRICS_PORT/,
    );
  });
});

describe('/metrics under a flood of made-up names', () => {
  /** Every label value of an exposition (`name="value"`), unescaped enough to measure. */
  const labelValues = (text: string) =>
    [...text.matchAll(/="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] as string);

  it('unknown methods and tools count as `unknown`, every label is cut to 200 characters, the exposition stays small', async () => {
    const sb: Sandbox = sandbox();
    open.push(async () => sb.cleanup());
    const longPrincipal = `p${'q'.repeat(999)}`;
    const { env, token } = await staticTokens(sb, {
      reader: { scopes: ['read'] },
      ops: { scopes: ['admin'] },
      long: { scopes: ['read'] },
    });
    // A principal as long as a hand-edited tokens file (or a JWT claim) makes it: `token add` allows 128.
    const file = env.WORKFLOWLOOKUP_TOKENS_FILE as string;
    const tokens = JSON.parse(readFileSync(file, 'utf8')) as {
      tokens: { name: string; principal: string }[];
    };
    for (const t of tokens.tokens) if (t.name === 'long') t.principal = longPrincipal;
    writeFileSync(file, JSON.stringify(tokens));
    const s = await serveObserved(env);
    const auth = (name: string) => ({ authorization: `Bearer ${token[name]}` });
    // A read-scope principal's session: 30 made-up methods and 30 made-up tools, each 20 KB and distinct.
    const reader = await rawSession(s.http.url, auth('reader'));
    const huge = (c: string, i: number) => `${c.repeat(20_000)}${i}`;
    for (let i = 0; i < 30; i++) {
      const method = await reader.send(huge('m', i));
      expect(method.answer?.error?.code).toBe(-32601);
      const tool = await reader.send('tools/call', { name: huge('t', i), arguments: {} });
      expect(tool.answer?.error?.code).toBe(-32602);
    }
    // The same in the 2026-07-28 envelope (stateless), whose Mcp-Method header repeats the name (8 KB:
    // Node's limit on headers is 16 KB).
    for (let i = 0; i < 5; i++) {
      const method = `${'n'.repeat(8_000)}${i}`;
      const res = await post(
        s.http.url,
        { jsonrpc: '2.0', id: 1, method, params: { _meta: STATELESS_ENVELOPE } },
        { ...auth('reader'), 'mcp-protocol-version': '2026-07-28', 'mcp-method': method },
      );
      expect(res.json?.error?.code, res.text.slice(0, 300)).toBe(-32601);
    }
    // Served names keep their own label: a tool by tools/call and as a direct method.
    expect(
      (await reader.send('tools/call', { name: 'workflow_list', arguments: {} })).answer?.result,
    ).toBeDefined();
    expect((await reader.send('workflow_list', {})).answer?.result).toBeDefined();
    // A principal's name is the token's: cut like any other label value.
    const long = await rawSession(s.http.url, auth('long'));
    open.push(async () => {
      await reader.close();
      await long.close();
    });

    const res = await s.get('/metrics', { headers: auth('ops') });
    expect(res.status).toBe(200);
    const text = await res.text();
    for (const line of [
      'workflowlookup_mcp_requests_total{method="unknown",tool=""} 35',
      'workflowlookup_mcp_request_errors_total{method="unknown",tool=""} 35',
      'workflowlookup_mcp_requests_total{method="tools/call",tool="unknown"} 30',
      'workflowlookup_mcp_requests_total{method="tools/call",tool="workflow_list"} 1',
      'workflowlookup_mcp_requests_total{method="workflow_list",tool="workflow_list"} 1',
      'workflowlookup_http_sessions{principal="reader"} 1',
    ]) {
      expect(text).toContain(line);
    }
    expect(text).toMatch(/^workflowlookup_mcp_request_duration_seconds_count\{method="unknown"\} 35$/m);
    expect(text).toContain(`workflowlookup_http_sessions{principal="${longPrincipal.slice(0, 200)}…"} 1`);
    // No label value longer than an echoed name (200 characters and the ellipsis)...
    expect(Math.max(...labelValues(text).map((v) => v.length))).toBeLessThanOrEqual(201);
    // ...and the whole exposition is the size of a quiet server's (the flood sent over 1.4 MB of names).
    expect(text.length).toBeLessThan(64 * 1024);
  });
});

describe.skipIf(pg.url === undefined)('/metrics and /readyz on PostgreSQL', () => {
  it('the pool gauge shows connections; readiness checks the PostgreSQL schema', async () => {
    const db = await createTestDatabase(pg.url as string);
    open.push(() => db.drop());
    const s = await serveObserved({
      WORKFLOWLOOKUP_DATABASE_URL: (await db.schema()).url,
      WORKFLOWLOOKUP_TOKEN_SECRET: 'observability-postgres-secret-0123456789abcdef',
    });
    const res = await ready(s.get);
    expect(await res.json()).toMatchObject({ ready: true, checks: { store: 'ok', workflows: 'ok' } });
    const client = await httpClient(s.http.url);
    try {
      await callTool(client, 'workflow_start', { workflow_name: 'observed' });
    } finally {
      await client.close();
    }
    const text = await (await s.get('/metrics')).text();
    expect(text).toMatch(/^workflowlookup_postgres_pool_connections\{state="total"\} [1-9]\d*$/m);
    expect(text).toContain('workflowlookup_postgres_pool_connections{state="max"} 10');
    expect(text).toMatch(/^workflowlookup_postgres_pool_connections\{state="waiting"\} 0$/m);
    expect(text).toContain('workflowlookup_executions{state="running"} 1');
    expect(text).toMatch(/^workflowlookup_sqlite_wal_bytes 0$/m);
  });
});
