import { createHash, randomBytes } from 'node:crypto';
import type { Context } from '../../engine/conditions.js';
import { DomainFailure, fail } from '../../engine/errors.js';
import { buildGuidance, type Guidance } from '../../engine/guidance.js';
import { findPromptStep, type LoopPosition, nextStep } from '../../engine/next-step.js';
import { canTransition, type ExecutionState, isTerminal, TRANSITIONS } from '../../engine/state-machine.js';
import type { ValidationEngine, ValidationResult } from '../../engine/validation-engine.js';
import type {
  ExecutionRecord,
  ExecutionStore,
  StepRecord,
  StoreWriter,
} from '../../store/execution-store.js';
import { isLoopStep, type PromptStep, type Workflow } from '../../workflows/model.js';
import type { PersonaRegistry } from '../../workflows/personas.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { requireWorkflow } from '../guidance/guidance-tools.js';
import { type TokenPayload, TokenService } from './tokens.js';

export const MAX_ARTIFACT_BYTES = 1024 * 1024;
export const MAX_STEP_ARTIFACT_BYTES = 8 * 1024 * 1024;
export const DEFAULT_AGENT = 'default';
const URI = 'workflowlookup://workflow';

export type ArtifactInput =
  | string
  | {
      type: 'file' | 'data' | 'report' | 'finding';
      name: string;
      content: string;
      content_type?: string | undefined;
      metadata?: Record<string, unknown> | undefined;
    };

export interface StepOutput {
  summary: string;
  artifacts?: ArtifactInput[] | undefined;
  findings?: string[] | undefined;
  next_step_recommendation?: string | undefined;
  context?: Record<string, unknown> | undefined;
}

/** The step an execution is on, as handed to the agent. */
export interface StepView {
  step_name: string;
  agent_name: string;
  agent_content: string;
  progress: string;
  step: PromptStep;
  guidance: Guidance;
  loop?: LoopPosition;
  notices?: string[];
}

export interface ExecutionDeps {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  tokens: TokenService;
}

const nowIso = () => new Date().toISOString();

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Number of prompt steps a definition has (loop bodies counted once): the denominator of progress. */
function plannedSteps(workflow: Workflow): number {
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  return workflow.steps.reduce((n, s) => {
    if (bodyRefs.has(s.id)) return n;
    return n + (isLoopStep(s) ? (Array.isArray(s.body) ? s.body.length : 1) : 1);
  }, 0);
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
  }) {
    const { store, registry, personas } = this.deps;
    await Promise.all([registry.ready(), personas.ready()]);
    if (input.execution_id !== undefined) {
      const existing = await store.getExecution(input.execution_id);
      if (existing) return this.existingStart(existing, input.workflow_name);
    }
    const entry = requireWorkflow(registry, input.workflow_name);
    const workflow = entry.workflow;
    const executionId = input.execution_id ?? `exec_${randomBytes(12).toString('hex')}`;
    return store.transaction(async (tx) => {
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
        context: input.context ?? {},
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
      return {
        success: true,
        execution_id: exec.execution_id,
        workflow_state: exec.state,
        ...(view ? { ...view, new_token: this.liveToken(exec) } : {}),
        message: view
          ? `Workflow '${workflow.id}' started. Step '${view.step_name}' ready.`
          : `Workflow '${workflow.id}' started and completed: no step applies to this context.`,
      };
    });
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
    this.checkArtifacts(output.artifacts ?? []);
    const outputHash = createHash('sha256').update(canonical(output)).digest('hex');
    return this.recordingErrors(payload.execution_id, payload.step_name, () =>
      this.advance(payload, output, outputHash),
    );
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
        if (recorded.output_hash === outputHash) return recorded.response as Record<string, unknown>;
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
        const next = nextStep(workflow, [...exec.completed_steps, step.id], context);
        const view = await this.enterStep(tx, exec, workflow, next);
        await tx.updateExecution(exec);
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
      return response;
    });
  }

  private checkArtifacts(artifacts: readonly ArtifactInput[]): void {
    let total = 0;
    for (const a of artifacts) {
      if (typeof a === 'string') continue;
      const size = Buffer.byteLength(a.content);
      total += size;
      if (size > MAX_ARTIFACT_BYTES) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: `artifact '${a.name}' is ${size} bytes; the limit is ${MAX_ARTIFACT_BYTES} bytes per artifact`,
        });
      }
    }
    if (total > MAX_STEP_ARTIFACT_BYTES) {
      fail({
        code: 'invalid_params',
        message: 'Invalid params',
        details: `artifacts total ${total} bytes; the limit is ${MAX_STEP_ARTIFACT_BYTES} bytes per step`,
      });
    }
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
  ): Promise<StepView | undefined> {
    exec.completed_steps = next.completedSteps;
    exec.context = next.context;
    exec.updated_at = nowIso();
    if (next.step === null) {
      exec.current_step = null;
      exec.token_nonce = null;
      await this.transition(tx, exec, 'completed');
      await this.event(tx, 'workflow_completed', exec, null, { steps: exec.current_seq });
      return undefined;
    }
    exec.current_seq += 1;
    exec.current_step = next.step.id;
    const view = this.stepView(exec, workflow, next);
    await tx.insertStep({
      execution_id: exec.execution_id,
      seq: exec.current_seq,
      step_name: next.step.id,
      agent_name: view.agent_name,
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
      agent_name: view.agent_name,
    });
    this.mintToken(exec, next.step.id, 0);
    await this.event(tx, 'token_generated', exec, next.step.id, { attempt: exec.token_attempt });
    return view;
  }

  private stepView(exec: ExecutionRecord, workflow: Workflow, next: ReturnType<typeof nextStep>): StepView {
    const step = next.step as PromptStep;
    const guidance = buildGuidance(workflow, step, next.context, next.loop, next.notices);
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
