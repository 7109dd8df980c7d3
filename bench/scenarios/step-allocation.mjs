// Step tail (issue #27.4): stdio workflow_next_step latency over thousands of back-to-back steps
// (p50/p99), and what each step allocates, by component. The latency run launches the server as
// clients do (`node dist/cli.js`); the allocation run preloads bench/heap-sampler.mjs (V8's sampling
// heap profiler, freed objects included) and attributes every sampled byte to the nearest frame that is
// ours (src/<dir>/<file>) or the SDK's (function name), looking through zod and Node's internals, via
// the bundle's source maps. Scenario module of `npm run bench`; alone: `node
// bench/scenarios/step-allocation.mjs [--steps 4000] [--alloc-steps 1000] [--cli path/to/dist/cli.js]`
// after `npm run build`.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initialized, LineServer, loopExecution, loopWorkflow, round, stats } from '../lib.mjs';
import { numberArg, runAlone } from '../pg-lib.mjs';

export const title = 'Step tail: stdio workflow_next_step p50/p99 and bytes allocated per step, by component';

/** Nothing external is needed. */
export async function skip() {
  return undefined;
}

const HEAP_SAMPLER = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'heap-sampler.mjs');

async function started(server) {
  return (await loopExecution(await initialized(server))).step;
}

const WARM_UP = 1000;

async function latency(ctx, env, steps) {
  const server = new LineServer(ctx.cli, env);
  try {
    const step = await started(server);
    const samples = [];
    for (let i = 0; i < steps; i++) {
      const t = performance.now();
      await step(i);
      samples.push(performance.now() - t);
    }
    // The tail without the warm-up: most of the slowest steps fall in the first ~1,500 (TurboFan tiering
    // up, on the same two cores as the client), not in garbage collection (docs/performance-startup.md).
    const warm = stats(samples.slice(WARM_UP));
    return {
      ...stats(samples),
      afterWarmUp: { ...warm, skipped: WARM_UP },
      peakRssMb: round(server.peakRssMb()),
    };
  } finally {
    await server.stop();
  }
}

/** Source maps of the bundle, by script URL (read once each). */
function mapper() {
  const maps = new Map();
  return (url) => {
    if (!maps.has(url)) {
      let map;
      try {
        const file = fileURLToPath(url);
        if (existsSync(`${file}.map`)) map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
      } catch {
        map = undefined;
      }
      maps.set(url, map);
    }
    return maps.get(url);
  };
}

/** The component a frame belongs to, or undefined to look further up the stack. */
function componentOf(frame, mapOf) {
  const { url, lineNumber, columnNumber, functionName } = frame;
  if (!url.startsWith('file:')) return undefined; // Node's internals, V8 builtins, (root)
  const entry = mapOf(url)?.findEntry(lineNumber, columnNumber);
  const source = entry?.originalSource ?? url;
  if (/node_modules\/zod\//.test(source)) return undefined;
  // The SDK's own maps name its sources (…/@modelcontextprotocol/<package>/src/…): look at the package.
  const sdk = /node_modules\/@modelcontextprotocol\/([^/]+)\/(?:.*\/)?([^/]+)$/.exec(source);
  if (sdk)
    return `SDK (${sdk[1]}): ${functionName || '(anonymous)'} in ${sdk[2]}${process.env.WL_ALLOC_BY_FUNCTION ? `:${entry?.originalLine}` : ''}`;
  const lib = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(source);
  if (lib) return `${lib[1]}`;
  const ours = /\/src\/(.+\.ts)$/.exec(source);
  if (ours)
    return `ours: src/${ours[1]}${process.env.WL_ALLOC_BY_FUNCTION ? ` ${functionName}:${entry?.originalLine}` : ''}`;
  return undefined;
}

/** Bytes by component from a sampling heap profile (sizes are V8's estimates of all allocations). */
function attribute(profile) {
  const mapOf = mapper();
  const byComponent = new Map();
  let total = 0;
  let viaZod = 0;
  const walk = (node, stack) => {
    const here = [...stack, node.callFrame];
    if (node.selfSize > 0) {
      total += node.selfSize;
      let component = '(runtime: no frame of ours or a library)';
      let zod = false;
      for (let i = here.length - 1; i >= 0; i--) {
        const frame = here[i];
        if (frame.url.includes('/dist/') && !zod) {
          const src = mapOf(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber)?.originalSource;
          if (src && /node_modules\/zod\//.test(src)) zod = true;
        }
        const found = componentOf(frame, mapOf);
        if (found) {
          component = found;
          break;
        }
      }
      if (zod) viaZod += node.selfSize;
      if (
        process.env.WL_ALLOC_STACK &&
        component.includes(process.env.WL_ALLOC_STACK) &&
        node.selfSize > 2000
      )
        process.stderr.write(
          `${node.selfSize} ${here
            .slice(-14)
            .map((f) => `${f.functionName || '?'}@${f.url.split('/').pop()}:${f.lineNumber}`)
            .join(' < ')}\n`,
        );
      const entry = byComponent.get(component) ?? { bytes: 0, zodBytes: 0 };
      entry.bytes += node.selfSize;
      if (zod) entry.zodBytes += node.selfSize;
      byComponent.set(component, entry);
    }
    for (const child of node.children ?? []) walk(child, here);
  };
  walk(profile.head, []);
  return { total, viaZod, byComponent };
}

async function allocation(ctx, env, steps) {
  const out = join(ctx.tmp, 'steps.heapprofile');
  // LineServer runs `node <script> <args>`: the preload flag goes where the script would, the CLI after it.
  const server = new LineServer(`--import=${HEAP_SAMPLER}`, { ...env, WL_HEAP_SAMPLE_OUT: out }, [ctx.cli]);
  try {
    const step = await started(server);
    for (let i = 0; i < 300; i++) await step(i); // warm: code optimised, statements prepared
    const signalled = (line) =>
      new Promise((resolve) => {
        const check = () => (server.stderr.includes(line) ? resolve() : setTimeout(check, 10));
        check();
      });
    server.child.kill('SIGUSR2');
    await signalled('[heap-sampler] started');
    for (let i = 0; i < steps; i++) await step(300 + i);
    server.child.kill('SIGUSR2');
    await signalled('[heap-sampler] written');
  } finally {
    await server.stop();
  }
  const { total, viaZod, byComponent } = attribute(JSON.parse(readFileSync(out, 'utf8')));
  const perStep = (bytes) => Math.round(bytes / steps);
  return {
    steps,
    bytesPerStep: perStep(total),
    zodBytesPerStep: perStep(viaZod),
    components: [...byComponent]
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .map(([component, { bytes, zodBytes }]) => ({
        component,
        bytesPerStep: perStep(bytes),
        zodBytesPerStep: perStep(zodBytes),
      })),
  };
}

export async function run(ctx) {
  const steps = numberArg(ctx.args, 'steps', 4000);
  const allocSteps = numberArg(ctx.args, 'alloc-steps', 1000);
  const runtime = join(ctx.tmp, 'runtime');
  loopWorkflow(runtime);
  const env = {
    PATH: process.env.PATH,
    HOME: join(ctx.tmp, 'home'),
    XDG_CONFIG_HOME: join(ctx.tmp, 'config'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: runtime,
  };
  ctx.progress(`${steps} back-to-back steps over stdio`);
  const timed = await latency(ctx, { ...env, WORKFLOWLOOKUP_DATA_DIR: join(ctx.tmp, 'data-latency') }, steps);
  ctx.progress(`${allocSteps} steps under the sampling heap profiler`);
  const allocated = await allocation(
    ctx,
    { ...env, WORKFLOWLOOKUP_DATA_DIR: join(ctx.tmp, 'data-allocation') },
    allocSteps,
  );
  return { latency: timed, allocation: allocated };
}

/** Bytes per step by owner: our code by top folder of src/, the SDK, other libraries, the runtime. */
function owners(components) {
  const out = {};
  for (const { component, bytesPerStep } of components) {
    const owner = component.startsWith('ours: ')
      ? `src/${component.slice('ours: src/'.length).split('/')[0]}`
      : component.startsWith('SDK')
        ? 'SDK'
        : component.startsWith('(')
          ? 'runtime'
          : component;
    out[owner] = (out[owner] ?? 0) + bytesPerStep;
  }
  return Object.fromEntries(Object.entries(out).sort((x, y) => y[1] - x[1]));
}

export function report(result) {
  const { latency: l, allocation: a } = result;
  const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
  return [
    `  workflow_next_step over stdio, ${l.calls} steps back to back: p50 ${l.medianMs} ms, p99 ${l.p99Ms} ms (goal p99 <= 5 ms), peak RSS ${l.peakRssMb} MB`,
    ...(l.afterWarmUp
      ? [
          `  the same steps after the first ${l.afterWarmUp.skipped}: p50 ${l.afterWarmUp.medianMs} ms, p99 ${l.afterWarmUp.p99Ms} ms`,
        ]
      : []),
    `  allocated per step (${a.steps} steps sampled): ${kb(a.bytesPerStep)}, of which inside zod ${kb(a.zodBytesPerStep)}`,
    `  by owner: ${Object.entries(owners(a.components))
      .map(([owner, bytes]) => `${owner} ${kb(bytes)}`)
      .join(', ')}`,
    ...a.components
      .filter((c) => c.bytesPerStep >= Number(process.env.WL_ALLOC_MIN_BYTES ?? 512))
      .slice(0, Number(process.env.WL_ALLOC_LINES ?? 20))
      .map(
        (c) =>
          `    ${kb(c.bytesPerStep).padStart(9)}${c.zodBytesPerStep > 0 ? ` (zod ${kb(c.zodBytesPerStep)})` : ''}  ${c.component}`,
      ),
  ];
}

await runAlone(import.meta.url, { title, skip, run, report }, 'step-allocation');
