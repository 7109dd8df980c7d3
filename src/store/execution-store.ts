import type { ExecutionState } from '../engine/state-machine.js';

/**
 * The storage port for durable executions. The SQLite adapter implements it today; a PostgreSQL
 * adapter must give the same behaviour: every `transaction` is serializable and all-or-nothing, and
 * transactions from any number of processes sharing the store never interleave their effects.
 */
export interface ExecutionRecord {
  execution_id: string;
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

export interface ExecutionFilter {
  workflow_name?: string;
  states?: readonly ExecutionState[];
  limit: number;
}

export interface TelemetryFilter {
  execution_id?: string;
  event_type?: string;
  limit: number;
}

export interface StoreReader {
  getExecution(id: string): Promise<ExecutionRecord | undefined>;
  listExecutions(filter: ExecutionFilter): Promise<ExecutionRecord[]>;
  getSteps(executionId: string): Promise<StepRecord[]>;
  getStep(executionId: string, seq: number): Promise<StepRecord | undefined>;
  getArtifacts(executionId: string, stepName?: string): Promise<ArtifactRecord[]>;
  getTelemetry(filter: TelemetryFilter): Promise<TelemetryRecord[]>;
  getSubmission(nonce: string): Promise<SubmissionRecord | undefined>;
  getDefinition(hash: string): Promise<string | undefined>;
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
}

export interface ExecutionStore extends StoreReader {
  /** Runs `fn` atomically; nothing it wrote survives if it throws. */
  transaction<T>(fn: (tx: StoreWriter) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Where the data lives, for messages. */
  readonly location: string;
}
