// Dashboard benchmark: time to first byte of its pages with 1,000 and then 100,000 executions in the
// store (the ratio says whether they stay flat), and time to a fully rendered execution page in
// headless Chromium. Run alone with `node bench/dashboard.mjs [--executions 100000] [--cli
// path/to/dist/cli.js]` (after `npm run build`), or as part of `npm run bench`.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { tokenOf } from './lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cliArg = process.argv.indexOf('--cli');
/** The built server, or another build (`--cli path/to/dist/cli.js`) to compare with. */
const cli = cliArg === -1 ? join(root, 'dist', 'cli.js') : (process.argv[cliArg + 1] ?? '');
/** The smaller store the pages are measured on first: their times must not grow with the store. */
const SMALL = 1000;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const STATES = ['running', 'paused', 'completed', 'completed', 'completed', 'failed', 'abandoned'];

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const round = (n) => Math.round(n * 100) / 100;
function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { medianMs: round(quantile(sorted, 0.5)), p95Ms: round(quantile(sorted, 0.95)), n: samples.length };
}

/** An MCP session over stdio with the built server. */
async function session(env) {
  const child = spawn(process.execPath, [cli], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const pending = new Map();
  let buffer = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    buffer += chunk;
    for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
      const msg = JSON.parse(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      pending.get(msg.id)?.(msg);
    }
  });
  let id = 0;
  const rpc = (method, params) =>
    new Promise((resolve) => {
      pending.set(++id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  await rpc('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'bench', version: '1' },
  });
  return {
    tool: async (name, args) => (await rpc('tools/call', { name, arguments: args })).result.structuredContent,
    close: async () => {
      child.stdin.end();
      await new Promise((r) => child.on('exit', r));
    },
  };
}

/** Start an execution and advance it (with outputs and artifacts), so the store has real rows. */
async function realExecution(env) {
  const mcp = await session(env);
  let step = await mcp.tool('workflow_start', { workflow_id: 'bench-release' });
  const executionId = step.execution_id;
  for (let i = 0; i < 3; i++) {
    step = await mcp.tool('workflow_next_step', {
      token: tokenOf(step),
      output: {
        summary: `## Step ${i}\n\nDone: ${'details '.repeat(40)}`,
        artifacts: [
          {
            type: 'report',
            name: `report-${i}.md`,
            content: `# Report ${i}\n\n${'- item\n'.repeat(50)}`,
            content_type: 'text/markdown',
          },
        ],
      },
    });
  }
  await mcp.close();
  return executionId;
}

/** Copies of the real execution under new ids, states, principals and times spread over 60 days. */
function seed(dbFile, template, count, from = 0) {
  const db = new Database(dbFile);
  const row = db.prepare('SELECT * FROM workflow_executions WHERE execution_id = ?').get(template);
  const columns = Object.keys(row);
  const insert = db.prepare(
    `INSERT INTO workflow_executions (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
  );
  const now = Date.now();
  db.transaction(() => {
    for (let i = from; i < count; i++) {
      const at = new Date(now - ((i * 7919) % (60 * 86_400_000))).toISOString();
      const state = STATES[i % STATES.length];
      insert.run({
        ...row,
        execution_id: `exec_seed_${String(i).padStart(7, '0')}`,
        principal: i % 10 === 0 ? 'team-b' : 'local',
        state,
        started_at: at,
        updated_at: at,
        completed_at: state === 'running' || state === 'paused' ? null : at,
        token_nonce: null,
      });
    }
  })();
  db.close();
}

function startDashboard(env) {
  const child = spawn(process.execPath, [cli, 'dashboard', '--port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c) => {
      out += c;
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) resolve({ child, url: m[0], port: Number(m[1]) });
    });
    child.on('exit', (code) => reject(new Error(`dashboard exited ${code}: ${out}`)));
  });
}

/** Time to the first byte of the response and to its last byte. */
function timed(port, path) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first;
    const req = request({ host: '127.0.0.1', port, path, headers: { host: 'localhost' } }, (res) => {
      first = performance.now() - t0;
      let bytes = 0;
      res.on('data', (c) => {
        bytes += c.length;
      });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${path}: ${res.statusCode}`));
        else resolve({ ttfb: first, total: performance.now() - t0, bytes });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function pageTimes(port, path, runs) {
  const ttfb = [];
  const total = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const r = await timed(port, path);
    ttfb.push(r.ttfb);
    total.push(r.total);
    bytes = r.bytes;
  }
  return { ttfb: stats(ttfb), complete: stats(total), bytes };
}

/**
 * Navigation to a page fully rendered (load event, and live: its script ran and the event stream is
 * open); then how long an open page takes to show a change another process makes (pause, resume).
 */
async function browserTimes(url, runs, env, executionId) {
  if (!existsSync(CHROMIUM)) return { skipped: `${CHROMIUM} not found` };
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  const ttfb = [];
  const load = [];
  const live = [];
  const change = [];
  try {
    for (let i = 0; i < runs + 1; i++) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(url, { waitUntil: 'load' });
      await page.waitForFunction(() => document.getElementById('live-status')?.textContent === 'live');
      const t = await page.evaluate(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        return { ttfb: nav.responseStart, load: nav.loadEventEnd, live: performance.now() };
      });
      if (i > 0) {
        // the first run warms the browser's caches of the stylesheet and script
        ttfb.push(t.ttfb);
        load.push(t.load);
        live.push(t.live);
      }
      await page.close();
    }
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => document.getElementById('live-status')?.textContent === 'live');
    const mcp = await session(env);
    try {
      for (let i = 0; i < runs; i++) {
        const state = i % 2 === 0 ? 'paused' : 'running';
        const t0 = performance.now();
        await mcp.tool('workflow_set_state', { execution_id: executionId, state });
        await page.waitForFunction(
          (s) => document.getElementById('state')?.textContent?.startsWith(s),
          state,
          {
            polling: 10,
          },
        );
        change.push(performance.now() - t0);
      }
    } finally {
      await mcp.close();
    }
  } finally {
    await browser.close();
  }
  return { ttfb: stats(ttfb), loadEvent: stats(load), live: stats(live), changeShown: stats(change) };
}

/** Time to first and last byte of each page, on a store of `executions` executions. */
async function measurePages(dash, dbFile, executions, real, runs) {
  // A position deep in the list (80% of the way down): keyset paging costs the same at any depth.
  const depth = Math.floor(executions * 0.8);
  const db = new Database(dbFile, { readonly: true });
  const deep = db
    .prepare(
      "SELECT updated_at, execution_id FROM workflow_executions WHERE principal = 'local' ORDER BY updated_at DESC, execution_id DESC LIMIT 1 OFFSET ?",
    )
    .get(depth);
  db.close();
  const pages = {
    'executions (first page)': '/',
    'executions (state filter)': '/?state=completed',
    'executions (workflow + age filter)': '/?workflow=bench-release&age=7d',
    'executions (page 80% deep, keyset)': `/?older=${encodeURIComponent(`${deep.updated_at},${deep.execution_id}`)}`,
    'execution page': `/executions/${real}`,
    'workflow page (diagram)': '/workflows/bench-release',
  };
  const http = {};
  for (const [label, path] of Object.entries(pages)) {
    // Warm up. After a pause (the seeding) the server may close the kept-alive socket just as it is
    // reused: that request fails, the next one opens a new connection.
    await timed(dash.port, path).catch(() => timed(dash.port, path));
    http[label] = await pageTimes(dash.port, path, runs);
  }
  return http;
}

export async function dashboardScenario({ executions = 100_000, runs = 30 } = {}) {
  const sandbox = mkdtempSync(join(tmpdir(), 'wl-bench-dash-'));
  try {
    const runtime = join(sandbox, 'runtime');
    mkdirSync(runtime, { recursive: true });
    writeFileSync(
      join(runtime, 'bench-release.json'),
      JSON.stringify({
        id: 'bench-release',
        name: 'Bench release',
        description: 'A release with a loop, for the dashboard benchmark',
        version: '1.0.0',
        steps: [
          { id: 'plan', title: 'Plan', prompt: 'Plan.', agent: 'architect' },
          { id: 'build', title: 'Build', prompt: 'Build.' },
          {
            id: 'verify-loop',
            type: 'loop',
            title: 'Verify until green',
            loop: { type: 'until', condition: { var: 'green', equals: true }, maxIterations: 5 },
            body: [
              { id: 'test', title: 'Test', prompt: 'Test.' },
              { id: 'fix', title: 'Fix', prompt: 'Fix.', runCondition: { var: 'failing' } },
            ],
          },
          { id: 'ship', title: 'Ship', prompt: 'Ship.', runCondition: { var: 'approved', equals: true } },
        ],
      }),
    );
    const env = {
      PATH: process.env.PATH,
      HOME: join(sandbox, 'home'),
      XDG_CONFIG_HOME: join(sandbox, 'config'),
      WORKFLOWLOOKUP_WORKFLOWS_PATH: runtime,
      WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'data'),
    };
    const real = await realExecution(env);
    const dbFile = join(sandbox, 'data', 'workflowlookup.db');
    const seeding = performance.now();
    seed(dbFile, real, Math.min(SMALL, executions) - 1);
    let seedMs = performance.now() - seeding;
    const dash = await startDashboard(env);
    try {
      // The same pages on a store of SMALL executions, then of `executions`: the ratio says how flat.
      const small = await measurePages(dash, dbFile, Math.min(SMALL, executions), real, runs);
      const growing = performance.now();
      seed(dbFile, real, executions - 1, Math.min(SMALL, executions) - 1);
      seedMs += performance.now() - growing;
      const http = await measurePages(dash, dbFile, executions, real, runs);
      const flat = {};
      for (const [i, [label, t]] of Object.entries(http).entries()) {
        const before = Object.values(small)[i];
        if (before) flat[label] = round(t.ttfb.medianMs / before.ttfb.medianMs);
      }
      const browser = await browserTimes(`${dash.url}executions/${real}`, 10, env, real);
      return {
        executions,
        seedMs: round(seedMs),
        http,
        [`first byte at ${executions} / at ${SMALL} executions (median)`]: flat,
        'execution page in chromium': browser,
      };
    } finally {
      dash.child.kill('SIGTERM');
      await new Promise((r) => dash.child.on('exit', r));
    }
  } finally {
    rmSync(sandbox, { recursive: true, force: true });
  }
}

export function printDashboard(r) {
  console.log(`\ndashboard (${r.executions} executions in the store; seeded in ${r.seedMs} ms)`);
  for (const [label, t] of Object.entries(r.http)) {
    console.log(
      `  ${label.padEnd(36)} first byte median ${t.ttfb.medianMs} ms p95 ${t.ttfb.p95Ms} ms; complete median ${t.complete.medianMs} ms (${t.bytes} bytes)`,
    );
  }
  const flat = Object.entries(r).find(([k]) => k.startsWith('first byte at'));
  if (flat) {
    console.log(`  ${flat[0]}:`);
    for (const [label, x] of Object.entries(flat[1])) console.log(`    ${label.padEnd(36)} ${x}x`);
  }
  const b = r['execution page in chromium'];
  if (b.skipped) console.log(`  chromium: skipped (${b.skipped})`);
  else {
    console.log(
      `  execution page in chromium: first byte ${b.ttfb.medianMs} ms, load event ${b.loadEvent.medianMs} ms, live ${b.live.medianMs} ms (median of ${b.live.n})`,
    );
    console.log(
      `  a change made by another process shown on the open page: median ${b.changeShown.medianMs} ms, p95 ${b.changeShown.p95Ms} ms`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--executions');
  const result = await dashboardScenario(i === -1 ? {} : { executions: Number(process.argv[i + 1]) });
  printDashboard(result);
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(join(root, 'bench', 'results', 'dashboard.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log('\nwritten: bench/results/dashboard.json');
}
