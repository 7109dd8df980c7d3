import { appendFileSync, copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { csrfOf, raw, startDashboard } from './helpers/dashboard.js';
import { httpClient, startHttpServer } from './helpers/http-server.js';
import { inProcessClient } from './helpers/in-process.js';
import { callTool, FIXTURES, RawServer, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function box(): Sandbox {
  const sb = sandbox();
  cleanups.push(() => sb.cleanup());
  return sb;
}

/**
 * NODE_OPTIONS that make the spawned server write every module URL it loads to a file: which chunks
 * of dist/ a run touched (the OpenTelemetry SDK is dist/chunks/otel-*.js, prom-client prometheus-*.js).
 */
function moduleLog(sb: Sandbox): { env: Record<string, string>; loaded: () => string[] } {
  const log = join(sb.root, 'modules.log');
  const hooks = join(sb.root, 'hooks.mjs');
  const register = join(sb.root, 'register.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) {\n  appendFileSync(${JSON.stringify(log)}, url + '\\n');\n  return next(url, context);\n}\n`,
  );
  writeFileSync(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  appendFileSync(log, '');
  return {
    env: { NODE_OPTIONS: `--import=${pathToFileURL(register).href}` },
    loaded: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []),
  };
}

/** One stdio session: initialize, a listing, a call that fails; then stdin ends and the server exits. */
async function session(sb: Sandbox, env: Record<string, string>) {
  const server = new RawServer({ env: { ...sb.env, ...env }, cwd: sb.project });
  cleanups.push(() => server.kill());
  await server.initialize();
  await server.request(2, 'tools/call', { name: 'workflow_list', arguments: {} });
  const missing = await server.request(3, 'tools/call', {
    name: 'workflow_get',
    arguments: { id: 'no-such-workflow' },
  });
  server.child.stdin.end();
  const exit = await server.exited;
  return { server, exit, missing: (missing.result as Json).structuredContent.error as Json };
}

const jsonLines = (stderr: string): Json[] =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Json);

describe('telemetry off: free', () => {
  it('without OTEL_* variables the OpenTelemetry SDK and prom-client are never loaded', async () => {
    const sb = box();
    const modules = moduleLog(sb);
    const { exit } = await session(sb, modules.env);
    expect(exit.code).toBe(0);
    const chunks = modules.loaded().filter((u) => u.includes('/dist/'));
    // The hooks saw the bundle (a check that this test can see anything at all)...
    expect(chunks.some((u) => /\/dist\/chunks\/main-[A-Z0-9]+\.js$/.test(u))).toBe(true);
    // ...and neither the SDK's chunks (traces, metrics) nor the metrics registry's.
    expect(
      chunks.filter((u) => /\/(otel|otel-metrics|prometheus|observability)-[A-Z0-9]+\.js$/.test(u)),
    ).toEqual([]);
    // Not even the OpenTelemetry API (its global tracer proxy) is loaded: only its types are imported.
    const withApi = chunks.filter((u) =>
      readFileSync(new URL(u), 'utf8').includes('new ProxyTracerProvider()'),
    );
    expect(withApi).toEqual([]);
    // Nor the metrics SDK (in a chunk the two SDK entry points might share).
    const withMetricsSdk = chunks.filter((u) =>
      readFileSync(new URL(u), 'utf8').includes('PeriodicExportingMetricReader'),
    );
    expect(withMetricsSdk).toEqual([]);
  });
});

describe('logs and traces of a real process', () => {
  it('JSON lines on stderr with level and correlation id; with an OTLP endpoint, spans are exported and lines carry the trace id', async () => {
    const posts: { url: string; type: string | undefined; body: Json }[] = [];
    const collector = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        posts.push({
          url: req.url ?? '',
          type: req.headers['content-type'],
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json,
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => collector.close(() => r())));
    const port = (collector.address() as AddressInfo).port;

    const sb = box();
    const modules = moduleLog(sb);
    const { server, exit, missing } = await session(sb, {
      ...modules.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_SERVICE_NAME: 'wl-under-test',
    });
    expect(exit.code).toBe(0);
    expect(modules.loaded().some((u) => /\/dist\/chunks\/otel-[A-Z0-9]+\.js$/.test(u))).toBe(true);

    // The failed call's log line: JSON, its level, the correlation id its error answer carries, the trace id.
    const line = jsonLines(server.stderr).find((l) => l.correlation_id === missing.data.correlation_id);
    expect(line).toMatchObject({
      level: 'info',
      name: 'workflowlookup',
      error_code: 'WORKFLOW_NOT_FOUND',
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
    });

    // The spans reached the collector over OTLP/HTTP (JSON) before the process exited.
    const traces = posts.filter((p) => p.url === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    expect(traces[0]).toMatchObject({ url: '/v1/traces', type: 'application/json' });
    const spans = traces.flatMap((p) =>
      (p.body.resourceSpans as Json[]).flatMap((r) =>
        (r.scopeSpans as Json[]).flatMap((s) => s.spans as Json[]),
      ),
    );
    const names = spans.map((s) => s.name as string);
    expect(names).toEqual(expect.arrayContaining(['tools/call workflow_list', 'tool workflow_get']));
    const failedCall = spans.find((s) => s.name === 'tools/call workflow_get') as Json;
    const resource = (traces[0] as { body: Json }).body.resourceSpans[0].resource as Json;
    const service = (resource.attributes as Json[]).find((a: Json) => a.key === 'service.name');
    expect(service?.value.stringValue).toBe('wl-under-test');
    // The log line's trace is the failed call's (OTLP/JSON writes ids in hex).
    expect(line?.trace_id).toBe(failedCall.traceId);

    // The shared endpoint turns metrics on too: the /metrics instruments, exported as the process ended
    // (a stdio server makes the registry for the exporter alone).
    expect(modules.loaded().some((u) => /\/dist\/chunks\/otel-metrics-[A-Z0-9]+\.js$/.test(u))).toBe(true);
    const metricPosts = posts.filter((p) => p.url === '/v1/metrics');
    expect(metricPosts.length).toBeGreaterThan(0);
    expect(metricPosts[0]?.type).toBe('application/json');
    const metrics = metricPosts.flatMap((p) =>
      (p.body.resourceMetrics as Json[]).flatMap((r) =>
        (r.scopeMetrics as Json[]).flatMap((s) => s.metrics as Json[]),
      ),
    );
    const requests = metrics.find((m) => m.name === 'workflowlookup_mcp_requests_total') as Json;
    const attrs = (p: Json) =>
      Object.fromEntries((p.attributes as Json[]).map((a) => [a.key, a.value.stringValue]));
    const listed = (requests.sum.dataPoints as Json[]).find(
      (p) => attrs(p).method === 'tools/call' && attrs(p).tool === 'workflow_list',
    );
    expect(Number(listed?.asDouble)).toBe(1);
    expect(requests.sum.isMonotonic).toBe(true);
    expect(metrics.map((m) => m.name)).toEqual(
      expect.arrayContaining(['workflowlookup_tool_call_duration_seconds', 'process_resident_memory_bytes']),
    );
  });

  it('WORKFLOWLOOKUP_LOG_LEVEL=warn leaves out info lines; an unknown level is said once and info is kept', async () => {
    const quiet = await session(box(), { WORKFLOWLOOKUP_LOG_LEVEL: 'warn' });
    expect(jsonLines(quiet.server.stderr).filter((l) => l.level === 'info')).toEqual([]);
    const wrong = await session(box(), { WORKFLOWLOOKUP_LOG_LEVEL: 'loud' });
    const lines = jsonLines(wrong.server.stderr);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      msg: expect.stringMatching(/WORKFLOWLOOKUP_LOG_LEVEL=loud is not a level/),
    });
    expect(lines.some((l) => l.level === 'info' && l.error_code === 'WORKFLOW_NOT_FOUND')).toBe(true);
  });
});

/** A local OTLP/HTTP collector on 127.0.0.1 that keeps every JSON body posted to it. */
async function collector() {
  const posts: { url: string; body: Json }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ url: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { posts, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const metricsIn = (posts: { url: string; body: Json }[]) =>
  posts
    .filter((p) => p.url === '/v1/metrics')
    .flatMap((p) =>
      (p.body.resourceMetrics as Json[]).flatMap((r) =>
        (r.scopeMetrics as Json[]).flatMap((s) => s.metrics as Json[]),
      ),
    );

describe('OTLP from the other commands (spawned)', () => {
  it('serve --http pushes the /metrics instruments to a metrics-only endpoint, and no traces', async () => {
    const otlp = await collector();
    const sb = box();
    const s = await startHttpServer(sb, {
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${otlp.url}/v1/metrics`,
      OTEL_METRIC_EXPORT_INTERVAL: '100',
    });
    cleanups.push(() => s.kill());
    const client = await httpClient(s.url);
    await client.listTools();
    await client.close();
    let names: string[] = [];
    for (let i = 0; i < 200 && !names.includes('workflowlookup_mcp_requests_total'); i++) {
      await new Promise((r) => setTimeout(r, 25));
      names = metricsIn(otlp.posts).map((m) => m.name as string);
    }
    expect(names).toEqual(
      expect.arrayContaining([
        'workflowlookup_mcp_requests_total',
        'workflowlookup_http_sessions',
        'workflowlookup_sqlite_wal_bytes',
      ]),
    );
    s.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(otlp.posts.filter((p) => p.url === '/v1/traces')).toEqual([]);
  });

  it("the standalone dashboard traces like serve: an action's store work is exported", async () => {
    const otlp = await collector();
    const sb = box();
    sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
    copyFileSync(join(FIXTURES, 'valid', 'durable-demo.yaml'), join(sb.runtime, 'durable-demo.yaml'));
    const conn = await inProcessClient(sb);
    cleanups.push(conn.close);
    const started = await callTool(conn.client, 'workflow_start', { workflow_name: 'durable-demo' });
    expect(started.execution_id).toEqual(expect.any(String));
    const modules = moduleLog(sb);
    const dash = await startDashboard(sb, {
      ...modules.env,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces`,
      OTEL_METRICS_EXPORTER: 'none',
    });
    cleanups.push(async () => {
      await dash.stop();
    });
    const path = `/executions/${started.execution_id}`;
    const host = `127.0.0.1:${dash.port}`;
    const confirm = await raw(dash.port, `${path}?confirm=pause`, { headers: { host } });
    const paused = await raw(dash.port, `${path}/state`, {
      method: 'POST',
      headers: {
        host,
        origin: `http://${host}`,
        'sec-fetch-site': 'same-origin',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ state: 'paused', csrf: csrfOf(confirm.body) }).toString(),
    });
    expect(paused.status).toBe(303);
    expect(await dash.stop()).toBe(0);
    expect(modules.loaded().some((u) => /\/dist\/chunks\/otel-[A-Z0-9]+\.js$/.test(u))).toBe(true);
    const names = otlp.posts
      .filter((p) => p.url === '/v1/traces')
      .flatMap((p) =>
        (p.body.resourceSpans as Json[]).flatMap((r) =>
          (r.scopeSpans as Json[]).flatMap((x) => (x.spans as Json[]).map((span) => span.name as string)),
        ),
      );
    expect(names).toContain('store transaction');
    expect(otlp.posts.filter((p) => p.url === '/v1/metrics')).toEqual([]);
  });
});

describe('serve --http with stderr not a terminal (spawned: what a log shipper reads)', () => {
  it('announces its addresses in one JSON log line, as every event on stderr is', async () => {
    const sb = box();
    const s = await startHttpServer(sb, { WORKFLOWLOOKUP_METRICS_PORT: '0' });
    cleanups.push(() => s.kill());
    s.kill('SIGTERM');
    await s.exited;
    const lines = s
      .stderr()
      .split('\n')
      .filter((l) => l !== '');
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    const announced = jsonLines(s.stderr()).filter((l) => l.mcp_url !== undefined);
    const dashboard = `${new URL(s.url).origin}/dashboard/`;
    expect(announced).toEqual([
      expect.objectContaining({
        level: 'info',
        name: 'workflowlookup',
        version: expect.any(String),
        mcp_url: s.url,
        dashboard_url: dashboard,
        metrics_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/),
        msg: expect.stringMatching(
          new RegExp(
            `^MCP over Streamable HTTP at ${s.url}, dashboard at ${dashboard}, metrics at http://127\\.0\\.0\\.1:\\d+/metrics$`,
          ),
        ),
      }),
    ]);
  });
});

describe('draining on SIGTERM (spawned serve --http)', () => {
  it('readiness goes false at once while the server keeps serving; a second signal ends it cleanly', async () => {
    const sb = box();
    const s = await startHttpServer(sb, { WORKFLOWLOOKUP_DRAIN_SECONDS: '120' });
    cleanups.push(() => s.kill());
    const base = new URL(s.url).origin;
    const readyz = async () => (await fetch(`${base}/readyz`)).status;
    let status = 0;
    for (let i = 0; i < 200 && status !== 200; i++) {
      status = await readyz();
      if (status !== 200) await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toBe(200);
    s.kill('SIGTERM');
    for (let i = 0; i < 200 && status !== 503; i++) {
      status = await readyz();
      if (status !== 503) await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toBe(503);
    const alive = await fetch(`${base}/healthz`);
    expect(alive.status).toBe(200);
    expect(await alive.json()).toEqual({ status: 'ok', draining: true });
    // Still serving MCP while draining.
    const client = await httpClient(s.url);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    s.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(jsonLines(s.stderr()).some((l) => /draining: closing in 120 s/.test(l.msg))).toBe(true);
  });
});
