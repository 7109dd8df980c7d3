import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type {
  ArtifactRecord,
  ExecutionFilter,
  ExecutionRecord,
  ExecutionStore,
  NewArtifact,
  NewTelemetry,
  StepRecord,
  StoreWriter,
  SubmissionRecord,
  TelemetryFilter,
  TelemetryRecord,
} from '../execution-store.js';
import { MIGRATIONS } from './migrations.js';

export const DATABASE_FILE = 'workflowlookup.db';
const BUSY_TIMEOUT_MS = 5000;

type Row = Record<string, unknown>;

const json = (value: unknown): string => JSON.stringify(value ?? null);
const parse = <T>(text: unknown, fallback: T): T =>
  typeof text === 'string' ? (JSON.parse(text) as T) : fallback;
const now = () => new Date().toISOString();

function toExecution(row: Row): ExecutionRecord {
  return {
    execution_id: row.execution_id as string,
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
  };
}

const executionParams = (r: ExecutionRecord) => ({
  ...r,
  completed_steps: json(r.completed_steps),
  context: json(r.context),
  metadata: json(r.metadata),
});

/**
 * The SQLite adapter of the execution store: one file in the data dir, WAL, a busy timeout so
 * several server processes can share it, foreign keys on, and every transaction `BEGIN IMMEDIATE`
 * so concurrent writers serialize instead of failing half-way.
 */
export class SqliteExecutionStore implements ExecutionStore {
  readonly location: string;
  private readonly db: Database.Database;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly stmts;

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    this.location = join(dataDir, DATABASE_FILE);
    this.db = new Database(this.location, { timeout: BUSY_TIMEOUT_MS });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    migrate(this.db);
    const db = this.db;
    this.stmts = {
      getExecution: db.prepare('SELECT * FROM workflow_executions WHERE execution_id = ?'),
      insertExecution:
        db.prepare(`INSERT INTO workflow_executions (execution_id, workflow_name, definition_hash,
        state, current_step, current_seq, completed_steps, context, token_nonce, token_attempt, token_issued_at,
        token_expires_at, started_at, updated_at, completed_at, duration_ms, metadata)
        VALUES (@execution_id, @workflow_name, @definition_hash, @state, @current_step, @current_seq, @completed_steps,
        @context, @token_nonce, @token_attempt, @token_issued_at, @token_expires_at, @started_at, @updated_at,
        @completed_at, @duration_ms, @metadata)`),
      updateExecution:
        db.prepare(`UPDATE workflow_executions SET state = @state, current_step = @current_step,
        current_seq = @current_seq, completed_steps = @completed_steps, context = @context, token_nonce = @token_nonce,
        token_attempt = @token_attempt, token_issued_at = @token_issued_at, token_expires_at = @token_expires_at,
        updated_at = @updated_at, completed_at = @completed_at, duration_ms = @duration_ms, metadata = @metadata
        WHERE execution_id = @execution_id`),
      getSteps: db.prepare('SELECT * FROM workflow_steps WHERE execution_id = ? ORDER BY seq'),
      getStep: db.prepare('SELECT * FROM workflow_steps WHERE execution_id = ? AND seq = ?'),
      insertStep:
        db.prepare(`INSERT INTO workflow_steps (execution_id, seq, step_name, agent_name, iteration, status,
        attempts, started_at, completed_at, duration_ms, output) VALUES (@execution_id, @seq, @step_name, @agent_name,
        @iteration, @status, @attempts, @started_at, @completed_at, @duration_ms, @output)`),
      updateStep: db.prepare(`UPDATE workflow_steps SET status = @status, attempts = @attempts,
        completed_at = @completed_at, duration_ms = @duration_ms, output = @output
        WHERE execution_id = @execution_id AND seq = @seq`),
      getArtifacts: db.prepare('SELECT * FROM workflow_artifacts WHERE execution_id = ? ORDER BY id'),
      getStepArtifacts: db.prepare(
        'SELECT * FROM workflow_artifacts WHERE execution_id = ? AND step_name = ? ORDER BY id',
      ),
      insertArtifact:
        db.prepare(`INSERT INTO workflow_artifacts (execution_id, step_name, artifact_type, name, content,
        content_type, size_bytes, metadata, created_at) VALUES (@execution_id, @step_name, @artifact_type, @name,
        @content, @content_type, @size_bytes, @metadata, @created_at)`),
      insertTelemetry:
        db.prepare(`INSERT INTO telemetry_events (event_type, execution_id, step_name, agent_name,
        metadata, created_at) VALUES (@event_type, @execution_id, @step_name, @agent_name, @metadata, @created_at)`),
      getSubmission: db.prepare('SELECT * FROM token_submissions WHERE nonce = ?'),
      recordSubmission: db.prepare(`INSERT INTO token_submissions (nonce, execution_id, output_hash, response,
        created_at) VALUES (@nonce, @execution_id, @output_hash, @response, @created_at)`),
      getDefinition: db.prepare('SELECT content FROM workflow_definitions WHERE hash = ?'),
      pinDefinition:
        db.prepare(`INSERT OR IGNORE INTO workflow_definitions (hash, workflow_id, content, created_at)
        VALUES (?, ?, ?, ?)`),
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
    getSubmission: async (nonce) => {
      const row = this.stmts.getSubmission.get(nonce) as Row | undefined;
      return row ? ({ ...row, response: parse(row.response, null) } as SubmissionRecord) : undefined;
    },
    getDefinition: async (hash) =>
      (this.stmts.getDefinition.get(hash) as { content: string } | undefined)?.content,
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
  };

  private list(filter: ExecutionFilter): ExecutionRecord[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.workflow_name !== undefined) {
      where.push('workflow_name = ?');
      params.push(filter.workflow_name);
    }
    if (filter.states !== undefined && filter.states.length > 0) {
      where.push(`state IN (${filter.states.map(() => '?').join(',')})`);
      params.push(...filter.states);
    }
    const sql = `SELECT * FROM workflow_executions ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY updated_at DESC, execution_id LIMIT ?`;
    return (this.db.prepare(sql).all(...params, filter.limit) as Row[]).map(toExecution);
  }

  private telemetry(filter: TelemetryFilter): TelemetryRecord[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.execution_id !== undefined) {
      where.push('execution_id = ?');
      params.push(filter.execution_id);
    }
    if (filter.event_type !== undefined) {
      where.push('event_type = ?');
      params.push(filter.event_type);
    }
    const sql = `SELECT * FROM (SELECT * FROM telemetry_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY id DESC LIMIT ?) ORDER BY id`;
    return (this.db.prepare(sql).all(...params, filter.limit) as Row[]).map(
      (row) => ({ ...row, metadata: parse(row.metadata, null) }) as TelemetryRecord,
    );
  }

  transaction<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.writer);
        this.db.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    });
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

  async close(): Promise<void> {
    await this.exclusive(async () => {
      if (this.db.open) this.db.close();
    });
  }
}

/** Applies the migrations the file does not have yet; refuses a file from a newer version. */
function migrate(db: Database.Database): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const apply = db.transaction(() => {
    const applied = new Set(
      (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map(
        (r) => r.version,
      ),
    );
    const newest = Math.max(0, ...applied);
    const known = MIGRATIONS.length;
    if (newest > known) {
      throw new Error(
        `the database was written by a newer workflowlookup (schema version ${newest}, this one knows ${known}); upgrade workflowlookup`,
      );
    }
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        now(),
      );
    }
  });
  // IMMEDIATE: two processes starting at once must not both apply the same migration.
  apply.immediate();
}
