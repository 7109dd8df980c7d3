// Cold start (issue #27.5): spawn -> the real answer to the first workflow_list (tools/call, sent right
// after initialize; the stdio prelude answers only initialize and tools/list, never workflow_list) on a
// fresh data dir (no definition cache: a first run, a CI job, a new container) and again on the same
// dir (warm), with the bundled workflows and with 1,000 more, each round next to the floor (a bare Node
// process, bench/floor-server.mjs) so that ratios compare like with like on a loaded machine. The server
// is launched as clients launch it: `node dist/cli.js`, no flags. Also a paged workflow_list
// (limit: 50) over 1,008 workflows through tools/call, and the check of one definition in-process (the
// sources bundled on the fly). Scenario module of `npm run bench`; alone: `node
// bench/scenarios/cold-start.mjs [--rounds 10] [--pages 1000] [--cli path/to/dist/cli.js]
// [--before path/to/other/dist/cli.js]` after `npm run build`; `--before` measures another build in the
// same rounds (before/after numbers from one run).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  firstList,
  generatedWorkflow,
  generatedWorkflows,
  INIT_PARAMS,
  LineServer,
  measureFloor,
  ratio,
  round,
  stats,
} from '../lib.mjs';
import { numberArg, runAlone } from '../pg-lib.mjs';

export const title =
  'Cold start: first workflow_list on a fresh data dir and warm (x floor), paged list over 1,008 workflows, one definition check';

/** Nothing external is needed. */
export async function skip() {
  return undefined;
}

const GOALS = { bundledCold: 3, generatedCold: 10, bundledWarm: 2, pagedListMs: 2, checkMs: 0.3 };

async function pagedList(cli, env, calls) {
  const server = new LineServer(cli, env);
  try {
    await server.request('initialize', INIT_PARAMS, 0);
    server.notify('notifications/initialized');
    const samples = [];
    let cursor;
    for (let i = 0; i < calls; i++) {
      const t = performance.now();
      const res = await server.request('tools/call', {
        name: 'workflow_list',
        arguments: { limit: 50, ...(cursor ? { cursor } : {}) },
      });
      samples.push(performance.now() - t);
      const page = res.result?.structuredContent;
      if (res.error || res.result?.isError || page?.workflows?.length === undefined)
        throw new Error(`paged workflow_list failed: ${JSON.stringify(res).slice(0, 300)}`);
      cursor = page.next_cursor; // every page in turn, then from the start again
    }
    return stats(samples);
  } finally {
    await server.stop();
  }
}

/** checkDefinition in this process, from the sources (bundled with esbuild), warm: ms per definition. */
async function checkCost(ctx, tmp) {
  const { build } = await import('esbuild');
  const out = join(tmp, 'check-bundle.mjs');
  await build({
    stdin: {
      contents: `export { ValidationEngine } from './src/engine/validation-engine.ts';
export { checkDefinition } from './src/workflows/check.ts';`,
      resolveDir: ctx.root,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: out,
    logLevel: 'warning',
  });
  const { ValidationEngine, checkDefinition } = await import(pathToFileURL(out).href);
  const engine = new ValidationEngine({
    workerUrl: pathToFileURL(join(ctx.root, 'dist', 'validation-worker.js')),
  });
  const sets = {
    'generated (8 steps, length rules)': Array.from({ length: 200 }, (_, i) => generatedWorkflow(i)),
    'bundled coding-task-workflow.json': [
      readFileSync(join(ctx.root, 'workflows', 'coding-task-workflow.json'), 'utf8'),
    ],
  };
  const result = {};
  for (const [label, texts] of Object.entries(sets)) {
    const check = (i) =>
      checkDefinition({ text: texts[i % texts.length], format: 'json' }, 'strict', { engine });
    const t0 = performance.now();
    await check(0);
    const first = performance.now() - t0;
    for (let i = 0; i < 500; i++) await check(i); // warm-up: what a start of 1,000 files reaches early
    const n = 2000;
    // CPU time too: on a loaded machine the wall time of a check is mostly waiting for a core.
    const cpu = process.cpuUsage();
    const t = performance.now();
    for (let i = 0; i < n; i++) await check(i);
    const used = process.cpuUsage(cpu);
    result[label] = {
      firstMs: round(first),
      perCheckMs: round((performance.now() - t) / n),
      perCheckCpuMs: round((used.user + used.system) / 1000 / n),
    };
  }
  result.workerStarts = engine.workerStarts;
  engine.unload();
  return result;
}

export async function run(ctx) {
  const rounds = numberArg(ctx.args, 'rounds', 10);
  const pages = numberArg(ctx.args, 'pages', 1000);
  const storage = join(ctx.tmp, 'storage');
  generatedWorkflows(storage, 1000);
  const base = {
    PATH: process.env.PATH,
    HOME: join(ctx.tmp, 'home'),
    XDG_CONFIG_HOME: join(ctx.tmp, 'config'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: join(ctx.tmp, 'runtime'),
  };
  const builds = { '': ctx.cli, ...(ctx.args?.before ? { 'before: ': ctx.args.before } : {}) };
  const samples = { floor: [] };
  const add = (name, ms) => {
    samples[name] ??= [];
    samples[name].push(ms);
  };
  for (let r = 0; r < rounds; r++) {
    ctx.progress(`round ${r + 1}/${rounds}: floor, bundled cold/warm, 1,000 workflows cold/warm`);
    samples.floor.push((await measureFloor(1)).medianMs);
    for (const [prefix, cli] of Object.entries(builds)) {
      const data = (kind) => join(ctx.tmp, `data-${prefix ? 'before-' : ''}${kind}-${r}`);
      const bundled = { ...base, WORKFLOWLOOKUP_DATA_DIR: data('bundled') };
      add(`${prefix}bundledCold`, (await firstList(cli, bundled)).ms);
      add(`${prefix}bundledWarm`, (await firstList(cli, bundled)).ms);
      const more = { ...base, WORKFLOW_STORAGE_PATH: storage, WORKFLOWLOOKUP_DATA_DIR: data('1000') };
      add(`${prefix}generatedCold`, (await firstList(cli, more)).ms);
      add(`${prefix}generatedWarm`, (await firstList(cli, more)).ms);
    }
  }
  const floor = stats(samples.floor);
  const startup = {};
  for (const [name, values] of Object.entries(samples)) {
    if (name === 'floor') continue;
    const s = stats(values);
    startup[name] = { ...s, xFloor: ratio(s.medianMs, floor.medianMs) };
  }
  ctx.progress(`paged workflow_list (limit 50) x ${pages} over 1,008 workflows`);
  const paged = await pagedList(
    ctx.cli,
    { ...base, WORKFLOW_STORAGE_PATH: storage, WORKFLOWLOOKUP_DATA_DIR: join(ctx.tmp, 'data-1000-0') },
    pages,
  );
  ctx.progress('one definition check, in-process');
  const check = await checkCost(ctx, ctx.tmp);
  return { rounds, floor, startup, pagedList: paged, check, goals: GOALS };
}

export function report(result) {
  const { floor, startup: s, pagedList: p, check, goals } = result;
  const line = (label, r, goal) =>
    `  ${label.padEnd(40)} median ${String(r.medianMs).padStart(8)} ms  ${String(r.xFloor).padStart(5)}x floor${goal ? `  (goal <= ${goal}x)` : ''}`;
  return [
    `  floor (bare node, ${result.rounds} spawns interleaved): median ${floor.medianMs} ms`,
    line('first workflow_list, bundled, fresh dir', s.bundledCold, goals.bundledCold),
    line('first workflow_list, bundled, warm', s.bundledWarm, goals.bundledWarm),
    line('first workflow_list, 1,008, fresh dir', s.generatedCold, goals.generatedCold),
    line('first workflow_list, 1,008, warm', s.generatedWarm),
    ...(s['before: bundledCold']
      ? [
          line('before: first workflow_list, bundled, fresh', s['before: bundledCold']),
          line('before: first workflow_list, bundled, warm', s['before: bundledWarm']),
          line('before: first workflow_list, 1,008, fresh', s['before: generatedCold']),
          line('before: first workflow_list, 1,008, warm', s['before: generatedWarm']),
        ]
      : []),
    `  paged workflow_list (limit 50) over 1,008: median ${p.medianMs} ms, p99 ${p.p99Ms} ms (goal median <= ${goals.pagedListMs} ms)`,
    ...Object.entries(check)
      .filter(([, v]) => typeof v === 'object')
      .map(
        ([label, v]) =>
          `  check of one definition, ${label}: ${v.perCheckMs} ms warm, ${v.perCheckCpuMs} ms of CPU (first ${v.firstMs} ms; goal <= ${goals.checkMs} ms)`,
      ),
    `  worker threads started by those checks: ${check.workerStarts}`,
  ];
}

await runAlone(import.meta.url, { title, skip, run, report }, 'cold-start');
