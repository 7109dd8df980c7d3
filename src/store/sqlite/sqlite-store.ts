import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
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
import { Checkpointer } from './checkpointer.js';
import { MIGRATIONS } from './migrations.js';
import { DATABASE_FILE, refuseDamagedFile } from './sqlite-file.js';
import { pragma, statement } from './statements.js';

/** SQLite's page cache per connection, in KiB (SQLite's own default is about 2 MB). */
const PAGE_CACHE_KIB = 2048;
/** How long a transaction waits for another connection (process) to release the write lock. */
const BUSY_TIMEOUT_MS = 5000;
/**
 * SQLite's busy handler sleeps synchronously, stalling the whole event loop; once open, a statement
 * waits at most this long that way (WAL readers are rarely kept waiting), and `begin` waits for the
 * write lock asynchronously instead.
 */
const STATEMENT_BUSY_MS = 10;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => new Date().toISOString();

/**
 * Where SQLite's SQL differs from PostgreSQL's (src/store/sql): `?` placeholders, ISO text for
 * timestamps, a list bound as one JSON array (json_each), artifact content as text, and no row
 * locks (a transaction holds the whole file: BEGIN IMMEDIATE).
 */
export const SQLITE = sqlDialect({
  placeholders: 'positional',
  timestamp: '',
  lockRead: '',
  lockDelete: '',
  among: (column, param) => `${column} IN (SELECT value FROM json_each(${param}))`,
  list: (values) => JSON.stringify(values),
  bytes: (text) => text,
  mergeStates: false,
});

export interface SqliteStoreOptions {
  /**
   * Open the file read-only (the dashboard's queries): it must exist, nothing is migrated, and every
   * transaction is refused. Readers never block the server's writers (WAL).
   */
  readOnly?: boolean;
  /**
   * The script of the checkpoint thread (default: dist/checkpoint-worker.js beside the bundle); `false`
   * checkpoints on the event loop. Tests run from the sources pass a bundle of checkpoint-worker.ts.
   */
  checkpointWorker?: URL | false;
  /** The app's instruments (transactions run again after SQLITE_BUSY); default: nothing recorded. */
  metrics?: Metrics;
}

/**
 * The SQLite adapter of the execution store: one file in the data dir, WAL, foreign keys on, and
 * every transaction `BEGIN IMMEDIATE` so concurrent writers serialize instead of failing half-way.
 * Several processes (or several connections in one process) can share the file: a transaction waits
 * for the write lock without blocking the event loop, so the holder (maybe in this process) can finish.
 */
export class SqliteExecutionStore implements ExecutionStore {
  readonly location: string;
  private readonly db: Database.Database;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly schemaStatement: Database.Statement;
  private readonly writer: StoreWriter;
  /** The first statement that failed in the open transaction. */
  private failure: unknown;
  private readonly readOnly: boolean;
  private readonly listeners = new Set<() => void>();
  private readonly checkpointer: Checkpointer | undefined;

  private readonly metrics: Metrics;

  constructor(dataDir: string, options: SqliteStoreOptions = {}) {
    this.metrics = options.metrics ?? NO_METRICS;
    this.readOnly = options.readOnly === true;
    this.location = join(dataDir, DATABASE_FILE);
    if (this.readOnly) {
      if (!existsSync(this.location)) throw new Error(`${this.location} does not exist yet`);
      refuseDamagedFile(this.location);
      this.db = new Database(this.location, {
        readonly: true,
        fileMustExist: true,
        timeout: BUSY_TIMEOUT_MS,
      });
      pragma(this.db, `busy_timeout = ${BUSY_TIMEOUT_MS}`);
      pragma(this.db, 'query_only = ON');
      refuseNewerSchema(this.db);
    } else {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      refuseDamagedFile(this.location);
      this.db = new Database(this.location, { timeout: BUSY_TIMEOUT_MS });
      pragma(this.db, 'journal_mode = WAL');
      pragma(this.db, 'synchronous = NORMAL');
      pragma(this.db, 'foreign_keys = ON');
      // Checkpoints are ours (checkpointer.ts): SQLite's own runs, with its fsyncs, inside the commit
      // that crosses 1,000 WAL pages, which made the p99 of a step 13-15 ms instead of 5.
      pragma(this.db, 'wal_autocheckpoint = 0');
      pragma(this.db, `busy_timeout = ${BUSY_TIMEOUT_MS}`);
      migrate(this.db);
      pragma(this.db, `busy_timeout = ${STATEMENT_BUSY_MS}`);
      this.checkpointer = new Checkpointer(this.location, () => this.checkpoint(), options.checkpointWorker);
    }
    // better-sqlite3 builds SQLite with a 16 MB page cache per connection, which filled up over 10,000
    // executions and was a tenth of the server's peak RSS; the pages are in the OS page cache anyway.
    // (The dashboard's read-only connection keeps the default: it scans far more of the file.)
    if (!this.readOnly) pragma(this.db, `cache_size = -${PAGE_CACHE_KIB}`);
    this.schemaStatement = statement(
      this.db,
      'SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations',
    );
    const query: SqlSession['query'] = async ({ text, values }) => {
      // Kept for the connection's life (statements.ts): one per text, fixed texts and filter combinations.
      const prepared = statement(this.db, text);
      try {
        if (prepared.reader) return prepared.all(...values) as Row[];
        prepared.run(...values);
        return [];
      } catch (error) {
        // As in PostgreSQL, a transaction in which a statement failed is over, even if `fn` caught it.
        if (this.db.inTransaction) this.failure ??= error;
        throw error;
      }
    };
    // One connection, and a transaction holds the whole file: reads need no row locks.
    this.writer = sqlOperations({ query, write: writeNow(SQLITE, query), locking: false }, SQLITE);
  }

  /** Operations run one at a time on the single connection, so a read never sees another's open transaction. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  transaction<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T> {
    if (this.readOnly) return Promise.reject(new Error(`${this.location} is open read-only`));
    return inSpan('store transaction', { 'db.system.name': 'sqlite' }, () => this.locked(fn));
  }

  private locked<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      await this.begin();
      this.failure = undefined;
      let result: T;
      try {
        result = await fn(this.writer);
        if (this.failure !== undefined) throw this.failure;
        this.db.exec('COMMIT');
      } catch (error) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
      for (const listener of this.listeners) listener();
      this.checkpointer?.committed();
      return result;
    });
  }

  /**
   * A passive checkpoint on the event loop: every one without the checkpoint thread, and with it the
   * one that lets a WAL grown under steady load start over (see WAL_LIMIT_FRAMES).
   */
  private checkpoint(): Promise<void> {
    return this.exclusive(async () => {
      // Another connection busy with the WAL only makes a passive checkpoint do less; never an error.
      if (this.db.open) pragma(this.db, 'wal_checkpoint(PASSIVE)');
    }).catch(() => undefined);
  }

  /** BEGIN IMMEDIATE, retried while another connection holds the write lock, up to BUSY_TIMEOUT_MS. */
  private async begin(): Promise<void> {
    const deadline = Date.now() + BUSY_TIMEOUT_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        this.db.exec('BEGIN IMMEDIATE');
        return;
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error;
        this.metrics.transactionRetry('sqlite');
        await pause(Math.random() * Math.min(20, attempt * 2));
      }
    }
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** In one read transaction: commits of other processes in between are not seen halfway. */
  executionPage = (id: string, principal: string, options: ExecutionPageOptions) =>
    this.exclusive(async () => {
      this.db.exec('BEGIN');
      try {
        return await readExecutionPage(this.writer, id, principal, options);
      } finally {
        if (this.db.inTransaction) this.db.exec('COMMIT');
      }
    });
  getExecution = (id: string) => this.exclusive(() => this.writer.getExecution(id));
  listExecutions = (filter: ExecutionFilter) => this.exclusive(() => this.writer.listExecutions(filter));
  countOpenChildren = (principal: string) => this.exclusive(() => this.writer.countOpenChildren(principal));
  countChildren = () => this.exclusive(() => this.writer.countChildren());
  getSteps = (id: string) => this.exclusive(() => this.writer.getSteps(id));
  getStep = (id: string, seq: number) => this.exclusive(() => this.writer.getStep(id, seq));
  getArtifacts = (id: string, stepName?: string) =>
    this.exclusive(() => this.writer.getArtifacts(id, stepName));
  getTelemetry = (filter: TelemetryFilter) => this.exclusive(() => this.writer.getTelemetry(filter));
  getSubmission = (nonce: string) => this.exclusive(() => this.writer.getSubmission(nonce));
  getDefinition = (hash: string) => this.exclusive(() => this.writer.getDefinition(hash));
  getPinnedDefinition = (hash: string) => this.exclusive(() => this.writer.getPinnedDefinition(hash));
  getSubmissions = (id: string) => this.exclusive(() => this.writer.getSubmissions(id));
  pageExecutions = (after: string | null, limit: number) =>
    this.exclusive(() => this.writer.pageExecutions(after, limit));
  schemaVersion = () =>
    this.exclusive(async () => (this.schemaStatement.get() as { version: number }).version);
  figures = async () => {
    let walBytes = 0;
    try {
      walBytes = statSync(`${this.location}-wal`).size;
    } catch {
      // No WAL file (yet, or after a clean close): nothing pending.
    }
    return {
      schemaVersion: await this.schemaVersion(),
      expectedSchemaVersion: MIGRATIONS.at(-1)?.version ?? 0,
      walBytes,
    };
  };
  getTask = (taskId: string) => this.exclusive(() => this.writer.getTask(taskId));
  listTasks = (filter: TaskFilter) => this.exclusive(() => this.writer.listTasks(filter));
  getApproval = (approvalId: string) => this.exclusive(() => this.writer.getApproval(approvalId));
  getRecordEvents = (id: string) => this.exclusive(() => this.writer.getRecordEvents(id));
  lastRecordEvent = (id: string) => this.exclusive(() => this.writer.lastRecordEvent(id));
  listApprovals = (filter: ApprovalFilter) => this.exclusive(() => this.writer.listApprovals(filter));
  listExecutionHeads = (filter: ExecutionPageFilter) =>
    this.exclusive(() => this.writer.listExecutionHeads(filter));
  countExecutions = (filter: ExecutionCountFilter) =>
    this.exclusive(() => this.writer.countExecutions(filter));
  listPrincipals = () => this.exclusive(() => this.writer.listPrincipals());
  changedExecutions = (filter: { principal: string; since: string; limit: number }) =>
    this.exclusive(() => this.writer.changedExecutions(filter));

  async close(): Promise<void> {
    this.listeners.clear();
    // The thread's connection first: the last one to close checkpoints the WAL and removes it.
    await this.checkpointer?.close();
    await this.exclusive(async () => {
      if (this.db.open) this.db.close();
    });
  }
}

function appliedVersions(db: Database.Database): Set<number> {
  const rows = statement(db, 'SELECT version FROM schema_migrations').all() as { version: number }[];
  return appliedMigrations(rows, MIGRATIONS.length).applied;
}

function refuseNewerSchema(db: Database.Database): void {
  const table = statement(
    db,
    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
  );
  if (table.get() === undefined) throw new Error('the database has no schema yet');
  appliedVersions(db);
}

/** Applies the migrations the file does not have yet; refuses a file from a newer version. */
function migrate(db: Database.Database): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const apply = db.transaction(() => {
    const applied = appliedVersions(db);
    for (const m of MIGRATIONS) {
      // A reserved number (work merged from another branch fills it) is neither applied nor recorded.
      if (applied.has(m.version) || m.sql.trim() === '') continue;
      db.exec(m.sql);
      statement(db, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        now(),
      );
    }
  });
  // IMMEDIATE: two processes starting at once must not both apply the same migration.
  apply.immediate();
}
