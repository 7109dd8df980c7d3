import { fail } from '../engine/errors.js';
import { findActionStep, nextStep } from '../engine/next-step.js';
import {
  canTransition,
  type ExecutionState,
  isTerminal,
  type RequestableState,
  requestableFrom,
  TRANSITIONS,
} from '../engine/state-machine.js';
import { isCommandStep } from '../model/workflow.js';
import type { ExecutionRecord, StoreWriter } from '../store/execution-store.js';
import type { Approvals } from './approvals.js';
import type { CommandPhase } from './command-phase.js';
import { waitingOn } from './command-phase.js';
import type { ServiceParts, StateChange } from './execution-deps.js';
import {
  type ApprovalView,
  approvalView,
  type Caller,
  type CurrentState,
  nowIso,
  type PauseRecord,
  pausedByPerson,
  pauseOf,
  pausePhrase,
  type StepView,
} from './execution-model.js';
import type { StepOutcomes } from './step-outcomes.js';

export class StateChanges {
  constructor(
    private readonly parts: ServiceParts,
    private readonly approvals: Approvals,
    private readonly commandPhase: CommandPhase,
    private readonly outcomes: StepOutcomes,
  ) {}

  private get deps() {
    return this.parts.deps;
  }

  private get machine() {
    return this.parts.machine;
  }

  /**
   * A requested change of state (workflow_set_state, the dashboard): pause, resume, abandon or diverge.
   * Never `completed` or `failed`: only the last step's accepted output completes an execution.
   */
  async setState(
    executionId: string,
    to: RequestableState,
    reason: string | undefined,
    caller: Caller,
    how: StateChange = { via: 'agent' },
  ) {
    return this.move(executionId, to, reason, caller, requestableFrom, how);
  }

  /** The server's own verdict on an execution it was driving (a run or task that failed or died). */
  async markFailed(executionId: string, reason: string, caller: Caller) {
    return this.move(executionId, 'failed', reason, caller, (from) => [...TRANSITIONS[from]], {
      via: 'agent',
    });
  }

  private async move(
    executionId: string,
    to: ExecutionState,
    reason: string | undefined,
    caller: Caller,
    allowedFrom: (from: ExecutionState) => readonly ExecutionState[],
    how: StateChange,
  ) {
    return this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      if (!exec || exec.principal !== caller.principal) {
        fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      }
      const from = exec.state;
      await this.apply(tx, exec, to, reason, caller.principal, how, allowedFrom);
      await tx.updateExecution(exec);
      return {
        execution_id: executionId,
        previous_state: from,
        state: to,
        allowed_next: [...allowedFrom(to)],
      };
    });
  }

  /**
   * Moves an execution the caller holds (locked in `tx`) to `to`, as `move` checks it: the state table,
   * a person's pause, who paused it; an end closes its pending approval and its running step. The
   * delegation moves children with it (the parent's pause or end), as `principal` with `how`.
   */
  async apply(
    tx: StoreWriter,
    exec: ExecutionRecord,
    to: ExecutionState,
    reason: string | undefined,
    principal: string,
    how: StateChange,
    allowedFrom: (from: ExecutionState) => readonly ExecutionState[] = requestableFrom,
  ): Promise<void> {
    const from = exec.state;
    const allowed = allowedFrom(from);
    if (from === to || !canTransition(from, to) || !allowed.includes(to)) {
      fail({
        code: 'state_conflict',
        message: 'State error',
        executionId: exec.execution_id,
        state: from,
        allowed,
        details: `cannot go from ${from} to ${to}; allowed from ${from}: ${allowed.join(', ') || 'none (terminal state)'}`,
      });
    }
    const pause = pauseOf(exec.metadata);
    if (
      from === 'paused' &&
      to === 'running' &&
      pausedByPerson(pause) &&
      how.via === 'agent' &&
      !how.override
    ) {
      // A person's pause is theirs to lift: the agent waits, unless the principal explicitly overrides.
      fail({
        code: 'state_conflict',
        message: 'State error',
        executionId: exec.execution_id,
        state: from,
        allowed: ['abandoned'],
        details: `${pausePhrase(pause)}: it stays paused until they resume it. Tell the user, then wait; workflow_resume shows when it runs again. Only if the user tells you to go on now, send workflow_set_state again with "override_pause": true`,
        pausedBy: pause,
      });
    }
    const by = how.by ?? principal;
    await this.machine.transition(tx, exec, to, reason, { by, via: how.via });
    if (to === 'paused') {
      const record: PauseRecord = {
        by,
        via: how.via,
        at: exec.updated_at,
        ...(reason !== undefined ? { reason } : {}),
      };
      exec.metadata = { ...exec.metadata, paused_by: record };
    } else if (pause !== undefined) {
      const { paused_by: _lifted, ...metadata } = exec.metadata;
      exec.metadata = metadata;
    }
    if (isTerminal(to)) {
      // An ended execution has nothing left to approve: the pending request is closed with it.
      const waiting = await this.approvals.pending(tx, exec);
      if (waiting !== undefined) {
        waiting.status = 'rejected';
        waiting.decided_by = `execution ${to}`;
        waiting.decided_via = 'state';
        waiting.decided_at = exec.updated_at;
        waiting.reason = reason ?? null;
        await tx.updateApproval(waiting);
        const { awaiting_approval: _closed, ...metadata } = exec.metadata;
        exec.metadata = metadata;
      }
      const row = await tx.getStep(exec.execution_id, exec.current_seq);
      if (row && row.status === 'running') {
        row.status = 'failed';
        row.completed_at = exec.updated_at;
        row.lease_owner = null;
        row.lease_expires_at = null;
        await tx.updateStep(row);
      }
    }
  }

  /** The current step with a usable token; an expired live token is replaced by a fresh one. */
  async current(executionId: string, caller: Caller, outer?: StoreWriter): Promise<CurrentState> {
    const { machine } = this;
    const run = async (tx: StoreWriter): Promise<CurrentState> => {
      const exec = await tx.getExecution(executionId);
      if (!exec || exec.principal !== caller.principal) {
        fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      }
      const workflow = await machine.definition(exec, tx);
      const base = {
        execution_id: exec.execution_id,
        workflow_id: exec.workflow_name,
        state: exec.state,
        current_step: exec.current_step,
      };
      const action = exec.current_step !== null ? findActionStep(workflow, exec.current_step) : undefined;
      if (action !== undefined && isCommandStep(action) && !isTerminal(exec.state)) {
        const waiting = waitingOn(exec.metadata);
        const pause = exec.state === 'paused' ? pauseOf(exec.metadata) : undefined;
        return {
          ...base,
          on_command: true,
          token: null,
          ...(waiting ? { waiting } : {}),
          ...(pause ? { paused: pause } : {}),
        };
      }
      let view: StepView | undefined;
      let approval: ApprovalView | undefined;
      if (!isTerminal(exec.state) && exec.current_step !== null) {
        let waiting = await this.approvals.pending(tx, exec);
        if (waiting !== undefined && (await this.approvals.expireIfDue(tx, exec, waiting)) !== undefined) {
          waiting = undefined;
        }
        if (exec.token_expires_at !== null && Date.parse(exec.token_expires_at) <= this.parts.now()) {
          machine.mintToken(exec, exec.current_step);
          await machine.event(tx, 'token_generated', exec, exec.current_step, {
            reason: 'refresh after expiry',
          });
          exec.updated_at = nowIso();
          await tx.updateExecution(exec);
          if (waiting !== undefined) {
            // The fresh token polls the same approval.
            waiting.poll_nonce = exec.token_nonce as string;
            await tx.updateApproval(waiting);
          }
        }
        if (waiting !== undefined) approval = approvalView(waiting);
        // Back from a context reset: the persona and the metaGuidance in full again.
        view = machine.stepView(exec, workflow, nextStep(workflow, exec.completed_steps, exec.context), true);
      }
      const pause = exec.state === 'paused' ? pauseOf(exec.metadata) : undefined;
      const delegation = view ? await this.outcomes.delegationView(tx, exec) : undefined;
      return {
        ...base,
        on_command: false,
        ...(view ? { view } : {}),
        ...(approval ? { approval } : {}),
        ...(pause ? { paused: pause } : {}),
        ...(delegation ? { delegation } : {}),
        token: view && exec.state === 'running' ? machine.liveToken(exec) : null,
      };
    };
    return outer ? run(outer) : this.deps.store.transaction(run);
  }

  /** workflow_resume: runs command steps left pending (a crash, a wait), then reports the current step. */
  async resume(executionId: string, caller: Caller): Promise<CurrentState> {
    await this.current(executionId, caller); // not found (or not the caller's) before anything runs
    const { runs } = await this.commandPhase.run(executionId, caller);
    const current = await this.current(executionId, caller);
    return runs.length > 0 ? { ...current, commands: runs } : current;
  }
}
