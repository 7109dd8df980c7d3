// The cost of observability (issue 25), interleaved so that a loaded machine skews every variant alike:
// start-up (spawn → the `tools/list` answer after `initialize`) and durable step latency
// (workflow_next_step round trips over stdio), for
//   base   another build without telemetry (`--base <root>`, e.g. an export of main), telemetry unset
//   off    this build, no OTEL_* variable (the SDK is never loaded)
//   otel   this build exporting every span over OTLP/HTTP to a local collector that accepts and drops them
// Usage: node scripts/build.mjs && node bench/telemetry.mjs [--base DIR] [--rounds 3] [--spawns 8] [--steps 400]
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cliOf,
  INIT_PARAMS,
  LineServer,
  loopWorkflow,
  ROOT,
  requireToken,
  round,
  spawnTimes,
  stats,
} from './lib.mjs';

const argOf = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
};
const ROUNDS = Number(argOf('rounds', 3));
const SPAWNS = Number(argOf('spawns', 8));
const STEPS = Number(argOf('steps', 400));
const base = argOf('base', undefined);
const progress = (m) =>
  process.stderr.write(`[telemetry bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

// A collector that takes every export and answers at once (what a local OTel collector does).
let exported = 0;
const collector = createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    exported++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
await new Promise((r) => collector.listen(0, '127.0.0.1', r));
const endpoint = `http://127.0.0.1:${collector.address().port}`;

const sandbox = mkdtempSync(join(tmpdir(), 'wl-telemetry-bench-'));
const env = {
  PATH: process.env.PATH,
  HOME: join(sandbox, 'home'),
  XDG_CONFIG_HOME: join(sandbox, 'config'),
  WORKFLOWLOOKUP_WORKFLOWS_PATH: join(sandbox, 'runtime'),
};
loopWorkflow(env.WORKFLOWLOOKUP_WORKFLOWS_PATH);
const variants = [
  ...(base ? [{ name: 'base', cli: cliOf(base), env: {} }] : []),
  { name: 'off', cli: cliOf(ROOT), env: {} },
  // Export in batches of 512 every 500 ms (the defaults are 512 and 5 s): the run sees exports happen.
  {
    name: 'otel',
    cli: cliOf(ROOT),
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '500' },
  },
];

async function steps(cli, variantEnv, dataDir) {
  const server = new LineServer(cli, { ...env, ...variantEnv, WORKFLOWLOOKUP_DATA_DIR: dataDir });
  await server.request('initialize', INIT_PARAMS, 0);
  const call = async (name, args) => {
    const res = await server.request('tools/call', { name, arguments: args });
    if (res.error || res.result.isError)
      throw new Error(`${name}: ${JSON.stringify(res).slice(0, 300)}\n${server.stderr}`);
    return res.result.structuredContent;
  };
  let token = requireToken(
    await call('workflow_start', { workflow_name: 'bench-loop', context: { more: true } }),
  );
  const samples = [];
  for (let i = 0; i < STEPS; i++) {
    const t = performance.now();
    token = requireToken(await call('workflow_next_step', { token, output: { summary: `tick ${i}` } }));
    samples.push(performance.now() - t);
  }
  await server.stop();
  return samples;
}

const results = Object.fromEntries(variants.map((v) => [v.name, { startup: [], steps: [] }]));
const dataDirOf = (v) => join(sandbox, `data-${v.name}`);
try {
  // Each variant's definition cache warmed once; then warm starts, one spawn of each variant in turn.
  for (const v of variants)
    await spawnTimes(v.cli, { ...env, ...v.env, WORKFLOWLOOKUP_DATA_DIR: dataDirOf(v) }, 1, (s) =>
      s.handshakeThen('tools/list', {}),
    );
  progress(`start-up: ${SPAWNS * ROUNDS} spawns of each variant, interleaved`);
  for (let i = 0; i < SPAWNS * ROUNDS; i++) {
    for (const v of i % 2 === 0 ? variants : [...variants].reverse()) {
      const s = await spawnTimes(
        v.cli,
        { ...env, ...v.env, WORKFLOWLOOKUP_DATA_DIR: dataDirOf(v) },
        1,
        (srv) => srv.handshakeThen('tools/list', {}),
      );
      results[v.name].startup.push(s.medianMs);
    }
  }
  for (let round_ = 1; round_ <= ROUNDS; round_++) {
    // The order turns each round, so no variant always runs first (or right after another's checkpoints).
    for (const v of variants.map((_, i) => variants[(i + round_) % variants.length])) {
      progress(`steps, round ${round_}/${ROUNDS}: ${v.name}`);
      results[v.name].steps.push(...(await steps(v.cli, v.env, join(sandbox, `steps-${v.name}-${round_}`))));
    }
  }
} finally {
  collector.close();
  rmSync(sandbox, { recursive: true, force: true });
}

const summary = {};
for (const [name, r] of Object.entries(results)) {
  const st = stats(r.steps);
  const sorted = [...r.startup].sort((a, b) => a - b);
  summary[name] = {
    startupMedianMs: round(sorted[Math.floor(sorted.length / 2)]),
    stepMedianMs: st.medianMs,
    stepP99Ms: st.p99Ms,
    stepMeanMs: round(r.steps.reduce((a, b) => a + b, 0) / r.steps.length),
  };
}
const ratio = (a, b, key) =>
  summary[a] && summary[b] ? round(summary[a][key] / summary[b][key]) : undefined;
console.log(
  JSON.stringify(
    { rounds: ROUNDS, spawns: SPAWNS, steps: STEPS, exportRequests: exported, summary },
    null,
    2,
  ),
);
console.log(
  JSON.stringify(
    {
      'off/base startup': ratio('off', 'base', 'startupMedianMs'),
      'off/base step median': ratio('off', 'base', 'stepMedianMs'),
      'off/base step p99': ratio('off', 'base', 'stepP99Ms'),
      'otel/off step median': ratio('otel', 'off', 'stepMedianMs'),
      'otel/off step mean': ratio('otel', 'off', 'stepMeanMs'),
      'otel - off step mean ms': summary.otel && round(summary.otel.stepMeanMs - summary.off.stepMeanMs),
    },
    null,
    2,
  ),
);
