// An execution's record as it leaves the server: an in-toto Statement v1 (its subject the workflow's
// definition and the artifacts, by digest; its predicate our record, docs/records.md) in a DSSE
// envelope signed with the server's Ed25519 key, carried in a Sigstore bundle v0.3 whose verification
// material is a public-key hint (the key id). Built with the Sigstore project's own packages, so
// standard tooling reads it; no network is needed to sign or to verify (there is no transparency log
// entry: the trust is the team's public key, docs/records.md says how to verify with sigstore tooling).
import { sign } from 'node:crypto';
import { bundleToJSON, type SerializedBundle, toDSSEBundle } from '@sigstore/bundle';
import { dsse } from '@sigstore/core';
import type { ChainEvent, RecordData } from '../executions/record-model.js';
import type { RecordKeyring } from './keys.js';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const PREDICATE_TYPE = 'https://workflowlookup.dev/attestation/execution-record/v1';
export const PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export interface Subject {
  name: string;
  digest: { sha256: string };
}

/** Our predicate: what happened to one execution, as its chained events say (docs/records.md). */
export interface RecordPredicate {
  execution: {
    id: string;
    principal: string;
    /** Where it stood when the record was signed: a later record of the same execution differs. */
    state: string;
    started_at: string;
    completed_at: string | null;
    parent_id: string | null;
  };
  workflow: RecordData['workflow'];
  artifacts: RecordData['artifacts'];
  /** How many events, and the last one's hash (the genesis when there are none). */
  event_count: number;
  head: string;
  events: ChainEvent[];
  signed_at: string;
}

export interface Statement {
  _type: typeof STATEMENT_TYPE;
  subject: Subject[];
  predicateType: typeof PREDICATE_TYPE;
  predicate: RecordPredicate;
}

export function statementOf(data: RecordData, signedAt: string): Statement {
  const { workflow } = data;
  const fileDigest = workflow.file_sha256 ?? workflow.definition_sha256;
  const subject: Subject[] = [
    { name: `workflow/${workflow.id}@${workflow.version}`, digest: { sha256: fileDigest } },
    // Routines expanded into the workflow: the definition it ran differs from its file.
    ...(fileDigest !== workflow.definition_sha256
      ? [
          {
            name: `definition/${workflow.id}@${workflow.version}`,
            digest: { sha256: workflow.definition_sha256 },
          },
        ]
      : []),
    ...data.artifacts.map((a) => ({ name: `artifact/${a.step}/${a.name}`, digest: { sha256: a.sha256 } })),
  ];
  return {
    _type: STATEMENT_TYPE,
    subject,
    predicateType: PREDICATE_TYPE,
    predicate: {
      execution: {
        id: data.execution_id,
        principal: data.principal,
        state: data.state,
        started_at: data.started_at,
        completed_at: data.completed_at,
        parent_id: data.parent_id,
      },
      workflow,
      artifacts: data.artifacts,
      event_count: data.events.length,
      head: data.head,
      events: data.events,
      signed_at: signedAt,
    },
  };
}

/** Signs a statement: the Sigstore bundle (JSON) holding its DSSE envelope. */
export function signStatement(statement: Statement, keyring: RecordKeyring): SerializedBundle {
  const { keyid, key } = keyring.signing();
  const payload = Buffer.from(JSON.stringify(statement), 'utf8');
  const signature = sign(null, dsse.preAuthEncoding(PAYLOAD_TYPE, payload), key);
  return bundleToJSON(
    toDSSEBundle({ artifact: payload, artifactType: PAYLOAD_TYPE, signature, keyHint: keyid }),
  );
}

/** The signed record of an execution, as `workflowlookup record` writes it and the resource answers. */
export function signRecord(
  data: RecordData,
  keyring: RecordKeyring,
  now: Date = new Date(),
): SerializedBundle {
  return signStatement(statementOf(data, now.toISOString()), keyring);
}
