import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DomainFailure } from '../../engine/errors.js';
import { createLogger } from '../../telemetry/log.js';
import type { ExecutionRecord, StepRecord } from '../execution-store.js';
import { countsQuery, headsQuery, listQuery, telemetryQuery } from '../sql/queries.js';
import { execution, seed, step, T0 } from '../store-test-kit.js';
import { describeConnectionError, resolveTarget, scrub } from './connection-errors.js';
import { openPostgresStore, POSTGRES } from './postgres-store.js';
import { createTestDatabase, findTestServer, skipNotice, type TestDatabase } from './test-database.js';

// What only the PostgreSQL adapter has: connection errors in words, query plans, a dropped connection.
// The behaviour both adapters share is in ../store-contract.test.ts.

const server = await findTestServer();
if (server.url === undefined) process.stderr.write(skipNotice('PostgreSQL adapter suite', server.why));

describe('connection errors', () => {
  const target = resolveTarget('postgres://ann:p%40ss%2Fw0rd@db.example:6543/flows');

  it('name the host, port, user or database, and never the password', () => {
    expect(target).toMatchObject({ host: 'db.example', port: 6543, user: 'ann', database: 'flows' });
    const cases: [unknown, RegExp][] = [
      [{ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }, /at db\.example:6543: connection refused/],
      [{ code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND db.example' }, /host "db\.example" not found/],
      [{ code: '28P01', message: 'password authentication failed' }, /refused user "ann": wrong password/],
      [
        { code: '28000', message: 'role "ann" does not exist' },
        /refused user "ann": role "ann" does not exist/,
      ],
      [{ code: '3D000', message: 'database "flows" does not exist' }, /database "flows" does not exist on/],
      [{ message: 'timeout expired while trying to connect' }, /no answer in time/],
      [
        { message: 'SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string' },
        /asks user "ann" for a password/,
      ],
      [
        { code: '57P01', message: 'terminating connection due to administrator command' },
        /lost the connection/,
      ],
      [
        { message: 'Connection terminated unexpectedly' },
        /lost the connection to PostgreSQL at db\.example:6543/,
      ],
      [{ code: '53300', message: 'sorry, too many clients already' }, /no free connection slots/],
    ];
    for (const [error, expected] of cases) expect(describeConnectionError(error, target)).toMatch(expected);
    // A query's own failure is not a connection problem.
    expect(describeConnectionError({ code: '23505', message: 'duplicate key' }, target)).toBeUndefined();
    // Whatever a server or library quotes, the password (as written or encoded) is scrubbed.
    expect(scrub('auth p@ss/w0rd and p%40ss%2Fw0rd', target)).toBe('auth *** and ***');
  });

  it('an unreachable server fails to open with a message that says so, without the password', async () => {
    const url = 'postgres://ann:Very-Secret-1@127.0.0.1:1/flows';
    const error = await openPostgresStore(url).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toBe(
      'cannot connect to PostgreSQL at 127.0.0.1:1: connection refused (is the server running and listening on that host and port?)',
    );
    expect(error?.message).not.toContain('Very-Secret-1');
  });
});

describe.skipIf(server.url === undefined)('PostgreSQL adapter', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(server.url as string);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('status reads, listings and telemetry by execution use indexes (EXPLAIN on 20,000 executions)', async () => {
    const { url, name } = await db.schema();
    const store = await openPostgresStore(url, { poolSize: 2 });
    await seed(store); // the pinned definition every row below refers to
    await db.admin(`
      INSERT INTO ${name}.workflow_executions (execution_id, principal, workflow_name, definition_hash, state,
        started_at, updated_at)
      SELECT 'e' || i, 'p' || (i % 100), 'w' || (i % 20), '${'a'.repeat(64)}',
        (ARRAY['running','paused','completed','failed'])[1 + i % 4],
        now() - i * interval '1 minute', now() - i * interval '1 second'
      FROM generate_series(1, 20000) AS i;
      INSERT INTO ${name}.workflow_steps (execution_id, seq, step_name, agent_name, status, started_at)
      SELECT 'e' || (i % 20000 + 1), i / 20000 + 1, 's', 'default', 'completed', now()
      FROM generate_series(0, 59999) AS i;
      INSERT INTO ${name}.telemetry_events (event_type, execution_id, created_at)
      SELECT (ARRAY['step_started','step_completed','token_generated'])[1 + i % 3], 'e' || (i % 20000 + 1), now()
      FROM generate_series(1, 100000) AS i;
      INSERT INTO ${name}.workflow_artifacts (execution_id, step_name, artifact_type, name, content, content_type,
        size_bytes, created_at)
      SELECT 'e' || (i % 20000 + 1), 's', 'report', 'a' || i, 'x', 'text/plain', 1, now()
      FROM generate_series(1, 40000) AS i;
      INSERT INTO ${name}.token_submissions (nonce, execution_id, output_hash, response, created_at)
      SELECT 'n' || i, 'e' || i, 'h', '{}', now() FROM generate_series(1, 20000) AS i;
      ANALYZE;
    `);
    const plan = async (text: string, values: unknown[]) => {
      const rows = await db.admin(
        `EXPLAIN (FORMAT JSON) ${text.replace(/\bFROM (workflow_\w+|telemetry_events|token_submissions|execution_counts)/g, `FROM ${name}.$1`)}`,
        values,
      );
      return JSON.stringify(rows[0]);
    };
    const hot: [string, string, unknown[], string][] = [
      ['get execution', POSTGRES.fixed.getExecution, ['e42'], 'workflow_executions_pkey'],
      ['steps of an execution', POSTGRES.fixed.getSteps, ['e42'], 'workflow_steps_pkey'],
      ['a step', POSTGRES.fixed.getStep, ['e42', 2], 'workflow_steps_pkey'],
      ['a submission', POSTGRES.fixed.getSubmission, ['n42'], 'token_submissions_pkey'],
      ['artifacts', POSTGRES.fixed.getArtifacts, ['e42'], 'workflow_artifacts_by_execution'],
      ...(
        [
          [{ principal: 'p7', limit: 20 }, 'workflow_executions_by_principal_page'],
          [
            { principal: 'p7', states: ['paused' as const], limit: 20 },
            'workflow_executions_by_principal_state',
          ],
          [{ principal: 'p7', workflow_name: 'w7', limit: 20 }, 'workflow_executions_by_principal_workflow'],
          [
            { principal: 'p7', states: ['idle' as const, 'running' as const, 'paused' as const], limit: 20 },
            'workflow_executions_by_principal_state',
          ],
        ] as const
      ).map(([filter, index]): [string, string, unknown[], string] => {
        const q = listQuery(POSTGRES, filter);
        return [`list ${JSON.stringify(filter)}`, q.text, q.values, index];
      }),
      ...[
        { execution_id: 'e42', limit: 100 },
        { execution_id: 'e42', event_type: 'step_started', limit: 100 },
      ].map((filter): [string, string, unknown[], string] => {
        const q = telemetryQuery(POSTGRES, filter);
        return [`telemetry ${JSON.stringify(filter)}`, q.text, q.values, 'telemetry_events_by_execution'];
      }),
    ];
    for (const [what, text, values, index] of hot) {
      const p = await plan(text, values);
      expect(p, what).not.toContain('Seq Scan');
      expect(p, what).toContain(`"Index Name":"${index}"`);
    }
    // The listings come out of the index in order: no sort step.
    for (const filter of [
      { principal: 'p7', limit: 20 },
      { principal: 'p7', states: ['paused' as const], limit: 20 },
    ]) {
      const q = listQuery(POSTGRES, filter);
      expect(await plan(q.text, q.values)).not.toContain('"Node Type":"Sort"');
    }
    // The dashboard's pages, deep or not, in either direction, and its counts: from the paging indexes,
    // in order, counts without reading the table.
    const cursor = { updated_at: new Date(Date.now() - 3_600_000).toISOString(), execution_id: 'e500' };
    for (const [filter, index] of [
      [{ principal: 'p7', limit: 50 }, 'workflow_executions_by_principal_page'],
      [{ principal: 'p7', limit: 50, older_than: cursor }, 'workflow_executions_by_principal_page'],
      [{ principal: 'p7', limit: 50, newer_than: cursor }, 'workflow_executions_by_principal_page'],
      [
        { principal: 'p7', states: ['failed'], limit: 50, older_than: cursor },
        'workflow_executions_by_principal_state',
      ],
      [{ principal: 'p7', workflow_name: 'w7', limit: 50 }, 'workflow_executions_by_principal_workflow'],
    ] as const) {
      const q = headsQuery(POSTGRES, filter);
      const p = await plan(q.text, q.values);
      expect(p, JSON.stringify(filter)).toContain(`"Index Name":"${index}"`);
      expect(p, JSON.stringify(filter)).not.toContain('Seq Scan');
      // With a cursor or a workflow the planner may sort the few rows it expects (cheaper on this data).
      if (Object.keys(filter).join() === 'principal,limit') {
        expect(p, JSON.stringify(filter)).not.toContain('"Node Type":"Sort"');
      }
    }
    // Counts read the counters (the principal's all-time rows), and for a time window the window's
    // partial first day from the paging index: never the executions at large.
    const counts = countsQuery(POSTGRES, { principal: 'p7' });
    const countPlan = await plan(counts.text, counts.values);
    expect(countPlan).not.toContain('"Relation Name":"workflow_executions"');
    expect(countPlan).toContain('"Relation Name":"execution_counts"');
    const since = new Date(Date.now() - 3 * 86_400_000).toISOString();
    const windowed = countsQuery(POSTGRES, { principal: 'p7', updated_since: since });
    const windowPlan = await plan(windowed.text, windowed.values);
    expect(windowPlan).toContain('"Index Name":"workflow_executions_by_principal_page"');
    expect(windowPlan).not.toContain('Seq Scan');
    await store.close();
  });

  it('a connection dropped in the middle of a transaction is a storage error; the next call reconnects', async () => {
    const { url } = await db.schema();
    const proxy = await tcpProxy(5432);
    const viaProxy = new URL(url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    const logged: string[] = [];
    const store = await openPostgresStore(viaProxy.toString(), {
      poolSize: 2,
      log: createLogger({
        level: 'debug',
        human: false,
        stream: { write: (line: string) => logged.push(JSON.parse(line).msg) },
      }),
    });
    await seed(store);
    const error = await store
      .transaction(async (tx) => {
        await tx.getExecution('exec-1');
        proxy.cut();
        await tx.insertStep(step());
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(DomainFailure);
    expect((error as DomainFailure).error).toMatchObject({
      code: 'storage_error',
      details: expect.stringMatching(
        new RegExp(`lost the connection to PostgreSQL at 127\\.0\\.0\\.1:${proxy.port}`),
      ),
    });
    // Nothing half-written, and the store serves again on fresh connections.
    expect(await store.getSteps('exec-1')).toEqual([]);
    await store.transaction((tx) => tx.insertStep(step()));
    expect(await store.getSteps('exec-1')).toHaveLength(1);
    await store.close();
    await proxy.close();
  });

  it('a user who may not create tables is told so when the store opens', async () => {
    const role = `wl_reader_${randomBytes(4).toString('hex')}`;
    await db.admin(`CREATE ROLE ${role} LOGIN`);
    try {
      // The default from PostgreSQL 15 on; said explicitly for older servers.
      await db.admin('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
      const asRole = new URL(db.url);
      asRole.username = role;
      asRole.password = 'Not-Shown-42';
      await expect(openPostgresStore(asRole.toString())).rejects.toThrow(
        new RegExp(
          `^user "${role}" may not create the store's tables in database "wl_test_\\w+": permission denied`,
        ),
      );
    } finally {
      await db.admin(`DROP ROLE ${role}`);
    }
  });

  it('text PostgreSQL cannot store (NUL in a name) is invalid params, and nothing is written', async () => {
    const { url } = await db.schema();
    const store = await openPostgresStore(url, { poolSize: 2 });
    await seed(store);
    const error = await store
      .transaction(async (tx) => {
        await tx.insertTelemetry({
          event_type: 'x',
          execution_id: 'exec-1',
          step_name: null,
          agent_name: null,
          metadata: null,
        });
        await tx.insertArtifact({
          execution_id: 'exec-1',
          step_name: 'design',
          artifact_type: 'file',
          name: 'bad\u0000name',
          content: 'ok',
          content_type: 'text/plain',
          size_bytes: 2,
          metadata: null,
        });
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as DomainFailure).error).toMatchObject({
      code: 'invalid_params',
      details: expect.stringContaining('U+0000'),
    });
    expect(await store.getTelemetry({ limit: 10 })).toEqual([]);
    await store.close();
  });

  it('a lock held too long by another session is a storage error that says so', async () => {
    const { url, name } = await db.schema();
    const store = await openPostgresStore(url, { poolSize: 2, lockTimeoutMs: 200 });
    await seed(store);
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT * FROM ${name}.workflow_executions FOR UPDATE`);
    const error = await store
      .transaction(async (tx) => tx.updateExecution(execution({ token_attempt: 1 })))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    await holder.query('ROLLBACK');
    await holder.end();
    expect((error as DomainFailure).error).toMatchObject({
      code: 'storage_error',
      details: expect.stringMatching(/held a lock on the same records for over 0\.2 s; retry/),
    });
    await store.transaction(async (tx) => tx.updateExecution(execution({ token_attempt: 1 })));
    expect((await store.getExecution('exec-1'))?.token_attempt).toBe(1);
    await store.close();
  });

  it('transactions on different executions run side by side and all commit', async () => {
    const { url } = await db.schema();
    const store = await openPostgresStore(url, { poolSize: 8 });
    await seed(store, ...Array.from({ length: 16 }, (_, i) => execution({ execution_id: `x${i}` })));
    await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        store.transaction(async (tx) => {
          const exec = await tx.getExecution(`x${i}`);
          if (exec) await tx.updateExecution({ ...exec, token_attempt: exec.token_attempt + 1 });
        }),
      ),
    );
    const attempts = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => (await store.getExecution(`x${i}`))?.token_attempt),
    );
    expect(attempts).toEqual(Array(16).fill(1));
    await store.close();
  });

  it('a transaction holding one execution keeps another waiting on it, and never one on another execution', async () => {
    const { url } = await db.schema();
    const store = await openPostgresStore(url, { poolSize: 4 });
    const other = await openPostgresStore(url, { poolSize: 4 });
    await seed(store, execution({ execution_id: 'x1' }), execution({ execution_id: 'x2' }));
    const gate = latch();
    const held = latch();
    const first = store.transaction(async (tx) => {
      const exec = await tx.getExecution('x1');
      held.resolve();
      await gate.promise;
      await tx.updateExecution({ ...(exec as ExecutionRecord), token_attempt: 1 });
    });
    await held.promise;
    // Another execution, from another pool (another replica): it does not wait for the first.
    await other.transaction(async (tx) => {
      const exec = await tx.getExecution('x2');
      await tx.updateExecution({ ...(exec as ExecutionRecord), token_attempt: 5 });
    });
    expect((await other.getExecution('x2'))?.token_attempt).toBe(5);
    // The same execution waits for the first transaction, then reads what it wrote.
    const second = other.transaction(async (tx) => (await tx.getExecution('x1'))?.token_attempt);
    for (let i = 0; ; i++) {
      const waiting = await db.admin(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR NO KEY UPDATE%'`,
      );
      if ((waiting[0] as { n: number }).n > 0) break;
      if (i > 500) throw new Error('the second transaction never waited on the lock');
      await new Promise((r) => setTimeout(r, 10));
    }
    gate.resolve();
    await first;
    expect(await second).toBe(1);
    await store.close();
    await other.close();
  });

  it('a step is three round trips: BEGIN with the execution, its step with its used token, the writes with COMMIT', async () => {
    const { url } = await db.schema();
    const store = await openPostgresStore(url, { poolSize: 2 });
    await seed(store);
    await store.transaction((tx) => tx.insertStep(step()));
    const trips = await roundTrips(() =>
      store.transaction(async (tx) => {
        // As workflow_next_step does: the execution, the used token, the step; then nine writes.
        const exec = (await tx.getExecution('exec-1')) as ExecutionRecord;
        await tx.getSubmission('n-1');
        const row = (await tx.getStep('exec-1', 1)) as StepRecord;
        const event = (type: string) =>
          tx.insertTelemetry({
            event_type: type,
            execution_id: 'exec-1',
            step_name: 'design',
            agent_name: null,
            metadata: {},
          });
        await event('token_validated');
        await tx.updateStep({ ...row, status: 'completed', attempts: 1 });
        await event('step_completed');
        await tx.insertStep(step({ seq: 2 }));
        await event('step_started');
        await event('token_generated');
        await tx.updateExecution({ ...exec, current_seq: 2, token_nonce: 'n-2' });
        await tx.recordSubmission({
          nonce: 'n-1',
          execution_id: 'exec-1',
          output_hash: 'h',
          response: {},
          created_at: T0,
        });
      }),
    );
    expect(trips).toEqual([['BEGIN ISOLATION', 'SELECT *'], ['SELECT s.*,'], ['WITH w0', 'COMMIT']]);
    expect(await store.getStep('exec-1', 2)).toMatchObject({ seq: 2 });
    expect(
      (await store.getTelemetry({ execution_id: 'exec-1', limit: 10 })).map((e) => e.event_type),
    ).toEqual(['token_validated', 'step_completed', 'step_started', 'token_generated']);
    // A transaction of one write is that one statement; one that reads nothing and writes nothing sends nothing.
    expect(
      await roundTrips(() => store.transaction((tx) => tx.updateSubmission('n-1', { final: true }))),
    ).toEqual([['WITH w0']]);
    expect(await roundTrips(() => store.transaction(async () => 'nothing'))).toEqual([]);
    expect((await store.getSubmission('n-1'))?.response).toEqual({ final: true });
    // A refused last write: its COMMIT only ends the transaction, and nothing is kept.
    await expect(
      store.transaction(async (tx) => {
        await tx.getExecution('exec-1');
        await tx.insertStep(step({ seq: 3, execution_id: 'missing' }));
      }),
    ).rejects.toThrow();
    expect(await store.getStep('missing', 3)).toBeUndefined();
    await store.transaction(async (tx) => {
      await tx.getExecution('exec-1');
      await tx.insertStep(step({ seq: 3 }));
    });
    expect(await store.getStep('exec-1', 3)).toMatchObject({ seq: 3 });
    await store.close();
  });
});

/**
 * The statements `work` sends, grouped by round trip: a statement sent while another on the same
 * connection is still unanswered travels with it (pipelined).
 */
async function roundTrips(work: () => Promise<unknown>): Promise<string[][]> {
  const original = pg.Client.prototype.query;
  const trips: string[][] = [];
  const pending = new WeakMap<object, number>();
  const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
    this: pg.Client,
    ...args: unknown[]
  ) {
    const first = args[0] as string | { text: string };
    const words = (typeof first === 'string' ? first : first.text).trim().split(/\s+/).slice(0, 2).join(' ');
    const outstanding = pending.get(this) ?? 0;
    if (outstanding === 0) trips.push([words]);
    else trips.at(-1)?.push(words);
    pending.set(this, outstanding + 1);
    const result = (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    const done = () => pending.set(this, (pending.get(this) ?? 1) - 1);
    result.then(done, done);
    return result as never;
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return trips;
}

/** A promise and the function that resolves it. */
function latch(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A TCP proxy to the local server whose connections a test can cut. */
async function tcpProxy(to: number): Promise<{ port: number; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const proxy: Server = createServer((inbound) => {
    const outbound = connect(to, '127.0.0.1');
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => new Promise((resolve) => proxy.close(() => resolve())),
  };
}
