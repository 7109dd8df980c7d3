import { createHash, randomBytes } from 'node:crypto';
import type { CatalogRegistry } from '../../catalogs/catalog-registry.js';
import type { CommandStepRunner } from '../../catalogs/command-steps.js';
import { asRecord, type Context } from '../../engine/conditions.js';
import { DomainFailure, fail } from '../../engine/errors.js';
import { buildGuidance, contextScope } from '../../engine/guidance.js';
import { resolveInputs } from '../../engine/inputs.js';
import { findActionStep, findPromptStep, nextStep } from '../../engine/next-step.js';
import { canTransition, type ExecutionState, isTerminal, TRANSITIONS } from '../../engine/state-machine.js';
import { renderPreview, type TemplateScope } from '../../engine/templating.js';
import type { ValidationEngine, ValidationResult } from '../../engine/validation-engine.js';
import type {
  ExecutionRecord,
  ExecutionStore,
  StepRecord,
  StoreWriter,
} from '../../store/execution-store.js';
import {
  type CommandStep,
  isCommandStep,
  isLoopStep,
  type PromptStep,
  type Workflow,
} from '../../workflows/model.js';
import type { PersonaRegistry } from '../../workflows/personas.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { requireWorkflow } from '../guidance/guidance-tools.js';
import {
  type CommandRun,
  canonical,
  checkArtifacts,
  DEFAULT_AGENT,
  nowIso,
  outputForTemplates,
  plannedSteps,
  type StepOutput,
  type StepView,
} from './execution-model.js';
import { type TokenPayload, TokenService } from './tokens.js';

const URI = 'workflowlookup://workflow';

export interface ExecutionDeps {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  tokens: TokenService;
  /** Runs command steps; without it a command step fails the execution with `unknown_command`. */
  commands?: { runner: CommandStepRunner; catalogs: CatalogRegistry };
  /** Environment variables templates may read. */
  allowedEnv?: Record<string, string>;
}

/**
 * Durable executions (seed 004): the server holds the state in the store, the agent holds a signed
 * continuation token. Every state change is one store transaction; steps are chosen by the same
 * engine as the stateless `workflow_next`, against the execution's pinned definition and context.
 */
export class ExecutionService {
  private readonly pinned = new Map<string, Workflow>();

  constructor(private readonly deps: ExecutionDeps) {}

  // ------------------------------------------------------------------------------------------
  // workflow_start

  async start(input: {
    workflow_name: string;
    execution_id?: string | undefined;
    context?: Context | undefined;
    inputs?: Record<string, unknown> | undefined;
  }) {
    const { store, registry, personas, engine } = this.deps;
    await Promise.all([
      registry.ready(),
      personas.ready(),
      engine.load(),
      this.deps.commands?.catalogs.ready(),
    ]);
    if (input.execution_id !== undefined) {
      const existing = await store.getExecution(input.execution_id);
      if (existing) return this.existingStart(existing, input.workflow_name);
    }
    const entry = requireWorkflow(registry, input.workflow_name);
    const workflow = entry.workflow;
    this.checkRequirements(workflow);
    const context: Context = { ...(input.context ?? {}) };
    if (workflow.inputs !== undefined || input.inputs !== undefined) {
      const resolved = resolveInputs(workflow.inputs, input.inputs ?? {}, {
        env: this.deps.allowedEnv ?? {},
        matches: (pattern, text) => engine.matches(pattern, text),
      });
      if (!resolved.ready) {
        fail({
          code: 'inputs_not_ready',
          message: `inputs are not ready: ${resolved.inputs
            .filter((i) => i.message)
            .map((i) => i.message)
            .join('; ')}`,
          workflowId: workflow.id,
          inputs: resolved.inputs,
        });
      }
      context.inputs = resolved.values;
    }
    const executionId = input.execution_id ?? `exec_${randomBytes(12).toString('hex')}`;
    const started = await store.transaction(async (tx) => {
      const raced = await tx.getExecution(executionId);
      if (raced) return this.existingStart(raced, input.workflow_name, tx);
      const at = nowIso();
      await tx.pinDefinition(entry.hash, workflow.id, JSON.stringify(workflow));
      this.pinned.set(entry.hash, workflow);
      const exec: ExecutionRecord = {
        execution_id: executionId,
        workflow_name: workflow.id,
        definition_hash: entry.hash,
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
      await this.event(tx, 'workflow_created', exec, null, {
        workflow_name: workflow.id,
        definition_hash: entry.hash,
      });
      await this.transition(tx, exec, 'running');
      await this.event(tx, 'workflow_started', exec, null, { workflow_name: workflow.id });
      const next = nextStep(workflow, [], exec.context);
      const view = await this.enterStep(tx, exec, workflow, next);
      await tx.updateExecution(exec);
      if (view === 'command') return { pending: true as const, execution_id: exec.execution_id };
      return {
        success: true,
        execution_id: exec.execution_id,
        workflow_state: exec.state,
        ...(view ? { ...view, new_token: this.liveToken(exec) } : { ...this.finalOutput(exec) }),
        message: view
          ? `Workflow '${workflow.id}' started. Step '${view.step_name}' ready.`
          : `Workflow '${workflow.id}' started and completed: no step applies to this context.`,
      };
    });
    if (!('pending' in started)) return started;
    const commands = await this.runCommands(started.execution_id);
    return this.afterCommands(started.execution_id, commands, `Workflow '${workflow.id}' started.`);
  }

  /** Catalogs the workflow requires, and those its command steps name, must be installed and enabled. */
  private checkRequirements(workflow: Workflow): void {
    const needed = new Set(workflow.requires?.catalogs ?? []);
    const visit = (step: Workflow['steps'][number]) => {
      if (isCommandStep(step)) needed.add(step.run.split(' ')[0] as string);
    };
    for (const step of workflow.steps) {
      visit(step);
      if (isLoopStep(step) && Array.isArray(step.body)) step.body.forEach(visit);
    }
    for (const catalog of needed) {
      if (!this.deps.commands?.catalogs.get(catalog)?.config.enabled) {
        fail({
          code: 'catalog_not_found',
          message: `workflow "${workflow.id}" needs catalog "${catalog}", which is not imported or is disabled`,
          catalog,
        });
      }
    }
  }

  /** Runs the command steps the execution is on, one after another, until an agent step or the end. */
  private async runCommands(executionId: string): Promise<CommandRun[]> {
    const runs: CommandRun[] = [];
    for (;;) {
      const claim = await this.deps.store.transaction(async (tx) => {
        const exec = await tx.getExecution(executionId);
        if (exec?.state !== 'running' || exec.current_step === null) return undefined;
        const workflow = await this.definition(exec, tx);
        const step = findActionStep(workflow, exec.current_step);
        const row = await tx.getStep(executionId, exec.current_seq);
        if (!step || !isCommandStep(step) || !row) return undefined;
        row.attempts += 1;
        await tx.updateStep(row);
        return { exec, workflow, step, row, scope: this.scope(exec.context) };
      });
      if (!claim) return runs;
      const { step, row, scope } = claim;
      const key = `${executionId}:${step.id}:${row.seq}:${row.attempts}`;
      let result: Awaited<ReturnType<CommandStepRunner['run']>>;
      try {
        if (!this.deps.commands) {
          fail({
            code: 'command_failed',
            message: `step "${step.id}" (${step.run}): no catalogs are configured`,
            reason: 'unknown_command',
            stepId: step.id,
            command: step.run,
            executionId,
            retryable: false,
          });
        }
        result = await this.deps.commands.runner.run(step, scope, key, executionId);
      } catch (error) {
        await this.commandFailed(executionId, step, row.seq, error);
        throw error;
      }
      runs.push({
        step_id: step.id,
        command: step.run,
        status: result.status,
        output: result.output,
        attempts: result.attempts,
        polls: result.polls,
        duration_ms: result.duration_ms,
      });
      await this.deps.store.transaction(async (tx) => {
        const exec = await tx.getExecution(executionId);
        const current = await tx.getStep(executionId, row.seq);
        if (!exec || !current || exec.current_seq !== row.seq) return;
        const at = nowIso();
        current.status = 'completed';
        current.completed_at = at;
        current.duration_ms = current.started_at ? Date.parse(at) - Date.parse(current.started_at) : null;
        current.output = { status: result.status, output: result.output, polls: result.polls };
        await tx.updateStep(current);
        await this.event(tx, 'step_completed', exec, step.id, {
          seq: row.seq,
          command: step.run,
          http_status: result.status,
          attempts: result.attempts,
        });
        const workflow = await this.definition(exec, tx);
        const context: Context = {
          ...exec.context,
          steps: { ...asRecord(exec.context.steps), [step.id]: result.output },
        };
        const next = nextStep(workflow, [...exec.completed_steps, step.id], context);
        await this.enterStep(tx, exec, workflow, next);
        await tx.updateExecution(exec);
      });
    }
  }

  private async commandFailed(
    executionId: string,
    step: CommandStep,
    seq: number,
    error: unknown,
  ): Promise<void> {
    const details =
      error instanceof DomainFailure && error.error.code === 'command_failed'
        ? { reason: error.error.reason, message: error.error.message, status: error.error.status }
        : { reason: 'internal', message: (error as Error).message };
    await this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      const row = await tx.getStep(executionId, seq);
      if (!exec || !row || exec.state !== 'running') return;
      row.status = 'failed';
      row.completed_at = nowIso();
      row.output = { error: details };
      await tx.updateStep(row);
      await this.event(tx, 'step_failed', exec, step.id, { command: step.run, ...details });
      await this.transition(tx, exec, 'failed', details.message);
      await tx.updateExecution(exec);
    });
  }

  /** The answer after command steps ran: the agent step now current (with its token), or completion. */
  private async afterCommands(executionId: string, commands: CommandRun[], lead: string) {
    const current = await this.current(executionId);
    const exec = await this.deps.store.getExecution(executionId);
    return {
      success: true,
      execution_id: executionId,
      workflow_state: current.workflow_state,
      commands,
      ...(current.view
        ? { ...current.view, new_token: current.continuation_token }
        : exec
          ? { ...this.finalOutput(exec) }
          : {}),
      message: current.view
        ? `${lead} Ran ${commands.length} command step(s); step '${current.view.step_name}' ready.`
        : `${lead} Ran ${commands.length} command step(s); workflow completed successfully.`,
    };
  }

  private finalOutput(exec: ExecutionRecord): { final_output?: unknown } {
    return 'final_output' in exec.metadata ? { final_output: exec.metadata.final_output } : {};
  }

  /** What templates can see: inputs, step outputs (both kept in the context) and allowed env vars. */
  private scope(context: Context): TemplateScope {
    return contextScope(context, this.deps.allowedEnv);
  }

  private async existingStart(exec: ExecutionRecord, workflowName: string, tx?: StoreWriter) {
    if (exec.workflow_name !== workflowName) {
      fail({
        code: 'state_conflict',
        message: 'State error',
        executionId: exec.execution_id,
        state: exec.state,
        details: `execution ${exec.execution_id} already exists for workflow '${exec.workflow_name}', not '${workflowName}'`,
      });
    }
    const current = await this.current(exec.execution_id, tx);
    return {
      success: true,
      execution_id: exec.execution_id,
      workflow_state: current.workflow_state,
      ...(current.view ? { ...current.view, new_token: current.continuation_token } : {}),
      message: `Execution ${exec.execution_id} already exists; returning it unchanged.`,
    };
  }

  // ------------------------------------------------------------------------------------------
  // workflow_next_step

  async nextStep(token: string, output: StepOutput) {
    const { store, tokens, engine, personas } = this.deps;
    await Promise.all([engine.load(), personas.ready(), this.deps.registry.ready()]);
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
    if (!check.ok) {
      await store
        .transaction(async (tx) => {
          const exec = await tx.getExecution(payload.execution_id);
          if (exec)
            await this.event(tx, 'token_expired', exec, payload.step_name, {
              expires_at: payload.expires_at,
            });
        })
        .catch(() => undefined);
      fail({
        code: 'token_expired',
        message: `Token expired at ${payload.expires_at}. Get a fresh one with workflow_resume {"execution_id": "${payload.execution_id}"} or by reading ${URI}/current_step/${payload.execution_id}.`,
        executionId: payload.execution_id,
        expiredAt: payload.expires_at,
        freshToken: `${URI}/current_step/${payload.execution_id}`,
      });
    }
    checkArtifacts(output.artifacts ?? []);
    const outputHash = createHash('sha256').update(canonical(output)).digest('hex');
    return this.recordingErrors(payload.execution_id, payload.step_name, async () => {
      const advanced = await this.advance(payload, output, outputHash);
      if (advanced.kind === 'done') return advanced.response;
      const commands = await this.runCommands(payload.execution_id);
      const response = await this.afterCommands(
        payload.execution_id,
        commands,
        `Step '${payload.step_name}' done.`,
      );
      await this.deps.store.transaction((tx) =>
        tx.recordSubmission({
          nonce: advanced.nonce,
          execution_id: payload.execution_id,
          output_hash: outputHash,
          response,
          created_at: advanced.at,
        }),
      );
      return response;
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
    return store.transaction(async (tx) => {
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
        if (recorded.output_hash === outputHash) {
          return { kind: 'done' as const, response: recorded.response as Record<string, unknown> };
        }
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          details: 'this token was already used with a different output; use the new_token from that call',
        });
      }
      if (exec.token_nonce !== payload.nonce) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          details: `this token is no longer current for execution ${exec.execution_id}; get the current one with workflow_resume`,
        });
      }
      if (exec.state !== 'running') {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          allowed: TRANSITIONS[exec.state],
          details:
            exec.state === 'paused'
              ? 'the execution is paused; resume it with workflow_set_state {"state": "running"}'
              : `the execution is ${exec.state}`,
        });
      }
      await this.event(tx, 'token_validated', exec, exec.current_step, { attempt: payload.attempt });
      const workflow = await this.definition(exec, tx);
      const step = findPromptStep(workflow, exec.current_step ?? '');
      const row = await tx.getStep(exec.execution_id, exec.current_seq);
      if (!step || !row) {
        fail({
          code: 'storage_error',
          message: 'Storage error',
          details: 'the current step record is missing',
        });
      }
      const context: Context = { ...exec.context, ...(output.context ?? {}) };
      let validation: ValidationResult;
      try {
        engine.check(step.validationCriteria);
        validation = engine.validate(step.validationCriteria, output.summary, context);
      } catch (error) {
        fail({
          code: 'criteria_invalid',
          message: 'Validation error',
          workflowId: workflow.id,
          stepId: step.id,
          details: (error as Error).message,
        });
      }
      const at = nowIso();
      let response: Record<string, unknown>;
      if (!validation.valid) {
        row.attempts += 1;
        await tx.updateStep(row);
        await this.event(tx, 'step_failed', exec, step.id, {
          reason: 'validation',
          issues: validation.issues,
        });
        this.mintToken(exec, step.id);
        await this.event(tx, 'token_generated', exec, step.id, { attempt: exec.token_attempt });
        exec.updated_at = at;
        await tx.updateExecution(exec);
        response = {
          success: false,
          execution_id: exec.execution_id,
          workflow_state: exec.state,
          step_name: step.id,
          validation,
          new_token: this.liveToken(exec),
          message: `Step '${step.id}' output did not pass validation: ${validation.issues.join('; ')}. Fix it and call workflow_next_step again with new_token.`,
        };
      } else {
        row.status = 'completed';
        row.completed_at = at;
        row.duration_ms = row.started_at ? Date.parse(at) - Date.parse(row.started_at) : null;
        row.attempts += 1;
        row.output = output;
        await tx.updateStep(row);
        for (const artifact of output.artifacts ?? []) {
          if (typeof artifact === 'string') continue;
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
          await this.event(tx, 'artifact_stored', exec, step.id, { artifact_id: id, name: artifact.name });
        }
        await this.event(tx, 'step_completed', exec, step.id, { seq: row.seq, duration_ms: row.duration_ms });
        context.steps = { ...asRecord(context.steps), [step.id]: outputForTemplates(output) };
        const next = nextStep(workflow, [...exec.completed_steps, step.id], context);
        const view = await this.enterStep(tx, exec, workflow, next);
        await tx.updateExecution(exec);
        // Command steps come next: they run after this commit, and the answer is recorded after them.
        if (view === 'command') return { kind: 'pending' as const, nonce: payload.nonce, at };
        response = view
          ? {
              success: true,
              execution_id: exec.execution_id,
              workflow_state: exec.state,
              ...view,
              new_token: this.liveToken(exec),
              message: `Step '${view.step_name}' ready. Review agent_content and continue.`,
            }
          : {
              success: true,
              execution_id: exec.execution_id,
              workflow_state: exec.state,
              ...this.finalOutput(exec),
              message: 'Workflow completed successfully',
            };
      }
      await tx.recordSubmission({
        nonce: payload.nonce,
        execution_id: exec.execution_id,
        output_hash: outputHash,
        response,
        created_at: at,
      });
      return { kind: 'done' as const, response };
    });
  }

  // ------------------------------------------------------------------------------------------
  // workflow_set_state

  async setState(executionId: string, to: ExecutionState, reason: string | undefined) {
    return this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      if (!exec) fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      const from = exec.state;
      if (from === to || !canTransition(from, to)) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: from,
          allowed: TRANSITIONS[from],
          details: `cannot go from ${from} to ${to}; allowed from ${from}: ${TRANSITIONS[from].join(', ') || 'none (terminal state)'}`,
        });
      }
      await this.transition(tx, exec, to, reason);
      if (isTerminal(to)) {
        const row = await tx.getStep(executionId, exec.current_seq);
        if (row && row.status === 'running' && to !== 'completed') {
          row.status = 'failed';
          row.completed_at = exec.updated_at;
          await tx.updateStep(row);
        }
      }
      await tx.updateExecution(exec);
      return {
        success: true,
        execution_id: executionId,
        previous_state: from,
        workflow_state: to,
        allowed_next: [...TRANSITIONS[to]],
      };
    });
  }

  // ------------------------------------------------------------------------------------------
  // Reads (workflow_resume, workflow_executions, resources)

  /** The current step with a usable token; an expired live token is replaced by a fresh one. */
  async current(executionId: string, outer?: StoreWriter) {
    const run = async (tx: StoreWriter) => {
      const exec = await tx.getExecution(executionId);
      if (!exec) fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      const workflow = await this.definition(exec, tx);
      let view: StepView | undefined;
      const action = exec.current_step !== null ? findActionStep(workflow, exec.current_step) : undefined;
      const onCommand = action !== undefined && isCommandStep(action);
      if (onCommand && !isTerminal(exec.state)) {
        return {
          execution_id: exec.execution_id,
          workflow_name: exec.workflow_name,
          workflow_state: exec.state,
          current_step: exec.current_step,
          step_status: 'server',
          agent_name: 'server',
          progress: null,
          continuation_token: null,
          agent_content: null,
          instructions: `The server runs command step "${exec.current_step}"; call workflow_resume to run it and continue.`,
          view,
        };
      }
      if (!isTerminal(exec.state) && exec.current_step !== null) {
        if (exec.token_expires_at !== null && Date.parse(exec.token_expires_at) <= Date.now()) {
          this.mintToken(exec, exec.current_step);
          await this.event(tx, 'token_generated', exec, exec.current_step, {
            reason: 'refresh after expiry',
          });
          exec.updated_at = nowIso();
          await tx.updateExecution(exec);
        }
        view = this.stepView(exec, workflow, nextStep(workflow, exec.completed_steps, exec.context));
      }
      return {
        execution_id: exec.execution_id,
        workflow_name: exec.workflow_name,
        workflow_state: exec.state,
        current_step: exec.current_step,
        step_status: view ? 'running' : null,
        agent_name: view?.agent_name ?? null,
        progress: view?.progress ?? null,
        continuation_token: view && exec.state === 'running' ? this.liveToken(exec) : null,
        agent_content: view?.agent_content ?? null,
        instructions: view
          ? exec.state === 'paused'
            ? 'The execution is paused. Resume it with workflow_set_state {"state": "running"} before continuing.'
            : 'Read agent_content carefully and do the step it describes. When done, call workflow_next_step with ' +
              'token = continuation_token and output = { summary, artifacts?, findings?, next_step_recommendation?, context? }.'
          : `The execution is ${exec.state}; there is nothing left to do.`,
        view,
      };
    };
    return outer ? run(outer) : this.deps.store.transaction(run);
  }

  /** workflow_resume: finishes command steps left pending (e.g. by a crash), then the current step. */
  async resume(executionId: string) {
    await Promise.all([this.deps.registry.ready(), this.deps.personas.ready(), this.deps.engine.load()]);
    const commands = await this.runCommands(executionId);
    const current = await this.current(executionId);
    return commands.length > 0 ? { ...current, commands } : current;
  }

  async status(executionId: string) {
    const { store } = this.deps;
    const exec = await store.getExecution(executionId);
    if (!exec) fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
    const [steps, workflow] = await Promise.all([store.getSteps(executionId), this.definition(exec)]);
    const count = (status: StepRecord['status']) => steps.filter((s) => s.status === status).length;
    const total = plannedSteps(workflow);
    const doneNames = new Set(steps.filter((s) => s.status === 'completed').map((s) => s.step_name));
    return {
      execution_id: exec.execution_id,
      workflow_name: exec.workflow_name,
      state: exec.state,
      current_step: exec.current_step,
      started_at: exec.started_at,
      updated_at: exec.updated_at,
      completed_at: exec.completed_at,
      duration_ms: exec.duration_ms,
      steps: {
        total,
        completed: count('completed'),
        failed: count('failed'),
        running: count('running'),
        pending: Math.max(0, total - doneNames.size - count('running')),
      },
    };
  }

  async history(executionId: string) {
    const { store } = this.deps;
    if (!(await store.getExecution(executionId))) {
      fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
    }
    return (await store.getSteps(executionId)).map((s) => ({
      step_name: s.step_name,
      agent_name: s.agent_name,
      status: s.status,
      seq: s.seq,
      iteration: s.iteration,
      attempts: s.attempts,
      started_at: s.started_at,
      completed_at: s.completed_at,
      duration_ms: s.duration_ms,
      output: s.output,
    }));
  }

  async artifacts(executionId: string, stepName?: string) {
    const { store } = this.deps;
    if (!(await store.getExecution(executionId))) {
      fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
    }
    return store.getArtifacts(executionId, stepName);
  }

  async find(filter: {
    workflow_name?: string | undefined;
    states?: ExecutionState[] | undefined;
    limit: number;
  }) {
    const records = await this.deps.store.listExecutions({
      limit: filter.limit,
      ...(filter.workflow_name !== undefined ? { workflow_name: filter.workflow_name } : {}),
      ...(filter.states !== undefined ? { states: filter.states } : {}),
    });
    return records.map((e) => ({
      execution_id: e.execution_id,
      workflow_name: e.workflow_name,
      state: e.state,
      current_step: e.current_step,
      started_at: e.started_at,
      updated_at: e.updated_at,
      current_step_resource: `${URI}/current_step/${e.execution_id}`,
    }));
  }

  telemetry(filter: { execution_id?: string; event_type?: string; limit: number }) {
    return this.deps.store.getTelemetry(filter);
  }

  // ------------------------------------------------------------------------------------------
  // Internals

  private async definition(exec: ExecutionRecord, tx?: StoreWriter): Promise<Workflow> {
    const cached = this.pinned.get(exec.definition_hash);
    if (cached) return cached;
    const content = await (tx ?? this.deps.store).getDefinition(exec.definition_hash);
    if (content === undefined) {
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: `pinned definition ${exec.definition_hash} is missing`,
      });
    }
    const workflow = JSON.parse(content) as Workflow;
    if (this.pinned.size > 256) this.pinned.clear();
    this.pinned.set(exec.definition_hash, workflow);
    return workflow;
  }

  /** Moves the execution onto the step the engine chose (or completes it). Caller saves `exec`. */
  private async enterStep(
    tx: StoreWriter,
    exec: ExecutionRecord,
    workflow: Workflow,
    next: ReturnType<typeof nextStep>,
  ): Promise<StepView | undefined | 'command'> {
    exec.completed_steps = next.completedSteps;
    exec.context = next.context;
    exec.updated_at = nowIso();
    if (next.step === null) {
      exec.current_step = null;
      exec.token_nonce = null;
      if (workflow.final_output !== undefined) {
        exec.metadata = {
          ...exec.metadata,
          final_output: renderPreview(workflow.final_output, this.scope(exec.context)).value,
        };
      }
      await this.transition(tx, exec, 'completed');
      await this.event(tx, 'workflow_completed', exec, null, { steps: exec.current_seq });
      return undefined;
    }
    exec.current_seq += 1;
    exec.current_step = next.step.id;
    const command = isCommandStep(next.step) ? next.step : undefined;
    const view = command ? undefined : this.stepView(exec, workflow, next);
    const agentName = view?.agent_name ?? 'server';
    await tx.insertStep({
      execution_id: exec.execution_id,
      seq: exec.current_seq,
      step_name: next.step.id,
      agent_name: agentName,
      iteration: next.loop?.iteration ?? null,
      status: 'running',
      attempts: 0,
      started_at: exec.updated_at,
      completed_at: null,
      duration_ms: null,
      output: null,
    });
    await this.event(tx, 'step_started', exec, next.step.id, {
      seq: exec.current_seq,
      ...(command ? { command: command.run } : { agent_name: agentName }),
    });
    if (view === undefined) {
      // A command step: the server runs it after this transaction commits; no token until an agent step.
      exec.token_nonce = null;
      return 'command';
    }
    this.mintToken(exec, next.step.id, 0);
    await this.event(tx, 'token_generated', exec, next.step.id, { attempt: exec.token_attempt });
    return view;
  }

  private stepView(exec: ExecutionRecord, workflow: Workflow, next: ReturnType<typeof nextStep>): StepView {
    const step = next.step as PromptStep;
    const guidance = buildGuidance(
      workflow,
      step,
      next.context,
      next.loop,
      next.notices,
      this.scope(next.context),
    );
    const agentName = step.agent ?? DEFAULT_AGENT;
    const persona = this.deps.personas.get(agentName);
    const missing = step.agent !== undefined && persona === undefined;
    const agentContent = [
      persona ? persona.content : '',
      missing ? `(Persona '${agentName}' is not installed; act as a careful generalist.)` : '',
      `## Step ${exec.current_seq}: ${step.title}\n\n${guidance.prompt}`,
    ]
      .filter(Boolean)
      .join('\n\n---\n\n');
    return {
      step_name: step.id,
      agent_name: agentName,
      agent_content: agentContent,
      progress: `${exec.current_seq}/${Math.max(exec.current_seq, plannedSteps(workflow))}`,
      step,
      guidance,
      ...(next.loop ? { loop: next.loop } : {}),
      ...(next.notices.length > 0 ? { notices: next.notices } : {}),
    };
  }

  /** A new live token for the step: attempt 0 on entering it, the next attempt after a failed validation. */
  private mintToken(exec: ExecutionRecord, stepName: string, attempt = exec.token_attempt + 1): void {
    const issued = new Date();
    exec.token_nonce = TokenService.newNonce();
    exec.token_attempt = attempt;
    exec.token_issued_at = issued.toISOString();
    exec.token_expires_at = new Date(issued.getTime() + this.deps.tokens.ttlMs).toISOString();
    exec.current_step = stepName;
  }

  /** The live token, re-signed from the stored fields (signing is deterministic). */
  private liveToken(exec: ExecutionRecord): string | null {
    if (exec.token_nonce === null || exec.current_step === null) return null;
    return this.deps.tokens.sign({
      execution_id: exec.execution_id,
      step_name: exec.current_step,
      seq: exec.current_seq,
      attempt: exec.token_attempt,
      issued_at: exec.token_issued_at ?? '',
      expires_at: exec.token_expires_at ?? '',
      nonce: exec.token_nonce,
    });
  }

  private async transition(tx: StoreWriter, exec: ExecutionRecord, to: ExecutionState, reason?: string) {
    const from = exec.state;
    exec.state = to;
    exec.updated_at = nowIso();
    if (isTerminal(to)) {
      exec.completed_at = exec.updated_at;
      exec.duration_ms = Date.parse(exec.updated_at) - Date.parse(exec.started_at);
      exec.token_nonce = null;
    }
    if (reason !== undefined) exec.metadata = { ...exec.metadata, [`${to}_reason`]: reason };
    await this.event(tx, 'workflow_state_transition', exec, null, {
      from,
      to,
      ...(reason ? { reason } : {}),
    });
    if (to === 'failed') await this.event(tx, 'workflow_failed', exec, null, reason ? { reason } : null);
  }

  private async event(
    tx: StoreWriter,
    type: string,
    exec: ExecutionRecord,
    stepName: string | null,
    metadata: Record<string, unknown> | null,
  ): Promise<void> {
    await tx.insertTelemetry({
      event_type: type,
      execution_id: exec.execution_id,
      step_name: stepName,
      agent_name: null,
      metadata,
    });
  }
}
