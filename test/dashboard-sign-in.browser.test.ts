// The dashboard under `serve --http` with static tokens, in Chromium: signing in, following an
// execution live with the session cookie, an action, the runs page, a link from another site, signing
// out; no CSP violation or script error on any page.
import { spawnSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, chromiumFor, liveState } from './helpers/chromium.js';
import { type HttpServer, type Json, post, startHttpServer } from './helpers/http-server.js';
import { CLI, FIXTURES, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

const RUNS = chromiumFor('dashboard sign-in browser suite');

let sb: Sandbox;
let s: HttpServer;
let origin: string;
let token: string;
let browser: Browser;
let other: Server;
let otherOrigin: string;
let rpc: (method: string, params?: Json) => Promise<Json>;

/** A page that records script errors, console errors and CSP violations. */
async function open(): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()} (${page.url()})`);
  });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.effectiveDirective} ${e.blockedURI} in ${location.href}`);
    });
  });
  return { page, problems };
}

async function signIn(page: Page, value: string): Promise<void> {
  await page.fill('input[name="token"]', value);
  await Promise.all([page.waitForLoadState('load'), page.click('form.sign-in-form button[type="submit"]')]);
}

beforeAll(async () => {
  if (!RUNS) return;
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: 'browser-sign-in-secret-0123456789-abcdef' });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  cpSync(join(FIXTURES, 'valid', 'durable-demo.yaml'), join(sb.runtime, 'durable-demo.yaml'));
  const auth = { WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: join(sb.root, 'tokens.json') };
  token = spawnSync(process.execPath, [CLI, 'token', 'add', 'alice', '--scopes', 'read,run'], {
    env: { ...sb.env, ...auth },
    encoding: 'utf8',
  }).stdout.trim();
  s = await startHttpServer(sb, auth);
  origin = new URL(s.url).origin;
  const headers = { authorization: `Bearer ${token}` };
  let id = 0;
  // The stateless 2026-07-28 envelope: one POST per call, no session to keep.
  rpc = async (method, params = {}) => {
    const res = await post(
      s.url,
      {
        jsonrpc: '2.0',
        id: ++id,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {
              extensions: { 'io.modelcontextprotocol/tasks': {} },
            },
            'io.modelcontextprotocol/clientInfo': { name: 'browser-test', version: '1' },
          },
        },
      },
      {
        ...headers,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        // The body's tool name or task id, repeated for routers (2026-07-28).
        ...(typeof (params.name ?? params.taskId) === 'string'
          ? { 'mcp-name': params.name ?? params.taskId }
          : {}),
      },
    );
    if (!res.json || res.json.error) throw new Error(`${method}: ${res.status} ${res.text}`);
    return res.json;
  };
  // Another site (localhost is not the same site as 127.0.0.1) with a link into the dashboard.
  other = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><a id="go" href="${origin}/dashboard/tasks">the team's runs</a>`);
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  otherOrigin = `http://localhost:${(other.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => other?.close(r));
  s?.kill();
  sb?.cleanup();
});

describe.skipIf(!RUNS)('dashboard sign-in in a browser', () => {
  it('sign in → the execution advances live → pause it → the runs page → cancel a run → sign out', async () => {
    const started = (
      await rpc('tools/call', { name: 'workflow_start', arguments: { workflow_name: 'durable-demo' } })
    ).result.structuredContent as Json;
    const id = started.execution_id as string;
    const { page, problems } = await open();

    await page.goto(`${origin}/dashboard/executions/${id}`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    await signIn(page, `${token}-wrong`);
    expect(await page.locator('.notice').textContent()).toContain('That token was not accepted');
    expect(await page.content()).not.toContain(`${token}-wrong`);
    // The refused sign-in answered 401, which Chromium reports on the console: expected, and the only one.
    expect(problems.splice(0)).toEqual([
      expect.stringContaining('the server responded with a status of 401'),
    ]);
    await signIn(page, token);
    expect(new URL(page.url()).pathname).toBe(`/dashboard/executions/${id}`);
    expect(await page.locator('.who').textContent()).toBe('alice');
    // HttpOnly: the page's own script cannot read the session.
    expect(await page.evaluate(() => document.cookie)).toBe('');
    await expect.poll(() => liveState(page)).toBe('live');

    await rpc('tools/call', {
      name: 'workflow_next_step',
      arguments: { token: tokenOf(started), output: { summary: 'The design: a queue.' } },
    });
    await expect.poll(() => page.locator('#current-step').textContent()).toContain('implement');

    await page.click('a.action-pause');
    await page.waitForSelector('form.confirm');
    await page.fill('form.confirm input[name="reason"]', 'lunch');
    await Promise.all([
      page.waitForURL('**/dashboard/executions/*?notice=paused'),
      page.click('form.confirm button'),
    ]);
    expect(await page.locator('#state').textContent()).toContain('paused');
    const status = (
      await rpc('tools/call', { name: 'workflow_executions', arguments: { states: ['paused'] } })
    ).result.structuredContent as Json;
    expect(status.executions.map((e: Json) => e.execution_id)).toContain(id);

    // A run waiting on its agent step, then a second one started while the runs page is open.
    const run = await rpc('tools/call', { name: 'workflow_run', arguments: { workflow_id: 'durable-demo' } });
    const taskId = run.result.taskId as string;
    await page.click('nav a[href="/dashboard/tasks"]');
    await page.waitForURL('**/dashboard/tasks');
    await expect.poll(() => liveState(page)).toBe('live');
    await expect.poll(() => page.locator(`tr[data-task="${taskId}"]`).count()).toBe(1);
    const second = await rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'durable-demo' },
    });
    await expect.poll(() => page.locator(`tr[data-task="${second.result.taskId}"]`).count()).toBe(1);
    await page.click(`tr[data-task="${taskId}"] a.action-cancel`);
    await page.waitForSelector('form.confirm');
    await Promise.all([
      page.waitForURL('**/dashboard/tasks?notice=cancelled'),
      page.click('form.confirm button'),
    ]);
    expect(await page.locator(`tr[data-task="${taskId}"]`).getAttribute('data-status')).toBe('cancelled');
    const runId = await page
      .locator(`tr[data-task="${taskId}"] a[href^="/dashboard/executions/"]`)
      .textContent();
    await page.click(`tr[data-task="${taskId}"] a[href^="/dashboard/executions/"]`);
    await page.waitForURL(`**/dashboard/executions/${runId}`);
    expect(await page.locator('#state').textContent()).toContain('abandoned');

    await page.click('nav a[href="/dashboard/workflows"]');
    await page.click('a[href="/dashboard/workflows/durable-demo"]');
    expect(await page.locator('svg.wf-diagram').count()).toBe(1);

    await Promise.all([page.waitForURL('**/dashboard/login?out'), page.click('form.sign-out button')]);
    expect(await page.locator('.notice').textContent()).toBe('You are signed out.');
    await page.goto(`${origin}/dashboard/`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    expect(problems).toEqual([]);
    await page.context().close();
    await rpc('tasks/cancel', { taskId: second.result.taskId });
  });

  it('a link from another site lands signed in (SameSite=Strict cookie, one same-site hop)', async () => {
    const { page, problems } = await open();
    await page.goto(`${origin}/dashboard/login`);
    await signIn(page, token);
    expect(new URL(page.url()).pathname).toBe('/dashboard/');
    await page.goto(otherOrigin);
    const visits: { site: string | undefined; cookie: boolean }[] = [];
    page.on('request', async (request) => {
      if (request.url() !== `${origin}/dashboard/tasks`) return;
      const headers = await request.allHeaders();
      visits.push({
        site: headers['sec-fetch-site'],
        cookie: (headers.cookie ?? '').includes('wl_dashboard='),
      });
    });
    await page.click('#go');
    await page.waitForURL(`${origin}/dashboard/tasks`);
    await page.waitForSelector('h1');
    expect(await page.locator('h1').textContent()).toBe('Tasks and runs');
    expect(await page.locator('.who').textContent()).toBe('alice');
    // The browser held the cookie back from the cross-site click, and sent it on the hop.
    expect(visits).toEqual([
      { site: 'cross-site', cookie: false },
      { site: 'same-origin', cookie: true },
    ]);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
