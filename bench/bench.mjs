// Benchmark of the built server over stdio (not a test): start-up, per-tool round trips, peak RSS,
// each start-up number also as a ratio to the floor (a bare Node process that answers each JSON line,
// bench/floor-server.mjs) measured in the same run. The server is launched as clients launch it:
// `node dist/cli.js`, no node flags. Then every scenario module in bench/scenarios/ (title, run(ctx),
// report(result, ctx), optional skip(ctx)). Progress goes to stderr.
// Usage: npm run bench [-- --calls 2000 --spawns 15 --loop-steps 5000 --executions 10000 --tasks 100
// --dashboard-executions 100000]; the dashboard part alone: node bench/dashboard.mjs.
// Results: bench/results/latest.json.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { dashboardScenario, printDashboard } from './dashboard.mjs';
import {
  cliOf,
  generatedWorkflows,
  INIT_PARAMS,
  LineServer,
  loopWorkflow,
  measureFloor,
  ratio,
  requireToken,
  ROOT as root,
  round,
  spawnTimes,
} from './lib.mjs';

const cli = cliOf(root);
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const CALLS = arg('calls', 2000);
const progress = (message) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const SPAWNS = arg('spawns', 15);
const LOOP_STEPS = arg('loop-steps', 5000);
const PACED_STEPS = 1000;
const EXECUTIONS = arg('executions', 10000);
const TASKS = arg('tasks', 100);

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** The built server, launched as clients launch it. */
class Server extends LineServer {
  constructor(env) {
    super(cli, env);
  }
}

const listCall = (args = {}) => ['tools/call', { name: 'workflow_list', arguments: args }];

/**
 * Start-up as a client feels it: spawn → the answer to `tools/list` sent right after `initialize`, and
 * spawn → the first `workflow_list` answer (each a fresh process; the definition cache is warm after
 * the first). The first spawn of a new data dir (cold cache) is reported apart.
 */
async function startup(env) {
  const cold = await spawnTimes(cli, env, 1, (s) => s.handshakeThen(...listCall()));
  const toolsList = await spawnTimes(cli, env, SPAWNS, (s) => s.handshakeThen('tools/list', {}));
  const workflowList = await spawnTimes(cli, env, SPAWNS, (s) => s.handshakeThen(...listCall()));
  return { toolsList, workflowList, coldWorkflowList: cold };
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
    await server.request('initialize', INIT_PARAMS, 0);
    const res = await server.request('tools/list', {});
    sizes[profile] = { tools: res.result.tools.length, bytes: Buffer.byteLength(JSON.stringify(res.result)) };
    await server.stop();
  }
  return sizes;
}

async function scenario(name, env) {
  progress(`${name}: start-up (${SPAWNS} spawns each)`);
  const start = await startup(env);
  progress(`${name}: round trips (${CALLS} calls per tool)`);
  const server = new Server(env);
  await server.request('initialize', INIT_PARAMS, 0);
  const list = await server.request('workflow_list', {});
  const count = list.result.workflows.length;
  const tool = (toolName, args) => ['tools/call', () => ({ name: toolName, arguments: args })];
  const calls = {
    workflow_list: tool('workflow_list', {}),
    'workflow_list {limit: 50}': tool('workflow_list', { limit: 50 }),
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
  return { name, workflows: count, startup: start, tools, peakRssMb };
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
  progress(`durable executions: ${LOOP_STEPS} steps of one execution`);
  const server = new Server(env);
  await server.request('initialize', INIT_PARAMS, 0);
  const call = async (name, args) => {
    const res = await server.request('tools/call', { name, arguments: args });
    if (res.error || res.result.isError)
      throw new Error(`${name} failed: ${JSON.stringify(res).slice(0, 400)}`);
    return res.result.structuredContent;
  };
  const started = await call('workflow_start', { workflow_name: 'bench-loop', context: { more: true } });
  let token = requireToken(started);
  const steps = [];
  for (let i = 0; i < LOOP_STEPS; i++) {
    const t = performance.now();
    const res = await call('workflow_next_step', { token, output: { summary: `tick ${i}` } });
    steps.push(performance.now() - t);
    token = requireToken(res);
    if ((i + 1) % 1000 === 0) progress(`durable executions: ${i + 1}/${LOOP_STEPS} steps`);
  }
  // An agent thinks between steps: with pauses, the store's checkpoints run in them, not in a step.
  // 1,000 of them (about 35 s), so that the p99 is the 10th slowest, not the 3rd.
  progress(`durable executions: ${PACED_STEPS} steps 30 ms apart`);
  const paced = [];
  for (let i = 0; i < PACED_STEPS; i++) {
    await new Promise((r) => setTimeout(r, 30));
    const t = performance.now();
    const res = await call('workflow_next_step', { token, output: { summary: `paced ${i}` } });
    paced.push(performance.now() - t);
    token = requireToken(res);
  }
  const window = Math.min(500, Math.floor(LOOP_STEPS / 2));
  const nextStep = {
    all: stats(steps),
    [`first ${window} steps`]: stats(steps.slice(0, window)),
    [`last ${window} steps`]: stats(steps.slice(-window)),
    [`30 ms apart (${PACED_STEPS} steps)`]: stats(paced),
  };
  const ids = [started.execution_id];
  progress(`durable executions: starting ${EXECUTIONS} executions, then status reads`);
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
  progress(`MCP tasks: ${TASKS} concurrent runs against a local API`);
  const server = new Server({
    ...env,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
    // One principal (the stdio user) runs them all: above the per-principal cap of a shared server (32).
    WORKFLOWLOOKUP_MAX_TASKS_PER_PRINCIPAL: String(TASKS),
    WORKFLOWLOOKUP_MAX_TASKS: String(Math.max(TASKS, 256)),
  });
  try {
    await server.request('initialize', { ...INIT_PARAMS, protocolVersion: '2025-11-25' }, 0);
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

/** The scenario modules of bench/scenarios/, each given the floor measured in this run. */
async function runModules(sandbox, floor) {
  const out = [];
  const dir = join(root, 'bench', 'scenarios');
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.mjs'))
    .sort()) {
    const mod = await import(pathToFileURL(join(dir, file)).href);
    const tmp = join(sandbox, `module-${file}`);
    mkdirSync(tmp, { recursive: true });
    const ctx = { cli, root, tmp, floor, args: {}, progress: (m) => progress(`${file}: ${m}`) };
    const skipped = await mod.skip?.(ctx);
    if (skipped) {
      progress(`${file}: skipped (${skipped})`);
      out.push({ title: mod.title, skipped });
      continue;
    }
    progress(`${file}: ${mod.title}`);
    const result = await mod.run(ctx);
    out.push({ title: mod.title, result, lines: mod.report(result, ctx) });
  }
  return out;
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
  progress(`floor: ${SPAWNS} spawns of a bare Node process that answers each JSON line`);
  const floor = await measureFloor(SPAWNS);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    floor,
    targets: { startupXFloor: 2, workflowListMedianMs: 2, stepP99Ms: 5, peakRssMb: 100 },
    scenarios: [
      await scenario('bundled', { ...baseEnv, WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'data-bundled') }),
      await scenario('bundled + 1000 generated', {
        ...baseEnv,
        WORKFLOW_STORAGE_PATH: storage,
        WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'data-1000'),
      }),
    ],
    toolsListBytes: await toolListSizes(baseEnv),
    executions: await (async () => {
      loopWorkflow(baseEnv.WORKFLOWLOOKUP_WORKFLOWS_PATH);
      return executionsScenario({ ...baseEnv, WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'data') });
    })(),
    tasks: await tasksScenario({ ...baseEnv, WORKFLOWLOOKUP_DATA_DIR: join(sandbox, 'tasks-data') }),
    dashboard: await (async () => {
      progress('dashboard');
      return dashboardScenario({ executions: arg('dashboard-executions', 100_000) });
    })(),
    modules: await runModules(sandbox, floor),
  };
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(join(root, 'bench', 'results', 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  const x = (ms) => `${ratio(ms, floor.medianMs)}x floor`;
  console.log(
    `\nfloor (bare Node answering JSON lines): spawn -> first answer median ${floor.medianMs} ms, p99 ${floor.p99Ms} ms`,
  );
  for (const s of results.scenarios) {
    console.log(`\n${s.name} (${s.workflows} workflows)`);
    const st = s.startup;
    console.log(
      `  spawn -> tools/list after initialize: median ${st.toolsList.medianMs} ms (${x(st.toolsList.medianMs)}), p99 ${st.toolsList.p99Ms} ms, peak RSS ${st.toolsList.peakRssMb} MB`,
    );
    console.log(
      `  spawn -> first workflow_list:         median ${st.workflowList.medianMs} ms (${x(st.workflowList.medianMs)}), p99 ${st.workflowList.p99Ms} ms, peak RSS ${st.workflowList.peakRssMb} MB`,
    );
    console.log(
      `  spawn -> first workflow_list, cold definition cache: ${st.coldWorkflowList.medianMs} ms (${x(st.coldWorkflowList.medianMs)})`,
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
  for (const m of results.modules) {
    console.log(`\n${m.title}`);
    if (m.skipped) console.log(`  skipped: ${m.skipped}`);
    else for (const line of m.lines) console.log(line);
  }
  console.log('\nwritten: bench/results/latest.json');
} finally {
  rmSync(sandbox, { recursive: true, force: true });
}
