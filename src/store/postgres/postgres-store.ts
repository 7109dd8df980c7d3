import pg from 'pg';
import { DomainFailure, fail } from '../../engine/errors.js';
import type { Logger } from '../../telemetry/log.js';
import { type Metrics, NO_METRICS } from '../../telemetry/metrics.js';
import { inSpan } from '../../telemetry/trace.js';
import type {
  ApprovalFilter,
  ExecutionCountFilter,
  ExecutionFilter,
  ExecutionPageFilter,
  ExecutionPageOptions,
  ExecutionStore,
  StoreWriter,
  TaskFilter,
  TelemetryFilter,
} from '../execution-store.js';
import { readExecutionPage, type SqlSession, sqlOperations, writeNow } from '../sql/operations.js';
import { sqlDialect } from '../sql/queries.js';
import { appliedMigrations } from '../sql/schema.js';
import type { Row } from '../sql/tables.js';
import {
  describeConnectionError,
  describeTarget,
  resolveTarget,
  scrub,
  type Target,
} from './connection-errors.js';
import { withCurrentStep } from './current-step.js';
import { NotificationListener } from './listener.js';
import { PG_MIGRATIONS } from './migrations.js';
import { PostgresDocuments, RUNTIME_CHANNEL } from './runtime-documents.js';
import { WriteBatch } from './write-batch.js';

export interface PostgresStoreOptions {
  /** Most connections the pool opens (default 10). */
  poolSize?: number;
  /** Where pool problems between calls, and transactions run again, are reported (default: dropped). */
  log?: Logger;
  /** The app's instruments (transactions run again); default: nothing recorded. */
  metrics?: Metrics;
  /** How long a statement waits for a lock another transaction holds (default 30 s). */
  lockTimeoutMs?: number;
}

type Run = (name: string, text: string, values: unknown[]) => Promise<Row[]>;

const CONNECT_TIMEOUT_MS = 10_000;
/** A transaction left open this long by a stuck process is ended by the server, releasing its locks. */
const IDLE_IN_TRANSACTION_MS = 60_000;
const LOCK_TIMEOUT_MS = 30_000;
/** Serialization failures and deadlocks retried before giving up; each follows a competitor's commit. */
const MAX_ATTEMPTS = 60;
/** Stated rather than inherited, whatever `default_transaction_isolation` the server has. */
const BEGIN = {
  'READ COMMITTED': 'BEGIN ISOLATION LEVEL READ COMMITTED',
  SERIALIZABLE: 'BEGIN ISOLATION LEVEL SERIALIZABLE',
  /** A snapshot to read several statements from (never waits, never conflicts). */
  SNAPSHOT: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
} as const;
/** Advisory lock (two int4 keys: "WL", 1) held while migrating, so one process migrates at a time. */
const MIGRATION_LOCK = [0x574c, 1] as const;

const INT8 = 20;
const TIMESTAMPTZ = 1184;
const baseTimestamp = pg.types.getTypeParser(TIMESTAMPTZ, 'text');
const JSON_TEXT = 114;
/**
 * Ids, durations, sizes and counts as numbers (they stay far below 2^53); timestamps as the port's
 * ISO strings; JSON columns as their text, which the shared row mappers parse (src/store/sql/tables.ts).
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8) return (value: string) => Number(value);
    if (oid === JSON_TEXT) return (value: string) => value;
    if (oid === TIMESTAMPTZ) return (value: string) => (baseTimestamp(value) as Date).toISOString();
    return pg.types.getTypeParser(oid, format);
  }) as typeof pg.types.getTypeParser,
};

const now = () => new Date().toISOString();

/**
 * Where PostgreSQL's SQL differs from SQLite's (src/store/sql): `$n` placeholders, typed timestamps,
 * a list bound as one text[] parameter, artifact content as bytea, row locks inside transactions,
 * and listings of several states merged from each state's index.
 */
export const POSTGRES = sqlDialect({
  placeholders: 'numbered',
  timestamp: '::timestamptz',
  lockRead: ' FOR NO KEY UPDATE',
  lockDelete: ' FOR UPDATE',
  among: (column, param) => `${column} = ANY(${param}::text[])`,
  list: (values) => values,
  bytes: (text) => Buffer.from(text, 'utf8'),
  mergeStates: true,
});

const SCHEMA_VERSION = 'SELECT COALESCE(MAX(version), 0)::integer AS version FROM schema_migrations';

/** `pg` prepares a named statement once per connection: one name per statement text, for the process. */
const names = new Map<string, string>();
function nameOf(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `wl_${names.size + 1}`;
    names.set(text, name);
  }
  return name;
}

/** The port's operations without row locks or held-back writes: on the pool, or in a read snapshot. */
function poolOperations(run: Run, parents?: Map<string, string | null>): StoreWriter {
  const query: SqlSession['query'] = ({ text, values }) => run(nameOf(text), text, values);
  return sqlOperations(
    { query, write: writeNow(POSTGRES, query), locking: false, ...(parents ? { parents } : {}) },
    POSTGRES,
  );
}

const isSerializationFailure = (error: unknown) => {
  const code = (error as { code?: unknown })?.code;
  return code === '40001' || code === '40P01';
};

const isDuplicate = (error: unknown) => (error as { code?: unknown })?.code === '23505';

/** The channel migration 4's trigger notifies on every committed change to an execution. */
const EXECUTIONS_CHANNEL = 'workflowlookup_executions';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The PostgreSQL adapter of the execution store: a connection pool, named (prepared) statements,
 * versioned migrations applied at open under an advisory lock.
 *
 * Concurrency: a transaction runs at READ COMMITTED and locks what it reads by key — the execution, a
 * step, a task (`SELECT … FOR NO KEY UPDATE`) — until it ends. Every read-then-write of the service
 * starts from one of those rows (a step from its execution, a lease claim from its step, a token
 * submission from its execution, a task change from its task), so two transactions on one execution
 * run one after the other, the second reading what the first committed, and transactions on
 * different executions never wait for or undo each other. A row that does not exist yet cannot be
 * locked: two inserts of one key (two starts of one execution id, two imports) meet at the primary
 * key, and the loser runs again and finds the winner's row. A used token is claimed once: the claim
 * is read and recorded under the execution's lock, and the token's primary key refuses a second
 * record. Deadlocks (two transactions locking the same rows in opposite orders) run again too. The
 * port documents that `fn` may run more than once. SERIALIZABLE, which this adapter used for every
 * transaction before, made unrelated executions conflict on shared index pages (predicate locks)
 * under load, so steps failed after 60 retries; the runtime documents (rare writes, invariants over
 * whole tables: unique names ignoring case) still use it.
 *
 * Round trips: a transaction's row writes are held back and sent as one statement (write-batch.ts);
 * after an execution is locked, its current step and its live token's record come in one statement
 * (current-step.ts); BEGIN travels with the first statement and COMMIT with the last (pg's pipeline
 * mode). A workflow_next_step is three round trips and five statements.
 */
export class PostgresExecutionStore implements ExecutionStore {
  readonly location: string;
  private readonly pool: pg.Pool;
  private readonly target: Target;
  private readonly reads: StoreWriter;
  private readonly lockTimeoutMs: number;
  private readonly log: Logger | undefined;
  private closed: Promise<void> | undefined;
  private readonly listener: NotificationListener;
  readonly documents: PostgresDocuments;

  private readonly metrics: Metrics;
  /** Each execution's parent, as transactions learn it (see SqlSession.parents). */
  private readonly parents = new Map<string, string | null>();

  constructor(url: string, options: PostgresStoreOptions = {}) {
    this.metrics = options.metrics ?? NO_METRICS;
    this.target = resolveTarget(url);
    this.location = describeTarget(this.target);
    this.lockTimeoutMs = options.lockTimeoutMs ?? LOCK_TIMEOUT_MS;
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
      lock_timeout: this.lockTimeoutMs,
      application_name: 'workflowlookup',
      allowExitOnIdle: true,
      // Lets a transaction send BEGIN with its first statement and COMMIT with its last (one round
      // trip each); everything else waits for one statement before sending the next, as before.
      pipeline: true,
      types,
    });
    // An idle connection the server drops (restart, failover) must not crash the process.
    const log = options.log;
    this.log = log;
    this.pool.on('error', (error) => {
      log?.warn(`PostgreSQL connection dropped: ${this.describe(error)}`);
    });
    const read: Run = async (name, text, values) => {
      try {
        return (await this.pool.query({ name, text, values })).rows;
      } catch (error) {
        throw this.storageError(error);
      }
    };
    this.reads = poolOperations(read, this.parents);
    this.listener = new NotificationListener({
      url,
      channels: [EXECUTIONS_CHANNEL, RUNTIME_CHANNEL],
      log: options.log,
      describe: (error) => this.describe(error),
    });
    this.documents = new PostgresDocuments({
      location: this.location,
      read,
      transaction: (body) => this.inTransaction('SERIALIZABLE', body, { retryDuplicates: true }),
      listener: this.listener,
    });
  }

  /** A message for any error from `pg`: connection problems in plain words, never the password. */
  describe(error: unknown): string {
    return (
      describeConnectionError(error, this.target) ??
      scrub((error as Error)?.message ?? String(error), this.target)
    );
  }

  /** Connection problems become storage errors that say what is wrong; others pass unchanged. */
  private storageError(error: unknown): unknown {
    if (error instanceof DomainFailure) return error;
    const code = (error as { code?: unknown })?.code;
    if (code === '22021' || code === '22P05') {
      return new DomainFailure({
        code: 'invalid_params',
        message: 'Invalid params',
        details: 'text the store keeps (names, ids, types) cannot contain the NUL character (U+0000)',
      });
    }
    if (code === '55P03') {
      return new DomainFailure({
        code: 'storage_error',
        message: 'Storage error',
        details: `PostgreSQL at ${this.target.host}:${this.target.port} did not answer in time: another transaction held a lock on the same records for over ${this.lockTimeoutMs / 1000} s; retry`,
      });
    }
    const connection = describeConnectionError(error, this.target);
    if (connection === undefined) return error;
    return new DomainFailure({ code: 'storage_error', message: 'Storage error', details: connection });
  }

  /**
   * A client from the pool, watched while checked out: a connection that dies between two statements
   * emits 'error', which would crash the process unheard; it is kept to explain the next failure.
   */
  private async checkout(): Promise<{
    client: pg.PoolClient;
    lost: () => Error | undefined;
    release: (broken?: Error) => void;
  }> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw this.storageError(error);
    }
    let lost: Error | undefined;
    const onError = (error: Error) => {
      lost ??= error;
    };
    client.on('error', onError);
    return {
      client,
      lost: () => lost,
      release: (broken) => {
        client.off('error', onError);
        client.release(broken ?? lost);
      },
    };
  }

  /** Applies the migrations the database does not have yet; refuses a database from a newer version. */
  async migrate(): Promise<number> {
    const session = await this.checkout();
    const { client } = session;
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      // One process migrates; the others wait here, then find nothing left to do.
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [...MIGRATION_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`);
      const { applied, newest } = appliedMigrations(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows,
        PG_MIGRATIONS.length,
      );
      const known = PG_MIGRATIONS.length;
      for (const m of PG_MIGRATIONS) {
        if (applied.has(m.version)) continue;
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          now(),
        ]);
      }
      await client.query('COMMIT');
      return Math.max(newest, known);
    } catch (error) {
      await client.query('ROLLBACK').catch((e: Error) => {
        broken = e;
      });
      const connection = describeConnectionError(session.lost() ?? error, this.target);
      if (connection !== undefined) throw new Error(connection);
      // No CREATE privilege, or a search_path naming no schema the user may use.
      const code = (error as { code?: unknown }).code;
      if (code === '42501' || code === '3F000') {
        throw new Error(
          `user "${this.target.user}" may not create the store's tables in database "${this.target.database}": ${this.describe(error)}`,
        );
      }
      throw error;
    } finally {
      session.release(broken);
    }
  }

  transaction<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T> {
    return inSpan('store transaction', { 'db.system.name': 'postgresql' }, () => this.writing(fn));
  }

  private writing<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T> {
    return this.inTransaction(
      'READ COMMITTED',
      async (run, last) => {
        const batch = new WriteBatch((statement) =>
          run(nameOf(statement.text), statement.text, statement.values),
        );
        const query: SqlSession['query'] = async (statement, reads) => {
          await batch.before(reads);
          return run(nameOf(statement.text), statement.text, statement.values);
        };
        const write: SqlSession['write'] = (spec, op, values) => batch.add(spec, op, values);
        const result = await fn(
          withCurrentStep(
            sqlOperations({ query, write, locking: true, parents: this.parents }, POSTGRES),
            query,
          ),
        );
        const pending = batch.take();
        if (pending) await last(nameOf(pending.text), pending.text, pending.values);
        return result;
      },
      { retryDuplicates: true },
    );
  }

  /**
   * Runs `body` in a transaction, from the start again after a serialization failure or a deadlock
   * (and, with `retryDuplicates`, after a unique violation: a competitor inserted the same key first,
   * and the next run sees it). BEGIN goes with the first statement `body` runs, and `last` runs its
   * final one: a transaction of one statement (a lone write) is sent as that statement alone, which
   * PostgreSQL runs atomically, and one that runs nothing sends nothing.
   */
  private async inTransaction<T>(
    isolation: keyof typeof BEGIN,
    body: (run: Run, last: Run) => Promise<T>,
    options: { retryDuplicates?: boolean } = {},
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const session = await this.checkout();
      const { client } = session;
      // The first statement that failed: a transaction that failed once is over, even if `fn` caught it.
      let failure: unknown;
      let open = true;
      // BEGIN has been sent; the transaction was ended (committed with the last statement, or over).
      let begun = false;
      let ended = false;
      /**
       * Sends `first` and `second` together (pg's pipeline mode: one round trip, the server runs them
       * in order) and waits for both; without pipelining pg sends the second after the first.
       */
      const pair = async (first: pg.QueryConfig | string, second: pg.QueryConfig | string) => {
        const [a, b] = await Promise.allSettled([client.query(first), client.query(second)]);
        return { first: a, second: b };
      };
      const statement = async (name: string, text: string, values: unknown[], isLast: boolean) => {
        if (!open || ended) throw new Error('the transaction has ended; use the store outside it');
        if (failure !== undefined) throw this.storageError(failure);
        const query = { name, text, values };
        try {
          if (isLast && !begun) {
            // The only statement: sent alone, PostgreSQL runs it atomically.
            ended = true;
            return (await client.query(query)).rows;
          }
          if (isLast) {
            // The last statement and COMMIT together; after a failed statement, COMMIT only ends the
            // transaction (PostgreSQL answers ROLLBACK).
            const sent = await pair(query, 'COMMIT');
            ended = true;
            if (sent.first.status === 'rejected') throw sent.first.reason;
            if (sent.second.status === 'rejected') throw sent.second.reason;
            return sent.first.value.rows;
          }
          if (!begun) {
            const sent = await pair(BEGIN[isolation], query);
            begun = true;
            if (sent.first.status === 'rejected') throw sent.first.reason;
            if (sent.second.status === 'rejected') throw sent.second.reason;
            return sent.second.value.rows;
          }
          return (await client.query(query)).rows;
        } catch (error) {
          failure ??= session.lost() ?? error;
          throw this.storageError(failure);
        }
      };
      const run: Run = (name, text, values) => statement(name, text, values, false);
      const last: Run = (name, text, values) => statement(name, text, values, true);
      let broken: Error | undefined;
      try {
        const result = await body(run, last);
        if (failure !== undefined) throw failure;
        if (begun && !ended) await client.query('COMMIT');
        return result;
      } catch (error) {
        if (begun && !ended) {
          await client.query('ROLLBACK').catch((e: Error) => {
            broken = e;
          });
        }
        const cause = failure ?? session.lost() ?? error;
        // A duplicate key is retried a few times only: one more run sees the competitor's row.
        const duplicate = options.retryDuplicates === true && isDuplicate(cause) && attempt <= 3;
        if ((isSerializationFailure(cause) || duplicate) && !broken) {
          if (attempt < MAX_ATTEMPTS) {
            this.metrics.transactionRetry('postgres');
            // Rare at READ COMMITTED (a deadlock, two inserts of one key): worth a line when it happens.
            this.log?.info(
              `PostgreSQL: a transaction runs again (attempt ${attempt + 1}) after ${this.describe(cause)}`,
            );
            await pause(Math.random() * Math.min(100, 2 ** attempt));
            continue;
          }
          fail({
            code: 'storage_error',
            message: 'Storage error',
            details: `gave up after ${MAX_ATTEMPTS} attempts: other calls keep changing the same records; retry`,
          });
        }
        throw this.storageError(error instanceof DomainFailure ? error : cause);
      } finally {
        open = false;
        session.release(broken);
      }
    }
  }

  executionPage = (id: string, principal: string, options: ExecutionPageOptions) =>
    this.inTransaction('SNAPSHOT', (run) => readExecutionPage(poolOperations(run), id, principal, options));
  getExecution = (id: string) => this.reads.getExecution(id);
  listExecutions = (filter: ExecutionFilter) => this.reads.listExecutions(filter);
  countOpenChildren = (principal: string) => this.reads.countOpenChildren(principal);
  countChildren = () => this.reads.countChildren();
  pageExecutions = (after: string | null, limit: number) => this.reads.pageExecutions(after, limit);
  getSteps = (id: string) => this.reads.getSteps(id);
  getStep = (id: string, seq: number) => this.reads.getStep(id, seq);
  getArtifacts = (id: string, stepName?: string) => this.reads.getArtifacts(id, stepName);
  getTelemetry = (filter: TelemetryFilter) => this.reads.getTelemetry(filter);
  getSubmission = (nonce: string) => this.reads.getSubmission(nonce);
  getSubmissions = (id: string) => this.reads.getSubmissions(id);
  getDefinition = (hash: string) => this.reads.getDefinition(hash);
  getPinnedDefinition = (hash: string) => this.reads.getPinnedDefinition(hash);
  getTask = (taskId: string) => this.reads.getTask(taskId);
  listTasks = (filter: TaskFilter) => this.reads.listTasks(filter);
  getApproval = (approvalId: string) => this.reads.getApproval(approvalId);
  getRecordEvents = (id: string) => this.reads.getRecordEvents(id);
  lastRecordEvent = (id: string) => this.reads.lastRecordEvent(id);
  listApprovals = (filter: ApprovalFilter) => this.reads.listApprovals(filter);
  listExecutionHeads = (filter: ExecutionPageFilter) => this.reads.listExecutionHeads(filter);
  countExecutions = (filter: ExecutionCountFilter) => this.reads.countExecutions(filter);
  listPrincipals = () => this.reads.listPrincipals();
  changedExecutions = (filter: { principal: string; since: string; limit: number }) =>
    this.reads.changedExecutions(filter);

  /**
   * Calls `listener` after any process commits a change to an execution: one connection per store
   * LISTENs on the channel migration 4's trigger notifies, opened with the first watcher and closed
   * with the last. A lost listening connection is reopened by itself, and watchers are called then
   * too (changes made meanwhile were not announced).
   */
  watch(listener: () => void): () => void {
    return this.listener.subscribe({ channel: EXECUTIONS_CHANNEL, notify: listener, resync: listener });
  }

  async figures() {
    return {
      schemaVersion: await this.schemaVersion(),
      expectedSchemaVersion: PG_MIGRATIONS.at(-1)?.version ?? 0,
      pool: {
        total: this.pool.totalCount,
        idle: this.pool.idleCount,
        waiting: this.pool.waitingCount,
        max: this.pool.options.max ?? 10,
      },
    };
  }

  async schemaVersion(): Promise<number> {
    try {
      const { rows } = await this.pool.query<{ version: number }>(SCHEMA_VERSION);
      return rows[0]?.version ?? 0;
    } catch (error) {
      throw this.storageError(error);
    }
  }

  close(): Promise<void> {
    this.listener.close();
    this.closed ??= this.pool.end();
    return this.closed;
  }
}

/**
 * Opens the store at `url` (`postgres://user:password@host:port/database`) and applies pending
 * migrations. Fails with a message that names what is wrong (host, credentials, database, a newer
 * schema) and never the password.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresExecutionStore> {
  const store = new PostgresExecutionStore(url, options);
  try {
    await store.migrate();
  } catch (error) {
    await store.close().catch(() => undefined);
    if (error instanceof DomainFailure && error.error.code === 'storage_error') {
      throw new Error(error.error.details);
    }
    throw new Error(store.describe(error));
  }
  return store;
}
