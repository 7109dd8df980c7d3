// An execution's record, chained as it happens: every event that says what happened to the work (its
// start, each output submitted, the verdicts, approvals, checks, command steps, changes of state,
// children) is appended with a hash that covers the previous event's, in the same transaction as the
// event itself (StepMachine.event calls `append`). Bodies hold ids, verdicts and digests, never an
// output's text. The record is signed and exported by src/record/.
import type { ExecutionRecord, RecordEventRow, StoreWriter } from '../store/execution-store.js';
import { nowIso } from './execution-model.js';
import { type ChainEvent, digest, eventHash, genesis } from './record-model.js';

/** The events that make a record; the rest of the telemetry (tokens handed out, HTTP details) is operational. */
export const RECORDED = new Set([
  'workflow_created',
  'output_submitted',
  'step_completed',
  'step_failed',
  'check_run',
  'approval_requested',
  'approval_decided',
  'artifact_stored',
  'workflow_state_transition',
  'workflow_completed',
  'workflow_failed',
  'http_request',
  'delegation_started',
  'child_ended',
  'delegation_joined',
  'delegation_timed_out',
]);

/** Metadata that is free text: the record keeps its digest under `<key>_sha256`, never the text. */
const FREE_TEXT = new Set(['reason', 'prompt', 'message', 'issues', 'tail', 'details', 'summary', 'error']);

/** What a record keeps of an event's metadata: everything but free text, which becomes a digest. */
export function recordBody(metadata: Record<string, unknown> | null): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (value === undefined) continue;
    if (FREE_TEXT.has(key)) body[`${key}_sha256`] = digest(value);
    else body[key] = value;
  }
  return body;
}

export function toChainEvent(row: RecordEventRow): ChainEvent {
  return {
    n: row.n,
    type: row.type,
    at: row.at,
    step: row.step,
    body: row.body,
    prev: row.prev,
    hash: row.hash,
    ...(row.migrated === 1 ? { migrated: true } : {}),
  };
}

interface Head {
  n: number;
  hash: string;
}

export class RecordChain {
  /**
   * The chain's head per execution record read in a transaction: an execution is read (and locked)
   * afresh in each transaction, so its record object is the transaction's own, and the head read once
   * serves every append of the transaction.
   */
  private readonly heads = new WeakMap<ExecutionRecord, Head>();

  /** Appends one event (in the caller's transaction). A type outside RECORDED is not part of the record. */
  async append(
    tx: StoreWriter,
    exec: ExecutionRecord,
    type: string,
    step: string | null,
    metadata: Record<string, unknown> | null,
  ): Promise<void> {
    if (!RECORDED.has(type)) return;
    const head = this.heads.get(exec) ?? (await this.headOf(tx, exec, type));
    this.heads.set(
      exec,
      await this.write(tx, exec.execution_id, head, type, nowIso(), step, recordBody(metadata), 0),
    );
  }

  /** The record of an execution, in order; one from before records existed gets its chain first. */
  async read(tx: StoreWriter, exec: ExecutionRecord): Promise<ChainEvent[]> {
    let rows = await tx.getRecordEvents(exec.execution_id);
    if (rows.length === 0) {
      await this.backfill(tx, exec);
      rows = await tx.getRecordEvents(exec.execution_id);
    }
    return rows.map(toChainEvent);
  }

  private async headOf(tx: StoreWriter, exec: ExecutionRecord, type: string): Promise<Head> {
    const last = await tx.lastRecordEvent(exec.execution_id);
    if (last !== undefined) return { n: last.n, hash: last.hash };
    // A new execution's record starts with its creation; an older one's is made from its telemetry first.
    if (type === 'workflow_created') return { n: 0, hash: genesis(exec.execution_id) };
    return this.backfill(tx, exec);
  }

  /**
   * An execution that began before records existed: its record is made from the telemetry it kept, each
   * event marked `migrated` (made after the fact, so it proves less than one chained as it happened).
   */
  private async backfill(tx: StoreWriter, exec: ExecutionRecord): Promise<Head> {
    const events = (await tx.getTelemetry({ execution_id: exec.execution_id, limit: 1_000_000 }))
      .filter((e) => RECORDED.has(e.event_type))
      .sort((a, b) => a.id - b.id);
    let head: Head = { n: 0, hash: genesis(exec.execution_id) };
    for (const e of events)
      head = await this.write(
        tx,
        exec.execution_id,
        head,
        e.event_type,
        e.created_at,
        e.step_name,
        recordBody(e.metadata),
        1,
      );
    return head;
  }

  private async write(
    tx: StoreWriter,
    executionId: string,
    head: Head,
    type: string,
    at: string,
    step: string | null,
    body: Record<string, unknown>,
    migrated: 0 | 1,
  ): Promise<Head> {
    const event = { n: head.n + 1, type, at, step, body, prev: head.hash };
    const hash = eventHash(executionId, event);
    await tx.appendRecordEvent({ execution_id: executionId, ...event, hash, migrated });
    return { n: event.n, hash };
  }
}
