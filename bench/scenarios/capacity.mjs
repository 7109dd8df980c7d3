// Capacity benchmark (issue #27.6; the numbers of docs/capacity.md): what one workflow_next_step costs
// with PostgreSQL — CPU ms in the server process and in PostgreSQL, statements and round trips (counted
// by a proxy that reads the wire protocol), WAL bytes, stored bytes per execution — and how the step
// rate scales from 1 to 3 `serve --http` replicas on one database with 50 clients, next to one SQLite
// server under the same load. Scenario module of `npm run bench`; alone: `node
// bench/scenarios/capacity.mjs [--cap-steps 500] [--cap-calls 1000] [--cap-clients 50]` after `npm run
// build` (`--cli path/to/dist/cli.js` measures another build). PostgreSQL as in postgres.mjs.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { rpc, startHttpServer, tokenOf } from '../lib.mjs';
import {
  backendCpuMs,
  countingProxy,
  cpuMsOf,
  createDatabase,
  findServer,
  numberArg,
  replicaEnv,
  round2,
  runAlone,
  skip,
  stepLoad,
  storedBytes,
  transactionCounts,
  usingDatabase,
  walBytesSince,
  walPosition,
} from '../pg-lib.mjs';

/** Skipped, with the reason, when no PostgreSQL answers. */
export { skip };

export const title =
  'Capacity: one step on PostgreSQL (CPU, statements, round trips, WAL, stored bytes); 1 to 3 replicas, 50 clients';

let dirs = 0;
async function replicas(ctx, env, count) {
  const started = [];
  for (let i = 0; i < count; i++) {
    const dataDir = join(ctx.tmp, `data-${dirs++}`);
    mkdirSync(dataDir, { recursive: true });
    started.push(await startHttpServer(ctx.cli, { ...env, WORKFLOWLOOKUP_DATA_DIR: dataDir }));
  }
  return {
    urls: started.map((r) => r.url),
    pids: started.map((r) => r.pid),
    stop: () => Promise.all(started.map((r) => r.stop())),
  };
}

/** One client advancing one execution `steps` times, one call after the other. */
async function sequentialSteps(url, steps) {
  const started = await rpc(url, 'workflow_start', { workflow_name: 'bench-loop', context: { more: true } });
  let token = tokenOf(started);
  for (let s = 0; s < steps; s++) {
    token = tokenOf(await rpc(url, 'workflow_next_step', { token, output: { summary: `tick ${s}` } }));
  }
  return started.execution_id;
}

/**
 * The cost of one step: one replica whose PostgreSQL connections go through the counting proxy, one
 * client, `steps` steps after a warm-up; every count divided by the steps.
 */
async function perStep(ctx, env, serverUrl, steps) {
  const database = await createDatabase(serverUrl);
  const proxy = await countingProxy(database.url);
  const cluster = await replicas(ctx, { ...env, WORKFLOWLOOKUP_DATABASE_URL: proxy.url }, 1);
  try {
    const url = cluster.urls[0];
    await sequentialSteps(url, 20);
    proxy.take();
    const cpuBefore = cpuMsOf(cluster.pids[0]);
    const pgBefore = await backendCpuMs(serverUrl, database.name);
    const lsn = await walPosition(database.url);
    const began = performance.now();
    await sequentialSteps(url, steps);
    const elapsed = performance.now() - began;
    const counted = proxy.take();
    const cpu = cpuMsOf(cluster.pids[0]) - cpuBefore;
    const pgAfter = await backendCpuMs(serverUrl, database.name);
    const wal = await walBytesSince(database.url, lsn);
    // The start (one call) is in the counts too: the per-step numbers include 1/steps of it.
    const per = (n) => round2(n / steps);
    const byStatement = Object.fromEntries(
      Object.entries(counted.byStatement)
        .sort((a, b) => b[1] - a[1])
        .map(([name, n]) => [name, per(n)]),
    );
    return {
      steps,
      msPerStep: per(elapsed),
      serverCpuMs: per(cpu),
      postgresCpuMs: per(pgAfter.ms - pgBefore.ms),
      statements: per(counted.statements),
      roundTrips: per(counted.roundTrips),
      transactions: per(counted.transactions),
      walBytes: Math.round(wal.bytes / steps),
      walFullPageImageBytes: Math.round(wal.fullPageImages / steps),
      byStatement,
    };
  } finally {
    await cluster.stop();
    await proxy.close();
    await database.drop().catch(() => undefined);
  }
}

/** The server's CPU for the same steps on SQLite: what the PostgreSQL adapter adds is the difference. */
async function sqliteStepCpu(ctx, env, steps) {
  const cluster = await replicas(ctx, env, 1);
  try {
    await sequentialSteps(cluster.urls[0], 20);
    const before = cpuMsOf(cluster.pids[0]);
    await sequentialSteps(cluster.urls[0], steps);
    return round2((cpuMsOf(cluster.pids[0]) - before) / steps);
  } finally {
    await cluster.stop();
  }
}

/**
 * Stored bytes per execution and per step: `executions` executions of `steps` steps each, as written
 * (dead row versions included, autovacuum running) and live (after VACUUM FULL), each less the size
 * of the empty tables.
 */
async function stored(ctx, env, serverUrl, executions, steps) {
  const database = await createDatabase(serverUrl);
  const cluster = await replicas(ctx, { ...env, WORKFLOWLOOKUP_DATABASE_URL: database.url }, 1);
  try {
    await usingDatabase(database.url, (db) => db.query('VACUUM FULL'));
    const empty = await storedBytes(database.url);
    for (let i = 0; i < executions; i += 10) {
      await Promise.all(Array.from({ length: 10 }, () => sequentialSteps(cluster.urls[0], steps)));
    }
    const perExecution = (sizes) => {
      const byTable = Object.fromEntries(
        Object.entries(sizes).map(([table, bytes]) => [
          table,
          Math.round((bytes - (empty[table] ?? 0)) / executions),
        ]),
      );
      const total = Object.values(byTable).reduce((a, b) => a + b, 0);
      return { bytesPerExecution: total, bytesPerStep: Math.round(total / steps), byTable };
    };
    const written = perExecution(await storedBytes(database.url));
    await usingDatabase(database.url, (db) => db.query('VACUUM FULL'));
    const live = perExecution(await storedBytes(database.url));
    return { executions, stepsEach: steps, written, live };
  } finally {
    await cluster.stop();
    await database.drop().catch(() => undefined);
  }
}

/** Step rate, latency and rollbacks with `clients` clients on `count` replicas (or one SQLite server). */
async function load(ctx, env, serverUrl, setup, clients, calls) {
  const database = setup.store === 'postgres' ? await createDatabase(serverUrl) : undefined;
  const cluster = await replicas(
    ctx,
    database ? { ...env, WORKFLOWLOOKUP_DATABASE_URL: database.url } : env,
    setup.replicas,
  );
  try {
    await stepLoad(cluster.urls, 5, 10);
    const before = database ? await transactionCounts(database.url) : undefined;
    const cpuBefore = cluster.pids.map(cpuMsOf);
    const result = await stepLoad(cluster.urls, clients, Math.ceil(calls / clients));
    const cpu = cluster.pids.reduce((sum, pid, i) => sum + cpuMsOf(pid) - (cpuBefore[i] ?? 0), 0);
    const after = database ? await transactionCounts(database.url) : undefined;
    return {
      ...result,
      serverCpuMsPerStep: round2(cpu / result.n),
      ...(before && after ? { rolledBack: after.rollback - before.rollback } : {}),
    };
  } finally {
    await cluster.stop();
    await database?.drop().catch(() => undefined);
  }
}

export const SETUPS = [
  { label: 'SQLite, 1 process', store: 'sqlite', replicas: 1 },
  { label: 'PostgreSQL, 1 replica', store: 'postgres', replicas: 1 },
  { label: 'PostgreSQL, 2 replicas', store: 'postgres', replicas: 2 },
  { label: 'PostgreSQL, 3 replicas', store: 'postgres', replicas: 3 },
];

export async function run(ctx) {
  const found = await findServer();
  if (found.url === undefined) throw new Error(found.why);
  const steps = numberArg(ctx.args, 'cap-steps', 500);
  const calls = numberArg(ctx.args, 'cap-calls', 1000);
  const clients = numberArg(ctx.args, 'cap-clients', 50);
  const env = replicaEnv(ctx);
  ctx.progress(`per step: ${steps} steps through the counting proxy`);
  const step = await perStep(ctx, env, found.url, steps);
  step.sqliteServerCpuMs = await sqliteStepCpu(ctx, env, steps);
  ctx.progress('stored bytes: 100 executions of 20 steps');
  const storage = await stored(ctx, env, found.url, 100, 20);
  const scaling = {};
  for (const setup of SETUPS) {
    ctx.progress(`${setup.label}: ${clients} clients`);
    scaling[setup.label] = await load(ctx, env, found.url, setup, clients, calls);
  }
  const sqlite = scaling[SETUPS[0].label].perSecond;
  for (const s of Object.values(scaling)) s.rateVsSqlite = round2(s.perSecond / sqlite);
  return { step, storage, clients, scaling };
}

export function report(result) {
  const s = result.step;
  const lines = [
    `  one workflow_next_step on PostgreSQL (1 replica, 1 client, ${s.steps} steps, loopback):`,
    `    ${s.msPerStep} ms a step; CPU ${s.serverCpuMs} ms in the server (${s.sqliteServerCpuMs} ms for the same steps on SQLite), ${s.postgresCpuMs} ms in PostgreSQL`,
    `    ${s.statements} statements, ${s.roundTrips} round trips, ${s.transactions} transactions; WAL ${s.walBytes} bytes (${s.walFullPageImageBytes} of them full-page images)`,
    `    statements a step: ${Object.entries(s.byStatement)
      .map(([name, n]) => `${name} ${n}`)
      .join('; ')}`,
    ...['written', 'live'].map((kind) => {
      const st = result.storage[kind];
      return `  stored (${kind}): ${st.bytesPerExecution} bytes an execution of ${result.storage.stepsEach} steps (${st.bytesPerStep} a step): ${Object.entries(
        st.byTable,
      )
        .map(([t, b]) => `${t} ${b}`)
        .join(', ')}`;
    }),
    `  ${result.clients} clients, each advancing its own execution (client i on replica i mod n):`,
  ];
  for (const [label, r] of Object.entries(result.scaling)) {
    lines.push(
      `    ${label.padEnd(24)} ${String(r.perSecond).padStart(5)}/s (${r.rateVsSqlite}x SQLite)  p50 ${String(r.p50Ms).padStart(6)} ms  p99 ${String(r.p99Ms).padStart(7)} ms  CPU ${r.serverCpuMsPerStep} ms/step in the servers${r.rolledBack !== undefined ? `  ${r.rolledBack} rolled back` : ''}${r.failures ? `  FAILED: ${JSON.stringify(r.failures)}` : ''}`,
    );
  }
  return lines;
}

await runAlone(import.meta.url, { title, skip, run, report }, 'capacity');
