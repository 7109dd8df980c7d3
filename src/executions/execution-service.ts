import { createHash, randomBytes } from 'node:crypto';
import type { CatalogRegistry } from '../catalogs/catalog-registry.js';
import type { CommandStepRunner } from '../catalogs/command-steps.js';
import { InputChecker } from '../catalogs/input-check.js';
import { requiredCatalogs } from '../catalogs/requirements.js';
import { asRecord, type Context } from '../engine/conditions.js';
import { checkContextValues, refuseContext } from '../engine/context-needs.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { stepFill } from '../engine/fill.js';
import { findActionStep, findPromptStep, nextStep, type WalkObserver } from '../engine/next-step.js';
import {
  canTransition,
  type ExecutionState,
  isTerminal,
  type RequestableState,
  requestableFrom,
  TRANSITIONS,
} from '../engine/state-machine.js';
import type { ValidationEngine, ValidationResult } from '../engine/validation-engine.js';
import { checkSubmission, recordDecision, withSubmissionCheck } from '../engine/workrail.js';
import { isCommandStep, type Workflow } from '../model/workflow.js';
import type { ExecutionRecord, ExecutionStore, StoreWriter } from '../store/execution-store.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import { CommandPhase, waitingOn } from './command-phase.js';
import {
  type Caller,
  type CommandRun,
  type CurrentState,
  canonical,
  checkArtifacts,
  nowIso,
  type Outcome,
  outputForTemplates,
  type StepOutput,
  type StepView,
  storedArtifact,
  withContextCheck,
} from './execution-model.js';
import { ExecutionQueries } from './execution-queries.js';

// Readers without the service (the dashboard's read-only connection) load it from the same chunk.
export { ExecutionQueries };

import { metrics } from '../telemetry/metrics.js';
import { ATTR, annotate, inSpan, inSpanSync } from '../telemetry/trace.js';
import { StepMachine } from './execution-steps.js';
import type { TokenPayload, TokenService } from './tokens.js';

export interface ExecutionDeps {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  tokens: TokenService;
  /**
   * Runs command steps; without it a command step waits with `unknown_command`. The workflow tests give
   * canned responses through the same runner and catalogs that say every catalog is installed.
   */
  commands?: { runner: Pick<CommandStepRunner, 'run'>; catalogs: Pick<CatalogRegistry, 'get' | 'ready'> };
  /** Environment variables templates may read. */
  allowedEnv?: Record<string, string>;
  /**
   * The inputs check workflow_resolve_inputs reports (providers included); without it, defaults and
   * rules are checked but providers are not asked.
   */
  inputs?: InputChecker;
  /** Told what each walk that moves an execution decided (the workflow tests' coverage). */
  observe?: WalkObserver;
}

export interface StartInput {
  workflow_id: string;
  execution_id?: string | undefined;
  context?: Context | undefined;
  inputs?: Record<string, unknown> | undefined;
  /** A validated definition to run instead of the registry's (a manifest given inline), with its hash. */
  definition?: { workflow: Workflow; hash: string; definitionHash?: string | undefined } | undefined;
}

/**
 * Durable executions (seed 004): the server holds the state in the store, the agent holds a signed
 * continuation token. Every state change is one store transaction; steps are chosen by the same
 * engine as the stateless `workflow_next`, against the execution's pinned definition and context.
 * Methods return outcomes; the faces word them for the wire.
 */
export class ExecutionService {
  private readonly machine: StepMachine;
  private readonly commandPhase: CommandPhase;
  /** The read side: status, history, artifacts, telemetry, search. */
  readonly queries: ExecutionQueries;

  constructor(private readonly deps: ExecutionDeps) {
    this.machine = new StepMachine({
      store: deps.store,
      personas: deps.personas,
      tokens: deps.tokens,
      allowedEnv: deps.allowedEnv ?? {},
      observe: deps.observe,
    });
    this.commandPhase = new CommandPhase(this.machine, deps.commands);
    this.queries = new ExecutionQueries(deps.store, (exec) => this.machine.definition(exec));
  }

  private async ready(): Promise<void> {
    await Promise.all([
      this.deps.registry.ready(),
      this.deps.personas.ready(),
      this.deps.commands?.catalogs.ready(),
    ]);
  }

  // ------------------------------------------------------------------------------------------
  // workflow_start

  async start(input: StartInput, caller: Caller): Promise<Outcome> {
    const { store, registry, engine } = this.deps;
    await this.ready();
    if (input.execution_id !== undefined) {
      const existing = await store.getExecution(input.execution_id);
      if (existing) return this.existingStart(existing, input.workflow_id, caller);
    }
    const entry = input.definition ?? registry.require(input.workflow_id);
    const workflow = entry.workflow;
    this.checkRequirements(workflow);
    this.machine.refuseOwnedKeys(workflow, input.context, 'context');
    // A value conditions read that cannot match what they compare it with is refused before anything starts.
    const given = checkContextValues(workflow, input.context, 'context.');
    if (given.issues.length > 0) refuseContext(workflow, given);
    const context: Context = { ...(input.context ?? {}) };
    if (workflow.inputs !== undefined || input.inputs !== undefined) {
      const checker =
        this.deps.inputs ?? new InputChecker({ engine, allowedEnv: this.deps.allowedEnv ?? {} });
      // Input providers call their APIs: later requests need not wait for them.
      if (Object.values(workflow.inputs ?? {}).some((spec) => spec.provider)) caller.onNetworkWait?.();
      const resolved = await checker.check(workflow, input.inputs ?? {});
      if (!resolved.ready) {
        fail({
          code: 'inputs_not_ready',
          message: resolved.inputs
            .filter((i) => i.message)
            .map((i) => (i.message?.startsWith(i.name) ? i.message : `${i.name}: ${i.message}`))
            .join('; '),
          workflowId: workflow.id,
          inputs: resolved.inputs,
        });
      }
      context.inputs = resolved.values;
    }
    const executionId = input.execution_id ?? `exec_${randomBytes(12).toString('hex')}`;
    const started = await store.transaction(async (tx): Promise<Outcome | 'command'> => {
      const raced = await tx.getExecution(executionId);
      if (raced) return this.existingStart(raced, input.workflow_id, caller, tx);
      const at = nowIso();
      // The file's hash, or the expanded definition's when routines were expanded into it.
      const pin = entry.definitionHash ?? entry.hash;
      await tx.pinDefinition(pin, workflow.id, JSON.stringify(workflow));
      this.machine.remember(pin, workflow);
      const exec: ExecutionRecord = {
        execution_id: executionId,
        principal: caller.principal,
        workflow_name: workflow.id,
        definition_hash: pin,
        state: 'idle',
        current_step: null,
        current_seq: 0,
        completed_steps: [],
        context,
        token_nonce: null,
        token_attempt: 0,
        token_issued_at: null,
        token_expires_at: null,
        started_at: at,
        updated_at: at,
        completed_at: null,
        duration_ms: null,
        metadata: {},
      };
      await tx.insertExecution(exec);
      await this.machine.event(tx, 'workflow_created', exec, null, {
        workflow_name: workflow.id,
        definition_hash: pin,
      });
      await this.machine.transition(tx, exec, 'running');
      await this.machine.event(tx, 'workflow_started', exec, null, { workflow_name: workflow.id });
      const view = await this.machine.enterStep(
        tx,
        exec,
        workflow,
        this.machine.walk(workflow, [], exec.context),
      );
      await tx.updateExecution(exec);
      if (view === 'command') return 'command';
      return this.outcome(exec, view, 'started', []);
    });
    if (started !== 'command') return started;
    const { runs } = await this.commandPhase.run(executionId, caller);
    return this.afterCommands(executionId, runs, 'started');
  }

  /** Catalogs the workflow requires, and those its command steps name, must be installed and enabled. */
  private checkRequirements(workflow: Workflow): void {
    for (const catalog of requiredCatalogs(workflow)) {
      if (!this.deps.commands?.catalogs.get(catalog)?.config.enabled) {
        fail({
          code: 'catalog_not_found',
          message: `workflow "${workflow.id}" needs catalog "${catalog}", which is not imported or is disabled`,
          catalog,
        });
      }
    }
  }

  private async existingStart(
    exec: ExecutionRecord,
    workflowId: string,
    caller: Caller,
    tx?: StoreWriter,
  ): Promise<Outcome> {
    if (exec.principal !== caller.principal) {
      // Another principal's id: its existence is not ours to reveal. Ids are one namespace, so the id
      // cannot be given out again; the refusal is a plain invalid argument, with no execution named
      // (no EXECUTION_STATE_CONFLICT, no state, no workflow), as for any id that cannot be used.
      fail({
        code: 'invalid_params',
        message: 'Invalid params',
        details: `execution_id is not available; omit it (the server then makes one) or choose another`,
      });
    }
    if (exec.workflow_name !== workflowId) {
      fail({
        code: 'state_conflict',
        message: 'State error',
        executionId: exec.execution_id,
        state: exec.state,
        details: `execution ${exec.execution_id} already exists for workflow '${exec.workflow_name}', not '${workflowId}'`,
      });
    }
    const current = await this.current(exec.execution_id, caller, tx);
    return current.view
      ? {
          v: 1,
          kind: 'step',
          origin: 'existing',
          execution_id: exec.execution_id,
          workflow_id: exec.workflow_name,
          state: current.state,
          view: current.view,
          token: current.token,
          commands: [],
        }
      : {
          v: 1,
          kind: 'ended',
          origin: 'existing',
          execution_id: exec.execution_id,
          workflow_id: exec.workflow_name,
          state: current.state,
          commands: [],
        };
  }

  // ------------------------------------------------------------------------------------------
  // workflow_next_step

  /** A step submission: one span (execution, step, principal; never the token) and the step latency. */
  async nextStep(token: string, output: StepOutput, caller: Caller): Promise<Outcome> {
    const started = metrics.start();
    try {
      const outcome = await inSpan('workflow step', { [ATTR.principal]: caller.principal }, async (span) => {
        const submitted = await this.submit(token, output, caller);
        if ('workflow_id' in submitted) span?.setAttribute(ATTR.workflow, submitted.workflow_id);
        return submitted;
      });
      metrics.step(outcome.kind === 'ended' ? outcome.state : outcome.kind, started);
      return outcome;
    } catch (error) {
      metrics.step('error', started);
      throw error;
    }
  }

  private async submit(token: string, output: StepOutput, caller: Caller): Promise<Outcome> {
    const { store, tokens } = this.deps;
    await this.ready();
    const check = tokens.verify(token);
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
    const outputHash = createHash('sha256').update(canonical(output)).digest('hex');
    return this.recordingErrors(payload.execution_id, payload.step_name, async () => {
      const advanced = await this.advance(payload, output, outputHash);
      if (advanced.kind !== 'pending') return advanced;
      // Accepted, and command steps come next: run them (or finish what a crashed run left), then record
      // the final outcome so a retry of this token replays it.
      const { runs } = await this.commandPhase.run(payload.execution_id, caller);
      const outcome = await this.afterCommands(payload.execution_id, runs, 'advanced', advanced.done_step);
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

  private advance(payload: TokenPayload, output: StepOutput, outputHash: string) {
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
        if (recorded.output_hash === outputHash) return replayed(recorded.response);
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
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          allowed: requestableFrom(exec.state),
          details:
            exec.state === 'paused'
              ? 'the execution is paused; resume it with workflow_set_state {"state": "running"}'
              : `the execution is ${exec.state}`,
        });
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
      let next: ReturnType<typeof nextStep> | undefined;
      if (validation.valid) {
        const recorded = outputForTemplates(output);
        if (Object.keys(reported.assessments).length > 0) recorded.assessments = reported.assessments;
        context.steps = { ...asRecord(context.steps), [step.id]: recorded };
        if (reported.loopDecision) recordDecision(workflow, step.id, reported.loopDecision, context);
        try {
          next = machine.walk(workflow, [...exec.completed_steps, step.id], context);
        } catch (error) {
          // A loop ahead cannot start (its list or count is missing): the step stays current, fresh token.
          if (!(error instanceof DomainFailure) || error.error.code !== 'precondition_failed') throw error;
          validation = {
            valid: false,
            issues: [`PRECONDITION_FAILED: ${error.error.message}`],
            suggestions: [
              `Set output.context.${error.error.variable} to ${error.error.expected} and send the call in next again.`,
            ],
          };
          named = [error.error.variable];
        }
      }
      const at = nowIso();
      let outcome: Outcome;
      if (!validation.valid || next === undefined) {
        row.attempts += 1;
        await tx.updateStep(row);
        await machine.event(tx, 'step_failed', exec, step.id, {
          seq: row.seq,
          reason: 'validation',
          issues: validation.issues,
        });
        machine.mintToken(exec, step.id);
        await machine.event(tx, 'token_generated', exec, step.id, { attempt: exec.token_attempt });
        exec.updated_at = at;
        await tx.updateExecution(exec);
        outcome = {
          v: 1,
          kind: 'rejected',
          origin: 'advanced',
          execution_id: exec.execution_id,
          workflow_id: exec.workflow_name,
          state: exec.state,
          step_name: step.id,
          validation,
          token: machine.liveToken(exec),
          fill: stepFill(workflow, step, exec.context, 'durable', named),
        };
      } else {
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
          await machine.event(tx, 'artifact_stored', exec, step.id, { artifact_id: id, name: artifact.name });
        }
        await machine.event(tx, 'step_completed', exec, step.id, {
          seq: row.seq,
          duration_ms: row.duration_ms,
        });
        const view = await machine.enterStep(tx, exec, workflow, next);
        await tx.updateExecution(exec);
        outcome =
          view === 'command'
            ? { v: 1, kind: 'pending', execution_id: exec.execution_id, done_step: step.id }
            : this.outcome(exec, view, 'advanced', [], step.id);
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

  // ------------------------------------------------------------------------------------------
  // workflow_set_state

  /**
   * A requested change of state (workflow_set_state, the dashboard): pause, resume, abandon or diverge.
   * Never `completed` or `failed`: only the last step's accepted output completes an execution.
   */
  async setState(executionId: string, to: RequestableState, reason: string | undefined, caller: Caller) {
    return this.move(executionId, to, reason, caller, requestableFrom);
  }

  /** The server's own verdict on an execution it was driving (a run or task that failed or died). */
  async markFailed(executionId: string, reason: string, caller: Caller) {
    return this.move(executionId, 'failed', reason, caller, (from) => [...TRANSITIONS[from]]);
  }

  private async move(
    executionId: string,
    to: ExecutionState,
    reason: string | undefined,
    caller: Caller,
    allowedFrom: (from: ExecutionState) => readonly ExecutionState[],
  ) {
    return this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      if (!exec || exec.principal !== caller.principal) {
        fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      }
      const from = exec.state;
      const allowed = allowedFrom(from);
      if (from === to || !canTransition(from, to) || !allowed.includes(to)) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: from,
          allowed,
          details: `cannot go from ${from} to ${to}; allowed from ${from}: ${allowed.join(', ') || 'none (terminal state)'}`,
        });
      }
      await this.machine.transition(tx, exec, to, reason);
      if (isTerminal(to)) {
        const row = await tx.getStep(executionId, exec.current_seq);
        if (row && row.status === 'running') {
          row.status = 'failed';
          row.completed_at = exec.updated_at;
          row.lease_owner = null;
          row.lease_expires_at = null;
          await tx.updateStep(row);
        }
      }
      await tx.updateExecution(exec);
      return {
        execution_id: executionId,
        previous_state: from,
        state: to,
        allowed_next: [...allowedFrom(to)],
      };
    });
  }

  // ------------------------------------------------------------------------------------------
  // workflow_resume and the current_step resource

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
        return { ...base, on_command: true, token: null, ...(waiting ? { waiting } : {}) };
      }
      let view: StepView | undefined;
      if (!isTerminal(exec.state) && exec.current_step !== null) {
        if (exec.token_expires_at !== null && Date.parse(exec.token_expires_at) <= Date.now()) {
          machine.mintToken(exec, exec.current_step);
          await machine.event(tx, 'token_generated', exec, exec.current_step, {
            reason: 'refresh after expiry',
          });
          exec.updated_at = nowIso();
          await tx.updateExecution(exec);
        }
        // Back from a context reset: the persona and the metaGuidance in full again.
        view = machine.stepView(exec, workflow, nextStep(workflow, exec.completed_steps, exec.context), true);
      }
      return {
        ...base,
        on_command: false,
        ...(view ? { view } : {}),
        token: view && exec.state === 'running' ? machine.liveToken(exec) : null,
      };
    };
    return outer ? run(outer) : this.deps.store.transaction(run);
  }

  /** workflow_resume: runs command steps left pending (a crash, a wait), then reports the current step. */
  async resume(executionId: string, caller: Caller): Promise<CurrentState> {
    await this.ready();
    await this.current(executionId, caller); // not found (or not the caller's) before anything runs
    const { runs } = await this.commandPhase.run(executionId, caller);
    const current = await this.current(executionId, caller);
    return runs.length > 0 ? { ...current, commands: runs } : current;
  }

  // ------------------------------------------------------------------------------------------

  private outcome(
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
    return {
      ...common,
      kind: 'ended',
      ...('final_output' in exec.metadata ? { final_output: exec.metadata.final_output } : {}),
    };
  }

  /** The outcome after command steps ran: the agent step now current (with its token), or the end. */
  private async afterCommands(
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
      return this.outcome(exec, view, origin, runs, doneStep);
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
