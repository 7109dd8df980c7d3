import pg from 'pg';
import { DomainFailure, fail } from '../../engine/errors.js';
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
import {
  describeConnectionError,
  describeTarget,
  resolveTarget,
  scrub,
  type Target,
} from './connection-errors.js';
import { NotificationListener } from './listener.js';
import { PG_MIGRATIONS } from './migrations.js';
import { PostgresDocuments, RUNTIME_CHANNEL } from './runtime-documents.js';

export interface PostgresStoreOptions {
  /** Most connections the pool opens (default 10). */
  poolSize?: number;
  /** Where pool problems between calls are reported (default: dropped). */
  log?: (line: string) => void;
  /** How long a statement waits for a lock another transaction holds (default 30 s). */
  lockTimeoutMs?: number;
}

type Row = Record<string, unknown>;
type Run = (name: string, text: string, values: unknown[]) => Promise<Row[]>;

const CONNECT_TIMEOUT_MS = 10_000;
/** A transaction left open this long by a stuck process is ended by the server, releasing its locks. */
const IDLE_IN_TRANSACTION_MS = 60_000;
const LOCK_TIMEOUT_MS = 30_000;
/** Serialization failures retried before giving up; each retry follows a commit by a competitor. */
const MAX_ATTEMPTS = 60;
/** Advisory lock (two int4 keys: "WL", 1) held while migrating, so one process migrates at a time. */
const MIGRATION_LOCK = [0x574c, 1] as const;

const INT8 = 20;
const TIMESTAMPTZ = 1184;
const baseTimestamp = pg.types.getTypeParser(TIMESTAMPTZ, 'text');
/** Ids, durations and sizes as numbers (they stay far below 2^53); timestamps as the port's ISO strings. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8) return (value: string) => Number(value);
    if (oid === TIMESTAMPTZ) return (value: string) => (baseTimestamp(value) as Date).toISOString();
    return pg.types.getTypeParser(oid, format);
  }) as typeof pg.types.getTypeParser,
};

const json = (value: unknown): string => JSON.stringify(value ?? null);
const jsonOrNull = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));
const now = () => new Date().toISOString();
const str = (v: unknown) => (v as string | null) ?? null;
const num = (v: unknown) => (v as number | null) ?? null;

function toExecution(row: Row): ExecutionRecord {
  return {
    execution_id: row.execution_id as string,
    principal: row.principal as string,
    workflow_name: row.workflow_name as string,
    definition_hash: row.definition_hash as string,
    state: row.state as ExecutionRecord['state'],
    current_step: str(row.current_step),
    current_seq: row.current_seq as number,
    completed_steps: row.completed_steps as string[],
    context: row.context as Record<string, unknown>,
    token_nonce: str(row.token_nonce),
    token_attempt: row.token_attempt as number,
    token_issued_at: str(row.token_issued_at),
    token_expires_at: str(row.token_expires_at),
    started_at: row.started_at as string,
    updated_at: row.updated_at as string,
    completed_at: str(row.completed_at),
    duration_ms: num(row.duration_ms),
    metadata: row.metadata as Record<string, unknown>,
  };
}

function toStep(row: Row): StepRecord {
  return {
    execution_id: row.execution_id as string,
    seq: row.seq as number,
    step_name: row.step_name as string,
    agent_name: row.agent_name as string,
    iteration: num(row.iteration),
    status: row.status as StepRecord['status'],
    attempts: row.attempts as number,
    started_at: str(row.started_at),
    completed_at: str(row.completed_at),
    duration_ms: num(row.duration_ms),
    output: row.output ?? null,
    lease_owner: str(row.lease_owner),
    lease_expires_at: str(row.lease_expires_at),
  };
}

function toArtifact(row: Row): ArtifactRecord {
  return {
    id: row.id as number,
    execution_id: row.execution_id as string,
    step_name: row.step_name as string,
    artifact_type: row.artifact_type as ArtifactRecord['artifact_type'],
    name: row.name as string,
    content: (row.content as Buffer).toString('utf8'),
    content_type: row.content_type as string,
    size_bytes: row.size_bytes as number,
    metadata: (row.metadata as Record<string, unknown> | null) ?? null,
    created_at: row.created_at as string,
  };
}

function toTelemetry(row: Row): TelemetryRecord {
  return {
    id: row.id as number,
    event_type: row.event_type as string,
    execution_id: str(row.execution_id),
    step_name: str(row.step_name),
    agent_name: str(row.agent_name),
    metadata: (row.metadata as Record<string, unknown> | null) ?? null,
    created_at: row.created_at as string,
  };
}

function toSubmission(row: Row): SubmissionRecord {
  return {
    nonce: row.nonce as string,
    execution_id: row.execution_id as string,
    output_hash: row.output_hash as string,
    response: row.response ?? null,
    created_at: row.created_at as string,
  };
}

function toTask(row: Row): TaskRecord {
  return {
    task_id: row.task_id as string,
    principal: row.principal as string,
    tool: row.tool as string,
    arguments: row.arguments as Record<string, unknown>,
    run_id: str(row.run_id),
    workflow_id: str(row.workflow_id),
    status: row.status as TaskRecord['status'],
    status_message: str(row.status_message),
    snapshot: row.snapshot as Record<string, unknown>,
    created_at: row.created_at as string,
    last_updated_at: row.last_updated_at as string,
    ttl_ms: num(row.ttl_ms),
    expires_at: str(row.expires_at),
    poll_interval_ms: row.poll_interval_ms as number,
    input_requests: row.input_requests as TaskRecord['input_requests'],
    input_responses: row.input_responses as TaskRecord['input_responses'],
    result: (row.result as Record<string, unknown> | null) ?? null,
    error: (row.error as Record<string, unknown> | null) ?? null,
    owner: str(row.owner),
    lease_expires_at: str(row.lease_expires_at),
    meta: row.meta as Record<string, unknown>,
  };
}

const taskValues = (r: TaskRecord): unknown[] => [
  r.task_id,
  r.principal,
  r.tool,
  json(r.arguments),
  r.run_id,
  r.workflow_id,
  r.status,
  r.status_message,
  json(r.snapshot),
  r.created_at,
  r.last_updated_at,
  r.ttl_ms,
  r.expires_at,
  r.poll_interval_ms,
  json(r.input_requests),
  json(r.input_responses),
  jsonOrNull(r.result),
  jsonOrNull(r.error),
  r.owner,
  r.lease_expires_at,
  json(r.meta),
];

const EXECUTION_COLUMNS = `execution_id, principal, workflow_name, definition_hash, state, current_step,
  current_seq, completed_steps, context, token_nonce, token_attempt, token_issued_at, token_expires_at,
  started_at, updated_at, completed_at, duration_ms, metadata`;

const executionValues = (r: ExecutionRecord): unknown[] => [
  r.execution_id,
  r.principal,
  r.workflow_name,
  r.definition_hash,
  r.state,
  r.current_step,
  r.current_seq,
  json(r.completed_steps),
  json(r.context),
  r.token_nonce,
  r.token_attempt,
  r.token_issued_at,
  r.token_expires_at,
  r.started_at,
  r.updated_at,
  r.completed_at,
  r.duration_ms,
  json(r.metadata),
];

const stepValues = (r: StepRecord): unknown[] => [
  r.execution_id,
  r.seq,
  r.step_name,
  r.agent_name,
  r.iteration,
  r.status,
  r.attempts,
  r.started_at,
  r.completed_at,
  r.duration_ms,
  jsonOrNull(r.output),
  r.lease_owner,
  r.lease_expires_at,
];

const HEAD_COLUMNS = `execution_id, principal, workflow_name, state, current_step, current_seq, token_attempt,
  started_at, updated_at, completed_at, duration_ms`;

/** Every statement of the store, by name: `pg` prepares each once per connection. */
export const SQL = {
  getExecution: 'SELECT * FROM workflow_executions WHERE execution_id = $1',
  insertExecution: `INSERT INTO workflow_executions (${EXECUTION_COLUMNS})
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
  // What an execution never changes (principal, workflow, definition, start) is not written again.
  updateExecution: `UPDATE workflow_executions SET state = $2, current_step = $3, current_seq = $4,
    completed_steps = $5, context = $6, token_nonce = $7, token_attempt = $8, token_issued_at = $9,
    token_expires_at = $10, updated_at = $11, completed_at = $12, duration_ms = $13, metadata = $14
    WHERE execution_id = $1`,
  pageExecutions: 'SELECT * FROM workflow_executions WHERE execution_id > $1 ORDER BY execution_id LIMIT $2',
  getSteps: 'SELECT * FROM workflow_steps WHERE execution_id = $1 ORDER BY seq',
  getStep: 'SELECT * FROM workflow_steps WHERE execution_id = $1 AND seq = $2',
  insertStep: `INSERT INTO workflow_steps (execution_id, seq, step_name, agent_name, iteration, status,
    attempts, started_at, completed_at, duration_ms, output, lease_owner, lease_expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
  updateStep: `UPDATE workflow_steps SET status = $3, attempts = $4, completed_at = $5, duration_ms = $6,
    output = $7, lease_owner = $8, lease_expires_at = $9 WHERE execution_id = $1 AND seq = $2`,
  getArtifacts: 'SELECT * FROM workflow_artifacts WHERE execution_id = $1 ORDER BY id',
  getStepArtifacts: 'SELECT * FROM workflow_artifacts WHERE execution_id = $1 AND step_name = $2 ORDER BY id',
  insertArtifact: `INSERT INTO workflow_artifacts (execution_id, step_name, artifact_type, name, content,
    content_type, size_bytes, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
  insertTelemetry: `INSERT INTO telemetry_events (event_type, execution_id, step_name, agent_name, metadata,
    created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
  getSubmission: 'SELECT * FROM token_submissions WHERE nonce = $1',
  getSubmissions: 'SELECT * FROM token_submissions WHERE execution_id = $1 ORDER BY created_at, nonce',
  recordSubmission: `INSERT INTO token_submissions (nonce, execution_id, output_hash, response, created_at)
    VALUES ($1, $2, $3, $4, $5)`,
  updateSubmission: 'UPDATE token_submissions SET response = $2 WHERE nonce = $1',
  getDefinition: 'SELECT content FROM workflow_definitions WHERE hash = $1',
  getPinnedDefinition: 'SELECT * FROM workflow_definitions WHERE hash = $1',
  pinDefinition: `INSERT INTO workflow_definitions (hash, workflow_id, content, created_at)
    VALUES ($1, $2, $3, $4) ON CONFLICT (hash) DO NOTHING`,
  schemaVersion: 'SELECT COALESCE(MAX(version), 0)::integer AS version FROM schema_migrations',
  listPrincipals: 'SELECT DISTINCT principal FROM workflow_executions ORDER BY principal',
  changedExecutions: `SELECT ${HEAD_COLUMNS} FROM workflow_executions WHERE principal = $1 AND updated_at >= $2
    ORDER BY updated_at, execution_id LIMIT $3`,
  getTask: 'SELECT * FROM tasks WHERE task_id = $1',
  insertTask: `INSERT INTO tasks (task_id, principal, tool, arguments, run_id, workflow_id, status,
    status_message, snapshot, created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms, input_requests,
    input_responses, result, error, owner, lease_expires_at, meta) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
    $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
  // What a task never changes (principal, creation) is not written again.
  updateTask: `UPDATE tasks SET tool = $3, arguments = $4, run_id = $5, workflow_id = $6, status = $7,
    status_message = $8, snapshot = $9, last_updated_at = $11, ttl_ms = $12, expires_at = $13,
    poll_interval_ms = $14, input_requests = $15, input_responses = $16, result = $17, error = $18, owner = $19,
    lease_expires_at = $20, meta = $21 WHERE task_id = $1 AND $2::text IS NOT NULL AND $10::timestamptz IS NOT NULL`,
  deleteExpiredTasks: `DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at < $1
    AND status IN ('completed','failed','cancelled')`,
} as const;

type Name = keyof typeof SQL;

/** The list query for one combination of filters (one prepared statement per combination). */
export function listQuery(filter: ExecutionFilter): { name: string; text: string; values: unknown[] } {
  const f = new SqlFilter('numbered')
    .equals('p', 'principal', filter.principal)
    .equals('w', 'workflow_name', filter.workflow_name);
  const states = [...new Set(filter.states ?? [])];
  if (filter.principal !== undefined && states.length > 1) {
    // Several states (the default listing: the unfinished ones): the newest of each state from the
    // (principal, state, updated_at) index, merged. Filtering one principal's index by state instead
    // would read every finished execution of the principal to find the few unfinished ones.
    const statesParam = f.param(states);
    const limit = f.param(filter.limit);
    const text = `SELECT e.* FROM unnest(${statesParam}::text[]) AS wanted(state)
      CROSS JOIN LATERAL (SELECT * FROM workflow_executions
        ${f.where} AND state = wanted.state
        ORDER BY updated_at DESC, execution_id DESC LIMIT ${limit}) AS e
      ORDER BY e.updated_at DESC, e.execution_id DESC LIMIT ${limit}`;
    return { name: `list_${f.key}_each`, text, values: f.values };
  }
  f.oneOf('s', 'state', states);
  const text = `SELECT * FROM workflow_executions ${f.where}
    ORDER BY updated_at DESC, execution_id DESC LIMIT ${f.param(filter.limit)}`;
  return { name: `list_${f.key}`, text, values: f.values };
}

function toHead(row: Row): ExecutionHead {
  return {
    execution_id: row.execution_id as string,
    principal: row.principal as string,
    workflow_name: row.workflow_name as string,
    state: row.state as ExecutionState,
    current_step: str(row.current_step),
    current_seq: row.current_seq as number,
    token_attempt: row.token_attempt as number,
    started_at: row.started_at as string,
    updated_at: row.updated_at as string,
    completed_at: str(row.completed_at),
    duration_ms: num(row.duration_ms),
  };
}

/** WHERE clauses shared by pages and counts. */
function executionFilter(filter: ExecutionCountFilter & { states?: readonly ExecutionState[] | undefined }) {
  const f = new SqlFilter('numbered')
    .equals('p', 'principal', filter.principal)
    .equals('w', 'workflow_name', filter.workflow_name)
    .oneOf('s', 'state', filter.states);
  if (filter.updated_since !== undefined)
    f.add('a', `updated_at >= ${f.param(filter.updated_since)}::timestamptz`);
  if (filter.updated_before !== undefined)
    f.add('b', `updated_at < ${f.param(filter.updated_before)}::timestamptz`);
  return f;
}

/** A keyset page of execution heads (newest first), one prepared statement per combination of filters. */
export function headsQuery(filter: ExecutionPageFilter): { name: string; text: string; values: unknown[] } {
  const f = executionFilter(filter);
  const { older_than: older, newer_than: newer } = filter;
  if (older !== undefined) {
    const at = f.param(older.updated_at);
    f.add('o', `(updated_at, execution_id) < (${at}::timestamptz, ${f.param(older.execution_id)})`);
  }
  if (newer !== undefined) {
    const at = f.param(newer.updated_at);
    f.add('n', `(updated_at, execution_id) > (${at}::timestamptz, ${f.param(newer.execution_id)})`);
  }
  const order = newer !== undefined ? 'ASC' : 'DESC';
  const text = `SELECT ${HEAD_COLUMNS} FROM workflow_executions ${f.where}
    ORDER BY updated_at ${order}, execution_id ${order} LIMIT ${f.param(filter.limit)}`;
  return { name: `heads_${f.key}`, text, values: f.values };
}

/** Executions per state for the same filters as a page. */
export function countsQuery(filter: ExecutionCountFilter): { name: string; text: string; values: unknown[] } {
  const f = executionFilter(filter);
  const text = `SELECT state, COUNT(*)::integer AS n FROM workflow_executions ${f.where} GROUP BY state`;
  return { name: `counts_${f.key}`, text, values: f.values };
}

export function telemetryQuery(filter: TelemetryFilter): { name: string; text: string; values: unknown[] } {
  const f = new SqlFilter('numbered');
  if (filter.principal !== undefined) {
    // A lookup by primary key per event: an IN (...) list would read every execution of the principal.
    f.add(
      'p',
      `EXISTS (SELECT 1 FROM workflow_executions e WHERE e.execution_id = telemetry_events.execution_id AND e.principal = ${f.param(filter.principal)})`,
    );
  }
  f.equals('e', 'execution_id', filter.execution_id).equals('t', 'event_type', filter.event_type);
  const text = `SELECT * FROM (SELECT * FROM telemetry_events ${f.where}
    ORDER BY id DESC LIMIT ${f.param(filter.limit)}) AS recent ORDER BY id`;
  return { name: `telemetry_${f.key}`, text, values: f.values };
}

/** The task list query for one combination of filters (one prepared statement per combination). */
export function taskQuery(filter: TaskFilter): { name: string; text: string; values: unknown[] } {
  const f = new SqlFilter('numbered')
    .equals('p', 'principal', filter.principal)
    .equals('r', 'run_id', filter.run_id)
    .oneOf('s', 'status', filter.statuses);
  if (filter.before !== undefined) {
    const at = f.param(filter.before.created_at);
    f.add('b', `(created_at, task_id) < (${at}::timestamptz, ${f.param(filter.before.task_id)})`);
  }
  const text = `SELECT * FROM tasks ${f.where}
    ORDER BY created_at DESC, task_id DESC LIMIT ${f.param(filter.limit)}`;
  return { name: `tasks_${f.key}`, text, values: f.values };
}

const TERMINAL_STATES = new Set(['completed', 'failed', 'abandoned', 'diverged']);

/**
 * Removes finished executions of one principal with everything hanging off them, and finished tasks
 * (with their run, or runless ones matching the filter); counts first, deletes unless a dry run.
 */
async function purge(run: Run, filter: PurgeFilter): Promise<PurgeCounts> {
  const states = filter.states.filter((s) => TERMINAL_STATES.has(s));
  const doomed: string[] = [];
  if (states.length > 0) {
    const values: unknown[] = [filter.principal, states];
    const where = ['principal = $1', 'state = ANY($2::text[])'];
    if (filter.workflow_name !== undefined) {
      values.push(filter.workflow_name);
      where.push(`workflow_name = $${values.length}`);
    }
    if (filter.finished_before !== undefined) {
      values.push(filter.finished_before);
      where.push(`COALESCE(completed_at, updated_at) < $${values.length}::timestamptz`);
    }
    const rows = await run(
      `purge_ids_${values.length}_${filter.workflow_name !== undefined ? 'w' : ''}`,
      `SELECT execution_id FROM workflow_executions WHERE ${where.join(' AND ')}`,
      values,
    );
    for (const row of rows) doomed.push(row.execution_id as string);
  }
  const taskStatuses = [
    ...(states.includes('completed') ? ['completed'] : []),
    ...(states.includes('failed') ? ['failed'] : []),
    ...(states.includes('abandoned') ? ['cancelled'] : []),
  ];
  const taskValues: unknown[] = [filter.principal, doomed, taskStatuses];
  const runless = [
    'principal = $1',
    'status = ANY($3::text[])',
    '(run_id IS NULL OR run_id NOT IN (SELECT execution_id FROM workflow_executions WHERE principal = $1))',
  ];
  if (filter.workflow_name !== undefined) {
    taskValues.push(filter.workflow_name);
    runless.push(`workflow_id = $${taskValues.length}`);
  }
  if (filter.finished_before !== undefined) {
    taskValues.push(filter.finished_before);
    runless.push(`last_updated_at < $${taskValues.length}::timestamptz`);
  }
  const taskWhere = `(principal = $1 AND status IN ('completed','failed','cancelled') AND run_id = ANY($2::text[]))
    OR (${runless.join(' AND ')})`;
  const taskKey = `${filter.workflow_name !== undefined ? 'w' : ''}${filter.finished_before !== undefined ? 'f' : ''}`;
  const count = async (name: string, text: string, values: unknown[]) =>
    Number((await run(name, text, values))[0]?.n ?? 0);
  const ids = [doomed];
  const counts: PurgeCounts = {
    executions: doomed.length,
    steps: await count(
      'purge_count_steps',
      'SELECT count(*) AS n FROM workflow_steps WHERE execution_id = ANY($1::text[])',
      ids,
    ),
    artifacts: await count(
      'purge_count_artifacts',
      'SELECT count(*) AS n FROM workflow_artifacts WHERE execution_id = ANY($1::text[])',
      ids,
    ),
    telemetry: await count(
      'purge_count_telemetry',
      'SELECT count(*) AS n FROM telemetry_events WHERE execution_id = ANY($1::text[])',
      ids,
    ),
    submissions: await count(
      'purge_count_submissions',
      'SELECT count(*) AS n FROM token_submissions WHERE execution_id = ANY($1::text[])',
      ids,
    ),
    tasks: await count(
      `purge_count_tasks_${taskKey}`,
      `SELECT count(*) AS n FROM tasks WHERE ${taskWhere}`,
      taskValues,
    ),
  };
  if (!filter.dry_run) {
    await run(`purge_tasks_${taskKey}`, `DELETE FROM tasks WHERE ${taskWhere}`, taskValues);
    await run('purge_telemetry', 'DELETE FROM telemetry_events WHERE execution_id = ANY($1::text[])', ids);
    // Steps, artifacts and submissions go with their execution (ON DELETE CASCADE).
    await run(
      'purge_executions',
      'DELETE FROM workflow_executions WHERE execution_id = ANY($1::text[])',
      ids,
    );
  }
  return counts;
}

/** The store's operations over one way of running statements (the pool, or a transaction's client). */
function operations(run: Run): StoreWriter {
  const q = (name: Name, values: unknown[]) => run(name, SQL[name], values);
  const first = async (name: Name, values: unknown[]) => (await q(name, values))[0];
  return {
    getExecution: async (id) => {
      const row = await first('getExecution', [id]);
      return row ? toExecution(row) : undefined;
    },
    listExecutions: async (filter) => {
      const { name, text, values } = listQuery(filter);
      return (await run(name, text, values)).map(toExecution);
    },
    pageExecutions: async (after, limit) =>
      (await q('pageExecutions', [after ?? '', limit])).map(toExecution),
    listExecutionHeads: async (filter) => {
      const { name, text, values } = headsQuery(filter);
      const rows = (await run(name, text, values)).map(toHead);
      return filter.newer_than !== undefined ? rows.reverse() : rows;
    },
    countExecutions: async (filter) => {
      const { name, text, values } = countsQuery(filter);
      const rows = await run(name, text, values);
      return Object.fromEntries(rows.map((r) => [r.state as ExecutionState, r.n as number]));
    },
    listPrincipals: async () => (await q('listPrincipals', [])).map((r) => r.principal as string),
    changedExecutions: async ({ principal, since, limit }) =>
      (await q('changedExecutions', [principal, since, limit])).map(toHead),
    getSteps: async (id) => (await q('getSteps', [id])).map(toStep),
    getStep: async (id, seq) => {
      const row = await first('getStep', [id, seq]);
      return row ? toStep(row) : undefined;
    },
    getArtifacts: async (id, stepName) =>
      (stepName === undefined
        ? await q('getArtifacts', [id])
        : await q('getStepArtifacts', [id, stepName])
      ).map(toArtifact),
    getTelemetry: async (filter) => {
      const { name, text, values } = telemetryQuery(filter);
      return (await run(name, text, values)).map(toTelemetry);
    },
    getSubmission: async (nonce) => {
      const row = await first('getSubmission', [nonce]);
      return row ? toSubmission(row) : undefined;
    },
    getSubmissions: async (id) => (await q('getSubmissions', [id])).map(toSubmission),
    getDefinition: async (hash) => (await first('getDefinition', [hash]))?.content as string | undefined,
    getPinnedDefinition: async (hash) => {
      const row = await first('getPinnedDefinition', [hash]);
      return row ? (row as unknown as DefinitionRecord) : undefined;
    },
    pinDefinition: async (hash, workflowId, content) => {
      await q('pinDefinition', [hash, workflowId, content, now()]);
    },
    importDefinition: async (record) => {
      await q('pinDefinition', [record.hash, record.workflow_id, record.content, record.created_at]);
    },
    insertExecution: async (record) => {
      await q('insertExecution', executionValues(record));
    },
    updateExecution: async (r) => {
      await q('updateExecution', [
        r.execution_id,
        r.state,
        r.current_step,
        r.current_seq,
        json(r.completed_steps),
        json(r.context),
        r.token_nonce,
        r.token_attempt,
        r.token_issued_at,
        r.token_expires_at,
        r.updated_at,
        r.completed_at,
        r.duration_ms,
        json(r.metadata),
      ]);
    },
    insertStep: async (record) => {
      await q('insertStep', stepValues(record));
    },
    updateStep: async (r) => {
      await q('updateStep', [
        r.execution_id,
        r.seq,
        r.status,
        r.attempts,
        r.completed_at,
        r.duration_ms,
        jsonOrNull(r.output),
        r.lease_owner,
        r.lease_expires_at,
      ]);
    },
    insertArtifact: async (artifact) => importArtifact(q, { ...artifact, created_at: now() }),
    importArtifact: async (record) => importArtifact(q, record),
    insertTelemetry: async (event) => importTelemetry(q, { ...event, created_at: now() }),
    importTelemetry: async (record) => importTelemetry(q, record),
    recordSubmission: async (record) => {
      await q('recordSubmission', [
        record.nonce,
        record.execution_id,
        record.output_hash,
        json(record.response),
        record.created_at,
      ]);
    },
    updateSubmission: async (nonce, response) => {
      await q('updateSubmission', [nonce, json(response)]);
    },
    getTask: async (taskId) => {
      const row = await first('getTask', [taskId]);
      return row ? toTask(row) : undefined;
    },
    listTasks: async (filter) => {
      const { name, text, values } = taskQuery(filter);
      return (await run(name, text, values)).map(toTask);
    },
    insertTask: async (record) => {
      await q('insertTask', taskValues(record));
    },
    updateTask: async (record) => {
      await q('updateTask', taskValues(record));
    },
    deleteExpiredTasks: async (at) =>
      Number(
        (
          await run(
            'deleteExpiredTasks_n',
            `WITH gone AS (${SQL.deleteExpiredTasks} RETURNING 1) SELECT count(*) AS n FROM gone`,
            [at],
          )
        )[0]?.n ?? 0,
      ),
    purgeHistory: async (filter) => purge(run, filter),
  };
}

async function importArtifact(
  q: (name: Name, values: unknown[]) => Promise<Row[]>,
  a: Omit<ArtifactRecord, 'id'>,
): Promise<number> {
  const rows = await q('insertArtifact', [
    a.execution_id,
    a.step_name,
    a.artifact_type,
    a.name,
    Buffer.from(a.content, 'utf8'),
    a.content_type,
    a.size_bytes,
    jsonOrNull(a.metadata),
    a.created_at,
  ]);
  return rows[0]?.id as number;
}

async function importTelemetry(
  q: (name: Name, values: unknown[]) => Promise<Row[]>,
  e: Omit<TelemetryRecord, 'id'>,
): Promise<void> {
  await q('insertTelemetry', [
    e.event_type,
    e.execution_id,
    e.step_name,
    e.agent_name,
    jsonOrNull(e.metadata),
    e.created_at,
  ]);
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
 * Concurrency: every transaction runs at SERIALIZABLE isolation and is retried from the start when
 * PostgreSQL reports a serialization failure (or a deadlock). Of the three ways to make the service's
 * read-then-write transactions (lease claims, token submissions, state changes) race-free across
 * processes, this is the one that gives the port's guarantee — transactions behave as if run one at a
 * time — for every transaction without the adapter knowing which rows a caller will write:
 * `SELECT … FOR UPDATE` would need each read to say whether a write follows and cannot lock a row that
 * does not exist yet (two starts of one execution id), and an advisory lock per execution would miss
 * anything not keyed by one execution. Executions that do not touch each other proceed in parallel;
 * two transactions on one execution conflict, one commits and the other runs again on the new state.
 * The port documents that `fn` may run more than once.
 */
export class PostgresExecutionStore implements ExecutionStore {
  readonly location: string;
  private readonly pool: pg.Pool;
  private readonly target: Target;
  private readonly reads: StoreWriter;
  private readonly lockTimeoutMs: number;
  private closed: Promise<void> | undefined;
  private readonly listener: NotificationListener;
  readonly documents: PostgresDocuments;

  constructor(url: string, options: PostgresStoreOptions = {}) {
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
      types,
    });
    // An idle connection the server drops (restart, failover) must not crash the process.
    const log = options.log;
    this.pool.on('error', (error) => {
      log?.(`PostgreSQL connection dropped: ${this.describe(error)}`);
    });
    const read: Run = async (name, text, values) => {
      try {
        return (await this.pool.query({ name, text, values })).rows;
      } catch (error) {
        throw this.storageError(error);
      }
    };
    this.reads = operations(read);
    this.listener = new NotificationListener({
      url,
      channels: [EXECUTIONS_CHANNEL, RUNTIME_CHANNEL],
      log: options.log,
      describe: (error) => this.describe(error),
    });
    this.documents = new PostgresDocuments({
      location: this.location,
      read,
      transaction: (body) => this.serializable(body, { retryDuplicates: true }),
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
      const applied = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
          (r) => r.version,
        ),
      );
      const newest = Math.max(0, ...applied);
      const known = PG_MIGRATIONS.length;
      if (newest > known) {
        throw new Error(
          `the database was written by a newer workflowlookup (schema version ${newest}, this one knows ${known}); upgrade workflowlookup`,
        );
      }
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
    return this.serializable((run) => fn(operations(run)));
  }

  /**
   * Runs `body` in a SERIALIZABLE transaction, from the start again after a serialization failure
   * (and, with `retryDuplicates`, after a unique violation: a competitor inserted the same key first,
   * and the next run sees it).
   */
  private async serializable<T>(
    body: (run: Run) => Promise<T>,
    options: { retryDuplicates?: boolean } = {},
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const session = await this.checkout();
      const { client } = session;
      // The first statement that failed: a transaction that failed once is over, even if `fn` caught it.
      let failure: unknown;
      let open = true;
      const run: Run = async (name, text, values) => {
        if (!open) throw new Error('the transaction has ended; use the store outside it');
        try {
          return (await client.query({ name, text, values })).rows;
        } catch (error) {
          failure ??= session.lost() ?? error;
          throw this.storageError(failure);
        }
      };
      let broken: Error | undefined;
      try {
        await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
        const result = await body(run);
        if (failure !== undefined) throw failure;
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((e: Error) => {
          broken = e;
        });
        const cause = failure ?? session.lost() ?? error;
        // A duplicate key is retried a few times only: one more run sees the competitor's row.
        const duplicate = options.retryDuplicates === true && isDuplicate(cause) && attempt <= 3;
        if ((isSerializationFailure(cause) || duplicate) && !broken) {
          if (attempt < MAX_ATTEMPTS) {
            await pause(Math.random() * Math.min(100, 2 ** attempt));
            continue;
          }
          fail({
            code: 'storage_error',
            message: 'Storage error',
            details: `gave up after ${MAX_ATTEMPTS} attempts: other calls keep changing the same execution; retry`,
          });
        }
        throw this.storageError(error instanceof DomainFailure ? error : cause);
      } finally {
        open = false;
        session.release(broken);
      }
    }
  }

  getExecution = (id: string) => this.reads.getExecution(id);
  listExecutions = (filter: ExecutionFilter) => this.reads.listExecutions(filter);
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

  async schemaVersion(): Promise<number> {
    try {
      const { rows } = await this.pool.query<{ version: number }>(SQL.schemaVersion);
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
