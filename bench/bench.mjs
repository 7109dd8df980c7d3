// Benchmark of the built server over stdio (not a test): start-up, per-tool round trips, peak RSS.
// Usage: npm run bench [-- --calls 2000 --spawns 15 --loop-steps 5000 --executions 10000 --tasks 100
// --dashboard-executions 100000]; the dashboard part alone: node bench/dashboard.mjs.
// Results: bench/results/latest.json.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dashboardScenario, printDashboard } from './dashboard.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'cli.js');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const CALLS = arg('calls', 2000);
// Launch exactly as the bin does: node with the flags of the bundle's shebang.
const nodeFlags = (/^#!.*\bnode\b(.*)$/m.exec(readFileSync(cli, 'utf8').split('\n')[0] ?? '')?.[1] ?? '')
  .trim()
  .split(/\s+/)
  .filter(Boolean);
const SPAWNS = arg('spawns', 15);
const LOOP_STEPS = arg('loop-steps', 5000);
const EXECUTIONS = arg('executions', 10000);
const TASKS = arg('tasks', 100);

const INIT = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
};

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
const round = (n) => Math.round(n * 1000) / 1000;

class Server {
  constructor(env) {
    this.t0 = performance.now();
    this.child = spawn(process.execPath, [...nodeFlags, cli], { env, stdio: ['pipe', 'pipe', 'inherit'] });
    this.pending = new Map();
    this.buffer = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => {
      this.buffer += chunk;
      let nl = this.buffer.indexOf('\n');
      while (nl !== -1) {
        const msg = JSON.parse(this.buffer.slice(0, nl));
        this.buffer = this.buffer.slice(nl + 1);
        if (msg.id === undefined) this.onNotification?.(msg);
        this.pending.get(msg.id)?.(msg);
        this.pending.delete(msg.id);
        nl = this.buffer.indexOf('\n');
      }
    });
    this.nextId = 1;
  }
  request(method, params, id = this.nextId++) {
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }
  peakRssMb() {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  }
  async stop() {
    const exited = new Promise((r) => this.child.on('exit', r));
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 'bye', method: 'shutdown' })}\n`);
    await exited;
  }
}

async function startup(env) {
  const samples = [];
  for (let i = 0; i < SPAWNS; i++) {
    const server = new Server(env);
    const res = await server.request(INIT.method, INIT.params, 0);
    samples.push(performance.now() - server.t0);
    if (!res.result) throw new Error(`initialize failed: ${JSON.stringify(res)}`);
    await server.stop();
  }
  samples.sort((a, b) => a - b);
  return {
    medianMs: round(quantile(samples, 0.5)),
    p99Ms: round(quantile(samples, 0.99)),
    samples: samples.length,
  };
}

async function roundTrips(server, label, method, paramsFor) {
  const samples = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    const res = await server.request(method, paramsFor(i));
    samples.push(performance.now() - t);
    if (res.error || res.result?.isError)
      throw new Error(`${label} failed: ${JSON.stringify(res).slice(0, 400)}`);
  }
  samples.sort((a, b) => a - b);
  return { medianMs: round(quantile(samples, 0.5)), p99Ms: round(quantile(samples, 0.99)), calls: CALLS };
}

/** Byte size of the tools/list answer for each tool profile (descriptions cost context tokens). */
async function toolListSizes(env) {
  const sizes = {};
  for (const profile of ['guidance', 'executions', 'authoring', 'automation', 'all']) {
    const server = new Server({ ...env, WORKFLOWLOOKUP_TOOLS: profile });
    await server.request(INIT.method, INIT.params, 0);
    const res = await server.request('tools/list', {});
    sizes[profile] = { tools: res.result.tools.length, bytes: Buffer.byteLength(JSON.stringify(res.result)) };
    await server.stop();
  }
  return sizes;
}

async function scenario(name, env) {
  const start = await startup(env);
  const server = new Server(env);
  await server.request(INIT.method, INIT.params, 0);
  const list = await server.request('workflow_list', {});
  const count = list.result.workflows.length;
  const tool = (toolName, args) => ['tools/call', () => ({ name: toolName, arguments: args })];
  const calls = {
    workflow_list: tool('workflow_list', {}),
    workflow_get: tool('workflow_get', { id: 'coding-task-workflow' }),
    workflow_next: tool('workflow_next', {
      workflowId: 'coding-task-workflow',
      completedSteps: [],
      context: { taskScope: 'large' },
    }),
    workflow_validate: tool('workflow_validate', {
      workflowId: 'mr-review-workflow',
      stepId: 'summarize-findings',
      output: JSON.stringify({ findings: [{ file: 'a.ts', severity: 'minor', description: 'naming' }] }),
    }),
  };
  const tools = {};
  for (const [toolName, [method, params]] of Object.entries(calls)) {
    tools[toolName] = await roundTrips(server, toolName, method, params);
  }
  tools['workflow_next (direct method)'] = await roundTrips(server, 'direct', 'workflow_next', () => ({
    workflowId: 'coding-task-workflow',
    completedSteps: [],
  }));
  const peakRssMb = round(server.peakRssMb());
  await server.stop();
  return { name, workflows: count, spawnToInitialize: start, tools, peakRssMb };
}

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    medianMs: round(quantile(sorted, 0.5)),
    p99Ms: round(quantile(sorted, 0.99)),
    calls: samples.length,
  };
}

/** Durable executions: a 5,000-step loop in one execution, then status reads among 10,000 executions. */
async function executionsScenario(env) {
  const server = new Server(env);
  await server.request(INIT.method, INIT.params, 0);
  const call = async (name, args) => {
    const res = await server.request('tools/call', { name, arguments: args });
    if (res.error || res.result.isError)
      throw new Error(`${name} failed: ${JSON.stringify(res).slice(0, 400)}`);
    return res.result.structuredContent;
  };
  const started = await call('workflow_start', { workflow_name: 'bench-loop', context: { more: true } });
  let token = started.new_token;
  const steps = [];
  for (let i = 0; i < LOOP_STEPS; i++) {
    const t = performance.now();
    const res = await call('workflow_next_step', { token, output: { summary: `tick ${i}` } });
    steps.push(performance.now() - t);
    token = res.new_token;
  }
  const window = Math.min(500, Math.floor(LOOP_STEPS / 2));
  const nextStep = {
    all: stats(steps),
    [`first ${window} steps`]: stats(steps.slice(0, window)),
    [`last ${window} steps`]: stats(steps.slice(-window)),
  };
  const ids = [started.execution_id];
  for (let i = ids.length; i < EXECUTIONS; i++) {
    ids.push(
      (await call('workflow_start', { workflow_name: 'bench-loop', context: { more: true } })).execution_id,
    );
  }
  const reads = [];
  for (let i = 0; i < CALLS; i++) {
    const id = ids[(i * 7919) % ids.length];
    const t = performance.now();
    const res = await server.request('resources/read', {
      uri: `workflowlookup://workflow/workflow_status/${id}`,
    });
    reads.push(performance.now() - t);
    if (res.error) throw new Error(`status read failed: ${JSON.stringify(res.error)}`);
  }
  const peakRssMb = round(server.peakRssMb());
  await server.stop();
  return {
    name: 'durable executions',
    workflow_next_step: nextStep,
    [`workflow_status read (${ids.length} executions)`]: stats(reads),
    peakRssMb,
  };
}

/**
 * MCP tasks against a local HTTP API: how soon a task exists (CreateTaskResult) and reports its first
 * status, then TASKS concurrent workflow_run tasks, each with a 2 s API call and a quick one, to completion.
 */
async function tasksScenario(env) {
  const { TasksApi, TOKEN } = await import('../examples/tasks-api-server.mjs');
  const api = new TasksApi();
  await api.start();
  const server = new Server({
    ...env,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
  });
  try {
    await server.request('initialize', { ...INIT.params, protocolVersion: '2025-11-25' }, 0);
    const must = async (method, params) => {
      const res = await server.request(method, params);
      if (res.error || res.result?.isError)
        throw new Error(`${method} failed: ${JSON.stringify(res).slice(0, 400)}`);
      return res.result;
    };
    await must('catalog_import_openapi', {
      source: join(root, 'examples', 'tasks-api.openapi.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
      overwrite: true,
    });
    const step = (id, taskId) => ({ id, title: id, run: 'tasks-api get-task', with: { taskId } });
    for (const [id, steps] of [
      ['bench-quick', [step('fetch-t1', 't1')]],
      ['bench-slow', [step('fetch-slow', 'slow'), step('fetch-t1', 't1')]],
    ]) {
      await must('workflow_save', {
        content: JSON.stringify({ id, name: id, description: 'bench', version: '1.0.0', steps }),
        overwrite: true,
      });
    }
    const statuses = new Map();
    server.onNotification = (msg) => {
      if (msg.method !== 'notifications/tasks/status') return;
      const seen = statuses.get(msg.params.taskId) ?? [];
      seen.push({ at: performance.now(), status: msg.params.status });
      statuses.set(msg.params.taskId, seen);
    };
    const run = (workflow_id) =>
      must('tools/call', { name: 'workflow_run', arguments: { workflow_id }, task: { ttl: 600_000 } });
    const waitAll = async (ids, timeoutMs) => {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const done = ids.filter((id) => (statuses.get(id) ?? []).some((s) => s.status === 'completed'));
        if (done.length === ids.length) return;
        const failed = ids.find((id) => (statuses.get(id) ?? []).some((s) => s.status === 'failed'));
        if (failed) throw new Error(`task ${failed} failed`);
        if (performance.now() > deadline)
          throw new Error(`only ${done.length}/${ids.length} tasks completed`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    // One task at a time: CreateTaskResult round trip, and creation to the first status notification.
    const created = [];
    const firstStatus = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      const { task } = await run('bench-quick');
      created.push(performance.now() - t);
      await waitAll([task.taskId], 10_000);
      firstStatus.push((statuses.get(task.taskId)?.[0]?.at ?? Number.NaN) - t);
    }
    // TASKS at once, each waiting 2 s on the API.
    const t0 = performance.now();
    const tasks = await Promise.all(Array.from({ length: TASKS }, () => run('bench-slow')));
    const allCreated = performance.now() - t0;
    await waitAll(
      tasks.map((r) => r.task.taskId),
      120_000,
    );
    const completed = performance.now() - t0;
    return {
      name: 'MCP tasks (workflow_run against a local API)',
      createTaskResult: stats(created),
      creationToFirstStatus: stats(firstStatus),
      concurrent: {
        tasks: TASKS,
        perTask: 'one 2 s API call, then a quick one',
        allCreatedMs: round(allCreated),
        allCompletedMs: round(completed),
      },
      peakRssMb: round(server.peakRssMb()),
    };
  } finally {
    await server.stop();
    await api.stop();
  }
}

function loopWorkflow(dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'bench-loop.json'),
    JSON.stringify({
      id: 'bench-loop',
      name: 'Bench loop',
      description: 'A long loop for the execution benchmark',
      version: '1.0.0',
      steps: [
        {
          id: 'grind',
          type: 'loop',
          title: 'Grind',
          loop: { type: 'while', condition: { var: 'more', equals: true }, maxIterations: 10000 },
          body: [
            {
              id: 'tick',
              title: 'Tick',
              prompt: 'Do one unit of work.',
              validationCriteria: [{ type: 'length', min: 3, message: 'say what you did' }],
            },
          ],
        },
      ],
    }),
  );
}

function generatedWorkflows(dir, n) {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) {
    const steps = Array.from({ length: 8 }, (_, s) => ({
      id: `step-${s}`,
      title: `Step ${s}`,
      prompt: `Do part ${s} of generated workflow ${i}. `.repeat(4),
      runCondition: s % 2 ? { var: 'taskScope', not_equals: 'small' } : undefined,
      validationCriteria: [{ type: 'length', min: 5, message: 'say something' }],
    }));
    writeFileSync(
      join(dir, `generated-${i}.json`),
      JSON.stringify({
        id: `generated-${i}`,
        name: `Generated ${i}`,
        description: 'bench',
        version: '1.0.0',
        steps,
      }),
    );
  }
}

const sandbox = mkdtempSync(join(tmpdir(), 'wl-bench-'));
try {
  const baseEnv = {
    PATH: process.env.PATH,
    HOME: join(sandbox, 'home'),
    XDG_CONFIG_HOME: join(sandbox, 'config'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: join(sandbox, 'runtime'),
  };
  const storage = join(sandbox, 'storage');
  generatedWorkflows(storage, 1000);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    targets: { spawnToInitializeMs: 150, medianRoundTripMs: 1, peakRssMb: 100 },
    scenarios: [
      await scenario('bundled', baseEnv),
      await scenario('bundled + 1000 generated', { ...baseEnv, WORKFLOW_STORAGE_PATH: storage }),
    ],
    toolsListBytes: await toolListSizes(baseEnv),
    executions: await (async () => {
      loopWorkflow(baseEnv.WORKFLOWLOOKUP_WORKFLOWS_PATH);
      return executionsScenario({ ...baseEnv, WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'data') });
    })(),
    tasks: await tasksScenario({ ...baseEnv, WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'tasks-data') }),
    dashboard: await dashboardScenario({ executions: arg('dashboard-executions', 100_000) }),
  };
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(join(root, 'bench', 'results', 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  for (const s of results.scenarios) {
    console.log(`\n${s.name} (${s.workflows} workflows)`);
    console.log(
      `  spawn -> initialize: median ${s.spawnToInitialize.medianMs} ms, p99 ${s.spawnToInitialize.p99Ms} ms`,
    );
    for (const [tool, r] of Object.entries(s.tools)) {
      console.log(`  ${tool.padEnd(30)} median ${r.medianMs} ms  p99 ${r.p99Ms} ms  (${r.calls} calls)`);
    }
    console.log(`  peak RSS: ${s.peakRssMb} MB`);
  }
  console.log('\ntools/list size per profile');
  for (const [profile, r] of Object.entries(results.toolsListBytes)) {
    console.log(`  ${profile.padEnd(11)} ${String(r.tools).padStart(2)} tools  ${r.bytes} bytes`);
  }
  const ex = results.executions;
  console.log(`\n${ex.name}`);
  for (const [label, r] of Object.entries(ex.workflow_next_step)) {
    console.log(
      `  workflow_next_step ${label.padEnd(18)} median ${r.medianMs} ms  p99 ${r.p99Ms} ms  (${r.calls} calls)`,
    );
  }
  for (const [label, r] of Object.entries(ex)) {
    if (label.startsWith('workflow_status'))
      console.log(`  ${label}: median ${r.medianMs} ms  p99 ${r.p99Ms} ms`);
  }
  console.log(`  peak RSS: ${ex.peakRssMb} MB`);
  const tk = results.tasks;
  console.log(`\n${tk.name}`);
  console.log(
    `  CreateTaskResult          median ${tk.createTaskResult.medianMs} ms  p99 ${tk.createTaskResult.p99Ms} ms`,
  );
  console.log(
    `  creation -> first status  median ${tk.creationToFirstStatus.medianMs} ms  p99 ${tk.creationToFirstStatus.p99Ms} ms`,
  );
  console.log(
    `  ${tk.concurrent.tasks} concurrent runs (${tk.concurrent.perTask}): all created in ${tk.concurrent.allCreatedMs} ms, all completed in ${tk.concurrent.allCompletedMs} ms`,
  );
  console.log(`  peak RSS: ${tk.peakRssMb} MB`);
  printDashboard(results.dashboard);
  console.log('\nwritten: bench/results/latest.json');
} finally {
  rmSync(sandbox, { recursive: true, force: true });
}
