import { fail } from '../engine/errors.js';
import type { RequestableState } from '../engine/state-machine.js';
import type { ApprovalRecord, StoreWriter } from '../store/execution-store.js';
import { type Metrics, NO_METRICS } from '../telemetry/metrics.js';
import { ATTR, inSpan, linkSpan } from '../telemetry/trace.js';
import { Approvals } from './approvals.js';
import { CommandPhase } from './command-phase.js';
import { DEFAULT_DELEGATION_LIMITS, Delegation } from './delegation.js';
import type {
  Decider,
  DecisionTarget,
  ExecutionDeps,
  ServiceParts,
  StartInput,
  StateChange,
} from './execution-deps.js';
import type { ApprovalView, Caller, CurrentState, Outcome, StepOutput } from './execution-model.js';
import { ExecutionQueries } from './execution-queries.js';
import { StepMachine } from './execution-steps.js';
import { toChainEvent } from './record-chain.js';
import { type ChainEvent, digest, genesis, type RecordData } from './record-model.js';
import { Starting } from './starting.js';
import { StateChanges } from './state-changes.js';
import { StepChecks } from './step-checks.js';
import { StepOutcomes } from './step-outcomes.js';
import { Submission } from './submission.js';

export type { Decider, DecisionTarget, ExecutionDeps, StartInput, StateChange };
// Readers without the service (the dashboard's read-only connection) load it from the same chunk.
export { ExecutionQueries };

/**
 * Durable executions (seed 004): the server holds the state in the store, the agent holds a signed
 * continuation token. Every state change is one store transaction; steps are chosen by the same
 * engine as the stateless `workflow_next`, against the execution's pinned definition and context.
 * Methods return outcomes; the faces word them for the wire.
 *
 * This class coordinates; each job is a part of its own (docs/architecture.md, "Durable executions"):
 * starting (starting.ts), submitting and advancing (submission.ts), approvals (approvals.ts), checks
 * (step-checks.ts), changes of state and where an execution stands (state-changes.ts), over the kernel
 * they share (step-outcomes.ts). Parts call only the parts below them; what crosses jobs — a decision
 * made while the agent's call waits, then the poll that hands out the next step — happens here.
 */
export class ExecutionService {
  /** The read side: status, history, artifacts, telemetry, search. */
  readonly queries: ExecutionQueries;
  private readonly starting: Starting;
  private readonly submission: Submission;
  private readonly approvals: Approvals;
  private readonly states: StateChanges;
  private readonly delegation: Delegation;
  private readonly machine: StepMachine;
  private readonly metrics: Metrics;

  constructor(private readonly deps: ExecutionDeps) {
    this.metrics = deps.metrics ?? NO_METRICS;
    const now = () => deps.clock?.() ?? Date.now();
    const machine = new StepMachine({
      store: deps.store,
      personas: deps.personas,
      tokens: deps.tokens,
      allowedEnv: deps.allowedEnv ?? {},
      observe: deps.observe,
      now,
    });
    this.machine = machine;
    const parts: ServiceParts = { deps, machine, now };
    const commandPhase = new CommandPhase(machine, deps.commands);
    const outcomes = new StepOutcomes(parts);
    this.approvals = new Approvals(parts, outcomes);
    this.states = new StateChanges(parts, this.approvals, commandPhase, outcomes);
    this.starting = new Starting(parts, outcomes, this.states, commandPhase);
    const delegation = new Delegation(
      parts,
      outcomes,
      this.starting,
      this.states,
      deps.delegation ?? DEFAULT_DELEGATION_LIMITS,
    );
    this.delegation = delegation;
    // What the machine tells the delegation inside a transaction: a delegating step entered (children are
    // created), a change of state (a child that ended is joined; a parent takes its children along).
    machine.hooks = {
      entered: (tx, exec, workflow, step, next) => delegation.open(tx, exec, workflow, step, next),
      transitioned: (tx, exec, from, to, reason) => delegation.transitioned(tx, exec, from, to, reason),
    };
    this.submission = new Submission(
      parts,
      outcomes,
      this.approvals,
      new StepChecks(parts),
      commandPhase,
      delegation,
    );
    this.queries = new ExecutionQueries(deps.store, (exec) => machine.definition(exec));
  }

  private async ready(): Promise<void> {
    await Promise.all([
      this.deps.registry.ready(),
      this.deps.personas.ready(),
      this.deps.commands?.catalogs.ready(),
    ]);
  }

  /** workflow_start. */
  async start(input: StartInput, caller: Caller): Promise<Outcome> {
    await this.ready();
    return this.starting.start(input, caller);
  }

  /** workflow_next_step: one span (execution, step, principal; never the token) and the step latency. */
  async nextStep(token: string, output: StepOutput, caller: Caller): Promise<Outcome> {
    const { metrics } = this;
    const started = metrics.start();
    try {
      const outcome = await inSpan('workflow step', { [ATTR.principal]: caller.principal }, async (span) => {
        const submitted = await this.submitAndAsk(token, output, caller);
        if ('workflow_id' in submitted) span?.setAttribute(ATTR.workflow, submitted.workflow_id);
        // A child's step links to its parent's delegating step, by the trace context kept at its creation.
        const parent =
          span && 'execution_id' in submitted
            ? await this.queries.parentTrace(submitted.execution_id)
            : undefined;
        if (parent)
          linkSpan(span, parent.trace, {
            [ATTR.execution]: parent.execution_id,
            [ATTR.step]: parent.step,
            [ATTR.child]: parent.name,
          });
        // A poll's answer: pending, approved, or rejected (by a person or the timeout).
        if ('approval' in submitted && submitted.approval !== undefined)
          span?.setAttribute('workflowlookup.approval.status', submitted.approval.status);
        return submitted;
      });
      metrics.step(outcome.kind === 'ended' ? outcome.state : outcome.kind, started);
      return outcome;
    } catch (error) {
      metrics.step('error', started);
      throw error;
    }
  }

  /**
   * The submission, then, when its output went to approval and the client's user can be asked, the
   * question: a decision made there is answered as the poll answers it, in the same call.
   */
  private async submitAndAsk(token: string, output: StepOutput, caller: Caller): Promise<Outcome> {
    await this.ready();
    const submitted = await this.submission.submit(token, output, caller);
    if (submitted.kind !== 'awaiting_approval' || submitted.token === null) return submitted;
    if (!(await this.approvals.ask(submitted, output, caller))) return submitted;
    return this.nextStep(submitted.token, { summary: 'polling the approval' }, caller);
  }

  /**
   * A person's decision on the approval an execution waits on (the dashboard, the CLI, elicitation),
   * made on what they were shown (`on`); see Approvals.decide.
   */
  async decide(
    executionId: string,
    decision: 'approve' | 'reject',
    decider: Decider,
    reason: string | undefined,
    on: DecisionTarget,
  ): Promise<{ approval: ApprovalView; state: string }> {
    await this.ready();
    return this.approvals.decide(executionId, decision, decider, reason, on);
  }

  /** Pending approvals, oldest first: every one (the operator), or those a principal decides or owns. */
  async pendingApprovals(principal: string | null, limit = 200): Promise<ApprovalRecord[]> {
    await this.ready();
    return this.approvals.pendingApprovals(principal, limit);
  }

  /** One approval by id, whoever's it is: for the operator on the host (the CLI). */
  approvalById(approvalId: string): Promise<ApprovalRecord | undefined> {
    return this.approvals.approvalById(approvalId);
  }

  /** Every approval of an execution (its history), oldest first; undefined unless `principal` may see it. */
  approvalsOf(executionId: string, principal: string | null): Promise<ApprovalRecord[] | undefined> {
    return this.approvals.approvalsOf(executionId, principal);
  }

  /** Who decides an approval (approvers.ts): the pages say whom a pending approval waits for. */
  decidersOf(record: ApprovalRecord): string[] {
    return this.approvals.decidersOf(record);
  }

  /** workflow_set_state and the dashboard's actions (see StateChanges.setState). */
  setState(
    executionId: string,
    to: RequestableState,
    reason: string | undefined,
    caller: Caller,
    how: StateChange = { via: 'agent' },
  ) {
    return this.states.setState(executionId, to, reason, caller, how);
  }

  /** The server's own verdict on an execution it was driving (a run or task that failed or died). */
  markFailed(executionId: string, reason: string, caller: Caller) {
    return this.states.markFailed(executionId, reason, caller);
  }

  /** The current step with a usable token; an expired live token is replaced by a fresh one. */
  current(executionId: string, caller: Caller, outer?: StoreWriter): Promise<CurrentState> {
    return this.states.current(executionId, caller, outer);
  }

  /**
   * What the execution's signed record states (src/record/ signs it): its chain of events, read in one
   * transaction with the execution (an execution from before records gets its chain first), the
   * definition it pinned and its artifacts by digest. `caller` null: the operator (the CLI on the data
   * dir), who may read any principal's.
   */
  async record(executionId: string, caller: Caller | null): Promise<RecordData> {
    const { machine } = this;
    return this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      if (exec === undefined || (caller !== null && exec.principal !== caller.principal))
        fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      const events = await machine.recordOf(tx, exec);
      const workflow = await machine.definition(exec, tx);
      const created = events.find((e) => e.type === 'workflow_created')?.body;
      const artifacts = (await tx.getArtifacts(executionId)).map((a) => ({
        name: a.name,
        step: a.step_name,
        sha256: digest(a.content),
      }));
      const head = events.at(-1)?.hash ?? genesis(executionId);
      return {
        execution_id: exec.execution_id,
        principal: exec.principal,
        state: exec.state,
        started_at: exec.started_at,
        completed_at: exec.completed_at,
        parent_id: exec.parent_id,
        workflow: {
          id: workflow.id,
          version: workflow.version,
          definition_sha256: exec.definition_hash,
          ...(typeof created?.file_sha256 === 'string' ? { file_sha256: created.file_sha256 } : {}),
          // A workflow from a git source: the repository, ref and commit it was read from.
          ...(typeof created?.source === 'object' && created.source !== null
            ? { source: created.source as Record<string, unknown> }
            : {}),
        },
        artifacts,
        events,
        head,
      };
    });
  }

  /**
   * The execution's chained events as stored, read without a lock (the dashboard checks them on each
   * view); empty for an execution whose chain is not made yet (`record` makes it).
   */
  async recordEvents(executionId: string, caller: Caller): Promise<ChainEvent[]> {
    const exec = await this.deps.store.getExecution(executionId);
    if (exec === undefined || exec.principal !== caller.principal)
      fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
    return (await this.deps.store.getRecordEvents(executionId)).map(toChainEvent);
  }

  /** workflow_resume: runs command steps left pending (a crash, a wait), then reports the current step. */
  async resume(executionId: string, caller: Caller): Promise<CurrentState> {
    await this.ready();
    // A wait on children that ran out is settled before the answer says where things stand.
    await this.delegation.look(executionId, caller.principal);
    return this.states.resume(executionId, caller);
  }
}
