import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfOf, type DashboardProcess, raw, startDashboard } from './helpers/dashboard.js';
import {
  CLI,
  callTool,
  connectClient,
  FIXTURES,
  RawServer,
  type Sandbox,
  SPAWNED_WAIT_MS,
  sandbox,
  tokenOf,
} from './helpers/server.js';

type Json = Record<string, any>;

const CREDENTIAL = 'cred-value-0123456789-abcdef';
let sb: Sandbox;
let client: Client;
let closeClient: () => Promise<void>;
let dash: DashboardProcess;

const call = (name: string, args: Json) => callTool(client, name, args);
const get = (path: string, headers: Record<string, string> = {}) =>
  raw(dash.port, path, { headers: { host: `127.0.0.1:${dash.port}`, ...headers } });

beforeAll(async () => {
  sb = sandbox({ WORKFLOWLOOKUP_CATALOG_DEMO_TOKEN: CREDENTIAL });
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  cpSync(join(FIXTURES, 'invalid', 'broken-schema.yaml'), join(sb.runtime, 'broken-schema.yaml'));
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  ({ client, close: closeClient } = await connectClient(sb));
  dash = await startDashboard(sb);
});

afterAll(async () => {
  await dash?.stop();
  await closeClient?.();
  sb.cleanup();
});

describe('workflowlookup dashboard', () => {
  it('lists executions with counts per state, filters and pages, under a strict CSP', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++)
      ids.push((await call('workflow_start', { workflow_name: 'durable-demo' })).execution_id);
    await call('workflow_set_state', { execution_id: ids[0], state: 'abandoned' });
    const res = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body).not.toMatch(/<script>|<style>|\sstyle="|\son[a-z]+="/);
    expect(res.body).toMatch(/data-count="running">running <b>11<\/b>/);
    expect(res.body).toMatch(/data-count="abandoned">abandoned <b>1<\/b>/);
    for (const id of ids) expect(res.body).toContain(id);

    const abandoned = await get('/?state=abandoned');
    expect(abandoned.body).toContain(ids[0]);
    expect(abandoned.body).not.toContain(ids[1]);
    expect((await get('/?workflow=loops-demo')).body).toContain('No executions match');
    expect((await get('/?age=idle-1d')).body).toContain('No executions match');

    // Pages of 10, most recent first: the second page has the oldest two; newer goes back.
    const first = await get('/?limit=10');
    const older = /href="\/\?limit=10&amp;older=([^"]+)"/.exec(first.body)?.[1];
    expect(older).toBeDefined();
    const second = await get(`/?limit=10&older=${older}`);
    const shown = (body: string) => [...body.matchAll(/<tr data-execution="([^"]+)"/g)].map((m) => m[1]);
    expect(shown(first.body)).toHaveLength(10);
    expect(shown(second.body)).toHaveLength(2);
    expect(new Set([...shown(first.body), ...shown(second.body)])).toEqual(new Set(ids));
    const newer = /href="\/\?limit=10&amp;newer=([^"]+)"/.exec(second.body)?.[1];
    expect(shown((await get(`/?limit=10&newer=${newer}`)).body)).toEqual(shown(first.body));
  });

  it('answers bad filters with 400 and unknown paths with 404, without echoing markup', async () => {
    for (const path of [
      '/?state=bogus',
      '/?age=forever',
      '/?age=constructor',
      '/?limit=100000',
      '/?older=nonsense',
      '/?older=2026-01-01T00:00:00.000Z,<script>',
      '/?workflow=%3Cscript%3E',
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(res.body).not.toContain('<script>');
    }
    for (const path of [
      '/nope',
      '/executions/exec_missing',
      '/executions/..%2F..%2Fetc',
      '/assets/..%2F..%2Fpackage.json',
      '/assets/../../package.json',
      '/workflows/NOT_AN_ID',
      '/workflows/no-such-workflow',
      '/executions/%E0%A4%A',
    ]) {
      const res = await get(path);
      expect([400, 404], path).toContain(res.status);
      expect(res.body).not.toContain('"name": "workflowlookup"');
    }
    expect((await raw(dash.port, '/', { method: 'DELETE', headers: { host: 'localhost' } })).status).toBe(
      405,
    );
  });

  it('refuses requests for other host names (DNS rebinding) with 421', async () => {
    expect((await get('/', { host: 'evil.example' })).status).toBe(421);
    expect((await get('/', { host: `localhost:${dash.port}` })).status).toBe(200);
  });

  it('shows one execution: timeline, validation, outputs, artifacts, telemetry, token expiry; never a secret', async () => {
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    const id = started.execution_id;
    await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'nothing useful' } });
    const resumed = await call('workflow_resume', { execution_id: id });
    const token = tokenOf(resumed) as string;
    const next = await call('workflow_next_step', {
      token,
      output: {
        summary: `The **design** uses a queue. Token ${token} and credential ${CREDENTIAL}.`,
        artifacts: [
          {
            type: 'report',
            name: 'design.md',
            content: '# Plan\n\n- one\n- two',
            content_type: 'text/markdown',
          },
          {
            type: 'data',
            name: 'data.json',
            content: JSON.stringify({ api_key: 'should-not-show', n: 1 }),
            content_type: 'application/json',
          },
        ],
        context: { exposure: 'public', password: 'hunter2-hunter2' },
      },
    });
    expect(next.step_name).toBe('implement');
    const page = await get(`/executions/${id}`);
    expect(page.status).toBe(200);
    const body = page.body;
    expect(body).toContain('<strong>design</strong>');
    expect(body).toMatch(/passed<\/span> <span class="muted">after 1 failed/);
    expect(body).toContain('The <strong>design</strong> uses a queue.');
    expect(body).toContain('<h1>Plan</h1>');
    expect(body).toContain('&quot;n&quot;: 1');
    expect(body).toContain('<strong>implement</strong> Implement');
    expect(body).toMatch(/Token expires<\/dt><dd><time datetime="\d{4}-/);
    expect(body).toContain('token_generated');
    expect(body).toMatch(/<g class="wf-node wf-prompt is-done" data-step="design"/);
    expect(body).toMatch(/<g class="wf-node wf-prompt is-current" data-step="implement"/);
    // Secrets: tokens (live and old), the token secret, credentials from the environment, secret-named values.
    const secret = readFileSync(join(sb.root, 'data', 'token-secret'), 'utf8').trim();
    for (const hidden of [
      token,
      tokenOf(started),
      tokenOf(next),
      secret,
      CREDENTIAL,
      'hunter2-hunter2',
      'should-not-show',
    ]) {
      expect(body).not.toContain(hidden);
    }
    expect(body).toContain('[hidden]');
    const payload = JSON.parse(Buffer.from(token.split('.')[0] as string, 'base64url').toString());
    expect(body).not.toContain(payload.nonce);
  });

  it('pauses, resumes and abandons through a confirmed POST with a CSRF token, and refuses forged posts', async () => {
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    const id = started.execution_id;
    const confirm = await get(`/executions/${id}?confirm=pause`);
    expect(confirm.body).toContain('Pause this execution?');
    const csrf = csrfOf(confirm.body);
    const post = (form: Record<string, string>, headers: Record<string, string> = {}) =>
      raw(dash.port, `/executions/${id}/state`, {
        method: 'POST',
        headers: {
          host: `127.0.0.1:${dash.port}`,
          'content-type': 'application/x-www-form-urlencoded',
          ...headers,
        },
        body: new URLSearchParams(form).toString(),
      });
    expect((await post({ state: 'paused' })).status).toBe(403);
    expect((await post({ state: 'paused', csrf: 'x'.repeat(43) })).status).toBe(403);
    expect((await post({ state: 'paused', csrf }, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await post({ state: 'paused', csrf }, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post({ state: 'completed', csrf })).status).toBe(400);
    expect(
      (
        await raw(dash.port, `/executions/${id}/state`, {
          method: 'POST',
          headers: { host: 'localhost', 'content-type': 'application/json' },
          body: JSON.stringify({ state: 'paused', csrf }),
        })
      ).status,
    ).toBe(415);
    expect((await post({ state: 'paused', csrf, reason: 'x'.repeat(20_000) })).status).toBe(413);
    expect((await get(`/executions/${id}/state`)).status).toBe(405);
    expect((await call('workflow_resume', { execution_id: id })).workflow_state).toBe('running');

    const paused = await post(
      { state: 'paused', csrf, reason: 'lunch' },
      { origin: `http://127.0.0.1:${dash.port}`, 'sec-fetch-site': 'same-origin' },
    );
    expect(paused.status).toBe(303);
    expect(paused.headers.location).toBe(`/executions/${id}?notice=paused`);
    const refused = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'a design' },
    });
    expect(refused.error).toMatchObject({
      code: -32005,
      data: { details: expect.stringContaining('paused') },
    });
    const odd = await get(`/executions/${id}?notice=constructor&confirm=toString`);
    expect(odd.status).toBe(200);
    expect(odd.body).not.toMatch(/native code|class="notice|class="confirm/);
    const after = await get(`/executions/${id}?notice=paused`);
    expect(after.body).toContain('The execution is paused.');
    // The reason of the state it is in, without repeating the state.
    expect(after.body).toContain('state-paused">paused</span> <span class="muted">(lunch)</span>');
    // A second pause is a conflict, reported without a stack trace or echo.
    expect((await post({ state: 'paused', csrf })).headers.location).toBe(
      `/executions/${id}?notice=conflict`,
    );
    expect((await post({ state: 'running', csrf })).headers.location).toBe(
      `/executions/${id}?notice=running`,
    );
    expect((await post({ state: 'abandoned', csrf })).headers.location).toBe(
      `/executions/${id}?notice=abandoned`,
    );
    expect((await get(`/executions/${id}`)).body).toContain('No actions: the execution is abandoned.');
    expect((await post({ state: 'paused', csrf })).headers.location).toBe(
      `/executions/${id}?notice=conflict`,
    );
  });

  it('pushes a change event to an open page when another process advances the execution', async () => {
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    const id = started.execution_id;
    const page = await get(`/executions/${id}`);
    const liveUrl = /data-live="([^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&') as string;
    expect(liveUrl).toContain(`/executions/${id}/events?since=`);
    const events = await new Promise<{ text: () => string; close: () => void }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: dash.port, path: liveUrl, headers: { host: 'localhost' } },
        (res) => {
          expect(res.headers['content-type']).toContain('text/event-stream');
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => {
            text += c;
          });
          resolve({ text: () => text, close: () => req.destroy() });
        },
      );
      req.on('error', reject);
      req.end();
    });
    await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'a design' } });
    const deadline = Date.now() + 30_000;
    while (!events.text().includes('event: changed') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    events.close();
    const data = JSON.parse(/event: changed\ndata: (.*)\n/.exec(events.text())?.[1] ?? '{}');
    expect(data).toMatchObject({ execution_id: id, state: 'running', current_step: 'implement' });
  });

  it('shows every source with its workflows, broken files with line and column, and each diagram', async () => {
    const page = await get('/workflows');
    expect(page.body).toMatch(/data-source="runtime"[\s\S]*durable-demo/);
    expect(page.body).toMatch(/data-source="bundled"[\s\S]*coding-task-workflow/);
    // Steps as an execution counts them (a loop's body, not the loop): coding-task-workflow has 6.
    expect(page.body).toMatch(
      />coding-task-workflow<\/a><\/td><td>[^<]*<\/td><td>[^<]*<\/td><td>[^<]*<\/td><td>6<\/td>/,
    );
    expect(page.body).toMatch(/Broken: <code>[^<]*broken-schema\.yaml<\/code>/);
    expect(page.body).toMatch(/line \d+, column \d+/);
    const wf = await get('/workflows/loops-demo');
    expect(wf.status).toBe(200);
    // Edge labels ("next iteration", "exit, if drafts") are drawn over every edge, none under a dashed one.
    const lastEdge = wf.body.lastIndexOf('<g class="wf-edge ');
    const labels = [...wf.body.matchAll(/<g class="wf-edge-label-box"/g)].map((m) => m.index ?? 0);
    expect(labels.length).toBeGreaterThan(2);
    expect(Math.min(...labels)).toBeGreaterThan(lastEdge);
    expect(wf.body).toContain('>next iteration</text>');
    const nodes = [...wf.body.matchAll(/<g class="wf-node[^"]*" data-step="([^"]+)"/g)].map((m) => m[1]);
    expect(nodes.sort()).toEqual(
      [
        'intro',
        'retry-loop',
        'fix',
        'run-tests',
        'files-loop',
        'review-file',
        'count-loop',
        'draft',
        'while-loop',
        'polish',
        'outro',
      ].sort(),
    );
    const mermaid = await call('workflow_get', { id: 'loops-demo', view: 'diagram' });
    expect(wf.body).toContain(mermaid.mermaid.split('\n')[1].replaceAll('"', '&quot;'));
    expect(mermaid.mermaid.startsWith('flowchart TD\n')).toBe(true);
    expect((await call('workflow_get', { id: 'broken-schema', view: 'diagram' })).error.code).toBe(-32002);
    expect((await get('/workflows/broken-schema')).status).toBe(404);
  });

  it('lists runs (MCP tasks) with their executions, pages back by creation, and cancels one after confirmation', async () => {
    const agent = new RawServer({ env: sb.env, cwd: sb.project });
    try {
      await agent.request('init', 'initialize', {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'runs', version: '1' },
      });
      agent.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const run = async (n: number) => {
        const created = (await agent.request(`run-${n}`, 'tools/call', {
          name: 'workflow_run',
          arguments: { workflow_id: 'durable-demo', context: { note: '<script>x()</script>' } },
          task: {},
        })) as Json;
        return {
          taskId: created.result.task.taskId as string,
          runId: created.result._meta['workflowlookup/run'].run_id as string,
        };
      };
      const older = await run(1);
      const newer = await run(2);
      await expect
        .poll(async () => (await get('/tasks')).body)
        .toContain(`data-task="${newer.taskId}" data-status="input_required"`);
      const list = await get('/tasks');
      expect(list.headers['content-security-policy']).toContain("script-src 'self'");
      expect(list.body).not.toContain('<script>x()');
      expect(list.body.indexOf(newer.taskId)).toBeLessThan(list.body.indexOf(older.taskId));
      expect(list.body).toContain(`href="/executions/${older.runId}"`);
      expect(list.body).toMatch(/data-live="\/tasks\/events\?v=[\w-]+"/);
      const createdAt = ((await agent.request('get', 'tasks/get', { taskId: newer.taskId })) as Json).result
        .createdAt as string;
      const before = await get(`/tasks?before=${encodeURIComponent(`${createdAt},${newer.taskId}`)}`);
      expect(before.body).toContain(older.taskId);
      expect(before.body).not.toContain(newer.taskId);
      expect(before.body).toContain('← Newest</a>');
      for (const path of ['/tasks?status=bogus', '/tasks?before=yesterday', '/tasks/x/cancel']) {
        expect((await get(path)).status, path).toBe(path.endsWith('cancel') ? 405 : 400);
      }

      const confirm = await get(`/tasks?confirm=${older.taskId}`);
      expect(confirm.body).toContain(`Cancel task ${older.taskId}`);
      const cancel = await raw(dash.port, `/tasks/${older.taskId}/cancel`, {
        method: 'POST',
        headers: { host: `127.0.0.1:${dash.port}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: csrfOf(confirm.body), principal: 'local' }).toString(),
      });
      expect(cancel.status).toBe(303);
      expect(cancel.headers.location).toBe('/tasks?notice=cancelled');
      const task = (await agent.request('after', 'tasks/get', { taskId: older.taskId })) as Json;
      expect(task.result.status).toBe('cancelled');
      await expect
        .poll(async () => (await get(`/executions/${older.runId}`)).body)
        .toContain('state-abandoned');
      await agent.request('end', 'tasks/cancel', { taskId: newer.taskId });
    } finally {
      agent.kill();
    }
  });

  it('serves its assets with the same headers and stops promptly with a live stream open', async () => {
    const css = await get('/assets/dashboard.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await get('/assets/dashboard.js')).headers['content-type']).toBe(
      'text/javascript; charset=utf-8',
    );
    const stream = request({
      host: '127.0.0.1',
      port: dash.port,
      path: '/events',
      headers: { host: 'localhost' },
    });
    stream.on('error', () => undefined);
    stream.end();
    await new Promise((r) => setTimeout(r, 200));
    // An open event stream does not hold the exit (else the test's timeout); 0 is the clean shutdown.
    expect(await dash.stop()).toBe(0);
    dash = await startDashboard(sb);
  });
});

describe('workflowlookup dashboard command line', () => {
  it('refuses a bad port and a port in use, naming the fix', async () => {
    const bad = spawnSync(process.execPath, [CLI, 'dashboard', '--port', 'http'], {
      env: sb.env,
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--port must be a port number');
    const busy = spawnSync(process.execPath, [CLI, 'dashboard', '--port', String(dash.port)], {
      env: sb.env,
      encoding: 'utf8',
      timeout: SPAWNED_WAIT_MS,
    });
    expect(busy.status).toBe(2);
    expect(busy.stderr).toContain(
      `port ${dash.port} on 127.0.0.1 is in use: choose another with --port or WORKFLOWLOOKUP_DASHBOARD_PORT`,
    );
    const env = spawnSync(process.execPath, [CLI, 'dashboard'], {
      env: { ...sb.env, WORKFLOWLOOKUP_DASHBOARD_PORT: '99999' },
      encoding: 'utf8',
    });
    expect(env.status).toBe(2);
    expect(env.stderr).toContain('WORKFLOWLOOKUP_DASHBOARD_PORT');
  });
});
