import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { ExecutionState } from '../../engine/state-machine.js';
import type {
  ArtifactRecord,
  DefinitionRecord,
  ExecutionCountFilter,
  ExecutionFilter,
  ExecutionHead,
  ExecutionPageFilter,
  ExecutionRecord,
  ExecutionStore,
  NewArtifact,
  NewTelemetry,
  PurgeCounts,
  PurgeFilter,
  StepRecord,
  StoreWriter,
  SubmissionRecord,
  TaskFilter,
  TaskRecord,
  TelemetryFilter,
  TelemetryRecord,
} from '../execution-store.js';
import { SqlFilter } from '../sql-filter.js';
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

type Row = Record<string, unknown>;

const json = (value: unknown): string => JSON.stringify(value ?? null);
const parse = <T>(text: unknown, fallback: T): T =>
  typeof text === 'string' ? (JSON.parse(text) as T) : fallback;
const now = () => new Date().toISOString();

function toExecution(row: Row): ExecutionRecord {
  return {
    execution_id: row.execution_id as string,
    principal: row.principal as string,
    workflow_name: row.workflow_name as string,
    definition_hash: row.definition_hash as string,
    state: row.state as ExecutionRecord['state'],
    current_step: (row.current_step as string | null) ?? null,
    current_seq: row.current_seq as number,
    completed_steps: parse(row.completed_steps, []),
    context: parse(row.context, {}),
    token_nonce: (row.token_nonce as string | null) ?? null,
    token_attempt: row.token_attempt as number,
    token_issued_at: (row.token_issued_at as string | null) ?? null,
    token_expires_at: (row.token_expires_at as string | null) ?? null,
    started_at: row.started_at as string,
    updated_at: row.updated_at as string,
    completed_at: (row.completed_at as string | null) ?? null,
    duration_ms: (row.duration_ms as number | null) ?? null,
    metadata: parse(row.metadata, {}),
  };
}

function toStep(row: Row): StepRecord {
  return {
    execution_id: row.execution_id as string,
    seq: row.seq as number,
    step_name: row.step_name as string,
    agent_name: row.agent_name as string,
    iteration: (row.iteration as number | null) ?? null,
    status: row.status as StepRecord['status'],
    attempts: row.attempts as number,
    started_at: (row.started_at as string | null) ?? null,
    completed_at: (row.completed_at as string | null) ?? null,
    duration_ms: (row.duration_ms as number | null) ?? null,
    output: parse(row.output, null),
    lease_owner: (row.lease_owner as string | null) ?? null,
    lease_expires_at: (row.lease_expires_at as string | null) ?? null,
  };
}

function toTask(row: Row): TaskRecord {
  return {
    task_id: row.task_id as string,
    principal: row.principal as string,
    tool: row.tool as string,
    arguments: parse(row.arguments, {}),
    run_id: (row.run_id as string | null) ?? null,
    workflow_id: (row.workflow_id as string | null) ?? null,
    status: row.status as TaskRecord['status'],
    status_message: (row.status_message as string | null) ?? null,
    snapshot: parse(row.snapshot, {}),
    created_at: row.created_at as string,
    last_updated_at: row.last_updated_at as string,
    ttl_ms: (row.ttl_ms as number | null) ?? null,
    expires_at: (row.expires_at as string | null) ?? null,
    poll_interval_ms: row.poll_interval_ms as number,
    input_requests: parse(row.input_requests, {}),
    input_responses: parse(row.input_responses, {}),
    result: parse(row.result, null),
    error: parse(row.error, null),
    owner: (row.owner as string | null) ?? null,
    lease_expires_at: (row.lease_expires_at as string | null) ?? null,
    meta: parse(row.meta, {}),
  };
}

const taskParams = (r: TaskRecord) => ({
  ...r,
  arguments: json(r.arguments),
  snapshot: json(r.snapshot),
  input_requests: json(r.input_requests),
  input_responses: json(r.input_responses),
  result: r.result === null ? null : json(r.result),
  error: r.error === null ? null : json(r.error),
  meta: json(r.meta),
});

const TERMINAL_STATES = new Set(['completed', 'failed', 'abandoned', 'diverged']);

const HEAD_COLUMNS = `execution_id, principal, workflow_name, state, current_step, current_seq, token_attempt,
  started_at, updated_at, completed_at, duration_ms`;

function toHead(row: Row): ExecutionHead {
  return {
    execution_id: row.execution_id as string,
    principal: row.principal as string,
    workflow_name: row.workflow_name as string,
    state: row.state as ExecutionState,
    current_step: (row.current_step as string | null) ?? null,
    current_seq: row.current_seq as number,
    token_attempt: row.token_attempt as number,
    started_at: row.started_at as string,
    updated_at: row.updated_at as string,
    completed_at: (row.completed_at as string | null) ?? null,
    duration_ms: (row.duration_ms as number | null) ?? null,
  };
}

/** WHERE clauses shared by listings and counts. */
function executionFilter(filter: ExecutionCountFilter & { states?: readonly ExecutionState[] | undefined }) {
  const f = new SqlFilter('positional')
    .equals('p', 'principal', filter.principal)
    .equals('w', 'workflow_name', filter.workflow_name)
    .oneOf('s', 'state', filter.states);
  if (filter.updated_since !== undefined) f.add('a', `updated_at >= ${f.param(filter.updated_since)}`);
  if (filter.updated_before !== undefined) f.add('b', `updated_at < ${f.param(filter.updated_before)}`);
  return f;
}

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
}

const executionParams = (r: ExecutionRecord) => ({
  ...r,
  completed_steps: json(r.completed_steps),
  context: json(r.context),
  metadata: json(r.metadata),
});

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
  private readonly stmts;
  private readonly readOnly: boolean;
  private readonly listeners = new Set<() => void>();
  private readonly checkpointer: Checkpointer | undefined;

  constructor(dataDir: string, options: SqliteStoreOptions = {}) {
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
    const db = this.db;
    this.stmts = {
      getExecution: statement(db, 'SELECT * FROM workflow_executions WHERE execution_id = ?'),
      insertExecution: statement(
        db,
        `INSERT INTO workflow_executions (execution_id, principal, workflow_name, definition_hash,
        state, current_step, current_seq, completed_steps, context, token_nonce, token_attempt, token_issued_at,
        token_expires_at, started_at, updated_at, completed_at, duration_ms, metadata)
        VALUES (@execution_id, @principal, @workflow_name, @definition_hash, @state, @current_step, @current_seq, @completed_steps,
        @context, @token_nonce, @token_attempt, @token_issued_at, @token_expires_at, @started_at, @updated_at,
        @completed_at, @duration_ms, @metadata)`,
      ),
      updateExecution: statement(
        db,
        `UPDATE workflow_executions SET state = @state, current_step = @current_step,
        current_seq = @current_seq, completed_steps = @completed_steps, context = @context, token_nonce = @token_nonce,
        token_attempt = @token_attempt, token_issued_at = @token_issued_at, token_expires_at = @token_expires_at,
        updated_at = @updated_at, completed_at = @completed_at, duration_ms = @duration_ms, metadata = @metadata
        WHERE execution_id = @execution_id`,
      ),
      getSteps: statement(db, 'SELECT * FROM workflow_steps WHERE execution_id = ? ORDER BY seq'),
      getStep: statement(db, 'SELECT * FROM workflow_steps WHERE execution_id = ? AND seq = ?'),
      insertStep: statement(
        db,
        `INSERT INTO workflow_steps (execution_id, seq, step_name, agent_name, iteration, status,
        attempts, started_at, completed_at, duration_ms, output, lease_owner, lease_expires_at) VALUES (@execution_id, @seq,
        @step_name, @agent_name, @iteration, @status, @attempts, @started_at, @completed_at, @duration_ms, @output,
        @lease_owner, @lease_expires_at)`,
      ),
      updateStep: statement(
        db,
        `UPDATE workflow_steps SET status = @status, attempts = @attempts,
        completed_at = @completed_at, duration_ms = @duration_ms, output = @output, lease_owner = @lease_owner,
        lease_expires_at = @lease_expires_at WHERE execution_id = @execution_id AND seq = @seq`,
      ),
      getArtifacts: statement(db, 'SELECT * FROM workflow_artifacts WHERE execution_id = ? ORDER BY id'),
      getStepArtifacts: statement(
        db,
        'SELECT * FROM workflow_artifacts WHERE execution_id = ? AND step_name = ? ORDER BY id',
      ),
      insertArtifact: statement(
        db,
        `INSERT INTO workflow_artifacts (execution_id, step_name, artifact_type, name, content,
        content_type, size_bytes, metadata, created_at) VALUES (@execution_id, @step_name, @artifact_type, @name,
        @content, @content_type, @size_bytes, @metadata, @created_at)`,
      ),
      insertTelemetry: statement(
        db,
        `INSERT INTO telemetry_events (event_type, execution_id, step_name, agent_name,
        metadata, created_at) VALUES (@event_type, @execution_id, @step_name, @agent_name, @metadata, @created_at)`,
      ),
      getSubmission: statement(db, 'SELECT * FROM token_submissions WHERE nonce = ?'),
      recordSubmission: statement(
        db,
        `INSERT INTO token_submissions (nonce, execution_id, output_hash, response,
        created_at) VALUES (@nonce, @execution_id, @output_hash, @response, @created_at)`,
      ),
      updateSubmission: statement(db, 'UPDATE token_submissions SET response = ? WHERE nonce = ?'),
      getDefinition: statement(db, 'SELECT content FROM workflow_definitions WHERE hash = ?'),
      getPinnedDefinition: statement(db, 'SELECT * FROM workflow_definitions WHERE hash = ?'),
      pinDefinition: statement(
        db,
        `INSERT OR IGNORE INTO workflow_definitions (hash, workflow_id, content, created_at)
        VALUES (?, ?, ?, ?)`,
      ),
      getSubmissions: statement(
        db,
        'SELECT * FROM token_submissions WHERE execution_id = ? ORDER BY created_at, nonce',
      ),
      pageExecutions: statement(
        db,
        'SELECT * FROM workflow_executions WHERE execution_id > ? ORDER BY execution_id LIMIT ?',
      ),
      schemaVersion: statement(db, 'SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations'),
      getTask: statement(db, 'SELECT * FROM tasks WHERE task_id = ?'),
      insertTask: statement(
        db,
        `INSERT INTO tasks (task_id, principal, tool, arguments, run_id, workflow_id, status,
        status_message, snapshot, created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms, input_requests,
        input_responses, result, error, owner, lease_expires_at, meta) VALUES (@task_id, @principal, @tool, @arguments,
        @run_id, @workflow_id, @status, @status_message, @snapshot, @created_at, @last_updated_at, @ttl_ms, @expires_at,
        @poll_interval_ms, @input_requests, @input_responses, @result, @error, @owner, @lease_expires_at, @meta)`,
      ),
      updateTask: statement(
        db,
        `UPDATE tasks SET tool = @tool, arguments = @arguments, run_id = @run_id,
        workflow_id = @workflow_id, status = @status, status_message = @status_message, snapshot = @snapshot,
        last_updated_at = @last_updated_at, ttl_ms = @ttl_ms, expires_at = @expires_at,
        poll_interval_ms = @poll_interval_ms, input_requests = @input_requests, input_responses = @input_responses,
        result = @result, error = @error, owner = @owner, lease_expires_at = @lease_expires_at, meta = @meta
        WHERE task_id = @task_id`,
      ),
      deleteExpiredTasks: statement(
        db,
        `DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at < ? AND status IN ('completed','failed','cancelled')`,
      ),
      listPrincipals: statement(db, 'SELECT DISTINCT principal FROM workflow_executions ORDER BY principal'),
      changed: statement(
        db,
        `SELECT ${HEAD_COLUMNS} FROM workflow_executions WHERE principal = ? AND updated_at >= ?
        ORDER BY updated_at, execution_id LIMIT ?`,
      ),
    };
  }

  /** Operations run one at a time on the single connection, so a read never sees another's open transaction. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private readonly writer: StoreWriter = {
    getExecution: async (id) => {
      const row = this.stmts.getExecution.get(id) as Row | undefined;
      return row ? toExecution(row) : undefined;
    },
    listExecutions: async (filter) => this.list(filter),
    getSteps: async (id) => (this.stmts.getSteps.all(id) as Row[]).map(toStep),
    getStep: async (id, seq) => {
      const row = this.stmts.getStep.get(id, seq) as Row | undefined;
      return row ? toStep(row) : undefined;
    },
    getArtifacts: async (id, stepName) =>
      (
        (stepName === undefined
          ? this.stmts.getArtifacts.all(id)
          : this.stmts.getStepArtifacts.all(id, stepName)) as Row[]
      ).map(
        (row) =>
          ({
            ...row,
            metadata: parse(row.metadata, null),
          }) as ArtifactRecord,
      ),
    getTelemetry: async (filter) => this.telemetry(filter),
    listExecutionHeads: async (filter) => this.heads(filter),
    countExecutions: async (filter) => this.counts(filter),
    listPrincipals: async () =>
      (this.stmts.listPrincipals.all() as { principal: string }[]).map((r) => r.principal),
    changedExecutions: async ({ principal, since, limit }) =>
      (this.stmts.changed.all(principal, since, limit) as Row[]).map(toHead),
    getSubmission: async (nonce) => {
      const row = this.stmts.getSubmission.get(nonce) as Row | undefined;
      return row ? ({ ...row, response: parse(row.response, null) } as SubmissionRecord) : undefined;
    },
    getDefinition: async (hash) =>
      (this.stmts.getDefinition.get(hash) as { content: string } | undefined)?.content,
    getPinnedDefinition: async (hash) =>
      this.stmts.getPinnedDefinition.get(hash) as DefinitionRecord | undefined,
    getSubmissions: async (id) =>
      (this.stmts.getSubmissions.all(id) as Row[]).map(
        (row) => ({ ...row, response: parse(row.response, null) }) as SubmissionRecord,
      ),
    pageExecutions: async (after, limit) =>
      (this.stmts.pageExecutions.all(after ?? '', limit) as Row[]).map(toExecution),
    pinDefinition: async (hash, workflowId, content) => {
      this.stmts.pinDefinition.run(hash, workflowId, content, now());
    },
    insertExecution: async (record) => {
      this.stmts.insertExecution.run(executionParams(record));
    },
    updateExecution: async (record) => {
      this.stmts.updateExecution.run(executionParams(record));
    },
    insertStep: async (record) => {
      this.stmts.insertStep.run({ ...record, output: record.output === null ? null : json(record.output) });
    },
    updateStep: async (record) => {
      this.stmts.updateStep.run({ ...record, output: record.output === null ? null : json(record.output) });
    },
    insertArtifact: async (artifact: NewArtifact) =>
      Number(
        this.stmts.insertArtifact.run({
          ...artifact,
          metadata: artifact.metadata === null ? null : json(artifact.metadata),
          created_at: now(),
        }).lastInsertRowid,
      ),
    insertTelemetry: async (event: NewTelemetry) => {
      this.stmts.insertTelemetry.run({
        ...event,
        metadata: event.metadata === null ? null : json(event.metadata),
        created_at: now(),
      });
    },
    recordSubmission: async (record) => {
      this.stmts.recordSubmission.run({ ...record, response: json(record.response) });
    },
    updateSubmission: async (nonce, response) => {
      this.stmts.updateSubmission.run(json(response), nonce);
    },
    importDefinition: async (record) => {
      this.stmts.pinDefinition.run(record.hash, record.workflow_id, record.content, record.created_at);
    },
    importArtifact: async (record) =>
      Number(
        this.stmts.insertArtifact.run({
          ...record,
          metadata: record.metadata === null ? null : json(record.metadata),
        }).lastInsertRowid,
      ),
    importTelemetry: async (record) => {
      this.stmts.insertTelemetry.run({
        ...record,
        metadata: record.metadata === null ? null : json(record.metadata),
      });
    },
    getTask: async (taskId) => {
      const row = this.stmts.getTask.get(taskId) as Row | undefined;
      return row ? toTask(row) : undefined;
    },
    listTasks: async (filter) => this.tasks(filter),
    insertTask: async (record) => {
      this.stmts.insertTask.run(taskParams(record));
    },
    updateTask: async (record) => {
      this.stmts.updateTask.run(taskParams(record));
    },
    deleteExpiredTasks: async (nowIso) => this.stmts.deleteExpiredTasks.run(nowIso).changes,
    purgeHistory: async (filter) => this.purge(filter),
  };

  private tasks(filter: TaskFilter): TaskRecord[] {
    const f = new SqlFilter('positional')
      .equals('p', 'principal', filter.principal)
      .equals('r', 'run_id', filter.run_id)
      .oneOf('s', 'status', filter.statuses);
    if (filter.before !== undefined) {
      const { created_at, task_id } = filter.before;
      f.add(
        'b',
        `(created_at < ${f.param(created_at)} OR (created_at = ${f.param(created_at)} AND task_id < ${f.param(task_id)}))`,
      );
    }
    const sql = `SELECT * FROM tasks ${f.where} ORDER BY created_at DESC, task_id DESC LIMIT ?`;
    return (statement(this.db, sql).all(...f.values, filter.limit) as Row[]).map(toTask);
  }

  /** Collects the doomed executions in a temporary table, counts what hangs off them, then deletes. */
  private purge(filter: PurgeFilter): PurgeCounts {
    const db = this.db;
    const states = filter.states.filter((s) => TERMINAL_STATES.has(s));
    db.exec('CREATE TEMP TABLE IF NOT EXISTS purge_ids (execution_id TEXT PRIMARY KEY)');
    db.exec('DELETE FROM purge_ids');
    if (states.length > 0) {
      const where = ['principal = ?', `state IN (${states.map(() => '?').join(',')})`];
      const params: unknown[] = [filter.principal, ...states];
      if (filter.workflow_name !== undefined) {
        where.push('workflow_name = ?');
        params.push(filter.workflow_name);
      }
      if (filter.finished_before !== undefined) {
        where.push('COALESCE(completed_at, updated_at) < ?');
        params.push(filter.finished_before);
      }
      statement(
        db,
        `INSERT INTO purge_ids SELECT execution_id FROM workflow_executions WHERE ${where.join(' AND ')}`,
      ).run(...params);
    }
    // Finished tasks go with their run; those that never got one (or whose run is gone) match on their own.
    const taskStatuses = [
      ...(states.includes('completed') ? ['completed'] : []),
      ...(states.includes('failed') ? ['failed'] : []),
      ...(states.includes('abandoned') ? ['cancelled'] : []),
    ];
    const runless = ['principal = ?', `status IN (${taskStatuses.map(() => '?').join(',') || "''"})`];
    const runlessParams: unknown[] = [filter.principal, ...taskStatuses];
    runless.push(
      '(run_id IS NULL OR run_id NOT IN (SELECT execution_id FROM workflow_executions WHERE principal = ?))',
    );
    runlessParams.push(filter.principal);
    if (filter.workflow_name !== undefined) {
      runless.push('workflow_id = ?');
      runlessParams.push(filter.workflow_name);
    }
    if (filter.finished_before !== undefined) {
      runless.push('last_updated_at < ?');
      runlessParams.push(filter.finished_before);
    }
    const inPurge = 'execution_id IN (SELECT execution_id FROM purge_ids)';
    const taskWhere = `(principal = ? AND status IN ('completed','failed','cancelled') AND run_id IN (SELECT execution_id FROM purge_ids)) OR (${runless.join(' AND ')})`;
    const taskParams = [filter.principal, ...runlessParams];
    const count = (sql: string, ...params: unknown[]) =>
      (statement(this.db, sql).get(...params) as { n: number }).n;
    const counts: PurgeCounts = {
      executions: count('SELECT COUNT(*) AS n FROM purge_ids'),
      steps: count(`SELECT COUNT(*) AS n FROM workflow_steps WHERE ${inPurge}`),
      artifacts: count(`SELECT COUNT(*) AS n FROM workflow_artifacts WHERE ${inPurge}`),
      telemetry: count(`SELECT COUNT(*) AS n FROM telemetry_events WHERE ${inPurge}`),
      submissions: count(`SELECT COUNT(*) AS n FROM token_submissions WHERE ${inPurge}`),
      tasks: count(`SELECT COUNT(*) AS n FROM tasks WHERE ${taskWhere}`, ...taskParams),
    };
    if (!filter.dry_run) {
      statement(db, `DELETE FROM tasks WHERE ${taskWhere}`).run(...taskParams);
      db.exec(`DELETE FROM telemetry_events WHERE ${inPurge}`);
      // Steps, artifacts and submissions go with their execution (ON DELETE CASCADE).
      db.exec(`DELETE FROM workflow_executions WHERE ${inPurge}`);
    }
    db.exec('DELETE FROM purge_ids');
    return counts;
  }

  private list(filter: ExecutionFilter): ExecutionRecord[] {
    const f = new SqlFilter('positional')
      .equals('p', 'principal', filter.principal)
      .equals('w', 'workflow_name', filter.workflow_name)
      .oneOf('s', 'state', filter.states);
    const sql = `SELECT * FROM workflow_executions ${f.where}
      ORDER BY updated_at DESC, execution_id DESC LIMIT ?`;
    return (statement(this.db, sql).all(...f.values, filter.limit) as Row[]).map(toExecution);
  }

  private heads(filter: ExecutionPageFilter): ExecutionHead[] {
    const f = executionFilter(filter);
    // Keyset paging on (updated_at, execution_id): every page costs the same, however deep.
    const { older_than: older, newer_than: newer } = filter;
    if (older !== undefined) {
      f.add(
        'o',
        `(updated_at, execution_id) < (${f.param(older.updated_at)}, ${f.param(older.execution_id)})`,
      );
    }
    if (newer !== undefined) {
      f.add(
        'n',
        `(updated_at, execution_id) > (${f.param(newer.updated_at)}, ${f.param(newer.execution_id)})`,
      );
    }
    const order = newer !== undefined ? 'ASC' : 'DESC';
    const sql = `SELECT ${HEAD_COLUMNS} FROM workflow_executions ${f.where}
      ORDER BY updated_at ${order}, execution_id ${order} LIMIT ?`;
    const rows = (statement(this.db, sql).all(...f.values, filter.limit) as Row[]).map(toHead);
    return newer !== undefined ? rows.reverse() : rows;
  }

  private counts(filter: ExecutionCountFilter): Partial<Record<ExecutionState, number>> {
    const f = executionFilter(filter);
    const sql = `SELECT state, COUNT(*) AS n FROM workflow_executions ${f.where} GROUP BY state`;
    const rows = statement(this.db, sql).all(...f.values) as { state: ExecutionState; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  private telemetry(filter: TelemetryFilter): TelemetryRecord[] {
    const f = new SqlFilter('positional');
    if (filter.principal !== undefined) {
      // A correlated lookup by primary key: an IN (...) list would read every execution of the principal.
      f.add(
        'p',
        `EXISTS (SELECT 1 FROM workflow_executions e WHERE e.execution_id = telemetry_events.execution_id AND e.principal = ${f.param(filter.principal)})`,
      );
    }
    f.equals('e', 'execution_id', filter.execution_id).equals('t', 'event_type', filter.event_type);
    const sql = `SELECT * FROM (SELECT * FROM telemetry_events ${f.where}
      ORDER BY id DESC LIMIT ?) ORDER BY id`;
    return (statement(this.db, sql).all(...f.values, filter.limit) as Row[]).map(
      (row) => ({ ...row, metadata: parse(row.metadata, null) }) as TelemetryRecord,
    );
  }

  transaction<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T> {
    if (this.readOnly) return Promise.reject(new Error(`${this.location} is open read-only`));
    return this.exclusive(async () => {
      await this.begin();
      let result: T;
      try {
        result = await fn(this.writer);
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
        await pause(Math.random() * Math.min(20, attempt * 2));
      }
    }
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  getExecution = (id: string) => this.exclusive(() => this.writer.getExecution(id));
  listExecutions = (filter: ExecutionFilter) => this.exclusive(() => this.writer.listExecutions(filter));
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
    this.exclusive(async () => (this.stmts.schemaVersion.get() as { version: number }).version);
  getTask = (taskId: string) => this.exclusive(() => this.writer.getTask(taskId));
  listTasks = (filter: TaskFilter) => this.exclusive(() => this.writer.listTasks(filter));
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
  const versions = new Set(
    (statement(db, 'SELECT version FROM schema_migrations').all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  const newest = Math.max(0, ...versions);
  const known = MIGRATIONS.length;
  if (newest > known) {
    throw new Error(
      `the database was written by a newer workflowlookup (schema version ${newest}, this one knows ${known}); upgrade workflowlookup`,
    );
  }
  return versions;
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
