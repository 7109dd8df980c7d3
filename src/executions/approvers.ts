// Who may decide an approval. A workflow's `approvers` is content an author can edit (`workflow_save`
// with the `author` scope), so on its own it grants nothing over anybody's executions: it only chooses
// among the principals the operator named (WORKFLOWLOOKUP_APPROVERS). Without such a name the
// execution's owner decides, as for a step that names no approvers.
import type { ApprovalRecord } from '../store/execution-store.js';
import { digest } from './record-model.js';

/**
 * The principals who decide an approval: those of the step's `approvers` the operator named (or the
 * owner, if the step names it), else the owner alone.
 */
export function deciders(record: ApprovalRecord, team: ReadonlySet<string>): string[] {
  const named = (record.approvers ?? []).filter((p) => p === record.principal || team.has(p));
  return named.length > 0 ? named : [record.principal];
}

/** Whether a principal may decide an approval (see `deciders`); null (no principal) never may. */
export function mayDecide(
  record: ApprovalRecord,
  principal: string | null,
  team: ReadonlySet<string>,
): boolean {
  return principal !== null && deciders(record, team).includes(principal);
}

/** The step's `approvers` the operator did not name: ignored, and said so where the approval is shown. */
export function ignoredApprovers(record: ApprovalRecord, team: ReadonlySet<string>): string[] {
  return (record.approvers ?? []).filter((p) => p !== record.principal && !team.has(p));
}

/**
 * The digest of a held output: what a person saw when they decided. A decision names the approval and
 * this digest, so a stale or replayed decision never lands on another output. The same digest the
 * record keeps of every output (record-model.ts).
 */
export const outputDigest = digest;
