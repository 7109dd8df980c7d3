// What `module.enableCompileCache()` (src/cli/entry.ts, Node ≥ 22.1) buys at start-up, measured as CPU
// time (user + system) of a whole short stdio session: initialize, tools/list, workflow_list, end of
// input. On the Node that runs it, interleaved rounds of:
// - floor: a bare Node process answering the same lines (bench/floor-server.mjs);
// - off:   the server with NODE_DISABLE_COMPILE_CACHE=1;
// - cold:  the server with an empty cache directory (it compiles, then writes the cache);
// - warm:  the server with the cache a previous run wrote.
// Medians, and each as a ratio to the floor of the same run. `node bench/compile-cache.mjs [rounds]`;
// on Node 22 and 24 (with better-sqlite3 built for each): `node scripts/node-versions.mjs 22 24 --
// bench/compile-cache.mjs`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist', 'cli.js');
const FLOOR = join(ROOT, 'bench', 'floor-server.mjs');
const rounds = Number(process.argv[2] ?? 9);

const nodes = [['this', process.execPath]];

const work = mkdtempSync(join(tmpdir(), 'wl-compile-cache-'));
const input = join(work, 'session.jsonl');
writeFileSync(
  input,
  [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'workflow_list', params: {} },
  ]
    .map((m) => `${JSON.stringify(m)}\n`)
    .join(''),
);
const home = join(work, 'home');
mkdirSync(home);
const baseEnv = {
  PATH: process.env.PATH ?? '',
  HOME: home,
  XDG_CONFIG_HOME: join(home, '.config'),
  WORKFLOWLOOKUP_DATA_DIR: join(work, 'data'),
};

/** CPU milliseconds (user + system) of one process reading the session, from bash's `times`. */
function cpu(node, script, env) {
  const out = execFileSync('bash', ['-c', '"$0" "$1" < "$2" > /dev/null; times', node, script, input], {
    env: { ...baseEnv, ...env },
    encoding: 'utf8',
  });
  const children = out.trim().split('\n').at(-1) ?? '';
  const [user = 0, system = 0] = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map(
    (m) => (Number(m[1]) * 60 + Number(m[2])) * 1000,
  );
  return user + system;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const results = [];
for (const [name, node] of nodes) {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const warmDir = join(work, `warm-${name}`);
  // One run first: the definition cache of the data dir, and the warm compile cache.
  cpu(node, CLI, { NODE_COMPILE_CACHE: warmDir });
  const samples = { floor: [], off: [], cold: [], warm: [] };
  for (let round = 0; round < rounds; round++) {
    const coldDir = join(work, `cold-${name}-${round}`);
    samples.floor.push(cpu(node, FLOOR, {}));
    samples.off.push(cpu(node, CLI, { NODE_DISABLE_COMPILE_CACHE: '1' }));
    samples.cold.push(cpu(node, CLI, { NODE_COMPILE_CACHE: coldDir }));
    samples.warm.push(cpu(node, CLI, { NODE_COMPILE_CACHE: warmDir }));
    rmSync(coldDir, { recursive: true, force: true });
  }
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
  results.push({ node: version, rounds, cpu_ms: m, samples });
  const ratio = (v) => (v / m.floor).toFixed(2);
  process.stdout.write(
    `${version.padEnd(9)} floor ${m.floor.toFixed(0)} ms | off ${m.off.toFixed(0)} ms (${ratio(m.off)}×) | cold ${m.cold.toFixed(0)} ms (${ratio(m.cold)}×) | warm ${m.warm.toFixed(0)} ms (${ratio(m.warm)}×) | warm vs off ${(((m.off - m.warm) / m.off) * 100).toFixed(1)} % less CPU, cold vs off ${(((m.cold - m.off) / m.off) * 100).toFixed(1)} % more\n`,
  );
}
mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench', 'results', `compile-cache-node${process.versions.node.split('.')[0]}.json`),
  `${JSON.stringify(results, null, 2)}\n`,
);
rmSync(work, { recursive: true, force: true });
