// The dashboard mounted by `serve --http` at /dashboard, through real server processes: sign-in with
// static tokens, the session cookie and its attributes, scopes, per-principal isolation, cookie
// tampering, sign-out, the runs page, and the switch that turns it off. The browser flow is in
// dashboard-sign-in.browser.test.ts.
import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { cpSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfOf, type RawResponse, raw } from './helpers/dashboard.js';
import { type HttpServer, type Json, post, startHttpServer } from './helpers/http-server.js';
import { CLI, FIXTURES, type Sandbox, sandbox } from './helpers/server.js';

const SECRET = 'dashboard-sessions-secret-shared-by-replicas-0123456789';
const NAVIGATE = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none', accept: 'text/html' };

let sb: Sandbox;
const servers: HttpServer[] = [];
let s: HttpServer;
let port: number;
const tokens: Record<string, string> = {};
const tokensFile = () => join(sb.root, 'tokens.json');
const AUTH = () => ({ WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: tokensFile() });

function tokenCli(...args: string[]) {
  return spawnSync(process.execPath, [CLI, 'token', ...args], {
    env: { ...sb.env, ...AUTH() },
    encoding: 'utf8',
  });
}

async function server(env: Record<string, string> = {}): Promise<HttpServer> {
  const started = await startHttpServer(sb, env);
  servers.push(started);
  return started;
}

/** Same-origin headers a browser sends with a form post. */
const formHeaders = (p: number, cookie?: string) => ({
  'content-type': 'application/x-www-form-urlencoded',
  origin: `http://127.0.0.1:${p}`,
  'sec-fetch-site': 'same-origin',
  ...(cookie ? { cookie } : {}),
});

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

function setCookie(res: RawResponse): string | undefined {
  const header = res.headers['set-cookie'];
  return Array.isArray(header) ? header[0] : header;
}

/** Signs in on the login form; the session cookie (name=value) it set. */
async function signIn(token: string, p = port): Promise<string> {
  const res = await raw(p, '/dashboard/login', {
    method: 'POST',
    headers: formHeaders(p),
    body: form({ token, next: '/dashboard/' }),
  });
  expect(res.status).toBe(303);
  const cookie = setCookie(res);
  if (!cookie) throw new Error('no session cookie');
  return cookie.split(';')[0] as string;
}

const page = (path: string, cookie?: string, p = port) =>
  raw(p, path, { headers: { ...NAVIGATE, ...(cookie ? { cookie } : {}) } });

/** A raw 2025-11-25 MCP session over HTTP with a bearer token. */
async function mcp(token: string) {
  const auth = { authorization: `Bearer ${token}` };
  const init = await post(
    s.url,
    {
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'dash', version: '1' } },
    },
    auth,
  );
  expect(init.status).toBe(200);
  const headers = {
    ...auth,
    'mcp-session-id': init.headers.get('mcp-session-id') as string,
    'mcp-protocol-version': '2025-11-25',
  };
  await post(s.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  let id = 0;
  return async (method: string, params: Json = {}): Promise<Json> =>
    (await post(s.url, { jsonrpc: '2.0', id: ++id, method, params }, headers)).json as Json;
}

/** The key sessions are signed with: derived from the shared token secret. */
function sealSession(payload: Json, key = SECRET): string {
  const sessionKey = createHmac('sha256', key).update('workflowlookup dashboard sessions').digest();
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const mac = createHmac('sha256', sessionKey).update(`v1.${body}`).digest('base64url');
  return `wl_dashboard=v1.${body}.${mac}`;
}

let aliceExecution: string;
let bobExecution: string;
let readerExecution: string;
let alice: Awaited<ReturnType<typeof mcp>>;

beforeAll(async () => {
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SECRET });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  cpSync(join(FIXTURES, 'valid', 'durable-demo.yaml'), join(sb.runtime, 'durable-demo.yaml'));
  const add = (name: string, scopes: string, principal = name) => {
    tokens[name] = tokenCli('add', name, '--scopes', scopes, '--principal', principal).stdout.trim();
  };
  add('alice', 'read,run');
  add('bob', 'read,run');
  add('reader', 'read');
  add('reader-run', 'read,run', 'reader');
  add('runner', 'run');
  add('temporary', 'read,run', 'carol');
  s = await server(AUTH());
  port = Number(new URL(s.url).port);
  alice = await mcp(tokens.alice as string);
  aliceExecution = (await alice('workflow_start', { workflow_name: 'durable-demo' })).result.execution_id;
  const bob = await mcp(tokens.bob as string);
  bobExecution = (await bob('workflow_start', { workflow_name: 'durable-demo' })).result.execution_id;
  const reader = await mcp(tokens['reader-run'] as string);
  readerExecution = (await reader('workflow_start', { workflow_name: 'durable-demo' })).result.execution_id;
});

afterAll(() => {
  for (const x of servers) x.kill();
  sb.cleanup();
});

describe('the dashboard under serve --http, with static tokens', () => {
  it('sends a browser to the sign-in page, and answers other requests 401', async () => {
    const nav = await page('/dashboard/executions/x?principal=bob');
    expect(nav.status).toBe(303);
    expect(nav.headers.location).toBe(
      `/dashboard/login?next=${encodeURIComponent('/dashboard/executions/x?principal=bob')}`,
    );
    for (const path of ['/dashboard/', '/dashboard/events', '/dashboard/tasks/events']) {
      const res = await raw(port, path, { headers: { 'sec-fetch-mode': 'cors', accept: '*/*' } });
      expect(res.status, path).toBe(401);
    }
    const action = await raw(port, `/dashboard/executions/${aliceExecution}/state`, {
      method: 'POST',
      headers: formHeaders(port),
      body: form({ state: 'paused', csrf: 'x' }),
    });
    expect(action.status).toBe(401);
    // The stylesheet and script hold no data: the sign-in page needs them.
    expect((await raw(port, '/dashboard/assets/dashboard.css')).status).toBe(200);

    const login = await page('/dashboard/login?next=%2Fdashboard%2Ftasks');
    expect(login.status).toBe(200);
    expect(login.headers['content-security-policy']).toContain("script-src 'self'");
    expect(login.body).toContain('<input type="password" name="token"');
    expect(login.body).toContain('name="next" value="/dashboard/tasks"');
    expect(login.body).not.toMatch(/<script>|style=/);
    // Only dashboard paths are places to go after signing in.
    for (const next of ['https://evil.example/', '//evil.example/', '/mcp', '/dashboard/login']) {
      const res = await page(`/dashboard/login?next=${encodeURIComponent(next)}`);
      expect(res.body, next).toContain('name="next" value="/dashboard/"');
    }
  });

  it('signs in with a good token: a signed, HttpOnly, SameSite=Strict cookie for /dashboard, at most 12 h', async () => {
    const res = await raw(port, '/dashboard/login', {
      method: 'POST',
      headers: formHeaders(port),
      body: form({ token: tokens.alice as string, next: '/dashboard/tasks?status=failed' }),
    });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/dashboard/tasks?status=failed');
    const cookie = setCookie(res) as string;
    expect(cookie).toMatch(
      /^wl_dashboard=v1\.[\w-]+\.[\w-]+; Path=\/dashboard; Max-Age=43200; HttpOnly; SameSite=Strict$/,
    );
    expect(cookie).not.toContain(tokens.alice);
    const payload = JSON.parse(Buffer.from(cookie.split('.')[1] as string, 'base64url').toString());
    expect(payload).toMatchObject({ p: 'alice', s: ['read', 'run'] });
    expect(payload.x * 1000).toBeLessThanOrEqual(Date.now() + 12 * 3600_000);

    const list = await page('/dashboard/', cookie.split(';')[0]);
    expect(list.status).toBe(200);
    expect(list.body).toContain('<span class="who">alice</span>');
    expect(list.body).toContain(`data-execution="${aliceExecution}"`);
    expect(list.body).not.toContain(readerExecution);
    expect(list.body).toContain('action="/dashboard/logout"');
    for (const secret of [tokens.alice, SECRET]) expect(list.body).not.toContain(secret);
  });

  it('refuses a bad token, and a token without the read scope, without echoing either', async () => {
    const bad = `${tokens.alice}x`;
    for (const [token, status, words] of [
      [bad, 401, 'That token was not accepted: unknown token.'],
      ['wlt_nothing', 401, 'That token was not accepted'],
      [tokens.runner as string, 403, 'does not grant the read scope the dashboard needs (it grants: run)'],
      ['', 400, 'Paste a token'],
      ['x'.repeat(7001), 400, 'longer than any token'],
    ] as const) {
      const res = await raw(port, '/dashboard/login', {
        method: 'POST',
        headers: formHeaders(port),
        body: form({ token, next: '/dashboard/' }),
      });
      expect(res.status, words).toBe(status);
      expect(res.body).toContain(words);
      expect(setCookie(res), words).toBeUndefined();
      if (token !== '') expect(res.body).not.toContain(token);
    }
    // A token lacking read cannot use the dashboard with a bearer header either.
    const bearer = await raw(port, '/dashboard/', { headers: { authorization: `Bearer ${tokens.runner}` } });
    expect(bearer.status).toBe(403);
    expect(bearer.body).toContain('needs the read scope');
  });

  it('refuses a sign-in or sign-out posted from another site', async () => {
    for (const headers of [
      { ...formHeaders(port), 'sec-fetch-site': 'cross-site', origin: `http://127.0.0.1:${port}` },
      { ...formHeaders(port), origin: 'http://localhost:1' },
    ]) {
      const res = await raw(port, '/dashboard/login', {
        method: 'POST',
        headers,
        body: form({ token: tokens.alice as string }),
      });
      expect(res.status).toBe(403);
      expect(setCookie(res)).toBeUndefined();
    }
    // An origin the server does not know is refused before the dashboard (DNS rebinding guard).
    const foreign = await raw(port, '/dashboard/login', {
      method: 'POST',
      headers: { ...formHeaders(port), origin: 'http://evil.example' },
      body: form({ token: tokens.alice as string }),
    });
    expect(foreign.status).toBe(403);
    const cookie = await signIn(tokens.alice as string);
    const logout = await raw(port, '/dashboard/logout', {
      method: 'POST',
      headers: { ...formHeaders(port, cookie), 'sec-fetch-site': 'cross-site' },
    });
    expect(logout.status).toBe(403);
    expect((await page('/dashboard/', cookie)).status).toBe(200);
  });

  it('a read-only token sees its pages; its actions are refused with 403 and change nothing', async () => {
    const readOnly = await signIn(tokens.reader as string);
    const withRun = await signIn(tokens['reader-run'] as string);
    const detail = await page(`/dashboard/executions/${readerExecution}?confirm=pause`, readOnly);
    expect(detail.status).toBe(200);
    expect(detail.body).toContain('need the run scope');
    expect(detail.body).not.toContain('form class="confirm"');
    // The same principal's form token, from a session that may act.
    const csrf = csrfOf((await page(`/dashboard/executions/${readerExecution}?confirm=pause`, withRun)).body);
    for (const id of [readerExecution, aliceExecution, 'no-such-execution']) {
      const res = await raw(port, `/dashboard/executions/${id}/state`, {
        method: 'POST',
        headers: formHeaders(port, readOnly),
        body: form({ state: 'paused', csrf }),
      });
      expect(res.status, id).toBe(403);
      expect(res.body).toContain('need the run scope');
    }
    expect((await page(`/dashboard/executions/${readerExecution}`, readOnly)).body).toMatch(
      /id="state"><span class="state state-running">/,
    );
    const paused = await raw(port, `/dashboard/executions/${readerExecution}/state`, {
      method: 'POST',
      headers: formHeaders(port, withRun),
      body: form({ state: 'paused', csrf }),
    });
    expect(paused.status).toBe(303);
    expect(paused.headers.location).toBe(`/dashboard/executions/${readerExecution}?notice=paused`);
  });

  it("another principal's executions and runs are not found (404), and ?principal= shows nothing of theirs", async () => {
    const bob = await signIn(tokens.bob as string);
    for (const path of [
      `/dashboard/executions/${aliceExecution}`,
      `/dashboard/executions/${aliceExecution}?principal=alice`,
    ]) {
      expect((await page(path, bob)).status, path).toBe(404);
    }
    const list = await page('/dashboard/?principal=alice', bob);
    expect(list.status).toBe(200);
    expect(list.body).toContain(bobExecution);
    expect(list.body).not.toContain(aliceExecution);
    expect(list.body).not.toContain('name="principal"');
    const csrf = csrfOf((await page(`/dashboard/executions/${bobExecution}?confirm=pause`, bob)).body);
    const res = await raw(port, `/dashboard/executions/${aliceExecution}/state`, {
      method: 'POST',
      headers: formHeaders(port, bob),
      body: form({ state: 'paused', csrf, principal: 'alice' }),
    });
    expect(res.status).toBe(404);
    const run = await alice('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'durable-demo' },
      task: {},
    });
    const taskId = run.result.task.taskId as string;
    const tasks = await page('/dashboard/tasks?principal=alice', bob);
    expect(tasks.body).not.toContain(taskId);
    const cancel = await raw(port, `/dashboard/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: formHeaders(port, bob),
      body: form({ csrf, principal: 'alice' }),
    });
    expect(cancel.status).toBe(404);
    expect((await alice('tasks/get', { taskId })).result.status).not.toBe('cancelled');
    await alice('tasks/cancel', { taskId });
  });

  it('refuses tampered, forged, expired and revoked sessions, clearing the cookie', async () => {
    const good = await signIn(tokens.alice as string);
    const [, body, mac] = good.split('.') as [string, string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as Json;
    const asBob = Buffer.from(JSON.stringify({ ...payload, p: 'bob' })).toString('base64url');
    const longer = Buffer.from(JSON.stringify({ ...payload, s: ['read', 'run', 'admin'] })).toString(
      'base64url',
    );
    const hour = Math.floor(Date.now() / 1000) + 3600;
    const refused = {
      'another principal, same signature': `wl_dashboard=v1.${asBob}.${mac}`,
      'more scopes, same signature': `wl_dashboard=v1.${longer}.${mac}`,
      'signature cut short': `wl_dashboard=v1.${body}.${mac.slice(0, 20)}`,
      'signed with another key': sealSession({ p: 'bob', s: ['read', 'run'], x: hour }, `${SECRET}-not`),
      expired: sealSession({ p: 'bob', s: ['read', 'run'], x: Math.floor(Date.now() / 1000) - 5 }),
      'longer than a session can be': sealSession({ p: 'bob', s: ['read'], x: hour + 30 * 86_400 }),
      'not a cookie this server writes': 'wl_dashboard=v2.e30.AAAA',
      'static token credential unknown': sealSession({ p: 'bob', s: ['read'], x: hour, c: 'nope' }),
    };
    for (const [what, cookie] of Object.entries(refused)) {
      const res = await page('/dashboard/', cookie);
      expect(res.status, what).toBe(303);
      expect(res.headers.location, what).toMatch(/^\/dashboard\/login\?next=/);
      expect(setCookie(res), what).toBe(
        'wl_dashboard=; Path=/dashboard; Max-Age=0; HttpOnly; SameSite=Strict',
      );
      const fetched = await raw(port, '/dashboard/', { headers: { cookie, 'sec-fetch-mode': 'cors' } });
      expect(fetched.status, what).toBe(401);
    }
    // The same key, with what a JWT session holds: accepted (the test signs exactly as the server does).
    const minted = await page('/dashboard/', sealSession({ p: 'bob', s: ['read', 'run'], x: hour }));
    expect(minted.status).toBe(200);
    expect(minted.body).toContain(bobExecution);

    // Removing the static token ends the sessions opened with it, at once.
    const carol = await signIn(tokens.temporary as string);
    expect((await page('/dashboard/', carol)).status).toBe(200);
    expect(tokenCli('remove', 'temporary').status).toBe(0);
    expect((await page('/dashboard/', carol)).status).toBe(303);
  });

  it('accepts a valid bearer header on the dashboard, and a bad one gets the bearer challenge', async () => {
    const res = await raw(port, '/dashboard/', {
      headers: { ...NAVIGATE, authorization: `Bearer ${tokens.alice}` },
    });
    expect(res.status).toBe(200);
    expect(res.body).toContain(aliceExecution);
    expect(res.body).not.toContain('action="/dashboard/logout"');
    const bad = await raw(port, '/dashboard/', { headers: { ...NAVIGATE, authorization: 'Bearer wlt_bad' } });
    expect(bad.status).toBe(401);
    expect(bad.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
  });

  it('signs out: the cookie is cleared and the next page asks to sign in again', async () => {
    const cookie = await signIn(tokens.alice as string);
    expect((await page('/dashboard/logout', cookie)).body).toContain('End your dashboard session (alice)');
    const out = await raw(port, '/dashboard/logout', { method: 'POST', headers: formHeaders(port, cookie) });
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/dashboard/login?out');
    expect(setCookie(out)).toBe('wl_dashboard=; Path=/dashboard; Max-Age=0; HttpOnly; SameSite=Strict');
    expect((await page('/dashboard/login?out')).body).toContain('You are signed out.');
    // A browser drops the cleared cookie; one that kept it still holds a signed, unexpired session
    // (stateless, like a bearer token), which the page without it cannot use.
    expect((await page('/dashboard/')).status).toBe(303);
  });

  it('lists the runs of the principal with their executions, live, and cancels one (run scope, CSRF)', async () => {
    const cookie = await signIn(tokens.alice as string);
    const run = await alice('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'durable-demo' },
      task: {},
    });
    const taskId = run.result.task.taskId as string;
    const runId = run.result._meta['workflowlookup/run'].run_id as string;
    let status: Json = {};
    for (let i = 0; i < 100 && status.status !== 'input_required'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await alice('tasks/get', { taskId })).result;
    }
    expect(status.status).toBe('input_required');
    const list = await page('/dashboard/tasks', cookie);
    expect(list.status).toBe(200);
    const row = new RegExp(
      `<tr id="task-${taskId}" data-task="${taskId}" data-status="input_required">([\\s\\S]*?)</tr>`,
    ).exec(list.body)?.[1] as string;
    expect(row).toContain('<span class="muted">workflow_run</span>');
    expect(row).toContain('href="/dashboard/workflows/durable-demo"');
    expect(row).toContain(`href="/dashboard/executions/${runId}"`);
    expect(row).toContain('run running');
    expect(row).toContain('Cancel…');
    // The run waits on an agent step: its continuation token is in the task, never on the page.
    const secret = status._meta?.['workflowlookup/status']?.continuation_token as string;
    expect(secret).toMatch(/^eyJ/);
    expect(list.body).not.toContain(secret);
    expect((await page(`/dashboard/executions/${runId}`, cookie)).status).toBe(200);

    // Live: a new task shows up on an open runs page.
    const version = /data-version="([^"]+)"/.exec(list.body)?.[1] as string;
    const events = await stream(port, `/dashboard/tasks/events?v=${version}`, cookie);
    const second = await alice('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'durable-demo' },
      task: {},
    });
    await expect.poll(() => events.text()).toContain('event: changed');
    events.close();
    expect((await page('/dashboard/tasks', cookie)).body).toContain(second.result.task.taskId);

    const confirm = await page(`/dashboard/tasks?confirm=${taskId}`, cookie);
    expect(confirm.body).toContain(`action="/dashboard/tasks/${taskId}/cancel"`);
    const csrf = csrfOf(confirm.body);
    const forged = await raw(port, `/dashboard/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: formHeaders(port, cookie),
      body: form({ csrf: `${csrf}x` }),
    });
    expect(forged.status).toBe(403);
    const readOnly = await signIn(tokens.reader as string);
    const refused = await raw(port, `/dashboard/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: formHeaders(port, readOnly),
      body: form({ csrf }),
    });
    expect(refused.status).toBe(403);
    const cancelled = await raw(port, `/dashboard/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: formHeaders(port, cookie),
      body: form({ csrf, reason: 'not needed' }),
    });
    expect(cancelled.status).toBe(303);
    expect(cancelled.headers.location).toBe('/dashboard/tasks?notice=cancelled');
    expect((await alice('tasks/get', { taskId })).result.status).toBe('cancelled');
    const after = await page('/dashboard/tasks?status=cancelled', cookie);
    expect(after.body).toContain(`data-task="${taskId}" data-status="cancelled"`);
    expect(after.body).not.toContain(second.result.task.taskId);
    expect((await page(`/dashboard/executions/${runId}`, cookie)).body).toContain('state-abandoned');
    const again = await raw(port, `/dashboard/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: formHeaders(port, cookie),
      body: form({ csrf }),
    });
    expect(again.headers.location).toBe('/dashboard/tasks?notice=finished');
    await alice('tasks/cancel', { taskId: second.result.task.taskId });
  });

  it('leaves the MCP endpoint as it was: a session cookie is no bearer token there', async () => {
    const cookie = await signIn(tokens.alice as string);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    };
    expect((await post(s.url, init, { cookie })).status).toBe(401);
    expect((await post(s.url, init, { authorization: `Bearer ${tokens.alice}` })).status).toBe(200);
    expect((await raw(port, '/dashboardx')).status).toBe(404);
  });
});

describe('a replica and a public https URL', () => {
  it('accepts sessions of another server sharing the token secret; cookies are Secure; sign-in is rate-limited', async () => {
    const cookie = await signIn(tokens.alice as string);
    const replica = await server({
      ...AUTH(),
      WORKFLOWLOOKUP_PUBLIC_URL: 'https://mcp.example.com/mcp',
      WORKFLOWLOOKUP_RATE_LIMIT: '6',
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'replica-data'),
    });
    const other = Number(new URL(replica.url).port);
    const res = await page('/dashboard/', cookie, other);
    expect(res.status).toBe(200);
    expect(res.body).toContain('<span class="who">alice</span>');
    const signed = await raw(other, '/dashboard/login', {
      method: 'POST',
      headers: formHeaders(other),
      body: form({ token: tokens.bob as string }),
    });
    expect(setCookie(signed)).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    const statuses: number[] = [];
    let retry: string | string[] | undefined;
    for (let i = 0; i < 10; i++) {
      const attempt = await raw(other, '/dashboard/login', {
        method: 'POST',
        headers: formHeaders(other),
        body: form({ token: `wlt_guess_${i}` }),
      });
      statuses.push(attempt.status);
      if (attempt.status === 429) retry = attempt.headers['retry-after'];
    }
    expect(statuses).toContain(429);
    expect(Number(retry)).toBeGreaterThanOrEqual(1);
    // Signed-in users have their own budget.
    expect((await page('/dashboard/', cookie, other)).status).toBe(200);
  });
});

describe('the dashboard switch and serve --http without authentication', () => {
  it('WORKFLOWLOOKUP_HTTP_DASHBOARD=false serves no dashboard; MCP is unaffected', async () => {
    const off = await server({ ...AUTH(), WORKFLOWLOOKUP_HTTP_DASHBOARD: 'false' });
    const p = Number(new URL(off.url).port);
    expect(off.stderr()).not.toContain('dashboard at');
    for (const path of ['/dashboard/', '/dashboard/login', '/dashboard/assets/dashboard.css']) {
      expect((await raw(p, path, { headers: NAVIGATE })).status, path).toBe(404);
    }
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    };
    expect((await post(off.url, init, { authorization: `Bearer ${tokens.alice}` })).status).toBe(200);
  });

  it('without authentication: no sign-in, the local principal; SIGTERM ends live streams and exits 0', async () => {
    const open = await server({ WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'open-data') });
    const p = Number(new URL(open.url).port);
    expect(open.stderr()).toContain(`dashboard at http://127.0.0.1:${p}/dashboard/`);
    const list = await page('/dashboard/', undefined, p);
    expect(list.status).toBe(200);
    expect(list.body).toContain('<span class="who">local</span>');
    expect(list.body).not.toContain('/dashboard/logout');
    const login = await page('/dashboard/login', undefined, p);
    expect(login.status).toBe(303);
    expect(login.headers.location).toBe('/dashboard/');
    const since = /data-version="([^"]*)"/.exec(list.body)?.[1] ?? '';
    const events = await stream(p, `/dashboard/events?since=${encodeURIComponent(since)}`);
    const runs = await stream(p, '/dashboard/tasks/events?v=x');
    // Open event streams do not hold the exit: a server waiting on them would never exit (the test's
    // timeout), and exit code 0 says the shutdown was the clean one, not a forced kill.
    open.kill('SIGTERM');
    expect(await open.exited).toEqual({ code: 0, signal: null });
    await expect.poll(() => events.ended() && runs.ended()).toBe(true);
  });
});

/** An event stream held open: what arrived so far. */
function stream(p: number, path: string, cookie?: string) {
  return new Promise<{ text: () => string; ended: () => boolean; close: () => void }>((resolve, reject) => {
    let text = '';
    let ended = false;
    const req = request(
      {
        host: '127.0.0.1',
        port: p,
        path,
        headers: { accept: 'text/event-stream', ...(cookie ? { cookie } : {}) },
      },
      (res) => {
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toContain('text/event-stream');
        res.setEncoding('utf8').on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => {
          ended = true;
        });
        res.on('close', () => {
          ended = true;
        });
        resolve({ text: () => text, ended: () => ended, close: () => req.destroy() });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
