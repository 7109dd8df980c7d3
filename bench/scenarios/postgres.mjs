// PostgreSQL benchmark (issue #10.7): workflow_next_step latency (p50/p99) and throughput with 1 and 3
// `serve --http` replicas on one PostgreSQL and 10 and 50 concurrent clients, next to SQLite in the
// same run; then workflow_status reads with 1,000 and with 100,000 executions in the database (they
// must stay flat), and the EXPLAIN plans of the hot queries at 100,000. Scenario module of
// `npm run bench` (see /work/notes/bench-convention.md); alone: `node bench/scenarios/postgres.mjs
// [--pg-calls 1000] [--pg-reads 1000] [--pg-executions 100000]` after `npm run build`.
// PostgreSQL: WORKFLOWLOOKUP_BENCH_DATABASE_URL, else WORKFLOWLOOKUP_TEST_DATABASE_URL, else
// 127.0.0.1:5432 as postgres or root (a role that may create databases); each run creates its own
// database and drops it.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { rpc, startHttpServer as startReplica, tokenOf } from '../lib.mjs';
import {
  createDatabase,
  transactionCounts as databaseTransactions,
  findServer,
  numberArg,
  replicaEnv,
  runAlone,
  skip,
  latencyStats as stats,
  stepLoad,
  usingDatabase,
} from '../pg-lib.mjs';

/** Skipped, with the reason, when no PostgreSQL answers. */
export { skip };

export const title =
  'PostgreSQL: workflow_next_step with 1 and 3 replicas, 10 and 50 clients (next to SQLite); status reads at 1k vs 100k executions';

const STATES = ['running', 'paused', 'completed', 'completed', 'completed', 'failed', 'abandoned'];

const tool = (url, name, args) => rpc(url, name, args);

/** An execution advanced a few steps: what seeded copies are made of. */
async function realExecution(url) {
  const started = await tool(url, 'workflow_start', { workflow_name: 'bench-loop', context: { more: true } });
  let token = tokenOf(started);
  for (let i = 0; i < 3; i++) {
    token = tokenOf(await tool(url, 'workflow_next_step', { token, output: { summary: `tick ${i}` } }));
  }
  return started.execution_id;
}

/** Transactions committed and rolled back so far in a PostgreSQL setup's database (SQLite: none). */
const transactionCounts = (database, store) =>
  store !== 'postgres' || database === undefined ? undefined : databaseTransactions(database.url);

/**
 * The id of seeded execution `n`: random-looking like a real one (`exec_` and 24 hex digits), so seeded
 * and live executions interleave in every index as they would in a database with history.
 */
const seededId = (n) => `exec_${createHash('md5').update(`seed ${n}`).digest('hex').slice(0, 24)}`;
const SEEDED_ID_SQL = `'exec_' || substr(md5('seed ' || g), 1, 24)`;

/**
 * Copies of one real execution numbered `from` to `to - 1`, with its steps, used tokens and events:
 * a database with history.
 */
async function seed(db, template, from, to) {
  if (to <= from) return;
  await db.query(
    `INSERT INTO workflow_executions (execution_id, principal, workflow_name, definition_hash, state,
       current_step, current_seq, completed_steps, context, token_nonce, token_attempt, token_issued_at,
       token_expires_at, started_at, updated_at, completed_at, duration_ms, metadata)
     SELECT ${SEEDED_ID_SQL}, CASE WHEN g % 10 = 0 THEN 'team-b' ELSE t.principal END,
       t.workflow_name, t.definition_hash, s.state, t.current_step, t.current_seq, t.completed_steps, t.context,
       NULL, t.token_attempt, t.token_issued_at, t.token_expires_at, at, at,
       CASE WHEN s.state IN ('running','paused') THEN NULL ELSE at END, t.duration_ms, t.metadata
     FROM workflow_executions t, generate_series($2::int, $3::int - 1) g,
       LATERAL (SELECT ($4::text[])[1 + g % 7] AS state, now() - (g * 7919 % 5000000) * interval '1 second' AS at) s
     WHERE t.execution_id = $1`,
    [template, from, to, STATES],
  );
  await db.query(
    `INSERT INTO workflow_steps (execution_id, seq, step_name, agent_name, iteration, status, attempts,
       started_at, completed_at, duration_ms, output, lease_owner, lease_expires_at)
     SELECT ${SEEDED_ID_SQL}, st.seq, st.step_name, st.agent_name, st.iteration, st.status,
       st.attempts, st.started_at, st.completed_at, st.duration_ms, st.output, NULL, NULL
     FROM workflow_steps st, generate_series($2::int, $3::int - 1) g WHERE st.execution_id = $1`,
    [template, from, to],
  );
  await db.query(
    `INSERT INTO token_submissions (nonce, execution_id, output_hash, response, created_at)
     SELECT md5(ts.nonce || g), ${SEEDED_ID_SQL}, ts.output_hash, ts.response, ts.created_at
     FROM token_submissions ts, generate_series($2::int, $3::int - 1) g WHERE ts.execution_id = $1`,
    [template, from, to],
  );
  await db.query(
    `INSERT INTO telemetry_events (event_type, execution_id, step_name, agent_name, metadata, created_at)
     SELECT te.event_type, ${SEEDED_ID_SQL}, te.step_name, te.agent_name, te.metadata, te.created_at
     FROM telemetry_events te, generate_series($2::int, $3::int - 1) g WHERE te.execution_id = $1`,
    [template, from, to],
  );
  await db.query('ANALYZE');
}

/** Status reads of seeded executions, spread over the whole id range. */
async function statusReads(url, ids, reads) {
  const samples = [];
  for (let i = 0; i < reads; i++) {
    const id = ids(i);
    const uri = `workflowlookup://workflow/workflow_status/${id}`;
    const t = performance.now();
    await rpc(url, 'resources/read', { uri }, uri);
    samples.push(performance.now() - t);
  }
  return stats(samples);
}

/** The queries behind status reads, next_step and listings, as postgres-store.ts writes them. */
const HOT_QUERIES = [
  ['status: the execution', 'SELECT * FROM workflow_executions WHERE execution_id = $1', 'id'],
  ['status: its steps', 'SELECT * FROM workflow_steps WHERE execution_id = $1 ORDER BY seq', 'id'],
  ['next_step: the used token', 'SELECT * FROM token_submissions WHERE nonce = $1', 'nonce'],
  [
    'workflow_executions: unfinished, newest first',
    `SELECT e.* FROM unnest($2::text[]) AS wanted(state)
      CROSS JOIN LATERAL (SELECT * FROM workflow_executions WHERE principal = $1 AND state = wanted.state
        ORDER BY updated_at DESC, execution_id DESC LIMIT $3) AS e
      ORDER BY e.updated_at DESC, e.execution_id DESC LIMIT $3`,
    'listing',
  ],
  [
    'dashboard: a page of heads',
    `SELECT execution_id, principal, workflow_name, state, current_step, current_seq, token_attempt, started_at,
       updated_at, completed_at, duration_ms FROM workflow_executions WHERE principal = $1
      ORDER BY updated_at DESC, execution_id DESC LIMIT $2`,
    'page',
  ],
  [
    'shared workflows (reload)',
    `SELECT * FROM runtime_documents WHERE kind = 'workflow' ORDER BY name`,
    'none',
  ],
];

async function explainPlans(db, sampleId) {
  const values = {
    id: [sampleId],
    nonce: [
      (await db.query('SELECT nonce FROM token_submissions ORDER BY nonce LIMIT 1 OFFSET 100')).rows[0]
        ?.nonce,
    ],
    listing: ['local', ['idle', 'running', 'paused'], 20],
    page: ['local', 50],
    none: [],
  };
  const plans = [];
  for (const [label, sql, kind] of HOT_QUERIES) {
    const { rows } = await db.query(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${sql}`,
      values[kind],
    );
    plans.push({ label, plan: rows.map((r) => r['QUERY PLAN']) });
  }
  return plans;
}

export async function run(ctx) {
  const found = await findServer();
  if (found.url === undefined) throw new Error(found.why);
  const calls = numberArg(ctx.args, 'pg-calls', 1000);
  const reads = numberArg(ctx.args, 'pg-reads', 1000);
  const big = numberArg(ctx.args, 'pg-executions', 100_000);
  const history = numberArg(ctx.args, 'pg-history', 10_000);
  const baseEnv = replicaEnv(ctx);
  const running = [];
  const databases = [];
  const startAll = async (count, env, label) => {
    const urls = [];
    for (let i = 0; i < count; i++) {
      const dataDir = join(ctx.tmp, `${label}-${i}`);
      mkdirSync(dataDir, { recursive: true });
      const replica = await startReplica(ctx.cli, { ...baseEnv, ...env, WORKFLOWLOOKUP_DATA_DIR: dataDir });
      running.push(replica);
      urls.push(replica.url);
    }
    return urls;
  };
  const stopAll = async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  };
  const result = { steps: {}, status: {}, plans: [] };
  try {
    const setups = [
      { label: 'SQLite, 1 process', store: 'sqlite', replicas: 1 },
      { label: 'PostgreSQL, 1 replica', store: 'postgres', replicas: 1 },
      { label: 'PostgreSQL, 3 replicas', store: 'postgres', replicas: 3 },
    ];
    for (const setup of setups) {
      let env = {};
      if (setup.store === 'postgres') {
        const database = await createDatabase(found.url);
        databases.push(database);
        env = { WORKFLOWLOOKUP_DATABASE_URL: database.url };
      }
      // SQLite: the one process's own data dir.
      const urls = await startAll(setup.replicas, env, setup.label.replace(/\W+/g, '-'));
      if (setup.store === 'postgres' && history > 1) {
        // A team server's database holds history; on an empty one every execution's rows share the
        // same few index pages, and serializable transactions on different executions conflict there.
        ctx.progress(`${setup.label}: ${history} executions of history`);
        const template = await realExecution(urls[0]);
        await usingDatabase(databases.at(-1).url, (db) => seed(db, template, 0, history - 1));
      }
      ctx.progress(`${setup.label}: warming up`);
      await stepLoad(urls, 5, 10);
      result.steps[setup.label] = {};
      for (const clients of [10, 50]) {
        ctx.progress(`${setup.label}: ${clients} clients`);
        const before = await transactionCounts(databases.at(-1), setup.store);
        const load = await stepLoad(urls, clients, Math.ceil(calls / clients));
        const after = await transactionCounts(databases.at(-1), setup.store);
        result.steps[setup.label][`${clients} clients`] = {
          ...load,
          ...(after && before ? { rolledBack: after.rollback - before.rollback } : {}),
        };
      }
      await stopAll();
    }

    // Status reads with 1,000 and then `big` executions in one PostgreSQL database.
    const database = await createDatabase(found.url);
    databases.push(database);
    const [url] = await startAll(1, { WORKFLOWLOOKUP_DATABASE_URL: database.url }, 'status');
    const started = { execution_id: await realExecution(url) };
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      for (const total of [1000, big]) {
        ctx.progress(`status reads: seeding ${total} executions`);
        await seed(db, started.execution_id, total === 1000 ? 0 : 999, total - 1);
        // Spread over every seeded id; every tenth execution belongs to another principal: skip those.
        const own = (i) => {
          let n = (i * 7919) % (total - 1);
          if (n % 10 === 0) n = n === 0 ? 1 : n - 1;
          return seededId(n);
        };
        await statusReads(url, own, 50);
        ctx.progress(`status reads: ${reads} reads among ${total} executions`);
        const label = `${total.toLocaleString('en-US')} executions`;
        result.status[label] = await statusReads(url, own, reads);
        const listing = [];
        for (let i = 0; i < Math.min(200, reads); i++) {
          const t = performance.now();
          await tool(url, 'workflow_executions', {});
          listing.push(performance.now() - t);
        }
        result.status[`${label}: workflow_executions listing`] = stats(listing);
      }
      result.plans = await explainPlans(db, seededId(50_001 % (big - 1)));
    } finally {
      await db.end();
    }
  } finally {
    await stopAll();
    for (const d of databases) await d.drop().catch(() => undefined);
  }
  return result;
}

export function report(result) {
  const lines = [
    '  workflow_next_step (each client advances its own execution; client i on replica i mod n):',
  ];
  for (const [setup, byClients] of Object.entries(result.steps)) {
    for (const [clients, s] of Object.entries(byClients)) {
      lines.push(
        `    ${setup.padEnd(24)} ${clients.padEnd(11)} p50 ${String(s.p50Ms).padStart(6)} ms  p99 ${String(s.p99Ms).padStart(7)} ms  ${String(s.perSecond).padStart(5)}/s  (${s.n} calls${s.rolledBack !== undefined ? `, ${s.rolledBack} rolled back` : ''})${s.failures ? `  FAILED: ${JSON.stringify(s.failures)}` : ''}`,
      );
    }
  }
  lines.push('  workflow_status reads on PostgreSQL (one replica):');
  for (const [label, s] of Object.entries(result.status)) {
    lines.push(
      `    ${label.padEnd(48)} p50 ${String(s.p50Ms).padStart(6)} ms  p99 ${String(s.p99Ms).padStart(7)} ms`,
    );
  }
  lines.push('  query plans with the large database:');
  for (const { label, plan } of result.plans) {
    lines.push(`    -- ${label}`);
    for (const line of plan) lines.push(`       ${line}`);
  }
  return lines;
}

await runAlone(import.meta.url, { title, skip, run, report }, 'postgres');
