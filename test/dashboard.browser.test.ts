// The dashboard and the MCP App view in a real browser: Debian's chromium driven by playwright-core,
// one browser for the whole file, tests in order. `.ci/run` installs chromium when it is missing.
import { cpSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { EXTENSION_ID, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { build } from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { CHROMIUM, chromiumFor, liveState } from './helpers/chromium.js';
import { type DashboardProcess, startDashboard } from './helpers/dashboard.js';
import { CLI, callTool, FIXTURES, ROOT, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

const RUNS = chromiumFor('dashboard browser suite');

const XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">';

let sb: Sandbox;
let client: Client;
let dash: DashboardProcess;
let browser: Browser;
/** Screenshots for looking at a failure: written only when WORKFLOWLOOKUP_TEST_SHOTS names a directory. */
const shotsDir = process.env.WORKFLOWLOOKUP_TEST_SHOTS;
const shot = async (page: Page, name: string) => {
  if (shotsDir) await page.screenshot({ path: join(shotsDir, `${name}.png`), fullPage: true });
};

const call = (name: string, args: Json) => callTool(client, name, args);

const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const VIEWPORTS = [
  ['desktop', DESKTOP],
  ['phone', PHONE],
] as const;

/** A page that records errors and CSP violations (the init script runs outside the page's CSP). */
async function open(
  url: string,
  viewport: { width: number; height: number } = DESKTOP,
): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.effectiveDirective} ${e.blockedURI} in ${location.href}`);
    });
  });
  await page.goto(url);
  return { page, problems };
}

beforeAll(async () => {
  if (!RUNS) return;
  sb = sandbox();
  for (const f of ['durable-demo.yaml', 'loops-demo.yaml']) {
    cpSync(join(FIXTURES, 'valid', f), join(sb.runtime, f));
  }
  // Workflow text is written by agents too: a hostile title and step title must stay text.
  writeFileSync(
    join(sb.runtime, 'hostile.json'),
    JSON.stringify({
      id: 'hostile',
      name: `Hostile ${XSS}`,
      description: XSS,
      version: '1.0.0',
      steps: [{ id: 'evil', title: XSS, prompt: 'p' }],
    }),
  );
  cpSync(
    join(ROOT, 'examples', 'approvals', 'release-approval.yaml'),
    join(sb.runtime, 'release-approval.yaml'),
  );
  // Delegation: fan-out hands three reviewers out as child executions, then joins.
  cpSync(join(FIXTURES, 'fan-out'), sb.runtime, { recursive: true });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  client = new Client(
    { name: 'browser-test-host', version: '1.0.0' },
    { capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } },
  );
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: sb.env,
      cwd: sb.project,
      stderr: 'pipe',
    }),
  );
  dash = await startDashboard(sb);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});

afterAll(async () => {
  await browser?.close();
  await dash?.stop();
  await client?.close();
  sb?.cleanup();
});

describe.skipIf(!RUNS)('dashboard in a browser', () => {
  it('list → open an execution → it advances live while a client calls workflow_next_step → pause → the state changes', async () => {
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    const id = started.execution_id as string;
    const { page, problems } = await open(dash.url);
    await expect.poll(() => liveState(page)).toBe('live');
    await shot(page, 'list');
    await page.click(`a[href="/executions/${id}"]`);
    await page.waitForURL(`**/executions/${id}`);
    await expect.poll(() => liveState(page)).toBe('live');
    await page.evaluate(() => {
      (window as unknown as { stayed: boolean }).stayed = true;
    });
    expect(await page.locator('g[data-step="design"]').getAttribute('class')).toContain('is-current');

    await call('workflow_next_step', {
      token: tokenOf(started),
      output: {
        summary: 'The design: a queue.',
        artifacts: [{ type: 'report', name: 'd.md', content: '# D', content_type: 'text/markdown' }],
      },
    });
    await expect
      .poll(() => page.locator('g[data-step="implement"]').getAttribute('class'))
      .toContain('is-current');
    expect(await page.locator('g[data-step="design"]').getAttribute('class')).toContain('is-done');
    expect(await page.locator('#current-step').textContent()).toContain('implement');
    expect(await page.locator('table.timeline tr.step-row').count()).toBe(2);
    expect(await page.locator('#artifacts h1').textContent()).toBe('D');
    // Updated in place: the same document, no reload.
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    await shot(page, 'execution');

    await page.click('a.action-pause');
    await page.waitForSelector('form.confirm');
    await page.fill('form.confirm input[name="reason"]', 'checking something');
    await page.click('form.confirm button[type="submit"]');
    await page.waitForURL((url) => url.pathname === `/executions/${id}` && url.search === '?notice=paused');
    expect(await page.locator('#state').textContent()).toContain('paused');
    expect(await page.locator('#state').textContent()).toContain('checking something');
    expect(await page.locator('.notice').textContent()).toBe('The execution is paused.');
    const refused = await call('workflow_next_step', { token: 'x', output: { summary: 'y' } });
    expect(refused.error).toBeDefined();
    const status = await call('workflow_executions', { states: ['paused'] });
    expect(status.executions.map((e: Json) => e.execution_id)).toContain(id);

    // A person's pause is not the agent's to lift; the principal's explicit override is, and the open
    // page follows it.
    const held = await call('workflow_set_state', { execution_id: id, state: 'running' });
    expect(held.error.data.error_code).toBe('EXECUTION_STATE_CONFLICT');
    await call('workflow_set_state', { execution_id: id, state: 'running', override_pause: true });
    await expect.poll(() => page.locator('#state').textContent()).toContain('running');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('the executions list follows new executions without a reload', async () => {
    const { page, problems } = await open(`${dash.url}?state=running`);
    await expect.poll(() => liveState(page)).toBe('live');
    const before = await page.locator('tr[data-execution]').count();
    const started = await call('workflow_start', { workflow_name: 'loops-demo' });
    await expect.poll(() => page.locator(`tr[data-execution="${started.execution_id}"]`).count()).toBe(1);
    expect(await page.locator('tr[data-execution]').count()).toBe(before + 1);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('draws a workflow diagram: an SVG with one node per step, and copies its Mermaid text', async () => {
    const { page, problems } = await open(`${dash.url}workflows/loops-demo`);
    const svg = page.locator('svg.wf-diagram');
    expect(await svg.count()).toBe(1);
    const box = await svg.boundingBox();
    expect(box?.width).toBeGreaterThan(100);
    expect(box?.height).toBeGreaterThan(300);
    const steps = await page
      .locator('svg.wf-diagram g.wf-node[data-step]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-step')));
    expect(steps.sort()).toEqual(
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
    // Styled by the external stylesheet (CSP allows no inline style): loop nodes are filled.
    const fill = await page
      .locator('g.wf-loop > polygon')
      .first()
      .evaluate((e) => getComputedStyle(e).fill);
    expect(fill).toBe('rgb(255, 247, 237)');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.click('button[data-copy="mermaid"]');
    await expect.poll(() => page.locator('button[data-copy="mermaid"]').textContent()).toBe('Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toMatch(/^flowchart TD\n/);
    await shot(page, 'workflow');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  for (const [name, viewport] of VIEWPORTS) {
    it(`${name}: the diagram keeps readable text (a wide one scrolls), the Mermaid text reads quotes as quotes`, async () => {
      // conditional-workflow-example is about 770 px wide: drawn at its own size, a 13 px label stays
      // about 13 px tall on screen (shrunk to a phone it was ~6 px), and the diagram's box scrolls.
      const { page, problems } = await open(`${dash.url}workflows/conditional-workflow-example`, viewport);
      const heights = await page
        .locator('svg.wf-diagram g.wf-node text')
        .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height));
      expect(heights.length).toBeGreaterThan(0);
      expect(Math.min(...heights)).toBeGreaterThanOrEqual(10);
      // The page itself does not scroll sideways; only the diagram's own box may.
      const measured = await overflow(page);
      expect(measured.scroll).toBe(viewport.width);
      const natural = Number(await page.locator('svg.wf-diagram').getAttribute('width'));
      if (natural > viewport.width)
        expect(await page.locator('.diagram').evaluate((d) => d.scrollWidth > d.clientWidth)).toBe(true);
      await page.goto(`${dash.url}workflows/durable-demo`);
      const mermaid = (await page.locator('#mermaid').textContent()) ?? '';
      expect(mermaid).toContain("if exposure == 'public'");
      expect(mermaid).not.toMatch(/&#|#34;/);
      expect(problems).toEqual([]);
      await page.context().close();
    });

    it(`${name}: the Approvals page shows the report as Markdown and the whole reason placeholder`, async () => {
      const started = await call('workflow_start', { workflow_name: 'release-approval' });
      const waiting = await call('workflow_next_step', {
        token: tokenOf(started),
        output: { summary: 'The release notes:\n\n- **faster** start-up\n- `--port` named when in use' },
      });
      expect(waiting.approval.status).toBe('pending');
      const { page, problems } = await open(`${dash.url}approvals`, viewport);
      const card = page.locator(`section.approval[data-approval="${waiting.approval.approval_id}"]`);
      expect(await card.locator('.markdown li strong').first().textContent()).toBe('faster');
      expect(await card.locator('.markdown code').first().textContent()).toBe('--port');
      const fits = await card.locator('input[name="reason"]').evaluate((input) => {
        const el = input as HTMLInputElement;
        const style = getComputedStyle(el);
        const ctx = document.createElement('canvas').getContext('2d') as CanvasRenderingContext2D;
        ctx.font = `${style.fontSize} ${style.fontFamily}`;
        const room =
          el.clientWidth - Number.parseFloat(style.paddingLeft) - Number.parseFloat(style.paddingRight);
        return { text: ctx.measureText(el.placeholder).width, room };
      });
      expect(fits.text).toBeLessThanOrEqual(fits.room);
      await shot(page, `approvals-${name}`);
      expect(problems).toEqual([]);
      await page.context().close();
    });
  }

  it('shows <script> in outputs, artifacts and workflow text as text, and runs none of it', async () => {
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    await call('workflow_next_step', {
      token: tokenOf(started),
      output: {
        summary: `design ${XSS}`,
        findings: [XSS],
        artifacts: [
          {
            type: 'report',
            name: 'x.md',
            content: `# ${XSS}\n\n[click](javascript:window.__xss=3)`,
            content_type: 'text/markdown',
          },
          {
            type: 'data',
            name: 'x.json',
            content: JSON.stringify({ html: XSS }),
            content_type: 'application/json',
          },
          { type: 'file', name: 'x.html', content: XSS, content_type: 'text/html' },
        ],
        context: { note: XSS },
      },
    });
    for (const path of [`executions/${started.execution_id}`, 'workflows/hostile', 'workflows']) {
      const { page, problems } = await open(`${dash.url}${path}`);
      await page.waitForLoadState('load');
      await page.waitForTimeout(200);
      expect(
        await page.evaluate(() => (window as unknown as { __xss?: number }).__xss),
        path,
      ).toBeUndefined();
      expect(await page.evaluate(() => document.scripts.length), path).toBe(1);
      expect(await page.locator('img').count(), path).toBe(0);
      expect(await page.locator('a[href^="javascript:"]').count(), path).toBe(0);
      expect(await page.locator('body').innerText(), path).toContain('<script>window.__xss = 1</script>');
      expect(problems, path).toEqual([]);
      await page.context().close();
    }
  });
});

/** Starts a run of `workflow_id` as an MCP task (2025-11-25) and answers its task id. */
async function runTask(workflow_id: string): Promise<string> {
  const created = await client.request(
    { method: 'tools/call', params: { name: 'workflow_run', arguments: { workflow_id }, task: {} } },
    z.looseObject({ task: z.looseObject({ taskId: z.string() }) }),
  );
  return created.task.taskId;
}

/** Whether anything on the page reaches past the viewport's right edge (sideways scrolling). */
const overflow = (page: Page) =>
  page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('header *, main > *')]
      .filter((e) => e.getBoundingClientRect().right > width + 1 && !e.closest('.table-wrap, .diagram, pre'))
      .map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
    return { scroll: document.documentElement.scrollWidth, width, wide: wide.slice(0, 5) };
  });

describe.skipIf(!RUNS)('the first hour (issue #23 item 7), at desktop and phone sizes', () => {
  let paused: string;
  let finished: string;

  beforeAll(async () => {
    // One paused with a reason; one paused, then ended (its pause reason is history). Agents may not
    // set `completed`; ending it as abandoned, without a reason, is the same case on the page.
    paused = (await call('workflow_start', { workflow_name: 'durable-demo' })).execution_id;
    await call('workflow_set_state', { execution_id: paused, state: 'paused', reason: 'lunch' });
    finished = (await call('workflow_start', { workflow_name: 'loops-demo' })).execution_id;
    await call('workflow_set_state', { execution_id: finished, state: 'paused', reason: 'lunch' });
    await call('workflow_set_state', { execution_id: finished, state: 'running' });
    await call('workflow_set_state', { execution_id: finished, state: 'abandoned' });
  });

  for (const [name, viewport] of VIEWPORTS) {
    it(`${name}: a finished execution shows no old pause reason; a paused one's step waits as paused`, async () => {
      const done = await open(`${dash.url}executions/${finished}`, viewport);
      expect(await done.page.locator('#state').textContent()).toContain('abandoned');
      expect(await done.page.locator('#state').textContent()).not.toContain('lunch');
      await done.page.context().close();
      const { page, problems } = await open(`${dash.url}executions/${paused}`, viewport);
      expect((await page.locator('#state').textContent())?.trim()).toBe('paused (lunch)');
      const current = page.locator('table.timeline tr.step-row.current');
      expect(await current.locator('.state').textContent()).toBe('paused');
      expect(await page.locator('table.timeline .state-running').count()).toBe(0);
      await shot(page, `paused-${name}`);
      expect(problems).toEqual([]);
      await page.context().close();
    });

    it(`${name}: pausing is confirmed calmly, abandoning in red`, async () => {
      const running = (await call('workflow_start', { workflow_name: 'durable-demo' })).execution_id;
      const { page, problems } = await open(`${dash.url}executions/${running}`, viewport);
      await page.click('a.action-pause');
      await page.waitForSelector('form.confirm');
      // The form is in the DOM before the stylesheet has loaded; computed colours are only final at 'load'.
      await page.waitForLoadState('load');
      expect(await page.locator('form.confirm').getAttribute('class')).toBe('confirm');
      const calm = page.locator('form.confirm button[type="submit"]');
      expect(await calm.getAttribute('class')).toBe('primary');
      expect(await calm.evaluate((b) => getComputedStyle(b).backgroundColor)).toBe('rgb(37, 99, 235)');
      expect(await page.locator('form.confirm').evaluate((f) => getComputedStyle(f).backgroundColor)).toBe(
        'rgb(239, 246, 255)',
      );
      await page.click('a.action-abandon');
      await page.waitForSelector('form.confirm-danger');
      await page.waitForLoadState('load');
      const red = page.locator('form.confirm button[type="submit"]');
      expect(await red.evaluate((b) => getComputedStyle(b).backgroundColor)).toBe('rgb(185, 28, 28)');
      expect(problems).toEqual([]);
      await page.context().close();
    });

    // One test per page and width: ten browser pages in one test took more than its timeout on a busy machine.
    const widths = name === 'phone' ? [viewport, { width: 420, height: 900 }] : [viewport];
    for (const size of widths)
      for (const where of ['', 'execution', 'tasks', 'workflows', 'workflows/loops-demo'])
        it(`${name}: ${where || 'executions'} at ${size.width} px fits the screen, header whole, no sideways scrolling`, async () => {
          const path = where === 'execution' ? `executions/${paused}` : where;
          const { page, problems } = await open(`${dash.url}${path}`, size);
          const measured = await overflow(page);
          expect({ path, size: size.width, ...measured }).toEqual({
            path,
            size: size.width,
            scroll: size.width,
            width: size.width,
            wide: [],
          });
          const header = await page.locator('header.top').boundingBox();
          expect(header?.width).toBeLessThanOrEqual(size.width);
          for (const link of await page.locator('header.top a').all()) {
            const box = await link.boundingBox();
            expect(box && box.x + box.width, `${path} header link`).toBeLessThanOrEqual(size.width);
          }
          if (size.width === 390) await shot(page, `phone-${path.replaceAll('/', '-') || 'executions'}`);
          expect(problems).toEqual([]);
          await page.context().close();
        });

    it(`${name}: executions show durations and relative times, and are found by id or workflow`, async () => {
      const { page, problems } = await open(dash.url, viewport);
      const row = page.locator(`tr[data-execution="${finished}"]`);
      expect(await row.locator('td.duration').textContent()).toMatch(/^\d+(\.\d)? ?(ms|s|min)/);
      expect(await page.locator(`tr[data-execution="${paused}"] td.duration`).textContent()).toMatch(
        /so far$/,
      );
      const updated = row.locator('time').last();
      expect(await updated.textContent()).toMatch(/^(just now|\d+ (s|min) ago)$/);
      expect(await updated.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
      // An execution id opens it.
      await page.fill('input[name="q"]', paused);
      await page.click('form.search button');
      await page.waitForURL(`**/executions/${paused}`);
      // A part of one workflow's id lists its executions.
      await page.goto(dash.url);
      await page.fill('input[name="q"]', 'loops');
      await page.click('form.search button');
      await page.waitForURL((url) => url.searchParams.get('workflow') === 'loops-demo');
      const workflows = await page.locator('tr[data-execution] td:nth-child(2)').allTextContents();
      expect(new Set(workflows)).toEqual(new Set(['loops-demo']));
      // Several matches are offered; a typo gets the nearest.
      await page.goto(`${dash.url}?q=demo`);
      expect(await page.locator('.notice a').allTextContents()).toEqual(['durable-demo', 'loops-demo']);
      await page.goto(`${dash.url}?q=durabel-demo`);
      expect(await page.locator('.notice').textContent()).toContain('Did you mean durable-demo?');
      expect(problems).toEqual([]);
      await page.context().close();
    });

    it(`${name}: a workflow links to its executions; details read as tables, not JSON`, async () => {
      const { page, problems } = await open(`${dash.url}workflows/durable-demo`, viewport);
      await page.click('#executions-of');
      await page.waitForURL((url) => url.searchParams.get('workflow') === 'durable-demo');
      const workflows = await page.locator('tr[data-execution] td:nth-child(2)').allTextContents();
      expect(workflows.length).toBeGreaterThan(0);
      expect(new Set(workflows)).toEqual(new Set(['durable-demo']));
      const started = await call('workflow_start', {
        workflow_name: 'durable-demo',
        context: { team: 'core' },
      });
      await page.goto(`${dash.url}executions/${started.execution_id}`);
      await page.click('#context summary');
      expect(await page.locator('#context table.kv th').allTextContents()).toContain('team');
      expect(await page.locator('#context pre.json').count()).toBe(0);
      expect(await page.locator('#telemetry dl.pairs').count()).toBeGreaterThan(0);
      expect(await page.locator('#telemetry code').filter({ hasText: /^\{/ }).count()).toBe(0);
      expect(problems).toEqual([]);
      await page.context().close();
    });

    it(`${name}: runs say cancelled once, never show agent instructions, and one page has no pager arrows`, async () => {
      const waiting = await runTask('durable-demo');
      const dropped = await runTask('loops-demo');
      await call('workflow_cancel', { operation_id: dropped, confirm: true, reason: 'by mistake' });
      const { page, problems } = await open(`${dash.url}tasks`, viewport);
      await expect
        .poll(() => page.locator(`tr[data-task="${waiting}"]`).getAttribute('data-status'))
        .toBe('input_required');
      const text = await page.locator('#tasks').innerText();
      expect(text).not.toContain('canceled');
      expect(await page.locator(`tr[data-task="${dropped}"] .state`).allTextContents()).toEqual([
        'cancelled',
      ]);
      const progress = await page.locator(`tr[data-task="${waiting}"] .task-summary`).innerText();
      expect(progress).toContain('waiting for the agent');
      expect(progress).not.toMatch(/workflow_next_step|continuation token|input request/);
      expect(await page.locator('.pager a').count()).toBe(0);
      expect(await page.locator('.pager').innerText()).not.toMatch(/[←→]/);
      await page.goto(`${dash.url}?workflow=loops-demo`);
      expect(await page.locator('.pager').innerText()).not.toMatch(/[←→]/);
      await shot(page, `runs-${name}`);
      expect(problems).toEqual([]);
      await page.context().close();
      await call('workflow_cancel', { operation_id: waiting, confirm: true });
    });
  }
});

describe.skipIf(!RUNS)('delegation (Orchestrator and workers, item 5), at desktop and phone sizes', () => {
  let parent: string;
  let children: Json[];

  beforeAll(async () => {
    const started = await call('workflow_start', { workflow_id: 'fan-out' });
    parent = started.execution_id;
    const delegated = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'changed the parser' },
    });
    children = delegated.delegation.children;
  });

  /** Walks one child to its end, as its worker would. */
  const finish = async (child: Json) => {
    let answer = await call('workflow_resume', { execution_id: child.execution_id });
    while (answer.next?.[0]?.tool === 'workflow_next_step' && answer.next[0].fill !== undefined) {
      answer = await call('workflow_next_step', {
        ...answer.next[0].arguments,
        output: { summary: `${child.name}: all fine` },
      });
    }
  };

  for (const [name, viewport] of VIEWPORTS) {
    it(`${name}: the parent shows its children and the open join, the child its parent, the list the tree; all fit the screen`, async () => {
      const first = children[0] as Json;
      for (const path of [`executions/${parent}`, `executions/${first.execution_id}`, '']) {
        const { page, problems } = await open(`${dash.url}${path}`, viewport);
        const measured = await overflow(page);
        expect({ path, ...measured }).toEqual({
          path,
          scroll: viewport.width,
          width: viewport.width,
          wide: [],
        });
        if (path === `executions/${parent}`) {
          const rows = page.locator('#children tr[data-child]');
          expect(await rows.count()).toBe(3);
          for (const row of await rows.all()) expect(await row.isVisible()).toBe(true);
          expect(await page.locator('#children .join').innerText()).toMatch(
            /Join: all · \d of 3 children completed.*times out/,
          );
          expect(await rows.first().locator('a').first().getAttribute('href')).toBe(
            `/executions/${first.execution_id}`,
          );
          // The diagram draws the fan-out: a node per child, joined back with its rule.
          expect(await page.locator('svg.wf-diagram g.wf-child').count()).toBe(3);
          expect(await page.locator('svg.wf-diagram g.wf-join').textContent()).toContain('join: all');
          expect(await page.locator('g[data-step="reviews"]').getAttribute('class')).toContain('is-current');
          // The children fit a phone: each a card, the link on screen.
          const link = await rows.first().locator('a').first().boundingBox();
          expect((link?.x ?? 0) + (link?.width ?? 0)).toBeLessThanOrEqual(viewport.width);
          await shot(page, `delegation-parent-${name}`);
        } else if (path === '') {
          const at = await page
            .locator('tr[data-execution]')
            .evaluateAll((trs) =>
              trs.map((tr) => [tr.getAttribute('data-execution'), tr.getAttribute('data-parent')]),
            );
          const i = at.findIndex(([id]) => id === parent);
          // Right under their parent (created together, their ids order them).
          expect(at.slice(i + 1, i + 4).sort()).toEqual(children.map((c) => [c.execution_id, parent]).sort());
          expect(at.filter(([id]) => children.some((c) => c.execution_id === id))).toHaveLength(3);
          expect(await page.locator(`tr[data-execution="${parent}"] .kids`).innerText()).toBe(
            '3 children below',
          );
          await shot(page, `delegation-list-${name}`);
        } else {
          expect(await page.locator('#parent a').getAttribute('href')).toBe(`/executions/${parent}`);
          expect(await page.locator('#child-name').innerText()).toContain(first.name);
          expect(await page.locator('#children').isVisible()).toBe(false);
          await shot(page, `delegation-child-${name}`);
        }
        expect(problems).toEqual([]);
        await page.context().close();
      }
    });
  }

  it("the parent's page follows its children live, through the join, without a reload", async () => {
    const { page, problems } = await open(`${dash.url}executions/${parent}`);
    await expect.poll(() => liveState(page)).toBe('live');
    await page.evaluate(() => {
      (window as unknown as { stayed: boolean }).stayed = true;
    });
    const [a, b, c] = children as [Json, Json, Json];
    const progressOf = (child: Json) =>
      page.locator(`#children tr[data-child="${child.execution_id}"] .child-progress`).innerText();
    // A child's step: only the child changed, and the parent's page shows it.
    const resumed = await call('workflow_resume', { execution_id: a.execution_id });
    await call('workflow_next_step', { token: tokenOf(resumed), output: { summary: 'read' } });
    await expect.poll(() => progressOf(a)).toContain('step 2: report');
    await finish(a);
    await expect
      .poll(() => page.locator(`#children tr[data-child="${a.execution_id}"] .state`).innerText())
      .toBe('completed');
    expect(await page.locator('#children .join-progress').innerText()).toContain('1 of 3 children completed');
    await finish(b);
    await finish(c);
    // The join held: the results' states, and the parent moved on to the synthesis.
    await expect.poll(() => page.locator('#children .results li').count()).toBe(3);
    expect(await page.locator('#children .results .state').allInnerTexts()).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    await expect.poll(() => page.locator('#current-step').innerText()).toContain('synthesis');
    expect(await page.locator('g[data-step="reviews"]').getAttribute('class')).toContain('is-done');
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    await shot(page, 'delegation-joined');
    expect(problems).toEqual([]);
    await page.context().close();
  });
});

describe.skipIf(!RUNS)('MCP App view in a host', () => {
  let server: Server;
  let hostUrl: string;
  let toolCall: { arguments: Json; result: unknown };

  beforeAll(async () => {
    const bundle = await build({
      entryPoints: [join(ROOT, 'test', 'helpers', 'app-host.ts')],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      logLevel: 'silent',
    });
    const hostJs = bundle.outputFiles[0]?.text ?? '';
    // The view runs in a srcdoc iframe, which inherits this page's CSP: the spec's default for views
    // (no network, no eval), plus connect-src 'self' for the test host's own /rpc.
    const csp =
      "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'self'";
    server = createServer(async (req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp });
        res.end(
          '<!doctype html><html><head><meta charset="utf-8"><script type="module" src="/host.js"></script></head><body></body></html>',
        );
        return;
      }
      if (req.url === '/host.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        res.end(hostJs);
        return;
      }
      if (req.url !== '/rpc' || req.method !== 'POST') {
        // favicon.ico and the like
        res.writeHead(404).end();
        return;
      }
      let body = '';
      for await (const chunk of req) body += chunk;
      const { method, params } = JSON.parse(body) as { method: string; params: Json };
      let out: { result?: unknown; error?: string };
      try {
        out = {
          result:
            method === 'resources/read'
              ? await client.readResource(params as { uri: string })
              : method === 'tools/call'
                ? await client.callTool(params as { name: string; arguments: Json })
                : toolCall,
        };
      } catch (error) {
        out = { error: String(error) };
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    hostUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('renders the progress of the execution a tool returned, and follows it as it advances', async () => {
    const args = { workflow_name: 'durable-demo' };
    const result = await client.callTool({ name: 'workflow_start', arguments: args });
    const started = result.structuredContent as Json;
    toolCall = { arguments: args, result };
    const { page, problems } = await open(hostUrl);
    const view = page.frameLocator('iframe');
    await expect.poll(() => view.locator('li[data-step]').count()).toBe(4);
    expect(await view.locator('#title').textContent()).toBe('Durable execution demo');
    expect(await view.locator('#state').textContent()).toBe('running');
    expect(await view.locator('li.current').getAttribute('data-step')).toBe('design');
    expect(await view.locator('#counts').textContent()).toBe('0 of 4 done, 4 to go');

    const failed = await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'no' } });
    await expect
      .poll(() => view.locator('#validation').textContent())
      .toContain('The summary must describe the design');
    await call('workflow_next_step', { token: tokenOf(failed), output: { summary: 'a design' } });
    await expect.poll(() => view.locator('li.current').getAttribute('data-step')).toBe('implement');
    expect(await view.locator('li.done').getAttribute('data-step')).toBe('design');
    expect(await view.locator('#counts').textContent()).toBe('1 of 4 done, 3 to go');
    await shot(page, 'app-view');

    const log = await page.evaluate(() => window.hostLog);
    expect(log.slice(0, 2)).toEqual(['initialized', 'result sent']);
    expect(log.some((l) => l.startsWith('read workflowlookup://workflow/execution_progress/'))).toBe(true);
    await page.evaluate(() => window.teardown());
    const reads = (await page.evaluate(() => window.hostLog)).length;
    await page.waitForTimeout(2500);
    expect((await page.evaluate(() => window.hostLog)).length).toBe(reads); // no polling after teardown
    // The view (about:srcdoc) had no error and tried nothing the CSP forbids. The host page itself logs
    // the favicon 404 and zod's eval probe inside ext-apps' AppBridge; neither is the view's.
    expect(problems.filter((p) => !p.includes(hostUrl) && !p.includes('404'))).toEqual([]);
    expect(problems.filter((p) => p.includes('srcdoc'))).toEqual([]);
    await page.context().close();
  });
});
