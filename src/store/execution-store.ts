import type { ExecutionState } from '../engine/state-machine.js';
import type { RuntimeDocumentStore } from './runtime-documents.js';

/**
 * The storage port for durable executions, implemented by the SQLite adapter (src/store/sqlite) and
 * the PostgreSQL adapter (src/store/postgres) with the same behaviour, which one contract suite
 * (src/store/store-contract.test.ts) checks on both. What a `transaction` guarantees, for any number
 * of processes sharing the store:
 * - it is all-or-nothing, and a statement the database refuses fails it, even if `fn` caught the error
 *   (PostgreSQL may send writes later in the transaction than `fn` made them: reads still see them);
 * - an execution, a step or a task it reads by key (`getExecution`, `getStep`, `getTask`) is its own
 *   until it ends: another transaction reading the same row waits, then reads what this one committed.
 *   So transactions that start from the same execution run one after the other, and a read-then-write
 *   from that row (advancing a step, claiming a lease, recording a used token) never loses an update;
 * - an insert of a key another transaction inserted first fails, and the adapter may run `fn` again,
 *   which then finds the other's row (two starts of one execution id, a token recorded twice);
 * - transactions on different executions do not wait for each other, and never fail because of each
 *   other. Listings read inside a transaction are not locked: a row another transaction inserts
 *   meanwhile may or may not appear.
 * SQLite gives more (one writer at a time: every transaction is serializable); PostgreSQL runs at
 * READ COMMITTED with row locks. Timestamps are ISO-8601 UTC strings as `Date#toISOString` writes them.
 */
export interface ExecutionRecord {
  execution_id: string;
  /** Who started it: only this principal sees and advances it ('local' for stdio). */
  principal: string;
  workflow_name: string;
  /** sha256 of the pinned definition (see `definitions`). */
  definition_hash: string;
  state: ExecutionState;
  /** Id of the step in progress; null once finished. */
  current_step: string | null;
  /** Sequence number of the step in progress (1-based count of steps handed out). */
  current_seq: number;
  /** Engine state: completed step ids and the context (loop progress included). */
  completed_steps: string[];
  context: Record<string, unknown>;
  token_nonce: string | null;
  token_attempt: number;
  token_issued_at: string | null;
  token_expires_at: string | null;
  started_at: string;
  updated_at: string;
  completed_at: string | null;
  duration_ms: number | null;
  metadata: Record<string, unknown>;
  /** The execution that delegated to this one (a child execution), or null; it never changes. */
  parent_id: string | null;
}

export type StepStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface StepRecord {
  execution_id: string;
  seq: number;
  step_name: string;
  agent_name: string;
  iteration: number | null;
  status: StepStatus;
  attempts: number;
  started_at: string | null;
  completed_at: string | null;
  duration_ms: number | null;
  output: unknown;
  /** Who is running it now (command steps only), and until when; an expired lease may be taken over. */
  lease_owner: string | null;
  lease_expires_at: string | null;
}

export interface ArtifactRecord {
  id: number;
  execution_id: string;
  step_name: string;
  artifact_type: 'file' | 'data' | 'report' | 'finding';
  name: string;
  content: string;
  content_type: string;
  size_bytes: number;
  metadata: Record<string, unknown> | null;
  created_at: string;
}

export type NewArtifact = Omit<ArtifactRecord, 'id' | 'created_at'>;

export interface TelemetryRecord {
  id: number;
  event_type: string;
  execution_id: string | null;
  step_name: string | null;
  agent_name: string | null;
  metadata: Record<string, unknown> | null;
  created_at: string;
}

export type NewTelemetry = Omit<TelemetryRecord, 'id' | 'created_at'>;

/** A token that was used, with what it was used for: the basis of safe retries. */
export interface SubmissionRecord {
  nonce: string;
  execution_id: string;
  output_hash: string;
  response: unknown;
  created_at: string;
}

/**
 * One event of an execution's record as the store keeps it: appended in the event's own transaction,
 * its hash covering the previous event's (src/executions/record-chain.ts). `migrated`: 1 for events made
 * after the fact from telemetry written before records existed.
 */
export interface RecordEventRow {
  execution_id: string;
  n: number;
  type: string;
  at: string;
  step: string | null;
  body: Record<string, unknown>;
  prev: string;
  hash: string;
  migrated: number;
}

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/**
 * A step output waiting for a person's decision (a step with `approval`), and then the decision: who,
 * how (dashboard, cli, elicitation, timeout), when and why. One row per submission that asked.
 */
export interface ApprovalRecord {
  /** Random; what the dashboard and the CLI name (with the execution id). */
  approval_id: string;
  execution_id: string;
  /** The execution's owner (copied so listings need no join). */
  principal: string;
  workflow_name: string;
  step_name: string;
  /** The step's sequence number in the execution. */
  seq: number;
  prompt: string;
  /** Principals besides the owner who may decide; null: only the owner's people. */
  approvers: string[] | null;
  status: ApprovalStatus;
  requested_at: string;
  /** No decision by then rejects it (null: waits until someone decides). */
  expires_at: string | null;
  /** The output the agent submitted, applied when approved. */
  output: unknown;
  /** The nonce of the token the agent polls with while it waits. */
  poll_nonce: string;
  decided_by: string | null;
  decided_via: string | null;
  decided_at: string | null;
  reason: string | null;
}

export interface ApprovalFilter {
  status?: ApprovalStatus;
  execution_id?: string;
  /** Those this principal owns, and those naming approvers (the caller checks whether it is one). */
  principal?: string;
  limit: number;
}

/** A definition pinned by an execution, keyed by the sha256 of its content. */
export interface DefinitionRecord {
  hash: string;
  workflow_id: string;
  content: string;
  created_at: string;
}

export interface ExecutionFilter {
  principal?: string;
  workflow_name?: string;
  /** Only the children of this execution. */
  parent_id?: string;
  states?: readonly ExecutionState[];
  limit: number;
}

/** A position in the listing order (most recently updated first, then execution id, descending). */
export interface ExecutionCursor {
  updated_at: string;
  execution_id: string;
}

/** Filters of a page of execution heads (the dashboard's list). */
export interface ExecutionPageFilter extends ExecutionFilter {
  /** Only executions last changed at or after this time (ISO 8601). */
  updated_since?: string;
  /** Only executions last changed before this time (ISO 8601). */
  updated_before?: string;
  /** The page that follows this position (older executions). */
  older_than?: ExecutionCursor;
  /** The page that precedes this position (newer executions: the `limit` closest to it). */
  newer_than?: ExecutionCursor;
}

export type ExecutionCountFilter = Omit<
  ExecutionPageFilter,
  'states' | 'older_than' | 'newer_than' | 'limit'
>;

/** What a listing shows of an execution: no context, tokens or metadata (which can be large). */
export type ExecutionHead = Pick<
  ExecutionRecord,
  | 'execution_id'
  | 'principal'
  | 'workflow_name'
  | 'state'
  | 'current_step'
  | 'current_seq'
  | 'token_attempt'
  | 'started_at'
  | 'updated_at'
  | 'completed_at'
  | 'duration_ms'
  | 'parent_id'
>;

export interface TelemetryFilter {
  /** Only events of this principal's executions. */
  principal?: string;
  execution_id?: string;
  event_type?: string;
  limit: number;
}

/** MCP task statuses (2025-11-25 names); completed, failed and cancelled never change again. */
export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** The task statuses that never change again. */
export const TERMINAL_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

/** An input request a task waits on: an `elicitation/create` or `sampling/createMessage` request. */
export interface TaskInputRequest {
  method: string;
  params: Record<string, unknown>;
}

/**
 * A task (long work run in the background for a tool call), kept durably so that any process sharing
 * the store can answer for it and a restarted one can resume or fail it.
 */
export interface TaskRecord {
  /** Cryptographically random; the only handle a client has. */
  task_id: string;
  /** Only this principal sees, waits on, cancels or lists it. */
  principal: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** The execution a run drives (its run id), once known. */
  run_id: string | null;
  workflow_id: string | null;
  status: TaskStatus;
  status_message: string | null;
  /** The latest status snapshot (seed 003 §10.4: run id, step, state, summary). */
  snapshot: Record<string, unknown>;
  created_at: string;
  last_updated_at: string;
  /** Retention from creation in ms (null: unlimited); `expires_at` is created_at + ttl. */
  ttl_ms: number | null;
  expires_at: string | null;
  poll_interval_ms: number;
  /** Outstanding input requests by key; a key is never reused within a task. */
  input_requests: Record<string, TaskInputRequest>;
  /** Answers received for outstanding keys, not yet taken by the worker. */
  input_responses: Record<string, unknown>;
  /** When terminal: the tool result (`isError` for failures) or a JSON-RPC error, never both. */
  result: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  /** The process working on it and until when its lease runs (renewed while it works). */
  owner: string | null;
  lease_expires_at: string | null;
  /** Protocol details fixed at creation (era, progress token, client capabilities, counters). */
  meta: Record<string, unknown>;
}

export interface TaskFilter {
  principal?: string;
  run_id?: string;
  statuses?: readonly TaskStatus[];
  /** Only tasks created strictly before this position (newest first: the cursor of the previous page). */
  before?: { created_at: string; task_id: string };
  limit: number;
}

/** What `purgeHistory` removes: finished executions (never running ones) of one principal. */
export interface PurgeFilter {
  principal: string;
  workflow_name?: string;
  /** Only executions that finished (or, for tasks without a run, were last updated) before this time. */
  finished_before?: string;
  /** Terminal execution states to remove (completed, failed, abandoned, diverged). */
  states: readonly ExecutionState[];
  /** Count only; delete nothing. */
  dry_run?: boolean;
}

export interface PurgeCounts {
  executions: number;
  steps: number;
  artifacts: number;
  telemetry: number;
  submissions: number;
  tasks: number;
}

/** What the one-execution page shows, read at one point in time (see `StoreReader.executionPage`). */
export interface ExecutionPageRecord {
  execution: ExecutionRecord;
  /** The pinned definition's text, unless the caller said it has it already. */
  definition: string | undefined;
  steps: StepRecord[];
  artifacts: ArtifactRecord[];
  /** The most recent events of the execution, oldest first. */
  telemetry: TelemetryRecord[];
  /** The most recent `step_failed` events, oldest first. */
  failures: TelemetryRecord[];
}

export interface ExecutionPageOptions {
  /** How many recent events, and how many recent failures, to read. */
  telemetry: number;
  failures: number;
  /** Definitions the caller holds already (by hash): their text is not read again. */
  known?: (hash: string) => boolean;
}

export interface StoreReader {
  getExecution(id: string): Promise<ExecutionRecord | undefined>;
  /** An execution's record, in order (n ascending). */
  getRecordEvents(executionId: string): Promise<RecordEventRow[]>;
  /** The last event of an execution's record (the chain's head), if it has one. */
  lastRecordEvent(executionId: string): Promise<RecordEventRow | undefined>;
  /** How many child executions of a principal are not finished (idle, running or paused): the fan-out cap. */
  countOpenChildren(principal: string): Promise<number>;
  /**
   * Child executions of every principal, per state (states with none left out): the /metrics gauge. It
   * reads the partial index of children, so it costs what the kept children number (purge trims them).
   */
  countChildren(): Promise<Partial<Record<ExecutionState, number>>>;
  listExecutions(filter: ExecutionFilter): Promise<ExecutionRecord[]>;
  getSteps(executionId: string): Promise<StepRecord[]>;
  getStep(executionId: string, seq: number): Promise<StepRecord | undefined>;
  getArtifacts(executionId: string, stepName?: string): Promise<ArtifactRecord[]>;
  getTelemetry(filter: TelemetryFilter): Promise<TelemetryRecord[]>;
  getSubmission(nonce: string): Promise<SubmissionRecord | undefined>;
  getDefinition(hash: string): Promise<string | undefined>;
  /** The pinned definition with its id and pin time (export). */
  getPinnedDefinition(hash: string): Promise<DefinitionRecord | undefined>;
  /** Every token used on an execution, oldest first (export). */
  getSubmissions(executionId: string): Promise<SubmissionRecord[]>;
  /** Executions of every principal with an id after `after`, in id order: a stable way to page through all. */
  pageExecutions(after: string | null, limit: number): Promise<ExecutionRecord[]>;
  getTask(taskId: string): Promise<TaskRecord | undefined>;
  /** Newest first (created_at, then task_id, descending). */
  listTasks(filter: TaskFilter): Promise<TaskRecord[]>;
  /** A page of execution heads, most recently updated first (then execution id, descending). */
  listExecutionHeads(filter: ExecutionPageFilter): Promise<ExecutionHead[]>;
  /** How many executions match, per state (states with none may be left out). */
  countExecutions(filter: ExecutionCountFilter): Promise<Partial<Record<ExecutionState, number>>>;
  /** Every principal that has executions, sorted. */
  listPrincipals(): Promise<string[]>;
  /**
   * A principal's executions changed at or after `since` (ISO 8601), least recently updated first: what
   * a watcher polls. Changes within one millisecond share `updated_at`; callers dedupe on the boundary.
   */
  changedExecutions(filter: { principal: string; since: string; limit: number }): Promise<ExecutionHead[]>;
  /**
   * Everything the one-execution page shows, in one snapshot (a read transaction): the execution, its
   * definition, steps, artifacts, recent events and failures, one statement each. Undefined unless
   * `principal` owns the execution: the ownership is checked once, for all of it.
   */
  getApproval(approvalId: string): Promise<ApprovalRecord | undefined>;
  /** Oldest request first. */
  listApprovals(filter: ApprovalFilter): Promise<ApprovalRecord[]>;
  executionPage(
    id: string,
    principal: string,
    options: ExecutionPageOptions,
  ): Promise<ExecutionPageRecord | undefined>;
}

export interface StoreWriter extends StoreReader {
  pinDefinition(hash: string, workflowId: string, content: string): Promise<void>;
  insertExecution(record: ExecutionRecord): Promise<void>;
  updateExecution(record: ExecutionRecord): Promise<void>;
  insertStep(record: StepRecord): Promise<void>;
  updateStep(record: StepRecord): Promise<void>;
  insertArtifact(artifact: NewArtifact): Promise<number>;
  insertTelemetry(event: NewTelemetry): Promise<void>;
  recordSubmission(record: SubmissionRecord): Promise<void>;
  /** Replaces a recorded answer (a submission recorded before its command steps ran gets its final one). */
  updateSubmission(nonce: string, response: unknown): Promise<void>;
  /** Import keeps what another store recorded: the pin time of a definition (an existing pin is kept)… */
  importDefinition(record: DefinitionRecord): Promise<void>;
  /** …and the creation time of artifacts and events; the ids are this store's (returned for artifacts). */
  importArtifact(record: Omit<ArtifactRecord, 'id'>): Promise<number>;
  importTelemetry(record: Omit<TelemetryRecord, 'id'>): Promise<void>;
  /** Appends an event to an execution's record; an (execution, n) already there fails the transaction. */
  appendRecordEvent(event: RecordEventRow): Promise<void>;
  insertApproval(record: ApprovalRecord): Promise<void>;
  /** Saves the status and the decision fields (and expiry); the request itself never changes. */
  updateApproval(record: ApprovalRecord): Promise<void>;
  insertTask(record: TaskRecord): Promise<void>;
  /** Saves every field but task_id, principal and created_at. A terminal status never changes. */
  updateTask(record: TaskRecord): Promise<void>;
  /** Deletes terminal tasks whose retention ended before `now`; returns how many. */
  deleteExpiredTasks(now: string): Promise<number>;
  /**
   * Removes finished executions matching the filter with their steps, artifacts, submissions,
   * telemetry and tasks (and finished tasks without a run that match it); returns the counts.
   */
  purgeHistory(filter: PurgeFilter): Promise<PurgeCounts>;
}

export interface ExecutionStore extends StoreReader {
  /**
   * Runs `fn` atomically; nothing it wrote survives if it throws. Rows read by key through `tx` are
   * locked until it ends (see the top of this file). An adapter may run `fn` again after a conflict
   * with a concurrent transaction (PostgreSQL does, after a deadlock or a duplicate key), so `fn` must
   * act on the store only through `tx` and keep no effect of a previous run.
   */
  transaction<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T>;
  /** The newest migration applied (the migrations.ts of each adapter); both adapters number them alike. */
  schemaVersion(): Promise<number>;
  /**
   * Calls `listener` after commits the adapter learns of (its own; PostgreSQL also others' through
   * LISTEN/NOTIFY), so watchers look at once instead of at their next poll. Returns the unsubscribe.
   * Optional: without it, watchers only poll.
   */
  watch?(listener: () => void): () => void;
  /**
   * Runtime workflows, catalogs and credential bindings kept in the database so that replicas share
   * them (PostgreSQL). Absent where they live in files (SQLite).
   */
  readonly documents?: RuntimeDocumentStore;
  close(): Promise<void>;
  /** Where the data lives, for messages (never with a password). */
  readonly location: string;
  /**
   * What operators watch of the store (readiness, /metrics): the schema it has and the one this build
   * expects, SQLite's write-ahead log size, PostgreSQL's pool. Optional (test doubles have none).
   */
  figures?(): Promise<StoreFigures>;
}

export interface StoreFigures {
  schemaVersion: number;
  /** The newest migration this build knows: the schema is current when the two are equal. */
  expectedSchemaVersion: number;
  walBytes?: number;
  pool?: { total: number; idle: number; waiting: number; max: number };
}
