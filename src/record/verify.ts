// Verifying a signed record offline: the signature (against keys the verifier trusts), the chain (each
// event's number, link and hash), what the record says about itself (execution, head, subject), the
// definition (against a workflow file) and a policy. The first failure is named precisely: which
// event, what was expected. What is not a record at all (malformed, oversized) is a RecordFormatError,
// which the CLI answers with exit 2.
import { createHash, type KeyObject, verify } from 'node:crypto';
import { bundleFromJSON, envelopeFromJSON } from '@sigstore/bundle';
import { dsse } from '@sigstore/core';
import { type ChainEvent, eventHash, genesis } from '../executions/record-model.js';
import {
  PAYLOAD_TYPE,
  PREDICATE_TYPE,
  type RecordPredicate,
  STATEMENT_TYPE,
  type Statement,
} from './envelope.js';

/** A record file larger than this is refused before it is parsed (a 1,000-event record is ~0.5 MB). */
export const MAX_RECORD_BYTES = 32 * 1024 * 1024;

export const REQUIREMENTS = ['completed', 'approved', 'checked'] as const;
export type Requirement = (typeof REQUIREMENTS)[number];

/** Decided by a person: the routes a human decides by (never the agent, never a timeout). */
const BY_A_PERSON = new Set(['dashboard', 'cli', 'elicitation']);

export class RecordFormatError extends Error {}

export interface VerifyOptions {
  /** The public keys trusted, by key id. */
  keys: Map<string, KeyObject>;
  /** The bytes of the workflow file the execution should have run. */
  workflowFile?: Buffer;
  require?: readonly Requirement[];
  /** The execution the record must be of (a record of another one swapped in fails). */
  execution?: string;
  /** The head the record must end at (an older record of the same execution fails). */
  head?: string;
}

export interface Verified {
  execution: string;
  workflow: string;
  state: string;
  events: number;
  migrated: number;
  head: string;
  keyid: string;
  signed_at: string;
  /** What each requirement found, in words. */
  policy: string[];
}

export type VerifyResult = { ok: true; verified: Verified } | { ok: false; failure: string };

interface Envelope {
  payloadType: string;
  payload: Buffer;
  signatures: { keyid: string; sig: Buffer }[];
}

/** The DSSE envelope of a record file: a Sigstore bundle, or a bare DSSE envelope. */
export function parseRecordFile(text: string | Buffer): Envelope {
  const size = typeof text === 'string' ? Buffer.byteLength(text) : text.length;
  if (size > MAX_RECORD_BYTES)
    throw new RecordFormatError(`the record is ${size} bytes; at most ${MAX_RECORD_BYTES} are read`);
  let json: unknown;
  try {
    json = JSON.parse(typeof text === 'string' ? text : text.toString('utf8'));
  } catch (error) {
    throw new RecordFormatError(`the record is not JSON: ${(error as Error).message}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new RecordFormatError('the record is not a JSON object (a Sigstore bundle or a DSSE envelope)');
  try {
    if ('mediaType' in json) {
      const bundle = bundleFromJSON(json);
      if (bundle.content.$case !== 'dsseEnvelope')
        throw new RecordFormatError('the bundle holds a message signature, not a DSSE envelope');
      return bundle.content.dsseEnvelope;
    }
    if ('payloadType' in json) return envelopeFromJSON(json);
  } catch (error) {
    if (error instanceof RecordFormatError) throw error;
    throw new RecordFormatError(
      `the record is not a valid Sigstore bundle or DSSE envelope: ${(error as Error).message}`,
    );
  }
  throw new RecordFormatError(
    'the record is neither a Sigstore bundle (mediaType) nor a DSSE envelope (payloadType)',
  );
}

export function verifyRecord(text: string | Buffer, options: VerifyOptions): VerifyResult {
  const envelope = parseRecordFile(text);
  try {
    return { ok: true, verified: check(envelope, options) };
  } catch (error) {
    if (error instanceof Failure) return { ok: false, failure: error.message };
    throw error;
  }
}

class Failure extends Error {}

function refuse(message: string): never {
  throw new Failure(message);
}

function check(envelope: Envelope, options: VerifyOptions): Verified {
  const keyid = signatureOf(envelope, options.keys);
  if (envelope.payloadType !== PAYLOAD_TYPE)
    refuse(`payload type is ${JSON.stringify(envelope.payloadType)}, expected ${PAYLOAD_TYPE}`);
  const statement = statementOf(envelope.payload);
  const p = statement.predicate;
  if (options.execution !== undefined && p.execution.id !== options.execution)
    refuse(`the record is of execution ${p.execution.id}, expected ${options.execution}`);
  const migrated = chainOf(p);
  if (options.head !== undefined && p.head !== options.head) {
    const at = p.events.findIndex((e) => e.hash === options.head);
    refuse(
      at >= 0
        ? `the record ends at event ${p.event_count} (head ${p.head}); the required head ${options.head} is event ${at + 1}, so this record is not the one required`
        : `the record ends at head ${p.head}; the required head ${options.head} is not one of its events (an older record, or another execution's)`,
    );
  }
  subjectOf(statement);
  if (options.workflowFile !== undefined) definitionOf(p, options.workflowFile);
  const policy = (options.require ?? []).map((r) => requirement(r, p));
  return {
    execution: p.execution.id,
    workflow: `${p.workflow.id}@${p.workflow.version}`,
    state: p.execution.state,
    events: p.event_count,
    migrated,
    head: p.head,
    keyid,
    signed_at: p.signed_at,
    policy,
  };
}

/** The key that signed the envelope, among the trusted ones: a signature that verifies, or why none does. */
function signatureOf(envelope: Envelope, keys: Map<string, KeyObject>): string {
  if (envelope.signatures.length === 0) refuse('the record is not signed (its envelope has no signature)');
  const pae = dsse.preAuthEncoding(envelope.payloadType, envelope.payload);
  const unknown: string[] = [];
  for (const { keyid, sig } of envelope.signatures) {
    const key = keys.get(keyid);
    if (key === undefined) {
      unknown.push(keyid === '' ? '(no key id)' : keyid);
      continue;
    }
    if (verify(null, pae, key, sig)) return keyid;
    refuse(
      `the signature by key ${keyid} does not match the record (forged, or the record was changed after signing)`,
    );
  }
  refuse(
    `the record is signed by key ${unknown.join(', ')}, which is not among the ${keys.size} trusted key(s) (unknown, or revoked)`,
  );
}

function statementOf(payload: Buffer): Statement {
  let statement: Statement;
  try {
    statement = JSON.parse(payload.toString('utf8')) as Statement;
  } catch (error) {
    refuse(`the signed payload is not JSON: ${(error as Error).message}`);
  }
  if (statement?._type !== STATEMENT_TYPE)
    refuse(`the payload's _type is ${JSON.stringify(statement?._type)}, expected ${STATEMENT_TYPE}`);
  if (statement.predicateType !== PREDICATE_TYPE)
    refuse(`the predicate type is ${JSON.stringify(statement.predicateType)}, expected ${PREDICATE_TYPE}`);
  const p = statement.predicate as Partial<RecordPredicate> | undefined;
  if (
    typeof p?.execution?.id !== 'string' ||
    !Array.isArray(p.events) ||
    typeof p.head !== 'string' ||
    typeof p.workflow?.definition_sha256 !== 'string'
  )
    refuse('the predicate lacks its execution id, events, head or workflow digest');
  return statement;
}

/**
 * An execution's events as a chain: each in its place, linked to the one before, its hash its content's.
 * What the verifier checks of a record, and what the dashboard checks of the stored events.
 */
export function checkChain(
  executionId: string,
  events: readonly ChainEvent[],
): { ok: true; head: string; migrated: number } | { ok: false; failure: string } {
  try {
    return { ok: true, ...linked(executionId, events) };
  } catch (error) {
    if (error instanceof Failure) return { ok: false, failure: error.message };
    throw error;
  }
}

function linked(id: string, events: readonly ChainEvent[]): { head: string; migrated: number } {
  let prev = genesis(id);
  let migrated = 0;
  events.forEach((e, i) => {
    const n = i + 1;
    if (e.n !== n)
      refuse(
        `event ${n}: its number is ${e.n}, expected ${n} (an event was dropped, inserted or moved before it)`,
      );
    if (e.prev !== prev)
      refuse(
        n === 1
          ? `event 1: it does not start this execution's chain (prev ${e.prev}, expected the genesis of ${id} ${prev}): a chain of another execution`
          : `event ${n}: its prev is ${e.prev}, expected event ${n - 1}'s hash ${prev} (events dropped, inserted or reordered)`,
      );
    const hash = eventHash(id, e);
    if (e.hash !== hash)
      refuse(
        `event ${n} (${e.type}): its hash is ${e.hash}, its content hashes to ${hash} (the event was edited)`,
      );
    if (e.migrated === true) migrated += 1;
    prev = hash;
  });
  return { head: prev, migrated };
}

/** The record's chain, and what the record says of it: its count and head. */
function chainOf(p: RecordPredicate): number {
  const { head, migrated } = linked(p.execution.id, p.events);
  if (p.event_count !== p.events.length)
    refuse(`the record says ${p.event_count} events and holds ${p.events.length}`);
  if (p.head !== head) refuse(`the record's head is ${p.head}, expected the last event's hash ${head}`);
  return migrated;
}

function subjectOf(statement: Statement): void {
  const w = statement.predicate.workflow;
  const expected = w.file_sha256 ?? w.definition_sha256;
  const first = statement.subject?.[0];
  if (first?.digest?.sha256 !== expected)
    refuse(
      `the statement's subject is ${first?.digest?.sha256 ?? 'missing'}, expected the workflow's digest ${expected}`,
    );
}

function definitionOf(p: RecordPredicate, file: Buffer): void {
  const given = createHash('sha256').update(file).digest('hex');
  const w = p.workflow;
  if (given !== w.file_sha256 && given !== w.definition_sha256)
    refuse(
      `the workflow file's sha256 is ${given}; the execution ran ${w.id}@${w.version} with file ${w.file_sha256 ?? '(not recorded)'} (definition ${w.definition_sha256})`,
    );
}

function requirement(r: Requirement, p: RecordPredicate): string {
  const events = p.events;
  if (r === 'completed') {
    if (p.execution.state !== 'completed') refuse(`completed: the execution is ${p.execution.state}`);
    return 'completed: the execution completed';
  }
  if (r === 'approved') {
    const requested = events.filter((e) => e.type === 'approval_requested');
    for (const asked of requested) {
      const id = asked.body.approval_id;
      const decided = events.find(
        (e) => e.type === 'approval_decided' && e.n > asked.n && e.body.approval_id === id,
      );
      if (decided === undefined)
        refuse(`approved: event ${asked.n} (step "${asked.step}") was never decided`);
      if (decided.body.decision !== 'approved') continue;
      const via = String(decided.body.decided_via ?? '');
      if (!BY_A_PERSON.has(via))
        refuse(
          `approved: event ${decided.n} (step "${decided.step}") was approved by ${via || 'nobody named'}, expected a person (dashboard, cli or elicitation)`,
        );
    }
    // Every step that completed behind an approval gate completed after a person approved it.
    const steps = new Set(requested.map((e) => e.step));
    for (const done of events.filter((e) => e.type === 'step_completed' && steps.has(e.step))) {
      const approved = events.some(
        (e) =>
          e.type === 'approval_decided' &&
          e.step === done.step &&
          e.n < done.n &&
          e.body.decision === 'approved' &&
          e.body.seq === done.body.seq,
      );
      if (!approved) refuse(`approved: event ${done.n} completed step "${done.step}" without an approval`);
    }
    return requested.length === 0
      ? 'approved: no step waited for an approval'
      : `approved: ${requested.length} approval(s), each decided by a person`;
  }
  const runs = events.filter((e) => e.type === 'check_run');
  // The check that let a step complete is the last one run on it before it completed.
  for (const done of events.filter((e) => e.type === 'step_completed')) {
    const last = runs
      .filter((e) => e.step === done.step && e.n < done.n && e.body.seq === done.body.seq)
      .at(-1);
    if (last !== undefined && last.body.passed !== true)
      refuse(
        `checked: event ${last.n} (check "${String(last.body.check)}" on step "${last.step}") did not pass (exit ${String(last.body.exit_code)}), and event ${done.n} completed the step`,
      );
  }
  const failed = runs.filter((e) => e.body.passed !== true).length;
  return runs.length === 0
    ? 'checked: no server-run check ran'
    : `checked: ${runs.length} check run(s), every step completed on a passing one${failed > 0 ? ` (${failed} failed run(s) were fixed)` : ''}`;
}
