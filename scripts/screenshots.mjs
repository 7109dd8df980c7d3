// Regenerates the dashboard screenshots in docs/ (docs/dashboard.md): a sandbox with a few executions
// driven through the real server, the dashboard on a free port, Debian's chromium through playwright-core.
// Usage: npm run build && node scripts/screenshots.mjs
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { EXTENSION_ID, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { z } from 'zod';

/** The continuation token of a durable answer: in the workflow_next_step call of its `next`. */
const tokenOf = (answer) => answer.next?.find((n) => n.tool === 'workflow_next_step')?.arguments.token;

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist', 'cli.js');
const sandbox = mkdtempSync(join(tmpdir(), 'wl-shots-'));
const runtime = join(sandbox, 'runtime');
mkdirSync(runtime, { recursive: true });
writeFileSync(
  join(runtime, 'release-train.yaml'),
  `id: release-train
name: Release train
description: Collect the merged changes, check them, and publish the release notes
version: 1.0.0
category: release
inputs:
  project: { type: string, description: Project to release, required: true }
  channel: { type: string, description: Where to announce it, enum: [stable, beta], default: beta }
steps:
  - id: fetch-changes
    title: Fetch merged changes
    run: tasks-api list-tasks
    with: { project: '\${{ inputs.project }}', status: done }
  - id: triage
    title: Triage the changes
    agent: reviewer
    prompt: Sort the changes into features, fixes and breaking changes.
  - id: migration-guide
    title: Write the migration guide
    agent: architect
    prompt: Explain how to move to the new version.
    runCondition: { var: breaking, equals: true }
  - id: verify-loop
    type: loop
    title: Verify until green
    loop: { type: until, condition: { var: green, equals: true }, maxIterations: 3 }
    body:
      - { id: run-checks, title: Run the checks, prompt: Run the release checks. }
      - { id: fix, title: Fix what failed, prompt: Fix it., runCondition: { var: green, not_equals: true } }
  - id: publish
    title: Publish the notes
    run: tasks-api start-export
    repeat: { until: { var: output.status, equals: done }, every: 1s, max_attempts: 10, timeout: 30s }
`,
);
const env = {
  PATH: process.env.PATH,
  HOME: join(sandbox, 'home'),
  XDG_CONFIG_HOME: join(sandbox, 'config'),
  WORKFLOWLOOKUP_WORKFLOWS_PATH: runtime,
  WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'data'),
};

const client = new Client(
  { name: 'screenshots', version: '1.0.0' },
  { capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } },
);
await client.connect(
  new StdioClientTransport({ command: process.execPath, args: [cli], env, stderr: 'pipe' }),
);
const tool = async (name, args) => (await client.callTool({ name, arguments: args })).structuredContent;

// A few executions in different states, and one in the middle of its work.
const understand =
  'Goal: add rate limiting to the public API. Relevant code: src/server/router.ts routes requests, ' +
  'src/server/limits.ts holds the quotas. The tests in test/router.test.ts cover routing but not limits. ' +
  'Risks: shared state between workers. Open question: per key or per IP?';
const plan =
  '1. Add a token bucket in src/server/limits.ts.\n2. Wire it into src/server/router.ts.\n' +
  '3. Add tests for bursts and refills.\nRisks: clock skew between workers; edge case of a zero quota.';
for (const [workflow, state] of [
  ['ai-task-implementation', 'diverged'],
  ['mr-review-workflow', 'paused'],
  ['presentation-creation', 'abandoned'],
  ['adaptive-ticket-creation', 'running'],
]) {
  const started = await tool('workflow_start', { workflow_id: workflow, context: { ticketType: 'bug' } });
  if (state !== 'running') {
    await tool('workflow_set_state', {
      execution_id: started.execution_id,
      state,
      reason: 'waiting for the owner',
    });
  }
}
let step = await tool('workflow_start', {
  workflow_id: 'coding-task-workflow',
  context: { taskScope: 'medium' },
});
const main = step.execution_id;
step = await tool('workflow_next_step', { token: tokenOf(step), output: { summary: 'Looked around.' } });
step = await tool('workflow_next_step', {
  token: tokenOf(step),
  output: {
    summary: understand,
    artifacts: [
      {
        type: 'report',
        name: 'understanding.md',
        content_type: 'text/markdown',
        content:
          '# Rate limiting\n\n| file | role |\n|---|---|\n| `src/server/router.ts` | routes requests |\n| `src/server/limits.ts` | quotas |\n\n**Open question:** per key or per IP?',
      },
    ],
  },
});
step = await tool('workflow_next_step', { token: tokenOf(step), output: { summary: plan } });

// Runs (MCP tasks): two waiting on their agent step, one cancelled.
const runTask = async (workflow_id) =>
  (
    await client.request(
      { method: 'tools/call', params: { name: 'workflow_run', arguments: { workflow_id }, task: {} } },
      z.looseObject({ task: z.looseObject({ taskId: z.string() }) }),
    )
  ).task.taskId;
const cancelled = await runTask('coding-task-workflow');
await runTask('mr-review-workflow');
await runTask('ai-task-implementation');
await tool('workflow_cancel', { operation_id: cancelled, confirm: true, reason: 'started by mistake' });

const dashboard = spawn(process.execPath, [cli, 'dashboard', '--port', '0'], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise((resolve) => {
  let out = '';
  dashboard.stdout.setEncoding('utf8').on('data', (c) => {
    out += c;
    const m = /http:\/\/127\.0\.0\.1:\d+\//.exec(out);
    if (m) resolve(m[0]);
  });
});

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const docs = join(root, 'docs');
const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
const live = () => page.waitForFunction(() => document.getElementById('live-status')?.textContent === 'live');
await page.goto(url);
await live();
await page.screenshot({ path: join(docs, 'dashboard-executions.png') });
await page.goto(`${url}executions/${main}`);
await live();
// Show the live update: the agent reports the change while the page is open.
await tool('workflow_next_step', {
  token: tokenOf(step),
  output: {
    summary: 'Changed src/server/limits.ts (token bucket) and src/server/router.ts (429 with Retry-After).',
  },
});
await page.waitForFunction(() =>
  document.querySelector('g[data-step="run-tests"]')?.classList.contains('is-current'),
);
await page.screenshot({ path: join(docs, 'dashboard-execution.png') });
await page.goto(`${url}workflows/release-train`);
await page.screenshot({ path: join(docs, 'dashboard-workflow.png') });
await page.goto(`${url}tasks`);
await live();
await page.screenshot({ path: join(docs, 'dashboard-runs.png') });

// The same pages on a 390 px phone: lists read as cards, nothing wider than the screen.
const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
await phone.goto(url);
await phone.screenshot({ path: join(docs, 'dashboard-phone-executions.png') });
await phone.goto(`${url}executions/${main}`);
await phone.screenshot({ path: join(docs, 'dashboard-phone-execution.png') });

// The sign-in page of the dashboard under `serve --http` with authentication.
const team = spawn(process.execPath, [cli, 'serve', '--http', '--port', '0'], {
  env: { ...env, WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: join(sandbox, 'tokens.json') },
  stdio: ['ignore', 'ignore', 'pipe'],
});
const teamUrl = await new Promise((resolve) => {
  let err = '';
  team.stderr.setEncoding('utf8').on('data', (c) => {
    err += c;
    // Its address is in the JSON log line serve --http writes when stderr is not a terminal.
    for (const line of err.slice(0, err.lastIndexOf('\n') + 1).split('\n')) {
      if (line.startsWith('{') && line.includes('"dashboard_url"')) resolve(JSON.parse(line).dashboard_url);
    }
  });
});
const signIn = await browser.newPage({ viewport: { width: 1280, height: 520 }, deviceScaleFactor: 1 });
await signIn.goto(teamUrl);
await signIn.screenshot({ path: join(docs, 'dashboard-sign-in.png') });
team.kill('SIGTERM');

// The MCP App view, in a minimal host built on ext-apps' AppBridge (as in the browser test).
const host = await build({
  entryPoints: [join(root, 'test', 'helpers', 'app-host.ts')],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'browser',
  logLevel: 'silent',
});
const args = { execution_id: main };
const result = await client.callTool({ name: 'workflow_resume', arguments: args });
const hostServer = createServer(async (req, res) => {
  if (req.url === '/')
    return res.end(
      '<!doctype html><meta charset="utf-8"><body style="margin:8px"><script type="module" src="/host.js"></script>',
    );
  if (req.url === '/host.js') {
    res.writeHead(200, { 'content-type': 'text/javascript' });
    return res.end(host.outputFiles[0].text);
  }
  if (req.url !== '/rpc') return res.writeHead(404).end();
  let body = '';
  for await (const chunk of req) body += chunk;
  const { method, params } = JSON.parse(body);
  const out =
    method === 'resources/read'
      ? await client.readResource(params)
      : method === 'tools/call'
        ? await client.callTool(params)
        : { arguments: args, result };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ result: out }));
});
await new Promise((r) => hostServer.listen(0, '127.0.0.1', r));
const view = await browser.newPage({ viewport: { width: 480, height: 330 } });
await view.goto(`http://127.0.0.1:${hostServer.address().port}/`);
await view.frameLocator('iframe').locator('li.current').waitFor();
await view.waitForTimeout(300);
await view.screenshot({ path: join(docs, 'app-view.png') });

await browser.close();
hostServer.close();
dashboard.kill('SIGTERM');
await client.close();
rmSync(sandbox, { recursive: true, force: true });
console.log(
  'written: docs/dashboard-executions.png, docs/dashboard-execution.png, docs/dashboard-workflow.png, docs/dashboard-runs.png, docs/dashboard-phone-executions.png, docs/dashboard-phone-execution.png, docs/dashboard-sign-in.png, docs/app-view.png',
);
