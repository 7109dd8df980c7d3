// Shared by the PostgreSQL scenarios (bench/scenarios/postgres.mjs, capacity.mjs): finding a server,
// a database per run, a step load over HTTP replicas, and what PostgreSQL and the processes spent on
// it (transactions, statements and round trips through a counting proxy, WAL bytes, CPU time).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { loopWorkflow, quantile, rpc, tokenOf } from './lib.mjs';

const LOCAL = ['postgres://postgres@127.0.0.1:5432/postgres', 'postgres://root@127.0.0.1:5432/postgres'];

export const round2 = (n) => Math.round(n * 100) / 100;
export function latencyStats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50Ms: round2(quantile(sorted, 0.5)), p99Ms: round2(quantile(sorted, 0.99)), n: samples.length };
}

async function answers(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error.message || String(error.code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The token secret every replica of a bench shares (a token one issues, another accepts). */
const SECRET = 'bench-secret-shared-by-every-replica-0123456789';

/**
 * The environment of the bench's `serve --http` replicas: a home and the loop workflow in the scratch
 * directory, no bundled workflows, one token secret, no rate limit (add the store's variables).
 */
export function replicaEnv(ctx) {
  const home = join(ctx.tmp, 'home');
  const runtime = join(ctx.tmp, 'workflows');
  mkdirSync(home, { recursive: true });
  loopWorkflow(runtime);
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: runtime,
    WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false',
    WORKFLOWLOOKUP_TOKEN_SECRET: SECRET,
    WORKFLOWLOOKUP_RATE_LIMIT: '0',
  };
}

/** A positive number given as `--name value`, else `fallback`. */
export const numberArg = (args, name, fallback) => {
  const value = Number(args?.[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};

/** Why a PostgreSQL scenario cannot run here (no server answers), or undefined: a scenario's `skip`. */
export async function skip() {
  const found = await findServer();
  return found.url === undefined ? found.why : undefined;
}

/** The server to create bench databases on, or why there is none. */
export async function findServer() {
  const given = process.env.WORKFLOWLOOKUP_BENCH_DATABASE_URL || process.env.WORKFLOWLOOKUP_TEST_DATABASE_URL;
  const problems = [];
  for (const url of given ? [given] : LOCAL) {
    const problem = await answers(url);
    if (problem === undefined) return { url };
    problems.push(problem);
  }
  return {
    why: `no PostgreSQL answers ${given ? 'at the configured URL' : 'on 127.0.0.1:5432'} (${[...new Set(problems)].join('; ')}); set WORKFLOWLOOKUP_BENCH_DATABASE_URL`,
  };
}

export function withDatabase(url, database) {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** A fresh database on the server; `drop` removes it. */
export async function createDatabase(serverUrl) {
  const name = `wl_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    name,
    url: withDatabase(serverUrl, name),
    drop: async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function usingDatabase(url, work) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/**
 * `clients` concurrent clients, client i on replica i % n: each starts an execution of the loop and
 * advances it `steps` times. Latency of every next_step, next_steps per second over the whole run, and
 * the calls that failed (their error messages, counted).
 */
export async function stepLoad(urls, clients, steps) {
  const starts = await Promise.all(
    Array.from({ length: clients }, (_, i) =>
      rpc(urls[i % urls.length], 'workflow_start', { workflow_name: 'bench-loop', context: { more: true } }),
    ),
  );
  const latencies = [];
  const failures = {};
  const began = performance.now();
  await Promise.all(
    starts.map(async (started, i) => {
      const url = urls[i % urls.length];
      let token = tokenOf(started);
      for (let s = 0; s < steps; s++) {
        const t = performance.now();
        try {
          const res = await rpc(url, 'workflow_next_step', { token, output: { summary: `tick ${s}` } });
          latencies.push(performance.now() - t);
          token = tokenOf(res);
        } catch (error) {
          const message = String(error.message).slice(0, 160);
          failures[message] = (failures[message] ?? 0) + 1;
          // The token stays current when a call failed: the same step is tried again.
        }
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  return {
    ...latencyStats(latencies),
    perSecond: Math.round(latencies.length / seconds),
    ...(Object.keys(failures).length > 0 ? { failures } : {}),
  };
}

/**
 * Transactions committed and rolled back in the database so far (a rollback is mostly a conflict that
 * was retried). A busy backend reports its counts at most once a second and an idle one within 10 s
 * (PostgreSQL 15), so it waits that long first: a shorter wait misses part of a run.
 */
export async function transactionCounts(url, settleMs = 11_000) {
  return usingDatabase(url, async (c) => {
    await new Promise((r) => setTimeout(r, settleMs));
    const { rows } = await c.query(
      'SELECT xact_commit::int AS commit, xact_rollback::int AS rollback FROM pg_stat_database WHERE datname = current_database()',
    );
    return rows[0];
  });
}

/** CPU time (user + system) a process has used so far, in ms (Linux: /proc). */
export function cpuMsOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU ms used so far by the PostgreSQL backends connected to `database` (same host only). */
export async function backendCpuMs(adminUrl, database) {
  return usingDatabase(adminUrl, async (c) => {
    const { rows } = await c.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
    let total = 0;
    for (const { pid } of rows) {
      try {
        total += cpuMsOf(pid);
      } catch {
        // A backend that ended meanwhile.
      }
    }
    return { ms: total, backends: rows.length };
  });
}

/**
 * WAL written for one database between two positions: the records that touch its relations, and the
 * commit records of their transactions (pg_walinspect, PostgreSQL 15+, superuser). Other databases on
 * the server (other tests, other benches) write WAL too; this counts ours only.
 */
export async function walPosition(url) {
  return usingDatabase(
    url,
    async (c) => (await c.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn,
  );
}

export async function walBytesSince(url, startLsn) {
  return usingDatabase(url, async (c) => {
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const { rows } = await c.query(
      `WITH me AS (SELECT oid FROM pg_database WHERE datname = current_database()),
         recs AS (SELECT * FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_lsn())),
         mine AS (SELECT r.* FROM recs r, me WHERE r.block_ref LIKE '%/' || me.oid || '/%'),
         xids AS (SELECT DISTINCT xid FROM mine WHERE xid <> 0)
       SELECT (SELECT coalesce(sum(record_length), 0) FROM mine)::bigint
            + (SELECT coalesce(sum(record_length), 0) FROM recs
               WHERE resource_manager = 'Transaction' AND xid IN (SELECT xid FROM xids))::bigint AS bytes,
            (SELECT coalesce(sum(fpi_length), 0) FROM mine)::bigint AS fpi,
            (SELECT count(*) FROM xids)::int AS transactions`,
      [startLsn],
    );
    return {
      bytes: Number(rows[0].bytes),
      fullPageImages: Number(rows[0].fpi),
      transactions: rows[0].transactions,
    };
  });
}

/** Bytes the store's tables (indexes and TOAST included) take in the database. */
export async function storedBytes(url) {
  return usingDatabase(url, async (c) => {
    const { rows } = await c.query(
      `SELECT relname AS table, pg_total_relation_size(c.oid)::bigint AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relkind = 'r' AND n.nspname = current_schema()
         AND relname IN ('workflow_executions','workflow_steps','workflow_artifacts','telemetry_events',
           'token_submissions','workflow_definitions','tasks','execution_counts')
       ORDER BY relname`,
    );
    return Object.fromEntries(rows.map((r) => [r.table, Number(r.bytes)]));
  });
}

/**
 * A TCP proxy in front of PostgreSQL that reads both directions of the wire protocol and counts
 * statements executed (a Query or an Execute, and per statement text) and round trips: a request
 * (a simple Query, or a Sync closing an extended-protocol exchange) sent while the server has answered
 * every earlier one (ReadyForQuery) starts a round trip; one sent before that rides with it (pipelined).
 */
export async function countingProxy(target) {
  const to = new URL(target);
  const counts = { roundTrips: 0, statements: 0, transactions: 0, byStatement: {} };
  const sockets = new Set();
  const server = createServer((client) => {
    const upstream = tcpConnect(Number(to.port || 5432), to.hostname);
    // No Nagle delay: a pipelined request must not wait for the answer to the one before it.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    sockets.add(client).add(upstream);
    const names = new Map();
    let portalStatement = '';
    let buffer = Buffer.alloc(0);
    let started = false;
    // Requests sent that the server has not answered with ReadyForQuery yet.
    let unanswered = 0;
    const request = () => {
      if (unanswered === 0) counts.roundTrips++;
      unanswered++;
    };
    const label = (text) => text.replace(/\s+/g, ' ').trim().slice(0, 60);
    const count = (name) => {
      counts.byStatement[name] = (counts.byStatement[name] ?? 0) + 1;
    };
    client.on('data', (chunk) => {
      upstream.write(chunk);
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (!started) {
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) return;
          const code = buffer.readInt32BE(4);
          buffer = buffer.subarray(length);
          if (code !== 80877103) started = true; // an SSLRequest comes before the startup message
          continue;
        }
        if (buffer.length < 5) return;
        const type = String.fromCharCode(buffer[0]);
        const length = buffer.readInt32BE(1);
        if (buffer.length < length + 1) return;
        const body = buffer.subarray(5, length + 1);
        buffer = buffer.subarray(length + 1);
        if (type === 'Q') {
          request();
          counts.statements++;
          count(label(body.toString('utf8', 0, body.length - 1)));
        } else if (type === 'P') {
          const end = body.indexOf(0);
          const name = body.toString('utf8', 0, end);
          const text = body.toString('utf8', end + 1, body.indexOf(0, end + 1));
          names.set(name, label(text));
        } else if (type === 'B') {
          const portalEnd = body.indexOf(0);
          const name = body.toString('utf8', portalEnd + 1, body.indexOf(0, portalEnd + 1));
          portalStatement = names.get(name) ?? name;
        } else if (type === 'E') {
          counts.statements++;
          count(portalStatement);
        } else if (type === 'S') {
          request();
        }
      }
    });
    let answers = Buffer.alloc(0);
    upstream.on('data', (chunk) => {
      client.write(chunk);
      answers = Buffer.concat([answers, chunk]);
      while (answers.length >= 5) {
        const length = answers.readInt32BE(1);
        if (answers.length < length + 1) break;
        // 'Z': ReadyForQuery, with the transaction status: 'I' (idle) ends a transaction, explicit
        // (COMMIT, ROLLBACK) or implicit (one statement on its own).
        if (answers[0] === 0x5a && unanswered > 0) {
          unanswered--;
          if (answers[5] === 0x49) counts.transactions++;
        }
        answers = answers.subarray(length + 1);
      }
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(server.address().port);
  return {
    url: proxied.toString(),
    /** A copy of the counts so far, then zero. */
    take() {
      const taken = { ...counts, byStatement: { ...counts.byStatement } };
      counts.roundTrips = 0;
      counts.statements = 0;
      counts.transactions = 0;
      counts.byStatement = {};
      return taken;
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(resolve);
      }),
  };
}

/**
 * Runs a scenario module on its own when it is the script node was given (`node
 * bench/scenarios/<name>.mjs --option value …`): the built server (or `--cli path`), a scratch
 * directory, the report on stdout (`--json 1`: the result as JSON first).
 */
export async function runAlone(moduleUrl, scenario, name) {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return;
  const root = join(dirname(fileURLToPath(moduleUrl)), '..', '..');
  const args = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i]?.startsWith('--')) args[argv[i].slice(2)] = argv[i + 1];
  }
  const tmp = mkdtempSync(join(tmpdir(), `wl-bench-${name}-`));
  const ctx = {
    cli: args.cli ?? join(root, 'dist', 'cli.js'),
    root,
    tmp,
    floor: null,
    args,
    progress: (message) => process.stderr.write(`[${name}] ${message}\n`),
  };
  try {
    const why = await scenario.skip(ctx);
    if (why) {
      process.stdout.write(`${scenario.title}\n  skipped: ${why}\n`);
    } else {
      const result = await scenario.run(ctx);
      if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
      process.stdout.write(`${scenario.title}\n${scenario.report(result, ctx).join('\n')}\n`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
