// workflow_next_step: a token and an output in, one store transaction that advances, refuses, holds the
// output for a person, or replays what the token already answered; then the command steps that follow.
import { asRecord, type Context } from '../engine/conditions.js';
import { checkContextValues } from '../engine/context-needs.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { findPromptStep, nextStep } from '../engine/next-step.js';
import { requestableFrom } from '../engine/state-machine.js';
import type { ValidationResult } from '../engine/validation-engine.js';
import { checkSubmission, withSubmissionCheck } from '../engine/workrail.js';
import { ATTR, annotate, inSpanSync, spanEvent } from '../telemetry/trace.js';
import { type Approvals, DECIDED } from './approvals.js';
import { endClaim } from './check-claims.js';
import type { CheckResult } from './checks.js';
import type { CommandPhase } from './command-phase.js';
import type { Delegation } from './delegation.js';
import { delegationOf } from './delegation-model.js';
import type { ServiceParts } from './execution-deps.js';
import {
  type Caller,
  checkArtifacts,
  nowIso,
  type Outcome,
  pausedByPerson,
  pauseOf,
  pausePhrase,
  type StepOutput,
  withContextCheck,
} from './execution-model.js';
import { digest } from './record-model.js';
import { type StepChecks, withCheck } from './step-checks.js';
import type { StepOutcomes } from './step-outcomes.js';
import type { TokenPayload } from './tokens.js';

export class Submission {
  constructor(
    private readonly parts: ServiceParts,
    private readonly outcomes: StepOutcomes,
    private readonly approvals: Approvals,
    private readonly checks: StepChecks,
    private readonly commandPhase: CommandPhase,
    private readonly delegation: Delegation,
  ) {}

  private get deps() {
    return this.parts.deps;
  }

  private get machine() {
    return this.parts.machine;
  }

  async submit(token: string, output: StepOutput, caller: Caller): Promise<Outcome> {
    const { store, tokens } = this.deps;
    const check = tokens.verify(token, this.parts.now());
    if (!check.ok && check.reason !== 'expired') {
      fail({
        code: 'token_invalid',
        message: 'Security error',
        details:
          check.reason === 'signature'
            ? 'the continuation token was not issued by this server or has been altered'
            : 'the continuation token is malformed',
      });
    }
    const payload = check.payload;
    if ((payload.sub ?? 'local') !== caller.principal) {
      // A token used by another principal (stolen, or shared by mistake) proves nothing.
      fail({ code: 'token_invalid', message: 'Security error', details: 'this token is not yours' });
    }
    if (!check.ok) {
      await store
        .transaction(async (tx) => {
          const exec = await tx.getExecution(payload.execution_id);
          if (exec)
            await this.machine.event(tx, 'token_expired', exec, payload.step_name, {
              expires_at: payload.expires_at,
            });
        })
        .catch(() => undefined);
      fail({
        code: 'token_expired',
        message: `Token expired at ${payload.expires_at}`,
        executionId: payload.execution_id,
        expiredAt: payload.expires_at,
      });
    }
    annotate({ [ATTR.execution]: payload.execution_id, [ATTR.step]: payload.step_name });
    checkArtifacts(output.artifacts ?? []);
    // One digest of the output: the replay key of its token, and what the record keeps of it.
    const outputHash = digest(output);
    return this.recordingErrors(payload.execution_id, payload.step_name, async () => {
      const { verified, claim } = await this.checks.run(payload, outputHash, caller);
      let advanced: Outcome;
      try {
        advanced = await this.advance(payload, output, outputHash, verified);
      } catch (error) {
        // Nothing was recorded: the claim ends here, and the next submission of the token may run it.
        await claim?.release();
        throw error;
      }
      // The transaction ended the claim with the answer: submissions of this token waiting here replay it.
      claim?.finished();
      if (advanced.kind === 'awaiting_approval') {
        // After the commit (a PostgreSQL transaction may run twice): which approval the output now waits
        // on, on the step's span; never the output or the prompt.
        if (advanced.requested === true)
          spanEvent('approval requested', {
            [ATTR.approval]: advanced.approval.approval_id,
            [ATTR.execution]: advanced.execution_id,
            [ATTR.step]: advanced.step_name,
          });
        // The coordinator asks the client's user, where it can (ExecutionService.nextStep).
        return advanced;
      }
      if (advanced.kind !== 'pending') return advanced;
      // Accepted, and command steps come next: run them (or finish what a crashed run left), then record
      // the final outcome so a retry of this token replays it.
      const { runs } = await this.commandPhase.run(payload.execution_id, caller);
      const outcome = await this.outcomes.afterCommands(
        payload.execution_id,
        runs,
        'advanced',
        advanced.done_step,
      );
      if (outcome.kind !== 'ended' || !isBusy(outcome)) {
        await store.transaction((tx) => tx.updateSubmission(payload.nonce, outcome));
      }
      return outcome;
    });
  }

  /** Failed calls roll their transaction back; the `error` telemetry event is written on its own. */
  private async recordingErrors<T>(executionId: string, stepName: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof DomainFailure && error.error.code !== 'execution_not_found') {
        const { code, message } = error.error;
        const details = 'details' in error.error ? error.error.details : undefined;
        await this.deps.store
          .transaction(async (tx) => {
            if (await tx.getExecution(executionId)) {
              await tx.insertTelemetry({
                event_type: 'error',
                execution_id: executionId,
                step_name: stepName,
                agent_name: null,
                metadata: { code, message, ...(details !== undefined ? { details } : {}) },
              });
            }
          })
          .catch(() => undefined);
      }
      throw error;
    }
  }

  private advance(payload: TokenPayload, output: StepOutput, outputHash: string, verified?: CheckResult) {
    const { store, engine } = this.deps;
    const { machine } = this;
    return store.transaction(async (tx): Promise<Outcome> => {
      const exec = await tx.getExecution(payload.execution_id);
      if (!exec) {
        fail({
          code: 'execution_not_found',
          message: 'Execution not found',
          executionId: payload.execution_id,
        });
      }
      const recorded = await tx.getSubmission(payload.nonce);
      if (recorded) {
        // A poll token answered by a person's decision replays it, whatever output came with the poll.
        if (recorded.output_hash === outputHash || recorded.output_hash === DECIDED)
          return replayed(recorded.response);
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          details:
            'this token was already used with a different output; use the token in the next call of that answer',
        });
      }
      if (exec.token_nonce !== payload.nonce) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          details: `this token is no longer current for execution ${exec.execution_id}`,
        });
      }
      if (exec.state !== 'running') {
        const pause = pauseOf(exec.metadata);
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          allowed: requestableFrom(exec.state),
          details:
            exec.state !== 'paused'
              ? `the execution is ${exec.state}`
              : pausedByPerson(pause)
                ? `the execution is paused: ${pausePhrase(pause)}; it waits for them to resume it (your token stays valid)`
                : 'the execution is paused; resume it with workflow_set_state {"state": "running"}',
          ...(pausedByPerson(pause) ? { pausedBy: pause } : {}),
        });
      }
      // Waiting on a person: the token polls. Nothing the agent sends moves the execution.
      const waiting = await this.approvals.pending(tx, exec);
      if (waiting !== undefined) {
        const decided = await this.approvals.expireIfDue(tx, exec, waiting);
        if (decided !== undefined) return decided;
        return this.approvals.awaiting(exec, waiting);
      }
      // Waiting on child executions: the token polls the join; only the join moves the step.
      if (delegationOf(exec.metadata)?.step === exec.current_step) {
        const decided = await this.delegation.settle(tx, exec);
        await tx.updateExecution(exec);
        if (decided !== undefined) return decided;
        const workflow = await machine.definition(exec, tx);
        const view = machine.stepView(exec, workflow, nextStep(workflow, exec.completed_steps, exec.context));
        return this.outcomes.answer(tx, exec, view, 'advanced', []);
      }
      await machine.event(tx, 'token_validated', exec, exec.current_step, { attempt: payload.attempt });
      const workflow = await machine.definition(exec, tx);
      const step = findPromptStep(workflow, exec.current_step ?? '');
      const row = await tx.getStep(exec.execution_id, exec.current_seq);
      if (!step || !row) {
        fail({
          code: 'storage_error',
          message: 'Storage error',
          details: 'the current step record is missing',
        });
      }
      // This answer ends the token's check claim (the row is written by every branch below).
      const claimed = endClaim(row);
      await machine.recordEvent(tx, 'output_submitted', exec, step.id, {
        seq: row.seq,
        attempt: payload.attempt,
        output_sha256: outputHash,
      });
      machine.refuseOwnedKeys(workflow, output.context, 'output.context');
      const context: Context = { ...exec.context, ...(output.context ?? {}) };
      // The regex and JSON Schema worker starts only for a step whose rules need it (see loadFor).
      await engine.loadFor(step.validationCriteria);
      let validation: ValidationResult;
      try {
        validation = inSpanSync(
          'validation check',
          { [ATTR.workflow]: workflow.id, [ATTR.step]: step.id },
          (span) => {
            engine.check(step.validationCriteria);
            const result = engine.validate(step.validationCriteria, output.summary, context);
            span?.setAttribute('workflowlookup.validation.valid', result.valid);
            return result;
          },
        );
      } catch (error) {
        // Rules not checked in time decided nothing: the retryable error rolls this transaction back, so
        // the token stays valid and no attempt is recorded (never a failed validation).
        if (error instanceof DomainFailure && error.error.code === 'validation_not_checked')
          fail({ ...error.error, workflowId: workflow.id, stepId: step.id });
        if (error instanceof DomainFailure) throw error;
        fail({
          code: 'criteria_invalid',
          message: 'Validation error',
          workflowId: workflow.id,
          stepId: step.id,
          details: (error as Error).message,
        });
      }
      // WorkRail contracts and assessments: a missing artifact refuses the output like a failed rule, and
      // a fired assessment consequence keeps the step current with its follow-up guidance.
      const reported = checkSubmission(workflow, step, output);
      validation = withSubmissionCheck(validation, reported);
      // The values the output gives must fit what the conditions compare them with.
      const contextCheck = checkContextValues(workflow, output.context, 'output.context.');
      validation = withContextCheck(validation, contextCheck);
      let named = contextCheck.variables;
      if (step.verify !== undefined) {
        if (this.deps.checks === undefined) {
          // Started before the checks were unconfigured: nothing can verify the step now.
          fail({
            code: 'check_unavailable',
            message: `check "${step.verify.check}" is not available: this server has no checks (WORKFLOWLOOKUP_CHECKS_FILE is unset)`,
            check: step.verify.check,
            reason: 'not_configured',
            workflowId: workflow.id,
            stepId: step.id,
            executionId: exec.execution_id,
          });
        }
        if (verified === undefined) {
          // The check was skipped by a read that raced another call: nothing is decided, send it again.
          fail({
            code: 'state_conflict',
            message: 'State error',
            executionId: exec.execution_id,
            state: exec.state,
            details: 'the step changed while its check was about to run; send the call again',
          });
        }
        await machine.event(tx, 'check_run', exec, step.id, { seq: row.seq, ...verified });
        validation = withCheck(validation, verified);
      }
      let next: ReturnType<typeof nextStep> | undefined;
      if (validation.valid) {
        const walked = this.outcomes.walkAfter(workflow, exec, step, output, context, reported);
        if ('next' in walked) next = walked.next;
        else {
          validation = walked.validation;
          named = walked.named;
        }
      }
      const at = nowIso();
      let outcome: Outcome;
      if (validation.valid && next !== undefined && step.approval !== undefined) {
        // Accepted by the rules; now a person decides. The output is held, the token becomes a poll.
        if (claimed) await tx.updateStep(row);
        outcome = await this.approvals.request(tx, exec, workflow, step, row, output, verified);
      } else if (!validation.valid || next === undefined) {
        outcome = await this.outcomes.reject(tx, exec, workflow, step, row, {
          reason: 'validation',
          validation,
          named,
          at,
          extra: verified !== undefined ? { check: verified } : {},
        });
      } else {
        outcome = await this.outcomes.complete(tx, exec, workflow, step, row, output, next);
      }
      await tx.recordSubmission({
        nonce: payload.nonce,
        execution_id: exec.execution_id,
        output_hash: outputHash,
        response: outcome,
        created_at: at,
      });
      return outcome;
    });
  }
}

/** A recorded outcome; records written before outcomes were versioned are the answer itself. */
function replayed(response: unknown): Outcome {
  const record = asRecord(response);
  if (record.v === 1) return record as unknown as Outcome;
  return { v: 0, kind: 'legacy', answer: record };
}

/** An ended outcome that is not completion: the execution is still running on a command step. */
function isBusy(outcome: Outcome): boolean {
  return outcome.kind === 'ended' && outcome.state === 'running';
}
