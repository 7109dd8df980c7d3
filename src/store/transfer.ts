import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { EXECUTION_STATES } from '../engine/state-machine.js';
import {
  APPROVAL_STATUSES,
  type ApprovalRecord,
  type ArtifactRecord,
  type DefinitionRecord,
  type ExecutionRecord,
  type ExecutionStore,
  type RecordEventRow,
  type StepRecord,
  type SubmissionRecord,
  type TelemetryRecord,
} from './execution-store.js';

/**
 * One execution with everything that hangs off it: the unit of export and import. Plain JSON, so a
 * command can write bundles one per line and read them back.
 */
export interface ExecutionBundle {
  definition: DefinitionRecord;
  execution: ExecutionRecord;
  steps: StepRecord[];
  artifacts: ArtifactRecord[];
  telemetry: TelemetryRecord[];
  submissions: SubmissionRecord[];
  /** Approvals asked in the execution (absent in exports written before approvals existed). */
  approvals?: ApprovalRecord[];
  /** The execution's hash-chained record, as it was (absent in exports written before records existed). */
  record?: RecordEventRow[];
}

export interface TransferReport {
  executions: number;
  steps: number;
  artifacts: number;
  telemetry: number;
  submissions: number;
  /** Definitions the target did not have yet. */
  definitions: number;
  /** Executions the target already had, left as they were there. */
  skipped: string[];
  /** Executions whose live token was replaced (`newTokens`): their old tokens are refused. */
  retokened: number;
}

export interface ImportOptions {
  /**
   * Give every imported execution that has a live token a new nonce (and the pending approval it waits
   * on, the same one as its poll nonce), so that no token handed out before the export is accepted
   * (-32005, "no longer current") even where the target signs with the same secret; agents get the new
   * one from workflow_resume, which signs it from the stored fields. Tokens already used keep replaying
   * their recorded answers, as on the source: they advance nothing.
   */
  newTokens?: boolean;
}

/** A token nonce as the service mints them (TokenService.newNonce: 16 random bytes in hex). */
const newNonce = () => randomBytes(16).toString('hex');

/**
 * The bundle with fresh token nonces (ImportOptions.newTokens): the execution's live one, and the poll
 * nonce of its pending approvals. The one it waits on polls with the live token, so it gets that nonce;
 * any other pending one (there should be none) gets one no token carries.
 */
function withNewTokens(bundle: ExecutionBundle): ExecutionBundle {
  const { execution } = bundle;
  if (execution.token_nonce === null) return bundle;
  const nonce = newNonce();
  const awaited = execution.metadata.awaiting_approval;
  return {
    ...bundle,
    execution: { ...execution, token_nonce: nonce },
    ...(bundle.approvals !== undefined
      ? {
          approvals: bundle.approvals.map((a) =>
            a.status !== 'pending' ? a : { ...a, poll_nonce: a.approval_id === awaited ? nonce : newNonce() },
          ),
        }
      : {}),
  };
}

/**
 * The first line `export` writes: what the file is, and a fingerprint of the secret that signed the
 * executions' continuation tokens, so that `import` can tell before writing anything whether those
 * tokens will stay valid on the target (the secret itself never leaves its configuration).
 */
export const ExportHeaderSchema = z.object({
  format: z.literal('workflowlookup-executions'),
  version: z.literal(1),
  exported_at: z.string(),
  token_secret: z
    .object({
      fingerprint: z.string().min(1),
      /** `WORKFLOWLOOKUP_TOKEN_SECRET`, or the path of the source data dir's secret file. */
      source: z.string(),
    })
    .optional(),
});
export type ExportHeader = z.infer<typeof ExportHeaderSchema>;

export function exportHeader(tokenSecret: ExportHeader['token_secret']): ExportHeader {
  return {
    format: 'workflowlookup-executions',
    version: 1,
    exported_at: new Date().toISOString(),
    ...(tokenSecret ? { token_secret: tokenSecret } : {}),
  };
}

/** Whether a line of an export file is its header (files written before headers existed have none). */
export function isExportHeader(value: unknown): boolean {
  return (value as { format?: unknown } | null)?.format === 'workflowlookup-executions';
}

const PAGE = 100;
const EVERYTHING = Number.MAX_SAFE_INTEGER;

/**
 * Every execution of `store` (all principals), in id order, each read in one transaction so a bundle is
 * consistent even while servers keep writing.
 */
export async function* exportExecutions(store: ExecutionStore): AsyncGenerator<ExecutionBundle> {
  let after: string | null = null;
  for (;;) {
    const page: ExecutionRecord[] = await store.pageExecutions(after, PAGE);
    for (const { execution_id } of page) {
      const bundle = await store.transaction(async (tx): Promise<ExecutionBundle | undefined> => {
        const execution = await tx.getExecution(execution_id);
        if (!execution) return undefined;
        const definition = await tx.getPinnedDefinition(execution.definition_hash);
        if (!definition) throw new Error(`execution ${execution_id}: its pinned definition is missing`);
        return {
          definition,
          execution,
          steps: await tx.getSteps(execution_id),
          artifacts: await tx.getArtifacts(execution_id),
          telemetry: await tx.getTelemetry({ execution_id, limit: EVERYTHING }),
          submissions: await tx.getSubmissions(execution_id),
          approvals: await tx.listApprovals({ execution_id, limit: EVERYTHING }),
          record: await tx.getRecordEvents(execution_id),
        };
      });
      if (bundle) yield bundle;
    }
    const last = page.at(-1);
    if (page.length < PAGE || last === undefined) return;
    after = last.execution_id;
  }
}

const json = z.unknown();
const record = z.record(z.string(), z.unknown());
const time = z.string().min(1);

/** What an import accepts: bundles as `exportExecutions` writes them (checked, since they may come from a file). */
export const ExecutionBundleSchema = z.object({
  definition: z.object({
    hash: z.string().min(1),
    workflow_id: z.string(),
    content: z.string(),
    created_at: time,
  }),
  execution: z.object({
    execution_id: z.string().min(1),
    principal: z.string(),
    workflow_name: z.string(),
    definition_hash: z.string().min(1),
    state: z.enum(EXECUTION_STATES),
    current_step: z.string().nullable(),
    current_seq: z.number().int(),
    completed_steps: z.array(z.string()),
    context: record,
    token_nonce: z.string().nullable(),
    token_attempt: z.number().int(),
    token_issued_at: time.nullable(),
    token_expires_at: time.nullable(),
    started_at: time,
    updated_at: time,
    completed_at: time.nullable(),
    duration_ms: z.number().int().nullable(),
    metadata: record,
    // Exports written before delegation have no parent: null.
    parent_id: z.string().nullable().default(null),
  }),
  steps: z.array(
    z.object({
      execution_id: z.string(),
      seq: z.number().int(),
      step_name: z.string(),
      agent_name: z.string(),
      iteration: z.number().int().nullable(),
      status: z.enum(['pending', 'running', 'completed', 'failed']),
      attempts: z.number().int(),
      started_at: time.nullable(),
      completed_at: time.nullable(),
      duration_ms: z.number().int().nullable(),
      output: json,
      lease_owner: z.string().nullable(),
      lease_expires_at: time.nullable(),
    }),
  ),
  artifacts: z.array(
    z.object({
      id: z.number().int(),
      execution_id: z.string(),
      step_name: z.string(),
      artifact_type: z.enum(['file', 'data', 'report', 'finding']),
      name: z.string(),
      content: z.string(),
      content_type: z.string(),
      size_bytes: z.number().int(),
      metadata: record.nullable(),
      created_at: time,
    }),
  ),
  telemetry: z.array(
    z.object({
      id: z.number().int(),
      event_type: z.string(),
      execution_id: z.string().nullable(),
      step_name: z.string().nullable(),
      agent_name: z.string().nullable(),
      metadata: record.nullable(),
      created_at: time,
    }),
  ),
  submissions: z.array(
    z.object({
      nonce: z.string().min(1),
      execution_id: z.string(),
      output_hash: z.string(),
      response: json,
      created_at: time,
    }),
  ),
  record: z
    .array(
      z.object({
        execution_id: z.string(),
        n: z.number().int().min(1),
        type: z.string(),
        at: z.string(),
        step: z.string().nullable(),
        body: record,
        prev: z.string(),
        hash: z.string(),
        migrated: z.number().int(),
      }),
    )
    .optional(),
  approvals: z
    .array(
      z.object({
        approval_id: z.string().min(1),
        execution_id: z.string(),
        principal: z.string(),
        workflow_name: z.string(),
        step_name: z.string(),
        seq: z.number().int(),
        prompt: z.string(),
        approvers: z.array(z.string()).nullable(),
        status: z.enum(APPROVAL_STATUSES),
        requested_at: time,
        expires_at: time.nullable(),
        output: json,
        poll_nonce: z.string(),
        decided_by: z.string().nullable(),
        decided_via: z.string().nullable(),
        decided_at: time.nullable(),
        reason: z.string().nullable(),
      }),
    )
    .optional(),
});

/** A bundle whose parts all belong to its execution, or an error saying what does not fit. */
function checkBundle(value: unknown, index: number): ExecutionBundle {
  const parsed = ExecutionBundleSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`bundle ${index + 1}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'is invalid'}`);
  }
  const bundle = parsed.data as ExecutionBundle;
  const id = bundle.execution.execution_id;
  if (bundle.definition.hash !== bundle.execution.definition_hash) {
    throw new Error(`bundle ${index + 1} (${id}): the definition is not the one the execution pinned`);
  }
  const parts = [
    ...bundle.steps,
    ...bundle.artifacts,
    ...bundle.telemetry,
    ...bundle.submissions,
    ...(bundle.approvals ?? []),
    ...(bundle.record ?? []),
  ];
  if (parts.some((p) => p.execution_id !== id)) {
    throw new Error(`bundle ${index + 1} (${id}): it holds records of another execution`);
  }
  return bundle;
}

/**
 * Writes bundles into `store`, each execution in one transaction, so an import that stops half-way
 * can run again: executions the store already has are skipped (and reported), never overwritten.
 * Everything is kept as recorded (states, tokens and their submissions, timestamps, outputs) except
 * the ids of artifacts and events, which are the target's own (the `artifact_id` that events carry is
 * rewritten to match), and, with `newTokens`, the live token nonces.
 */
export async function importExecutions(
  store: ExecutionStore,
  bundles: AsyncIterable<unknown> | Iterable<unknown>,
  options: ImportOptions = {},
): Promise<TransferReport> {
  const report: TransferReport = {
    executions: 0,
    steps: 0,
    artifacts: 0,
    telemetry: 0,
    submissions: 0,
    definitions: 0,
    skipped: [],
    retokened: 0,
  };
  let index = 0;
  for await (const value of bundles) {
    const checked = checkBundle(value, index++);
    const bundle = options.newTokens ? withNewTokens(checked) : checked;
    const id = bundle.execution.execution_id;
    const outcome = await store.transaction(async (tx) => {
      if (await tx.getExecution(id)) return 'skipped' as const;
      const pinned = await tx.getPinnedDefinition(bundle.definition.hash);
      if (pinned && pinned.content !== bundle.definition.content) {
        throw new Error(
          `execution ${id}: definition ${bundle.definition.hash} differs from the one in the store`,
        );
      }
      if (!pinned) await tx.importDefinition(bundle.definition);
      await tx.insertExecution(bundle.execution);
      for (const step of bundle.steps) await tx.insertStep(step);
      const artifactIds = new Map<number, number>();
      for (const { id: old, ...artifact } of [...bundle.artifacts].sort((a, b) => a.id - b.id)) {
        artifactIds.set(old, await tx.importArtifact(artifact));
      }
      for (const { id: _old, ...event } of [...bundle.telemetry].sort((a, b) => a.id - b.id)) {
        const ref = event.metadata?.artifact_id;
        const metadata =
          typeof ref === 'number' && artifactIds.has(ref)
            ? { ...event.metadata, artifact_id: artifactIds.get(ref) }
            : event.metadata;
        await tx.importTelemetry({ ...event, metadata });
      }
      for (const submission of bundle.submissions) await tx.recordSubmission(submission);
      for (const approval of bundle.approvals ?? []) await tx.insertApproval(approval);
      // The record moves as it was: its hashes cover what happened where it happened.
      for (const event of bundle.record ?? []) await tx.appendRecordEvent(event);
      return pinned ? ('imported' as const) : ('pinned' as const);
    });
    if (outcome === 'skipped') {
      report.skipped.push(id);
      continue;
    }
    report.executions++;
    if (bundle !== checked) report.retokened++;
    if (outcome === 'pinned') report.definitions++;
    report.steps += bundle.steps.length;
    report.artifacts += bundle.artifacts.length;
    report.telemetry += bundle.telemetry.length;
    report.submissions += bundle.submissions.length;
  }
  return report;
}

/** Copies every execution of `from` into `to` (SQLite to PostgreSQL or back): `importExecutions(to, exportExecutions(from))`. */
export function copyExecutions(from: ExecutionStore, to: ExecutionStore): Promise<TransferReport> {
  return importExecutions(to, exportExecutions(from));
}
