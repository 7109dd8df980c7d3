import type {
  ApprovalRecord,
  ArtifactRecord,
  DefinitionRecord,
  ExecutionHead,
  ExecutionRecord,
  RecordEventRow,
  StepRecord,
  SubmissionRecord,
  TaskRecord,
  TelemetryRecord,
} from '../execution-store.js';

/**
 * The store's tables as both adapters write and read them: columns in insert order with their kind,
 * the key, the columns an update writes, and the mapping between rows and the port's records.
 *
 * Both adapters read JSON columns back as text (SQLite stores text; the PostgreSQL adapter turns off
 * `pg`'s JSON parsing) and timestamps as the port's ISO strings, so one set of mappers serves both.
 */
export type Row = Record<string, unknown>;

/**
 * `json`: written as JSON text, `null` included; `json?`: SQL NULL for null. `timestamp`: ISO text
 * (PostgreSQL `timestamptz`). `bytes`: free text that may hold U+0000 (PostgreSQL `bytea`).
 */
export type ColumnKind = 'text' | 'integer' | 'bigint' | 'timestamp' | 'json' | 'json?' | 'bytes';

export interface TableSpec<R> {
  readonly table: TableName;
  readonly columns: readonly (readonly [name: string, kind: ColumnKind])[];
  /** The columns that name one row. */
  readonly key: readonly string[];
  /** What an update writes: what never changes (the key, the owner, the start) is not written again. */
  readonly updates: readonly string[];
  /** The values to bind, by column name (JSON columns as text; bytes as the adapter's dialect wants). */
  readonly values: (record: R) => Row;
}

export type TableName =
  | 'workflow_definitions'
  | 'workflow_executions'
  | 'workflow_steps'
  | 'workflow_artifacts'
  | 'telemetry_events'
  | 'token_submissions'
  | 'tasks'
  | 'approvals'
  | 'execution_record';

const json = (value: unknown): string => JSON.stringify(value ?? null);
const jsonOrNull = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);

/** A JSON column read back (text), or `fallback` for SQL NULL. */
export const parse = <T>(text: unknown, fallback: T): T =>
  typeof text === 'string' ? (JSON.parse(text) as T) : fallback;
const str = (v: unknown) => (v as string | null | undefined) ?? null;
const num = (v: unknown) => (v as number | null | undefined) ?? null;

/** Encodes a record's fields: JSON columns become text, everything else is bound as it is. */
function encoder<R>(columns: TableSpec<R>['columns']): (record: R) => Row {
  return (record) => {
    const out: Row = {};
    const fields = record as unknown as Row;
    for (const [name, kind] of columns) {
      const value = fields[name] ?? null;
      out[name] = kind === 'json' ? json(value) : kind === 'json?' ? jsonOrNull(value) : value;
    }
    return out;
  };
}

function spec<R>(
  table: TableName,
  columns: TableSpec<R>['columns'],
  key: readonly string[],
  unchanged: readonly string[],
): TableSpec<R> {
  const fixed = new Set([...key, ...unchanged]);
  return {
    table,
    columns,
    key,
    updates: columns.map(([name]) => name).filter((name) => !fixed.has(name)),
    values: encoder(columns),
  };
}

export const DEFINITIONS = spec<DefinitionRecord>(
  'workflow_definitions',
  [
    ['hash', 'text'],
    ['workflow_id', 'text'],
    ['content', 'text'],
    ['created_at', 'timestamp'],
  ],
  ['hash'],
  ['workflow_id', 'content', 'created_at'],
);

export const EXECUTIONS = spec<ExecutionRecord>(
  'workflow_executions',
  [
    ['execution_id', 'text'],
    ['principal', 'text'],
    ['workflow_name', 'text'],
    ['definition_hash', 'text'],
    ['state', 'text'],
    ['current_step', 'text'],
    ['current_seq', 'integer'],
    ['completed_steps', 'json'],
    ['context', 'json'],
    ['token_nonce', 'text'],
    ['token_attempt', 'integer'],
    ['token_issued_at', 'timestamp'],
    ['token_expires_at', 'timestamp'],
    ['started_at', 'timestamp'],
    ['updated_at', 'timestamp'],
    ['completed_at', 'timestamp'],
    ['duration_ms', 'bigint'],
    ['metadata', 'json'],
    ['parent_id', 'text'],
  ],
  ['execution_id'],
  ['principal', 'workflow_name', 'definition_hash', 'started_at', 'parent_id'],
);

export const STEPS = spec<StepRecord>(
  'workflow_steps',
  [
    ['execution_id', 'text'],
    ['seq', 'integer'],
    ['step_name', 'text'],
    ['agent_name', 'text'],
    ['iteration', 'integer'],
    ['status', 'text'],
    ['attempts', 'integer'],
    ['started_at', 'timestamp'],
    ['completed_at', 'timestamp'],
    ['duration_ms', 'bigint'],
    ['output', 'json?'],
    ['lease_owner', 'text'],
    ['lease_expires_at', 'timestamp'],
  ],
  ['execution_id', 'seq'],
  ['step_name', 'agent_name', 'iteration', 'started_at'],
);

/** Inserted only; the id is the store's (returned). */
export const ARTIFACTS = spec<Omit<ArtifactRecord, 'id'>>(
  'workflow_artifacts',
  [
    ['execution_id', 'text'],
    ['step_name', 'text'],
    ['artifact_type', 'text'],
    ['name', 'text'],
    ['content', 'bytes'],
    ['content_type', 'text'],
    ['size_bytes', 'bigint'],
    ['metadata', 'json?'],
    ['created_at', 'timestamp'],
  ],
  [],
  [],
);

/** Inserted only, ids in insert order. */
export const TELEMETRY = spec<Omit<TelemetryRecord, 'id'>>(
  'telemetry_events',
  [
    ['event_type', 'text'],
    ['execution_id', 'text'],
    ['step_name', 'text'],
    ['agent_name', 'text'],
    ['metadata', 'json?'],
    ['created_at', 'timestamp'],
  ],
  [],
  [],
);

export const SUBMISSIONS = spec<SubmissionRecord>(
  'token_submissions',
  [
    ['nonce', 'text'],
    ['execution_id', 'text'],
    ['output_hash', 'text'],
    ['response', 'json'],
    ['created_at', 'timestamp'],
  ],
  ['nonce'],
  ['execution_id', 'output_hash', 'created_at'],
);

export const TASKS = spec<TaskRecord>(
  'tasks',
  [
    ['task_id', 'text'],
    ['principal', 'text'],
    ['tool', 'text'],
    ['arguments', 'json'],
    ['run_id', 'text'],
    ['workflow_id', 'text'],
    ['status', 'text'],
    ['status_message', 'text'],
    ['snapshot', 'json'],
    ['created_at', 'timestamp'],
    ['last_updated_at', 'timestamp'],
    ['ttl_ms', 'bigint'],
    ['expires_at', 'timestamp'],
    ['poll_interval_ms', 'integer'],
    ['input_requests', 'json'],
    ['input_responses', 'json'],
    ['result', 'json?'],
    ['error', 'json?'],
    ['owner', 'text'],
    ['lease_expires_at', 'timestamp'],
    ['meta', 'json'],
  ],
  ['task_id'],
  ['principal', 'created_at'],
);

export const APPROVALS = spec<ApprovalRecord>(
  'approvals',
  [
    ['approval_id', 'text'],
    ['execution_id', 'text'],
    ['principal', 'text'],
    ['workflow_name', 'text'],
    ['step_name', 'text'],
    ['seq', 'integer'],
    ['prompt', 'text'],
    ['approvers', 'json?'],
    ['status', 'text'],
    ['requested_at', 'timestamp'],
    ['expires_at', 'timestamp'],
    ['output', 'json'],
    ['poll_nonce', 'text'],
    ['decided_by', 'text'],
    ['decided_via', 'text'],
    ['decided_at', 'timestamp'],
    ['reason', 'text'],
  ],
  ['approval_id'],
  [
    'execution_id',
    'principal',
    'workflow_name',
    'step_name',
    'seq',
    'prompt',
    'approvers',
    'requested_at',
    'output',
    'poll_nonce',
  ],
);

export const RECORD_EVENTS = spec<RecordEventRow>(
  'execution_record',
  [
    ['execution_id', 'text'],
    ['n', 'integer'],
    ['type', 'text'],
    // Text, not a timestamp: the hash covers it exactly as it was written.
    ['at', 'text'],
    ['step', 'text'],
    ['body', 'json'],
    ['prev', 'text'],
    ['hash', 'text'],
    ['migrated', 'integer'],
  ],
  ['execution_id', 'n'],
  ['type', 'at', 'step', 'body', 'prev', 'hash', 'migrated'],
);

export function toRecordEvent(row: Row): RecordEventRow {
  return {
    execution_id: row.execution_id as string,
    n: Number(row.n),
    type: row.type as string,
    at: row.at as string,
    step: str(row.step),
    body: parse(row.body, {}),
    prev: row.prev as string,
    hash: row.hash as string,
    migrated: Number(row.migrated),
  };
}

export function toApproval(row: Row): ApprovalRecord {
  return {
    approval_id: row.approval_id as string,
    execution_id: row.execution_id as string,
    principal: row.principal as string,
    workflow_name: row.workflow_name as string,
    step_name: row.step_name as string,
    seq: row.seq as number,
    prompt: row.prompt as string,
    approvers: parse(row.approvers, null),
    status: row.status as ApprovalRecord['status'],
    requested_at: row.requested_at as string,
    expires_at: str(row.expires_at),
    output: parse(row.output, null),
    poll_nonce: row.poll_nonce as string,
    decided_by: str(row.decided_by),
    decided_via: str(row.decided_via),
    decided_at: str(row.decided_at),
    reason: str(row.reason),
  };
}

/** What a listing shows of an execution: no context, tokens or metadata (which can be large). */
export const HEAD_COLUMNS = `execution_id, principal, workflow_name, state, current_step, current_seq, token_attempt,
  started_at, updated_at, completed_at, duration_ms, parent_id`;

export function toHead(row: Row): ExecutionHead {
  return {
    execution_id: row.execution_id as string,
    principal: row.principal as string,
    workflow_name: row.workflow_name as string,
    state: row.state as ExecutionRecord['state'],
    current_step: str(row.current_step),
    current_seq: row.current_seq as number,
    token_attempt: row.token_attempt as number,
    started_at: row.started_at as string,
    updated_at: row.updated_at as string,
    completed_at: str(row.completed_at),
    duration_ms: num(row.duration_ms),
    parent_id: str(row.parent_id),
  };
}

export function toExecution(row: Row): ExecutionRecord {
  return {
    ...toHead(row),
    definition_hash: row.definition_hash as string,
    completed_steps: parse(row.completed_steps, []),
    context: parse(row.context, {}),
    token_nonce: str(row.token_nonce),
    token_issued_at: str(row.token_issued_at),
    token_expires_at: str(row.token_expires_at),
    metadata: parse(row.metadata, {}),
  };
}

export function toStep(row: Row): StepRecord {
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
    output: parse(row.output, null),
    lease_owner: str(row.lease_owner),
    lease_expires_at: str(row.lease_expires_at),
  };
}

export function toArtifact(row: Row): ArtifactRecord {
  const content = row.content;
  return {
    id: row.id as number,
    execution_id: row.execution_id as string,
    step_name: row.step_name as string,
    artifact_type: row.artifact_type as ArtifactRecord['artifact_type'],
    name: row.name as string,
    content: typeof content === 'string' ? content : (content as Buffer).toString('utf8'),
    content_type: row.content_type as string,
    size_bytes: row.size_bytes as number,
    metadata: parse(row.metadata, null),
    created_at: row.created_at as string,
  };
}

export function toTelemetry(row: Row): TelemetryRecord {
  return {
    id: row.id as number,
    event_type: row.event_type as string,
    execution_id: str(row.execution_id),
    step_name: str(row.step_name),
    agent_name: str(row.agent_name),
    metadata: parse(row.metadata, null),
    created_at: row.created_at as string,
  };
}

export function toSubmission(row: Row): SubmissionRecord {
  return {
    nonce: row.nonce as string,
    execution_id: row.execution_id as string,
    output_hash: row.output_hash as string,
    response: parse(row.response, null),
    created_at: row.created_at as string,
  };
}

export function toDefinition(row: Row): DefinitionRecord {
  return {
    hash: row.hash as string,
    workflow_id: row.workflow_id as string,
    content: row.content as string,
    created_at: row.created_at as string,
  };
}

export function toTask(row: Row): TaskRecord {
  return {
    task_id: row.task_id as string,
    principal: row.principal as string,
    tool: row.tool as string,
    arguments: parse(row.arguments, {}),
    run_id: str(row.run_id),
    workflow_id: str(row.workflow_id),
    status: row.status as TaskRecord['status'],
    status_message: str(row.status_message),
    snapshot: parse(row.snapshot, {}),
    created_at: row.created_at as string,
    last_updated_at: row.last_updated_at as string,
    ttl_ms: num(row.ttl_ms),
    expires_at: str(row.expires_at),
    poll_interval_ms: row.poll_interval_ms as number,
    input_requests: parse(row.input_requests, {}),
    input_responses: parse(row.input_responses, {}),
    result: parse(row.result, null),
    error: parse(row.error, null),
    owner: str(row.owner),
    lease_expires_at: str(row.lease_expires_at),
    meta: parse(row.meta, {}),
  };
}
