import { asRecord, type Context } from '../engine/conditions.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { stepFill } from '../engine/fill.js';
import { allStepIds, findPromptStep, nextStep } from '../engine/next-step.js';
import type { ValidationResult } from '../engine/validation-engine.js';
import { type checkSubmission, recordDecision } from '../engine/workrail.js';
import { DELEGATION_MAX_CHILDREN, type PromptStep, type Workflow } from '../model/workflow.js';
import type { ExecutionRecord, StepRecord, StoreReader, StoreWriter } from '../store/execution-store.js';
import type { CheckResult } from './checks.js';
import { delegationOf, joinProgress, parentOf } from './delegation-model.js';
import type { ServiceParts } from './execution-deps.js';
import {
  type approvalView,
  type CommandRun,
  type DelegationView,
  nowIso,
  type Outcome,
  outputForTemplates,
  type StepOutput,
  type StepView,
  storedArtifact,
} from './execution-model.js';
import { digest } from './record-model.js';

/** Completing, refusing and answering: what submitting and deciding both end with. */
export class StepOutcomes {
  constructor(private readonly parts: ServiceParts) {}

  private get deps() {
    return this.parts.deps;
  }

  private get machine() {
    return this.parts.machine;
  }

  /**
   * The walk after an accepted output: the context with the step's output (and what `reported`, the
   * output's one submission check, found in it), and the step that follows; or, when a loop ahead
   * cannot start (its list or count is missing), the refusal to send back.
   */
  walkAfter(
    workflow: Workflow,
    exec: ExecutionRecord,
    step: PromptStep,
    output: StepOutput,
    context: Context,
    reported: ReturnType<typeof checkSubmission>,
  ): { next: ReturnType<typeof nextStep> } | { validation: ValidationResult; named: string[] } {
    const recorded = outputForTemplates(output);
    if (Object.keys(reported.assessments).length > 0) recorded.assessments = reported.assessments;
    context.steps = { ...asRecord(context.steps), [step.id]: recorded };
    if (reported.loopDecision) recordDecision(workflow, step.id, reported.loopDecision, context);
    try {
      return { next: this.machine.walk(workflow, [...exec.completed_steps, step.id], context) };
    } catch (error) {
      // A loop ahead cannot start (its list or count is missing): the step stays current, fresh token.
      if (!(error instanceof DomainFailure) || error.error.code !== 'precondition_failed') throw error;
      return {
        validation: {
          valid: false,
          issues: [`PRECONDITION_FAILED: ${error.error.message}`],
          suggestions: [
            `Set output.context.${error.error.variable} to ${error.error.expected} and send the call in next again.`,
          ],
        },
        named: [error.error.variable],
      };
    }
  }

  /**
   * The step stays current: one more attempt, a `step_failed` event with the issues, a fresh token, and
   * the answer that says what to fix (by validation, or by a person's rejection of the held output).
   */
  async reject(
    tx: StoreWriter,
    exec: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    row: StepRecord,
    why: {
      reason: 'validation' | 'approval' | 'delegation';
      validation: ValidationResult;
      named: string[];
      at: string;
      extra: {
        check?: CheckResult;
        approval?: ReturnType<typeof approvalView>;
        delegation?: DelegationView;
      };
    },
  ): Promise<Outcome> {
    const { machine } = this;
    row.attempts += 1;
    await tx.updateStep(row);
    await machine.event(tx, 'step_failed', exec, step.id, {
      seq: row.seq,
      reason: why.reason,
      issues: why.validation.issues,
    });
    machine.mintToken(exec, step.id);
    await machine.event(tx, 'token_generated', exec, step.id, { attempt: exec.token_attempt });
    exec.updated_at = why.at;
    await tx.updateExecution(exec);
    return {
      v: 1,
      kind: 'rejected',
      origin: 'advanced',
      execution_id: exec.execution_id,
      workflow_id: exec.workflow_name,
      state: exec.state,
      step_name: step.id,
      validation: why.validation,
      token: machine.liveToken(exec),
      fill: stepFill(workflow, step, exec.context, 'durable', why.named),
      ...why.extra,
    };
  }

  /** Completes the current step with its output and enters the next one (or completes the execution). */
  async complete(
    tx: StoreWriter,
    exec: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    row: StepRecord,
    output: StepOutput,
    next: ReturnType<typeof nextStep>,
  ): Promise<Outcome> {
    const { machine } = this;
    const at = nowIso();
    row.status = 'completed';
    row.completed_at = at;
    row.duration_ms = row.started_at ? Date.parse(at) - Date.parse(row.started_at) : null;
    row.attempts += 1;
    row.output = output;
    await tx.updateStep(row);
    for (const given of output.artifacts ?? []) {
      if (typeof given === 'string') continue;
      const artifact = storedArtifact(given);
      const content = artifact.content;
      const id = await tx.insertArtifact({
        execution_id: exec.execution_id,
        step_name: step.id,
        artifact_type: artifact.type,
        name: artifact.name,
        content,
        content_type: artifact.content_type ?? 'text/plain',
        size_bytes: Buffer.byteLength(content),
        metadata: artifact.metadata ?? null,
      });
      await machine.event(tx, 'artifact_stored', exec, step.id, {
        artifact_id: id,
        name: artifact.name,
        sha256: digest(content),
      });
    }
    await machine.event(tx, 'step_completed', exec, step.id, {
      seq: row.seq,
      duration_ms: row.duration_ms,
      output_sha256: digest(output),
    });
    const view = await machine.enterStep(tx, exec, workflow, next);
    await tx.updateExecution(exec);
    return view === 'command'
      ? { v: 1, kind: 'pending', execution_id: exec.execution_id, done_step: step.id }
      : this.answer(tx, exec, view, 'advanced', [], step.id);
  }

  // ------------------------------------------------------------------------------------------
  // Approvals: a step output a person must clear

  /**
   * The outcome to answer, read in the transaction: a step, the end, or, when the step the execution is
   * on hands its work to children, the delegation with each child's call (their tokens are read here).
   */
  async answer(
    tx: StoreWriter,
    exec: ExecutionRecord,
    view: StepView | undefined,
    origin: 'started' | 'advanced' | 'existing',
    commands: CommandRun[],
    doneStep?: string,
  ): Promise<Outcome> {
    const delegation = view !== undefined ? await this.delegationView(tx, exec) : undefined;
    if (view === undefined || delegation === undefined)
      return this.outcome(exec, view, origin === 'existing' ? 'advanced' : origin, commands, doneStep);
    return {
      v: 1,
      kind: 'delegated',
      origin,
      execution_id: exec.execution_id,
      workflow_id: exec.workflow_name,
      state: exec.state,
      step_name: view.step_name,
      view,
      delegation,
      token: exec.state === 'running' ? this.machine.liveToken(exec) : null,
      commands,
      ...(doneStep !== undefined ? { done_step: doneStep } : {}),
    };
  }

  /** The open delegation of the execution's current step, with each child's state and call; else undefined. */
  async delegationView(tx: StoreReader, exec: ExecutionRecord): Promise<DelegationView | undefined> {
    const d = delegationOf(exec.metadata);
    if (d === undefined || d.step !== exec.current_step || d.seq !== exec.current_seq) return undefined;
    const records = new Map(
      (await tx.listExecutions({ parent_id: exec.execution_id, limit: DELEGATION_MAX_CHILDREN * 2 })).map(
        (c) => [c.execution_id, c],
      ),
    );
    return {
      step_name: d.step,
      join: d.join,
      into: d.into,
      deadline: d.deadline,
      progress: joinProgress(d),
      children: d.children.map((entry) => {
        const child = records.get(entry.execution_id);
        const live = child !== undefined && child.state === 'running';
        const token = live ? this.machine.liveToken(child) : null;
        return {
          name: entry.name,
          execution_id: entry.execution_id,
          workflow_id: entry.workflow_id,
          state: child?.state ?? entry.state,
          ...(entry.model_tier !== undefined ? { model_tier: entry.model_tier } : {}),
          token,
          on_command: live && token === null && child.current_step !== null,
        };
      }),
    };
  }

  outcome(
    exec: ExecutionRecord,
    view: StepView | undefined,
    origin: 'started' | 'advanced',
    commands: CommandRun[],
    doneStep?: string,
  ): Outcome {
    const common = {
      v: 1 as const,
      origin,
      execution_id: exec.execution_id,
      workflow_id: exec.workflow_name,
      state: exec.state,
      commands,
      ...(doneStep !== undefined ? { done_step: doneStep } : {}),
    };
    if (view) return { ...common, kind: 'step', view, token: this.machine.liveToken(exec) };
    const link = parentOf(exec.metadata);
    return {
      ...common,
      kind: 'ended',
      ...('final_output' in exec.metadata ? { final_output: exec.metadata.final_output } : {}),
      ...(link !== undefined ? { parent: { execution_id: link.execution_id, name: link.name } } : {}),
    };
  }

  /** The outcome after command steps ran: the agent step now current (with its token), or the end. */
  async afterCommands(
    executionId: string,
    runs: CommandRun[],
    origin: 'started' | 'advanced',
    doneStep?: string,
  ): Promise<Outcome> {
    return this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      if (!exec) fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      const workflow = await this.machine.definition(exec, tx);
      const onAgentStep =
        exec.state === 'running' &&
        exec.current_step !== null &&
        findPromptStep(workflow, exec.current_step) !== undefined;
      const view = onAgentStep
        ? this.machine.stepView(exec, workflow, nextStep(workflow, exec.completed_steps, exec.context))
        : undefined;
      return this.answer(tx, exec, view, origin, runs, doneStep);
    });
  }
}

/** Every prompt step of a workflow, loop bodies included. */
export function promptSteps(workflow: Workflow): PromptStep[] {
  return [...allStepIds(workflow)].flatMap((id) => findPromptStep(workflow, id) ?? []);
}
