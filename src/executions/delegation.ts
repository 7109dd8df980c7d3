// Delegation: a step that hands its work to child executions (`delegate`). When the parent enters the
// step, its children are created in the same transaction (same principal, each its own id and token,
// linked to the parent); the parent's token then polls the join. A child that ends tells its parent in
// its own transaction, which takes the parent's row lock first, so children ending at once (on any
// replica) are joined one after another and the join completes the parent's step exactly once. The
// parent's pause, resume and end take its open children along. Timeouts are measured by the service's
// clock whenever the join is looked at, as approval timeouts are.
import { randomBytes } from 'node:crypto';
import { durationMs } from '../catalogs/command-steps.js';
import { type Context, evaluateCondition } from '../engine/conditions.js';
import { fail } from '../engine/errors.js';
import { delegationItems, findPromptStep, type nextStep, serverOwnedKeys } from '../engine/next-step.js';
import { type ExecutionState, isTerminal } from '../engine/state-machine.js';
import { render, TemplateError } from '../engine/templating.js';
import { checkSubmission } from '../engine/workrail.js';
import type { PromptStep, Workflow } from '../model/workflow.js';
import type { ExecutionRecord, StepRecord, StoreWriter } from '../store/execution-store.js';
import { currentTraceparent } from '../telemetry/trace.js';
import { DECIDED } from './approvals.js';
import {
  type ChildEntry,
  type ChildResult,
  countChildren,
  type DelegationState,
  delegationOf,
  joinProgress,
  joinVerdict,
  type ParentLink,
  parentOf,
} from './delegation-model.js';
import type { ServiceParts } from './execution-deps.js';
import { nowIso, type Outcome, type StepOutput } from './execution-model.js';
import type { Starting } from './starting.js';
import type { StateChanges } from './state-changes.js';
import type { StepOutcomes } from './step-outcomes.js';

/** Bounds of delegation per server: how deep children may nest, how many a principal may have open. */
export interface DelegationLimits {
  maxDepth: number;
  maxOpenChildren: number;
}

export const DEFAULT_DELEGATION_LIMITS: DelegationLimits = { maxDepth: 3, maxOpenChildren: 200 };

/** A child's result keeps this much of its summary and of each small artifact, in the parent's context. */
const RESULT_TEXT_MAX = 16_384;
const RESULT_ARTIFACTS_MAX = 20;

interface ChildSpec {
  name: string;
  workflowId: string;
  context: Context;
  modelTier?: string;
}

export class Delegation {
  /**
   * Per transaction, the parents whose children it is creating or moving right now while it holds the
   * parent's record in memory: their children's ends are recorded by that code, not read back. Per
   * transaction, not per process: another transaction's child ending must still tell its parent (it
   * waits for the parent's row lock, then reads what the mover committed).
   */
  private readonly busy = new WeakMap<StoreWriter, Set<string>>();

  private busyIn(tx: StoreWriter): Set<string> {
    let set = this.busy.get(tx);
    if (set === undefined) {
      set = new Set();
      this.busy.set(tx, set);
    }
    return set;
  }

  constructor(
    private readonly parts: ServiceParts,
    private readonly outcomes: StepOutcomes,
    private readonly starting: Starting,
    private readonly states: StateChanges,
    private readonly limits: DelegationLimits,
  ) {}

  private get machine() {
    return this.parts.machine;
  }

  // ------------------------------------------------------------------------------------------
  // Entering a delegating step

  /** The machine entered a delegating step of `parent`: its children are created now (the caller saves it). */
  async open(
    tx: StoreWriter,
    parent: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    next: ReturnType<typeof nextStep>,
  ): Promise<void> {
    const d = step.delegate;
    if (d === undefined) return;
    const link = parentOf(parent.metadata);
    const depth = (link?.depth ?? 0) + 1;
    const refuse = (reason: 'depth' | 'fan_out' | 'template', message: string, limit?: number): never =>
      fail({
        code: 'delegation_refused',
        message,
        reason,
        executionId: parent.execution_id,
        workflowId: workflow.id,
        stepId: step.id,
        ...(limit !== undefined ? { limit } : {}),
      });
    if (depth > this.limits.maxDepth) {
      refuse(
        'depth',
        `step "${step.id}" would create child executions ${depth} levels deep; this server allows ${this.limits.maxDepth} (WORKFLOWLOOKUP_MAX_DELEGATION_DEPTH)`,
        this.limits.maxDepth,
      );
    }
    const specs = this.childSpecs(step, next.context, refuse);
    const open = await tx.countOpenChildren(parent.principal);
    if (open + specs.length > this.limits.maxOpenChildren) {
      refuse(
        'fan_out',
        `step "${step.id}" would create ${specs.length} child executions, and ${open} of this principal's are still open; at most ${this.limits.maxOpenChildren} may be open at once (WORKFLOWLOOKUP_MAX_OPEN_CHILDREN). Finish or abandon some first`,
        this.limits.maxOpenChildren,
      );
    }
    const { registry } = this.parts.deps;
    const entries: ChildEntry[] = [];
    this.busyIn(tx).add(parent.execution_id);
    try {
      for (const spec of specs) {
        const entry = registry.require(spec.workflowId);
        this.starting.checkRequirements(entry.workflow);
        const parentLink: ParentLink = {
          execution_id: parent.execution_id,
          step: step.id,
          seq: parent.current_seq,
          name: spec.name,
          depth,
        };
        const { exec: child } = await this.starting.create(tx, {
          executionId: `exec_${randomBytes(12).toString('hex')}`,
          principal: parent.principal,
          entry,
          context: spec.context,
          parentId: parent.execution_id,
          metadata: { parent: { ...parentLink, trace: currentTraceparent() } },
        });
        entries.push({
          name: spec.name,
          execution_id: child.execution_id,
          workflow_id: entry.workflow.id,
          state: child.state,
          ...(spec.modelTier !== undefined ? { model_tier: spec.modelTier } : {}),
          ...(isTerminal(child.state) ? { result: await this.resultOf(tx, child, undefined) } : {}),
        });
      }
    } finally {
      this.busyIn(tx).delete(parent.execution_id);
    }
    const timeoutMs = d.timeout === undefined ? null : durationMs(d.timeout, 0);
    const state: DelegationState = {
      step: step.id,
      seq: parent.current_seq,
      into: d.into ?? step.id,
      join: d.join ?? 'all',
      onChildFailure: d.onChildFailure ?? 'fail',
      timeout_ms: timeoutMs,
      deadline: timeoutMs === null ? null : new Date(this.parts.now() + timeoutMs).toISOString(),
      timeouts: 0,
      children: entries,
    };
    parent.metadata = { ...parent.metadata, delegation: state };
    await this.machine.event(tx, 'delegation_started', parent, step.id, {
      seq: parent.current_seq,
      join: state.join,
      children: entries.map((c) => ({
        name: c.name,
        execution_id: c.execution_id,
        workflow_id: c.workflow_id,
      })),
    });
  }

  /** The children a step creates in this context: its list, its count, or one per item of its list. */
  private childSpecs(
    step: PromptStep,
    context: Context,
    refuse: (reason: 'template', message: string) => never,
  ): ChildSpec[] {
    const d = step.delegate;
    if (d === undefined) return [];
    const scope = this.machine.scope(context);
    const rendered = (value: Record<string, unknown> | undefined, where: string): Context => {
      if (value === undefined) return {};
      try {
        return render(value, scope) as Context;
      } catch (error) {
        if (error instanceof TemplateError)
          refuse('template', `step "${step.id}": ${where} cannot be rendered: ${error.message}`);
        throw error;
      }
    };
    const shared = rendered(d.context, 'delegate.context');
    if (d.children !== undefined) {
      return d.children
        .filter((c) => c.runCondition === undefined || evaluateCondition(c.runCondition, context))
        .map((c) => ({
          name: c.name,
          workflowId: c.workflow ?? (d.workflow as string),
          context: { ...shared, ...rendered(c.context, `the context of child "${c.name}"`) },
          ...(c.modelTier !== undefined ? { modelTier: c.modelTier } : {}),
        }));
    }
    if (d.count !== undefined) {
      return Array.from({ length: d.count }, (_, i) => ({
        name: String(i + 1),
        workflowId: d.workflow as string,
        context: { ...shared, index: i },
      }));
    }
    const items = delegationItems(step, context);
    return items.map((item, i) => ({
      name: String(i + 1),
      workflowId: d.workflow as string,
      context: { ...shared, [d.as ?? 'item']: item, index: i },
    }));
  }

  // ------------------------------------------------------------------------------------------
  // Changes of state

  /** The machine moved `exec` from `from` to `to`: a child that ended tells its parent; a parent takes its children along. */
  async transitioned(
    tx: StoreWriter,
    exec: ExecutionRecord,
    from: ExecutionState,
    to: ExecutionState,
    reason: string | undefined,
  ): Promise<void> {
    if (isTerminal(to) && exec.parent_id !== null && !this.busyIn(tx).has(exec.parent_id))
      await this.childEnded(tx, exec, reason);
    const d = delegationOf(exec.metadata);
    if (d === undefined || d.step !== exec.current_step) return;
    if (isTerminal(to) && to !== 'completed')
      await this.moveChildren(tx, exec, d, 'abandoned', `the parent execution ${exec.execution_id} is ${to}`);
    else if (to === 'paused')
      await this.moveChildren(tx, exec, d, 'paused', `the parent execution ${exec.execution_id} was paused`);
    else if (from === 'paused' && to === 'running')
      await this.moveChildren(
        tx,
        exec,
        d,
        'running',
        `the parent execution ${exec.execution_id} was resumed`,
      );
  }

  /**
   * Moves the parent's open children along (in the parent's transaction, the parent in memory): ends
   * them, pauses the running ones, or resumes those the parent paused.
   */
  private async moveChildren(
    tx: StoreWriter,
    parent: ExecutionRecord,
    d: DelegationState,
    to: 'abandoned' | 'paused' | 'running',
    reason: string,
  ): Promise<void> {
    this.busyIn(tx).add(parent.execution_id);
    try {
      for (const entry of d.children) {
        if (isTerminal(entry.state)) continue;
        const child = await tx.getExecution(entry.execution_id);
        if (child === undefined || isTerminal(child.state)) continue;
        if (to === 'paused' && child.state !== 'running') continue;
        if (to === 'running' && (child.state !== 'paused' || parentPaused(child) === false)) continue;
        await this.states.apply(
          tx,
          child,
          to,
          reason,
          parent.principal,
          {
            via: 'parent',
            by: `execution ${parent.execution_id}`,
            override: true,
          },
          () => [to],
        );
        await tx.updateExecution(child);
        entry.state = child.state;
        if (isTerminal(child.state)) entry.result = { state: child.state, reason };
      }
    } finally {
      this.busyIn(tx).delete(parent.execution_id);
    }
    parent.metadata = { ...parent.metadata, delegation: d };
  }

  /** A child ended (in its own transaction): its parent records it, then the join is settled. */
  private async childEnded(
    tx: StoreWriter,
    child: ExecutionRecord,
    reason: string | undefined,
  ): Promise<void> {
    const parentId = child.parent_id as string;
    // The parent's row lock: children ending at once are joined one after another.
    const parent = await tx.getExecution(parentId);
    if (parent === undefined) return;
    const d = delegationOf(parent.metadata);
    const entry = d?.children.find((c) => c.execution_id === child.execution_id);
    if (d === undefined || entry === undefined || isTerminal(entry.state)) return;
    entry.state = child.state;
    entry.result = await this.resultOf(tx, child, reason);
    parent.metadata = { ...parent.metadata, delegation: d };
    await this.machine.event(tx, 'child_ended', parent, d.step, {
      seq: d.seq,
      child: entry.name,
      execution_id: child.execution_id,
      state: child.state,
    });
    await this.settle(tx, parent);
    await tx.updateExecution(parent);
  }

  // ------------------------------------------------------------------------------------------
  // The join

  /** Settles the join of the caller's execution, if it waits on one (workflow_resume looks first). */
  async look(executionId: string, principal: string): Promise<void> {
    // A read first: most looks find nothing to settle, and need not take the parent's row lock.
    const seen = await this.parts.deps.store.getExecution(executionId);
    const pending = seen === undefined ? undefined : delegationOf(seen.metadata);
    if (seen === undefined || seen.principal !== principal || pending === undefined) return;
    const due = pending.deadline !== null && Date.parse(pending.deadline) <= this.parts.now();
    if (joinVerdict(pending) === 'waiting' && !due) return;
    await this.parts.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      if (exec === undefined || exec.principal !== principal || delegationOf(exec.metadata) === undefined)
        return;
      if ((await this.settle(tx, exec)) !== undefined) await tx.updateExecution(exec);
    });
  }

  /**
   * Settles the parent's join: when it holds (or can no longer hold, with `continue`) the children's
   * results go into the context and the step completes; when it can no longer hold (with `fail`) the
   * parent fails; past the deadline the wait times out (recorded, a fresh token). Each decision is
   * recorded as the answer to the poll token, so the orchestrator's next poll gets it. Undefined when
   * nothing changed. The caller saves the parent.
   */
  async settle(tx: StoreWriter, parent: ExecutionRecord): Promise<Outcome | undefined> {
    const d = delegationOf(parent.metadata);
    if (d === undefined || d.step !== parent.current_step || d.seq !== parent.current_seq) return undefined;
    if (parent.state !== 'running') return undefined;
    const workflow = await this.machine.definition(parent, tx);
    const step = findPromptStep(workflow, d.step);
    const row = await tx.getStep(parent.execution_id, d.seq);
    if (step === undefined || row === undefined) return undefined;
    const pollNonce = parent.token_nonce;
    const verdict = joinVerdict(d);
    let outcome: Outcome;
    if (verdict === 'waiting') {
      if (d.deadline === null || Date.parse(d.deadline) > this.parts.now()) return undefined;
      outcome = await this.timedOut(tx, parent, workflow, step, row, d);
    } else if (verdict === 'impossible' && d.onChildFailure === 'fail') {
      outcome = await this.failJoin(tx, parent, d);
    } else {
      outcome = await this.completeJoin(tx, parent, workflow, step, row, d);
    }
    if (pollNonce !== null) {
      await tx.recordSubmission({
        nonce: pollNonce,
        execution_id: parent.execution_id,
        output_hash: DECIDED,
        response: outcome,
        created_at: nowIso(),
      });
    }
    return outcome;
  }

  /** The join held: the children's results go into the context under `into`, and the step completes. */
  private async completeJoin(
    tx: StoreWriter,
    parent: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    row: StepRecord,
    d: DelegationState,
  ): Promise<Outcome> {
    // Children the join no longer needs (any, at least N) stop now: their work would be thrown away.
    if (countChildren(d.children).open > 0)
      await this.moveChildren(tx, parent, d, 'abandoned', `the join of step "${d.step}" held without it`);
    const results = Object.fromEntries(
      d.children.map((c) => [c.name, c.result ?? { state: c.state }] as [string, ChildResult]),
    );
    const output: StepOutput = { summary: joinProgress(d) };
    const context: Context = { ...parent.context, [d.into]: results };
    const { delegation: _done, ...metadata } = parent.metadata;
    parent.metadata = metadata;
    await this.machine.event(tx, 'delegation_joined', parent, d.step, {
      seq: d.seq,
      completed: countChildren(d.children).completed,
      children: d.children.length,
    });
    const walked = this.outcomes.walkAfter(
      workflow,
      parent,
      step,
      output,
      context,
      checkSubmission(workflow, step, output),
    );
    if (!('next' in walked)) {
      // A loop after the step cannot start from what the children gave: nothing the orchestrator can send fixes it.
      return this.endParent(
        tx,
        parent,
        `step "${d.step}" joined, but ${walked.validation.issues.join('; ')}`,
      );
    }
    return this.outcomes.complete(tx, parent, workflow, step, row, output, walked.next);
  }

  /** The join can no longer hold and a failed child fails the parent: the open ones stop, the parent fails. */
  private async failJoin(tx: StoreWriter, parent: ExecutionRecord, d: DelegationState): Promise<Outcome> {
    const failed = d.children.filter((c) => isTerminal(c.state) && c.state !== 'completed');
    const reason = `step "${d.step}" cannot be joined: ${failed.map((c) => `child "${c.name}" ${c.state}`).join(', ')}; ${joinProgress(d)}`;
    return this.endParent(tx, parent, reason);
  }

  private async endParent(tx: StoreWriter, parent: ExecutionRecord, reason: string): Promise<Outcome> {
    await this.states.apply(tx, parent, 'failed', reason, parent.principal, { via: 'agent' }, () => [
      'failed',
    ]);
    return this.outcomes.outcome(parent, undefined, 'advanced', []);
  }

  /** The wait ran past its deadline: recorded, and the poll gets a refusal with a fresh token that waits again. */
  private async timedOut(
    tx: StoreWriter,
    parent: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    row: StepRecord,
    d: DelegationState,
  ): Promise<Outcome> {
    const open = d.children.filter((c) => !isTerminal(c.state)).map((c) => c.name);
    d.timeouts += 1;
    d.deadline = new Date(this.parts.now() + (d.timeout_ms ?? 0)).toISOString();
    parent.metadata = { ...parent.metadata, delegation: d };
    await this.machine.event(tx, 'delegation_timed_out', parent, d.step, {
      seq: d.seq,
      open,
      timeouts: d.timeouts,
      next_deadline: d.deadline,
    });
    return this.outcomes.reject(tx, parent, workflow, step, row, {
      reason: 'delegation',
      validation: {
        valid: false,
        issues: [
          `DELEGATION_TIMEOUT: ${open.length} of ${d.children.length} children not done in time (${open.join(', ')}); ${joinProgress(d)}`,
        ],
        suggestions: [
          `Hand the open children's calls to subagents again if they stopped, or abandon them; the call in next waits again until ${d.deadline}.`,
        ],
      },
      named: [],
      at: nowIso(),
      extra: await this.delegationExtra(tx, parent),
    });
  }

  private async delegationExtra(tx: StoreWriter, parent: ExecutionRecord) {
    const view = await this.outcomes.delegationView(tx, parent);
    return view === undefined ? {} : { delegation: view };
  }

  /** What a child that ended hands its parent. */
  private async resultOf(
    tx: StoreWriter,
    child: ExecutionRecord,
    reason: string | undefined,
  ): Promise<ChildResult> {
    const workflow = await this.machine.definition(child, tx);
    const steps = await tx.getSteps(child.execution_id);
    const last = [...steps]
      .reverse()
      .find(
        (s) =>
          s.status === 'completed' && typeof (s.output as { summary?: unknown } | null)?.summary === 'string',
      );
    const owned = serverOwnedKeys(workflow);
    const context = Object.fromEntries(
      Object.entries(child.context).filter(([k]) => !owned.has(k) && k !== 'index'),
    );
    const artifacts = (await tx.getArtifacts(child.execution_id)).slice(0, RESULT_ARTIFACTS_MAX).map((a) => ({
      name: a.name,
      type: a.artifact_type,
      step: a.step_name,
      size_bytes: a.size_bytes,
      ...(a.content.length <= RESULT_TEXT_MAX ? { content: a.content } : {}),
    }));
    const summary = (last?.output as { summary?: string } | undefined)?.summary;
    return {
      state: child.state,
      ...(summary !== undefined ? { summary: summary.slice(0, RESULT_TEXT_MAX) } : {}),
      ...('final_output' in child.metadata ? { final_output: child.metadata.final_output } : {}),
      ...(Object.keys(context).length > 0 ? { context } : {}),
      ...(artifacts.length > 0 ? { artifacts } : {}),
      ...(reason !== undefined && child.state !== 'completed' ? { reason } : {}),
    };
  }
}

/** Whether a paused child was paused by its parent (and so resumes with it). */
function parentPaused(child: ExecutionRecord): boolean {
  const pause = child.metadata.paused_by as { via?: unknown } | undefined;
  return pause?.via === 'parent';
}
