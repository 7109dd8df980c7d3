// Approval gates: a step output a person must clear. Holding an accepted output, deciding it (who may,
// on what), timing it out, and asking the client's user. Deciding records the decision and the answer to
// the poll token; handing out the next step stays with the coordinator (ExecutionService).
import { randomBytes } from 'node:crypto';
import { durationMs } from '../catalogs/command-steps.js';
import type { Context } from '../engine/conditions.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { findPromptStep } from '../engine/next-step.js';
import type { ValidationResult } from '../engine/validation-engine.js';
import { checkSubmission } from '../engine/workrail.js';
import type { PromptStep, Workflow } from '../model/workflow.js';
import type { ApprovalRecord, ExecutionRecord, StepRecord, StoreWriter } from '../store/execution-store.js';
import { ATTR, inSpan } from '../telemetry/trace.js';
import { deciders, mayDecide, outputDigest } from './approvers.js';
import type { CheckResult } from './checks.js';
import type { Decider, DecisionTarget, ServiceParts } from './execution-deps.js';
import {
  type ApprovalView,
  approvalView,
  type Caller,
  nowIso,
  type Outcome,
  type StepOutput,
} from './execution-model.js';
import type { StepOutcomes } from './step-outcomes.js';

const NOBODY: ReadonlySet<string> = new Set();

/** The token nonce of a poll answered by a decision: any output sent with it replays the decision. */
export const DECIDED = 'approval-decision';

export class Approvals {
  constructor(
    private readonly parts: ServiceParts,
    private readonly outcomes: StepOutcomes,
  ) {}

  private get deps() {
    return this.parts.deps;
  }

  private get machine() {
    return this.parts.machine;
  }

  private now(): number {
    return this.parts.now();
  }

  /** Holds the accepted output for a person's decision; the agent's next token only polls. */
  async request(
    tx: StoreWriter,
    exec: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    row: StepRecord,
    output: StepOutput,
    verified: CheckResult | undefined,
  ): Promise<Outcome> {
    const { machine } = this;
    const gate = step.approval as NonNullable<PromptStep['approval']>;
    const requested = this.now();
    machine.mintToken(exec, step.id);
    const record: ApprovalRecord = {
      approval_id: `appr_${randomBytes(9).toString('hex')}`,
      execution_id: exec.execution_id,
      principal: exec.principal,
      workflow_name: workflow.id,
      step_name: step.id,
      seq: row.seq,
      prompt: gate.prompt,
      approvers: gate.approvers ?? null,
      status: 'pending',
      requested_at: new Date(requested).toISOString(),
      expires_at:
        gate.timeout === undefined ? null : new Date(requested + durationMs(gate.timeout, 0)).toISOString(),
      output,
      poll_nonce: exec.token_nonce as string,
      decided_by: null,
      decided_via: null,
      decided_at: null,
      reason: null,
    };
    await tx.insertApproval(record);
    exec.metadata = { ...exec.metadata, awaiting_approval: record.approval_id };
    exec.updated_at = nowIso();
    await tx.updateExecution(exec);
    await machine.event(tx, 'approval_requested', exec, step.id, {
      seq: row.seq,
      approval_id: record.approval_id,
      prompt: record.prompt,
      approvers: record.approvers,
      expires_at: record.expires_at,
    });
    return { ...this.awaiting(exec, record, verified), requested: true };
  }

  awaiting(
    exec: ExecutionRecord,
    record: ApprovalRecord,
    verified?: CheckResult,
  ): Extract<Outcome, { kind: 'awaiting_approval' }> {
    return {
      v: 1,
      kind: 'awaiting_approval',
      origin: 'advanced',
      execution_id: exec.execution_id,
      workflow_id: exec.workflow_name,
      state: exec.state,
      step_name: record.step_name,
      approval: approvalView(record),
      token: this.machine.liveToken(exec),
      ...(verified !== undefined ? { check: verified } : {}),
    };
  }

  /** The approval the execution's current step waits on, if any. */
  async pending(tx: StoreWriter, exec: ExecutionRecord): Promise<ApprovalRecord | undefined> {
    const id = exec.metadata.awaiting_approval;
    if (typeof id !== 'string') return undefined;
    const record = await tx.getApproval(id);
    return record?.status === 'pending' ? record : undefined;
  }

  /** A pending approval past its timeout is rejected now (by `timeout`); the outcome of that, if so. */
  async expireIfDue(
    tx: StoreWriter,
    exec: ExecutionRecord,
    record: ApprovalRecord,
  ): Promise<Outcome | undefined> {
    if (record.expires_at === null || Date.parse(record.expires_at) > this.now()) return undefined;
    return this.apply(tx, exec, record, 'reject', {
      decider: { principal: null, name: 'timeout', via: 'timeout' },
      reason: `no decision by ${record.expires_at}`,
    });
  }

  /**
   * Records a decision and moves the execution: approved, the held output completes the step; rejected
   * (or timed out), the step stays current with a fresh token and the reason. The outcome is recorded
   * as the answer to the poll token, so the agent's next poll gets it.
   */
  private async apply(
    tx: StoreWriter,
    exec: ExecutionRecord,
    record: ApprovalRecord,
    decision: 'approve' | 'reject',
    how: { decider: Decider; reason: string | undefined },
  ): Promise<Outcome> {
    const { machine } = this;
    const decidedAt = new Date(this.now()).toISOString();
    record.status = decision === 'approve' ? 'approved' : 'rejected';
    record.decided_by = how.decider.name;
    record.decided_via = how.decider.via;
    record.decided_at = decidedAt;
    record.reason = how.reason ?? null;
    await tx.updateApproval(record);
    const { awaiting_approval: _done, ...metadata } = exec.metadata;
    exec.metadata = metadata;
    await machine.event(tx, 'approval_decided', exec, record.step_name, {
      seq: record.seq,
      approval_id: record.approval_id,
      decision: record.status,
      decided_by: record.decided_by,
      decided_via: record.decided_via,
      decided_at: decidedAt,
      // What was decided on: the held output, by digest (never its text).
      output_sha256: outputDigest(record.output),
      ...(record.reason !== null ? { reason: record.reason } : {}),
    });
    const workflow = await machine.definition(exec, tx);
    const step = findPromptStep(workflow, record.step_name);
    const row = await tx.getStep(exec.execution_id, record.seq);
    if (!step || !row) {
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: 'the approved step record is missing',
      });
    }
    const output = record.output as StepOutput;
    let outcome: Outcome | undefined;
    let refusal: { validation: ValidationResult; named: string[] } | undefined;
    if (decision === 'approve') {
      const context: Context = { ...exec.context, ...(output.context ?? {}) };
      const reported = checkSubmission(workflow, step, output);
      const walked = this.outcomes.walkAfter(workflow, exec, step, output, context, reported);
      if ('next' in walked)
        outcome = await this.outcomes.complete(tx, exec, workflow, step, row, output, walked.next);
      else refusal = walked;
    }
    if (outcome === undefined) {
      const who =
        how.decider.via === 'timeout' ? 'nobody decided in time' : `${record.decided_by} rejected it`;
      const validation = refusal?.validation ?? {
        valid: false,
        issues: [`APPROVAL_REJECTED: ${who}${record.reason ? `: ${record.reason}` : ''}`],
        // A timeout judged nothing in the work: there is no reason to act on, only a person to reach.
        suggestions: [
          how.decider.via === 'timeout'
            ? 'Nobody judged the work, so there is nothing in it to revise: send the step again (the same output is fine) to ask for a new approval, and tell the user a person must decide it before the timeout.'
            : 'Revise the work as the reason says, then send the step again; it needs a new approval.',
        ],
      };
      outcome = await this.outcomes.reject(tx, exec, workflow, step, row, {
        reason: decision === 'approve' ? 'validation' : 'approval',
        validation,
        named: refusal?.named ?? [],
        at: nowIso(),
        extra: { approval: approvalView(record) },
      });
    }
    await tx.recordSubmission({
      nonce: record.poll_nonce,
      execution_id: exec.execution_id,
      output_hash: DECIDED,
      response: outcome,
      created_at: decidedAt,
    });
    return outcome;
  }

  /**
   * A person's decision on the approval an execution waits on (the dashboard, the CLI, elicitation).
   * Refused when nothing is pending (decided already, or timed out: that is recorded first), and when
   * the decider may not decide it: only the step's approvers, or without approvers the execution's
   * owner; the operator on the host may decide any.
   */
  async decide(
    executionId: string,
    decision: 'approve' | 'reject',
    decider: Decider,
    reason: string | undefined,
    on: DecisionTarget,
  ): Promise<{ approval: ApprovalView; state: string }> {
    return inSpan(
      'approval decision',
      {
        [ATTR.execution]: executionId,
        [ATTR.principal]: decider.principal ?? undefined,
        'workflowlookup.approval.decision': decision,
        'workflowlookup.approval.decided_via': decider.via,
      },
      async (span) => {
        const decided = await this.decideUntraced(executionId, decision, decider, reason, on);
        // After the commit; who decided is a principal (enduser.id), the reason free text kept out.
        span?.addEvent('approval decided', {
          [ATTR.approval]: decided.approval.approval_id,
          [ATTR.execution]: executionId,
          'workflowlookup.approval.status': decided.approval.status,
          ...(decided.approval.decided_via !== undefined
            ? { 'workflowlookup.approval.decided_via': decided.approval.decided_via }
            : {}),
        });
        return decided;
      },
    );
  }

  private async decideUntraced(
    executionId: string,
    decision: 'approve' | 'reject',
    decider: Decider,
    reason: string | undefined,
    on: DecisionTarget,
  ): Promise<{ approval: ApprovalView; state: string }> {
    const team = this.team();
    return this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      const record = exec && (await this.pending(tx, exec));
      // Another principal's execution is not this one's to see, unless it decides the pending step.
      const operator = decider.operator === true;
      const concerned =
        operator ||
        (exec !== undefined && exec.principal === decider.principal) ||
        (record !== undefined && mayDecide(record, decider.principal, team));
      if (!exec || !concerned)
        fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      if (record === undefined) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `execution ${executionId} has no approval pending (decided already, or none asked)`,
          stale: { approval_id: null },
        });
      }
      if (!operator && !mayDecide(record, decider.principal, team)) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `only ${deciders(record, team).join(', ')} may decide this approval (the step names its approvers, and the server's operator lets them decide)`,
        });
      }
      // A decision lands only on what the person was shown: a stale form, a replayed request or a CLI
      // command typed before the agent sent another output must not approve an output nobody saw.
      if (record.approval_id !== on.approval_id) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `approval ${on.approval_id} no longer waits: the agent sent another output since, which waits as ${record.approval_id}; look at that output, then decide on it`,
          stale: { approval_id: record.approval_id },
        });
      }
      if (on.output_sha256 !== undefined && on.output_sha256 !== outputDigest(record.output)) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `the output of approval ${record.approval_id} is not the one shown (its digest differs); look at it again, then decide`,
          stale: { approval_id: record.approval_id },
        });
      }
      if ((await this.expireIfDue(tx, exec, record)) !== undefined) {
        return { approval: approvalView(record), state: exec.state };
      }
      await this.apply(tx, exec, record, decision, { decider, reason });
      return { approval: approvalView(record), state: exec.state };
    });
  }

  /** Who decides an approval (approvers.ts): the pages say whom a pending approval waits for. */
  decidersOf(record: ApprovalRecord): string[] {
    return deciders(record, this.team());
  }

  /** The principals the operator lets decide others' approvals. */
  private team(): ReadonlySet<string> {
    return this.deps.approvers ?? NOBODY;
  }

  /**
   * Pending approvals, oldest first: every one (the operator), or those a principal may decide. Any
   * past its timeout is rejected on the way (by `timeout`) and left out.
   */
  async pendingApprovals(principal: string | null, limit = 200): Promise<ApprovalRecord[]> {
    const { store } = this.deps;
    const pending = await store.listApprovals({
      status: 'pending',
      ...(principal !== null ? { principal } : {}),
      limit,
    });
    const now = this.now();
    const team = this.team();
    const out: ApprovalRecord[] = [];
    for (const record of pending) {
      if (principal !== null && !mayDecide(record, principal, team) && record.principal !== principal)
        continue;
      if (record.expires_at !== null && Date.parse(record.expires_at) <= now) {
        await store
          .transaction(async (tx) => {
            const exec = await tx.getExecution(record.execution_id);
            const still = exec && (await this.pending(tx, exec));
            if (exec && still) await this.expireIfDue(tx, exec, still);
          })
          .catch(() => undefined);
        continue;
      }
      out.push(record);
    }
    return out;
  }

  /** One approval by id, whoever's it is: for the operator on the host (the CLI). */
  async approvalById(approvalId: string): Promise<ApprovalRecord | undefined> {
    return this.deps.store.getApproval(approvalId);
  }

  /** Every approval of an execution (its history), oldest first; undefined unless `principal` may see it. */
  async approvalsOf(executionId: string, principal: string | null): Promise<ApprovalRecord[] | undefined> {
    const { store } = this.deps;
    const exec = await store.getExecution(executionId);
    if (exec === undefined) return undefined;
    const all = await store.listApprovals({ execution_id: executionId, limit: 1000 });
    const team = this.team();
    if (principal !== null && exec.principal !== principal && !all.some((a) => mayDecide(a, principal, team)))
      return undefined;
    return all;
  }

  /**
   * After the output went to approval: where the client's user can be asked (elicitation), asks, and
   * records their decision. True when one was recorded: the caller then polls, and the poll answers it
   * (handing out the next step is the coordinator's job, not the approvals'). No answer leaves it pending.
   */
  async ask(advanced: Outcome, output: StepOutput, caller: Caller): Promise<boolean> {
    // Asked once, by the submission that asked for the approval (or its retry); polls only look.
    if (advanced.kind !== 'awaiting_approval' || caller.askApproval === undefined) return false;
    if (advanced.requested !== true) return false;
    if (advanced.approval.status !== 'pending' || advanced.token === null) return false;
    // The client's user is the owner: asked only when the owner decides this step (not its approvers).
    const record = await this.deps.store.getApproval(advanced.approval.approval_id);
    if (record === undefined || !mayDecide(record, caller.principal, this.team())) return false;
    // A person answers in their own time: later requests need not wait for them.
    caller.onNetworkWait?.();
    // The asker never fails: no answer is undefined. It may end the call instead, for the client to
    // ask its user and send the same call again with the answer (2026-07-28): the retry replays this.
    const answer = await caller.askApproval({
      execution_id: advanced.execution_id,
      workflow_id: advanced.workflow_id,
      step_name: advanced.step_name,
      prompt: advanced.approval.prompt,
      summary: output.summary,
    });
    if (answer === undefined) return false;
    try {
      await this.decide(
        advanced.execution_id,
        answer.decision,
        { principal: caller.principal, name: `${caller.principal} (client user)`, via: 'elicitation' },
        answer.reason,
        // What the form showed: this approval and its output.
        { approval_id: record.approval_id, output_sha256: outputDigest(record.output) },
      );
    } catch (error) {
      // Decided meanwhile (the dashboard, a timeout), or this principal may not decide: the poll tells.
      if (!(error instanceof DomainFailure)) throw error;
    }
    return true;
  }
}
