// The record of an execution: its events, each with a hash that covers the previous event's, appended in
// the same transaction as the event itself (src/executions/record-chain.ts). What proof leaves the server
// (src/record/) is built from this data; nothing here signs or speaks a format.
import { createHash } from 'node:crypto';
import { canonical } from './execution-model.js';

/** The hash the first event of an execution covers: bound to the execution, so no chain fits another. */
export function genesis(executionId: string): string {
  return createHash('sha256').update(`workflowlookup-record:v1:${executionId}`).digest('hex');
}

/** One event of a record as it is kept and exported: what happened, in digests, never free text. */
export interface ChainEvent {
  /** 1, 2, 3, ...: the event's place in its execution's record. */
  n: number;
  type: string;
  /** When it happened (ISO 8601). */
  at: string;
  /** The step it concerns, if any. */
  step: string | null;
  /** What the event says: ids, verdicts, digests (sha256 hex) of outputs, never an output's text. */
  body: Record<string, unknown>;
  /** The previous event's hash (the execution's genesis for the first). */
  prev: string;
  /** sha256 of the canonical JSON of {execution_id, n, type, at, step, body, prev}. */
  hash: string;
  /** Made from the execution's telemetry by a migration, after the fact (events before records existed). */
  migrated?: boolean;
}

/** The hash of an event: what the verifier recomputes (src/record/verify.ts, and any independent verifier). */
export function eventHash(executionId: string, e: Omit<ChainEvent, 'hash' | 'migrated'>): string {
  return createHash('sha256')
    .update(
      canonical({
        execution_id: executionId,
        n: e.n,
        type: e.type,
        at: e.at,
        step: e.step,
        body: e.body,
        prev: e.prev,
      }),
    )
    .digest('hex');
}

/** Everything a signed record states about one execution (src/record/ turns it into an in-toto statement). */
export interface RecordData {
  execution_id: string;
  principal: string;
  /** Where it stands now: a record of a finished execution says completed (or how it ended). */
  state: string;
  started_at: string;
  completed_at: string | null;
  parent_id: string | null;
  workflow: {
    id: string;
    version: string;
    /** sha256 of the pinned definition (the hash the execution pinned when it started). */
    definition_sha256: string;
    /** sha256 of the workflow's file as it was read (differs from the pin when routines were expanded). */
    file_sha256?: string;
    /** Where it was read from, when a git source served it: repository, ref, commit. */
    source?: Record<string, unknown>;
  };
  /** The artifacts the execution stored, by digest. */
  artifacts: { name: string; step: string; sha256: string }[];
  events: ChainEvent[];
  /** The last event's hash (the genesis when there is none): a later record of the same execution differs. */
  head: string;
}

/** sha256 hex of text (an output, a tail, an input object's canonical JSON). */
export function digest(value: unknown): string {
  return createHash('sha256')
    .update(typeof value === 'string' ? value : canonical(value))
    .digest('hex');
}
