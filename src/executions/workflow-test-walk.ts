// One scenario's walk through the execution service: the tested workflow's execution, as its agent reports
// what the scenario says, and, where a step delegates, each child execution the server created, walked by
// a child agent of its own (in the delegation's order, one after another), then the parent's wait. Only
// what an agent can do: report (workflow_next_step), pick a child up (workflow_resume), end one
// (workflow_set_state, or the server's verdict), poll the wait; a person decides approvals.
import type { CoverageTally } from '../engine/coverage.js';
import { findPromptStep } from '../engine/next-step.js';
import { isTerminal } from '../engine/state-machine.js';
import type { Workflow } from '../model/workflow.js';
import type { ExecutionStore } from '../store/execution-store.js';
import { type DelegationScript, reportUnits } from '../workflows/test-format.js';
import { delegationOf, needed } from './delegation-model.js';
import type { Caller, CurrentState, DelegationView, Outcome } from './execution-model.js';
import type { ExecutionService } from './execution-service.js';
import { type ChildAgent, childAgent, type WalkEvents } from './workflow-test-children.js';
import { type AnswerBook, TEST_DECIDER, type WorkBudget } from './workflow-test-doubles.js';
import type { ChildRun, DelegationRun, JoinEnd, Rejection } from './workflow-test-results.js';

/** The service's clock in a scenario: real time, moved on when a wait must time out. */
export class ScenarioClock {
  private offset = 0;

  readonly now = (): number => Date.now() + this.offset;

  /** Moves the clock just past `deadline` (an ISO time), if it is not past it already. */
  passDeadline(deadline: string): void {
    const left = Date.parse(deadline) - this.now();
    if (left >= 0) this.offset += left + 1;
  }
}

/** Where an execution stands, for its agent. */
type At =
  | { kind: 'step'; step: string; token: string; refused?: string[] }
  | { kind: 'delegated'; step: string; token: string | null; delegation: DelegationView }
  | { kind: 'over' };

const OVER: At = { kind: 'over' };

function atOutcome(outcome: Outcome): At {
  switch (outcome.kind) {
    case 'step':
      return outcome.token !== null
        ? { kind: 'step', step: outcome.view.step_name, token: outcome.token }
        : OVER;
    case 'rejected':
      if (outcome.token === null) return OVER;
      if (outcome.delegation !== undefined)
        return {
          kind: 'delegated',
          step: outcome.step_name,
          token: outcome.token,
          delegation: outcome.delegation,
        };
      return {
        kind: 'step',
        step: outcome.step_name,
        token: outcome.token,
        refused: outcome.validation.issues,
      };
    case 'delegated':
      return {
        kind: 'delegated',
        step: outcome.step_name,
        token: outcome.token,
        delegation: outcome.delegation,
      };
    default:
      return OVER;
  }
}

/** Where a picked-up execution stands (workflow_resume's answer). */
function atCurrent(current: CurrentState): At {
  if (current.state !== 'running' || current.view === undefined || current.token === null) return OVER;
  if (current.delegation !== undefined)
    return {
      kind: 'delegated',
      step: current.view.step_name,
      token: current.token,
      delegation: current.delegation,
    };
  if (current.approval !== undefined) return OVER;
  return { kind: 'step', step: current.view.step_name, token: current.token };
}

/** One agent: its answers, where its refusals go, and (the scenario's own) the coverage it feeds. */
interface Agent {
  book: AnswerBook;
  rejected: Rejection[];
  /** The scenario's own agent: the tested workflow, its tally, and its children's scripts. */
  own?: { workflow: Workflow; tally: CoverageTally; scripts: Record<string, DelegationScript> };
  run?: ChildRun;
}

export interface WalkParts {
  service: ExecutionService;
  store: ExecutionStore;
  caller: Caller;
  budget: WorkBudget;
  clock: ScenarioClock;
  events: WalkEvents;
  /** Reports after which the walk stops (max_reports), the children's included. */
  limit: number;
}

/** The walk of one scenario; what it did is read from its fields once `run` returns. */
export class ScenarioWalk {
  reports = 0;
  overLimit = false;
  stopped: string | undefined;
  readonly rejected: Rejection[] = [];
  readonly delegations: DelegationRun[] = [];
  /** Each child's context at the end. */
  readonly childContexts = new Map<ChildRun, Record<string, unknown>>();

  constructor(private readonly parts: WalkParts) {}

  /** The walk cannot go on: the report limit, a cancelled run or a spent budget. */
  private get halted(): boolean {
    return this.overLimit || this.stopped !== undefined || this.parts.budget.spent;
  }

  /** A call to the service on the parent's or a child's behalf (the walk events are routed by workflow). */
  private async call<T>(_owner: 'parent' | 'child', fn: () => Promise<T>): Promise<T> {
    return fn();
  }

  /** Walks the tested workflow's execution from its start's outcome. */
  async run(
    executionId: string,
    started: () => Promise<Outcome>,
    own: Required<Agent>['own'],
    book: AnswerBook,
  ): Promise<void> {
    const outcome = await this.call('parent', started);
    await this.walk(executionId, atOutcome(outcome), { book, rejected: this.rejected, own });
  }

  /** Walks one execution until it ends, its agent has nothing else to say, or the walk halts. */
  private async walk(executionId: string, start: At, agent: Agent): Promise<void> {
    const { service, store, caller, budget } = this.parts;
    const owner = agent.own !== undefined ? 'parent' : 'child';
    let at = start;
    for (;;) {
      if (at.kind === 'over') return;
      if (at.kind === 'delegated') {
        const waited = await this.delegation(executionId, at, agent);
        // Still waiting on its children (one has nothing else to say, or the walk halted): it stays there.
        if (
          waited.kind === 'delegated' &&
          (sameChildren(waited.delegation.children, at.delegation.children) || this.halted)
        )
          return;
        at = waited;
        continue;
      }
      const prompt = agent.own !== undefined ? findPromptStep(agent.own.workflow, at.step) : undefined;
      if (agent.own !== undefined && prompt === undefined) return;
      const context = agent.own !== undefined ? ((await store.getExecution(executionId))?.context ?? {}) : {};
      if (at.refused !== undefined) {
        agent.rejected.push({ step: at.step, issues: at.refused });
        // The agent has nothing else to say at this step: the execution stays on it.
        if (agent.book.exhausted(at.step)) return;
      } else if (prompt !== undefined) agent.own?.tally.handedOut(prompt, context);
      if (this.reports >= this.parts.limit) {
        this.overLimit = true;
        return;
      }
      if (budget.signal?.aborted) {
        this.stopped = 'the run was cancelled';
        return;
      }
      const output = agent.book.next(at.step);
      if (!budget.take(reportUnits(output))) return;
      // Each report is a few synchronous SQLite transactions: let other requests in between them.
      await new Promise((resolve) => setImmediate(resolve));
      if (prompt !== undefined) agent.own?.tally.reported(prompt, { ...context, ...(output.context ?? {}) });
      this.reports += 1;
      if (agent.run !== undefined) agent.run.reports += 1;
      const token = at.token;
      let outcome = await this.call(owner, () => service.nextStep(token, output, caller));
      if (outcome.kind === 'awaiting_approval' && outcome.token !== null) {
        // A person decides, as the test says; the agent's poll then gets the decision.
        if (!budget.take(1)) return;
        const { decision, reason } = agent.book.decision(at.step);
        const approvalId = outcome.approval.approval_id;
        await this.call(owner, () =>
          service.decide(executionId, decision, TEST_DECIDER, reason, { approval_id: approvalId }),
        );
        const poll = outcome.token;
        outcome = await this.call(owner, () =>
          service.nextStep(poll, { summary: 'waiting for approval' }, caller),
        );
      }
      at = atOutcome(outcome);
    }
  }

  /** Polls a delegating step's wait (workflow_next_step with its token and any output). */
  private async poll(owner: 'parent' | 'child', token: string | null): Promise<At> {
    if (token === null || !this.parts.budget.take(1)) return OVER;
    const { service, caller } = this.parts;
    return atOutcome(
      await this.call(owner, () => service.nextStep(token, { summary: 'waiting for the children' }, caller)),
    );
  }

  /**
   * A delegating step: each child is walked by its own agent, in the delegation's order (a `late` one
   * only once the wait timed out), then the wait is polled; its answer is where the parent goes on.
   */
  private async delegation(
    parentId: string,
    at: Extract<At, { kind: 'delegated' }>,
    agent: Agent,
  ): Promise<At> {
    const owner = agent.own !== undefined ? 'parent' : 'child';
    const script = agent.own?.scripts[at.step];
    const record: DelegationRun = { step: at.step, join: 'waiting', timeouts: 0, children: [] };
    // Only the tested workflow's own delegations are facts of the scenario (grandchildren walk unrecorded).
    if (agent.own !== undefined) this.delegations.push(record);
    const late: [string, ChildAgent, ChildRun][] = [];
    for (const child of at.delegation.children) {
      const run: ChildRun = {
        name: child.name,
        workflow_id: child.workflow_id,
        state: child.state,
        path: [],
        rejected: [],
        reports: 0,
      };
      record.children.push(run);
      const childOf = childAgent(script, child.name);
      if (childOf.late && at.delegation.deadline !== null) late.push([child.execution_id, childOf, run]);
      else if (!this.halted) await this.child(child.execution_id, childOf, run);
    }
    let waited = this.halted ? at : await this.poll(owner, at.token);
    if (late.length > 0 && !this.halted && waited.kind === 'delegated' && waited.delegation.deadline) {
      // The late children have not reported: the wait runs past its deadline, and times out.
      this.parts.clock.passDeadline(waited.delegation.deadline);
      const timedOut = await this.timedOut(owner, waited, record, agent);
      waited = timedOut;
      for (const [id, childOf, run] of late) if (!this.halted) await this.child(id, childOf, run);
      if (!this.halted && waited.kind === 'delegated') waited = await this.poll(owner, waited.token);
    }
    await this.record(parentId, at, record, agent);
    return waited;
  }

  /** Polls a wait past its deadline: the refusal that says it timed out, and the fresh token that waits again. */
  private async timedOut(
    owner: 'parent' | 'child',
    waiting: Extract<At, { kind: 'delegated' }>,
    record: DelegationRun,
    agent: Agent,
  ): Promise<At> {
    if (waiting.token === null || !this.parts.budget.take(1)) return waiting;
    const { service, caller } = this.parts;
    const token = waiting.token;
    const outcome = await this.call(owner, () =>
      service.nextStep(token, { summary: 'waiting for the children' }, caller),
    );
    if (outcome.kind === 'rejected' && outcome.delegation !== undefined) {
      record.timeouts += 1;
      agent.own?.tally.joined(waiting.step, 'timed_out');
      agent.rejected.push({ step: outcome.step_name, issues: outcome.validation.issues });
    }
    return atOutcome(outcome);
  }

  /** A child: ended as the test says, or picked up (workflow_resume) and walked by its own agent. */
  private async child(executionId: string, agent: ChildAgent, run: ChildRun): Promise<void> {
    const { service, store, caller, budget } = this.parts;
    const exec = await store.getExecution(executionId);
    // Ended already: the join no longer needed it, or its parent ended.
    if (exec === undefined || isTerminal(exec.state) || !budget.take(1)) return;
    if (agent.end !== undefined) {
      const reason = agent.reason ?? `the workflow test ends it (${agent.end})`;
      await this.call('child', () =>
        agent.end === 'failed'
          ? service.markFailed(executionId, reason, caller)
          : service.setState(executionId, 'abandoned', reason, caller),
      );
      return;
    }
    const current = await this.call('child', () => service.resume(executionId, caller));
    await this.walk(executionId, atCurrent(current), { book: agent.book, rejected: run.rejected, run });
  }

  /** What the children and the join came to, once the wait was polled. */
  private async record(
    parentId: string,
    at: Extract<At, { kind: 'delegated' }>,
    record: DelegationRun,
    agent: Agent,
  ): Promise<void> {
    const { store } = this.parts;
    for (const [i, child] of at.delegation.children.entries()) {
      const run = record.children[i] as ChildRun;
      const exec = await store.getExecution(child.execution_id);
      if (exec === undefined) continue;
      run.state = exec.state;
      run.path = (await store.getSteps(child.execution_id)).map((r) => r.step_name);
      this.childContexts.set(run, exec.context);
    }
    // The parent still on this delegation (its record keeps it until the join): waiting, or failed by it.
    const parent = await store.getExecution(parentId);
    const open = parent !== undefined ? delegationOf(parent.metadata) : undefined;
    const still =
      open !== undefined && open.step === at.step && sameChildren(open.children, at.delegation.children);
    let join: JoinEnd;
    if (still && parent?.state === 'failed') join = 'failed';
    else if (still) join = 'waiting';
    else {
      const completed = record.children.filter((c) => c.state === 'completed').length;
      join = completed >= needed(at.delegation.join, record.children.length) ? 'held' : 'continued';
    }
    record.join = join;
    if (join !== 'waiting') agent.own?.tally.joined(at.step, join);
  }
}

/** Two lists of children are the same children (one delegation, not a later round of its step). */
function sameChildren(
  a: readonly { execution_id: string }[],
  b: readonly { execution_id: string }[],
): boolean {
  return a.length === b.length && a.every((c, i) => c.execution_id === b[i]?.execution_id);
}
