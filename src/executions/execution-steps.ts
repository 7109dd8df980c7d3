import { createHash } from 'node:crypto';
import { asRecord, type Context } from '../engine/conditions.js';
import { fail } from '../engine/errors.js';
import { stepFill } from '../engine/fill.js';
import { buildGuidance, contextScope } from '../engine/guidance.js';
import { nextStep, serverOwnedKeys, stepsAhead, type WalkEvent } from '../engine/next-step.js';
import { type ExecutionState, isTerminal } from '../engine/state-machine.js';
import { renderPreview, type TemplateScope } from '../engine/templating.js';
import { isCommandStep, type PromptStep, type Workflow } from '../model/workflow.js';
import type { ExecutionRecord, ExecutionStore, StoreReader, StoreWriter } from '../store/execution-store.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import { DEFAULT_AGENT, nowIso, progressOf, type StepView } from './execution-model.js';
import { RecordChain } from './record-chain.js';
import { TokenService } from './tokens.js';

export interface StepMachineDeps {
  store: ExecutionStore;
  personas: PersonaRegistry;
  tokens: TokenService;
  /** Environment variables templates may read. */
  allowedEnv: Record<string, string>;
  /** Told what each walk that moves an execution decided (the workflow tests' coverage). */
  observe?: ((event: WalkEvent, workflowId: string) => void) | undefined;
  /** ms since the epoch: when a minted token was issued and expires (the service's clock). */
  now: () => number;
}

const MAX_PINNED = 256;

/**
 * What an execution's agent has been given in full (kept in its metadata under `sent`): the persona
 * (name and content hash) and whether the workflow's metaGuidance went out, plus what the current
 * step shows in full, so every later view of that step (after command steps, a replayed retry) says
 * the same.
 */
interface Sent {
  persona?: string;
  meta?: boolean;
  step?: { seq: number; persona: boolean; meta: boolean };
}

/** What a step view gives in full; the rest is named in one line. */
export interface Shown {
  persona: boolean;
  meta: boolean;
}

const FULL: Shown = { persona: true, meta: true };

/**
 * The machinery every execution transition shares: pinned definitions, entering a step (or completing),
 * step views, tokens, state transitions and telemetry. Callers run it inside a store transaction.
 */
/**
 * What the parts above the machine are told of, inside the transaction (the service sets them): a
 * delegating step entered (its children are created then), a change of state (a child that ended is
 * joined, a parent that ends or pauses takes its children along).
 */
export interface MachineHooks {
  entered?: (
    tx: StoreWriter,
    exec: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    next: ReturnType<typeof nextStep>,
  ) => Promise<void>;
  transitioned?: (
    tx: StoreWriter,
    exec: ExecutionRecord,
    from: ExecutionState,
    to: ExecutionState,
    reason: string | undefined,
  ) => Promise<void>;
}

export class StepMachine {
  private readonly pinned = new Map<string, Workflow>();
  private readonly record = new RecordChain();
  hooks: MachineHooks = {};

  constructor(private readonly deps: StepMachineDeps) {}

  get store(): ExecutionStore {
    return this.deps.store;
  }

  /** What templates can see: inputs, step outputs (both kept in the context) and allowed env vars. */
  scope(context: Context): TemplateScope {
    return contextScope(context, this.deps.allowedEnv);
  }

  /** The definition the execution started with (pinned by content hash). */
  async definition(exec: ExecutionRecord, reader: StoreReader = this.deps.store): Promise<Workflow> {
    const cached = this.pinned.get(exec.definition_hash);
    if (cached) return cached;
    const content = await reader.getDefinition(exec.definition_hash);
    if (content === undefined) {
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: `pinned definition ${exec.definition_hash} is missing`,
      });
    }
    return this.remember(exec.definition_hash, JSON.parse(content) as Workflow);
  }

  remember(hash: string, workflow: Workflow): Workflow {
    if (this.pinned.size >= MAX_PINNED) this.pinned.clear();
    this.pinned.set(hash, workflow);
    return workflow;
  }

  /**
   * The engine's choice of the step after `completed`, for a transition (start, an accepted output, a
   * finished command step): the walk the observer, if any, is told about. Views of a step already
   * entered call nextStep themselves and tell no one.
   */
  walk(workflow: Workflow, completed: readonly string[], context: Context): ReturnType<typeof nextStep> {
    const { observe } = this.deps;
    return nextStep(workflow, completed, context, observe && ((event) => observe(event, workflow.id)));
  }

  /** Refuses context keys the server owns (inputs, step outputs, loop progress and loop variables). */
  refuseOwnedKeys(workflow: Workflow, context: Context | undefined, where: string): void {
    if (context === undefined) return;
    const owned = serverOwnedKeys(workflow);
    const taken = Object.keys(context).filter((k) => owned.has(k));
    if (taken.length > 0) {
      fail({
        code: 'invalid_params',
        message: 'Invalid params',
        details: `${where} may not set ${taken.map((k) => `"${k}"`).join(', ')}: the server owns ${[...owned].join(', ')} (validated inputs, step outputs and loop progress)`,
      });
    }
  }

  /** Moves the execution onto the step the engine chose (or completes it). Caller saves `exec`. */
  async enterStep(
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
    if (!command) this.recordSent(exec, workflow, next.step as PromptStep);
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
      lease_owner: null,
      lease_expires_at: null,
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
    const prompt = next.step as PromptStep;
    if (prompt.delegate !== undefined) await this.hooks.entered?.(tx, exec, workflow, prompt, next);
    return view;
  }

  /** The persona a step speaks as, keyed by name and content (an edited persona is a new one). */
  private personaKey(step: PromptStep): string {
    const name = step.agent ?? DEFAULT_AGENT;
    const persona = this.deps.personas.get(name);
    if (persona === undefined) return `${name}:missing`;
    return `${name}:${createHash('sha256').update(persona.content).digest('hex').slice(0, 16)}`;
  }

  /**
   * Entering an agent step: the persona goes out in full when it first appears or changes, the
   * metaGuidance with the first step; the decision is kept for this step's views.
   */
  private recordSent(exec: ExecutionRecord, workflow: Workflow, step: PromptStep): void {
    const sent = asRecord(exec.metadata.sent) as Sent;
    const persona = this.personaKey(step);
    const hasMeta = (workflow.metaGuidance?.length ?? 0) > 0;
    const shown = { persona: sent.persona !== persona, meta: hasMeta && sent.meta !== true };
    exec.metadata = {
      ...exec.metadata,
      sent: { persona, meta: sent.meta === true || hasMeta, step: { seq: exec.current_seq, ...shown } },
    };
  }

  /** What the current step's views give in full (everything, where nothing was recorded). */
  private shownNow(exec: ExecutionRecord): Shown {
    const step = (asRecord(exec.metadata.sent) as Sent).step;
    return step !== undefined && step.seq === exec.current_seq
      ? { persona: step.persona, meta: step.meta }
      : FULL;
  }

  /**
   * The step to hand out. `full` (workflow_resume, the current_step resource: an agent back from a
   * context reset) gives the persona and the metaGuidance in full; otherwise what was decided when the
   * step was entered.
   */
  stepView(
    exec: ExecutionRecord,
    workflow: Workflow,
    next: ReturnType<typeof nextStep>,
    full = false,
  ): StepView {
    const step = next.step as PromptStep;
    const shown = full ? FULL : this.shownNow(exec);
    const guidance = buildGuidance(
      workflow,
      step,
      next.context,
      next.loop,
      next.notices,
      this.scope(next.context),
      { metaGuidance: shown.meta ? 'full' : 'reference' },
    );
    const agentName = step.agent ?? DEFAULT_AGENT;
    const persona = this.deps.personas.get(agentName);
    const missing = step.agent !== undefined && persona === undefined;
    const agentContent = [
      persona
        ? shown.persona
          ? persona.content
          : `Persona: ${agentName}, as given in full earlier in this execution.`
        : '',
      missing ? `(Persona '${agentName}' is not installed; act as a careful generalist.)` : '',
      // The title is in the guidance, rendered (values shown as data): once, never as a raw template.
      `## Step ${exec.current_seq}\n\n${guidance.prompt}`,
      gates(step),
    ]
      .filter(Boolean)
      .join('\n\n---\n\n');
    return {
      step_name: step.id,
      agent_name: agentName,
      agent_content: agentContent,
      ...progressOf(exec.current_seq, stepsAhead(workflow, step.id, next.context)),
      step,
      guidance,
      ...(next.loop ? { loop: next.loop } : {}),
      ...(next.notices.length > 0 ? { notices: next.notices } : {}),
      fill: stepFill(workflow, step, next.context, 'durable'),
    };
  }

  /** A new live token for the step: attempt 0 on entering it, the next attempt after a failed validation. */
  mintToken(exec: ExecutionRecord, stepName: string, attempt = exec.token_attempt + 1): void {
    const issued = new Date(this.deps.now());
    exec.token_nonce = TokenService.newNonce();
    exec.token_attempt = attempt;
    exec.token_issued_at = issued.toISOString();
    exec.token_expires_at = new Date(issued.getTime() + this.deps.tokens.ttlMs).toISOString();
    exec.current_step = stepName;
  }

  /** The live token, re-signed from the stored fields (signing is deterministic). */
  liveToken(exec: ExecutionRecord): string | null {
    if (exec.token_nonce === null || exec.current_step === null) return null;
    return this.deps.tokens.sign({
      execution_id: exec.execution_id,
      ...(exec.principal !== 'local' ? { sub: exec.principal } : {}),
      step_name: exec.current_step,
      seq: exec.current_seq,
      attempt: exec.token_attempt,
      issued_at: exec.token_issued_at ?? '',
      expires_at: exec.token_expires_at ?? '',
      nonce: exec.token_nonce,
    });
  }

  async transition(
    tx: StoreWriter,
    exec: ExecutionRecord,
    to: ExecutionState,
    reason?: string,
    who?: { by: string; via: string },
  ) {
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
      ...(who ?? {}),
    });
    if (to === 'failed') await this.event(tx, 'workflow_failed', exec, null, reason ? { reason } : null);
    await this.hooks.transitioned?.(tx, exec, from, to, reason);
  }

  async event(
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
    // The record: what happened to the work, chained in this same transaction (record-chain.ts).
    await this.record.append(tx, exec, type, stepName, metadata);
  }

  /**
   * An event of the record alone, not of the telemetry (an output submitted: the telemetry already
   * says the token was used; only the proof needs the output's digest).
   */
  async recordEvent(
    tx: StoreWriter,
    type: string,
    exec: ExecutionRecord,
    stepName: string | null,
    body: Record<string, unknown>,
  ): Promise<void> {
    await this.record.append(tx, exec, type, stepName, body);
  }

  /** The execution's record, in order (an execution from before records gets its chain first). */
  recordOf(tx: StoreWriter, exec: ExecutionRecord) {
    return this.record.read(tx, exec);
  }
}

/** What happens after the agent submits a step with a server-run check or an approval gate (one line each). */
function gates(step: PromptStep): string {
  const lines: string[] = [];
  if (step.verify !== undefined)
    lines.push(
      `When you submit this step, the server runs the check "${step.verify.check}" itself; the step moves on only when it passes (a failure comes back with the output).`,
    );
  if (step.approval !== undefined)
    lines.push(
      `After your output passes, a person must approve it ("${step.approval.prompt}"); you cannot. You will poll until they decide.`,
    );
  return lines.join('\n');
}
