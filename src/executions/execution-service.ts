import { createHash, randomBytes } from 'node:crypto';
import type { CatalogRegistry } from '../catalogs/catalog-registry.js';
import type { CommandStepRunner } from '../catalogs/command-steps.js';
import { durationMs } from '../catalogs/command-steps.js';
import { InputChecker } from '../catalogs/input-check.js';
import { requiredCatalogs } from '../catalogs/requirements.js';
import { asRecord, type Context } from '../engine/conditions.js';
import { checkContextValues, refuseContext } from '../engine/context-needs.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { stepFill } from '../engine/fill.js';
import {
  allStepIds,
  findActionStep,
  findPromptStep,
  nextStep,
  type WalkObserver,
} from '../engine/next-step.js';
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
import { isCommandStep, type PromptStep, type Workflow } from '../model/workflow.js';
import type {
  ApprovalRecord,
  ExecutionRecord,
  ExecutionStore,
  StepRecord,
  StoreWriter,
} from '../store/execution-store.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import { deciders, mayDecide, outputDigest } from './approvers.js';
import { CheckClaims, endClaim, type HeldClaim } from './check-claims.js';
import type { CheckResult, CheckRunner } from './checks.js';
import { CommandPhase, waitingOn } from './command-phase.js';
import {
  type ApprovalView,
  approvalView,
  type Caller,
  type CommandRun,
  type CurrentState,
  canonical,
  checkArtifacts,
  nowIso,
  type Outcome,
  outputForTemplates,
  type PauseRecord,
  pausedByPerson,
  pauseOf,
  pausePhrase,
  type StateRoute,
  type StepOutput,
  type StepView,
  storedArtifact,
  withContextCheck,
} from './execution-model.js';
import { ExecutionQueries } from './execution-queries.js';

// Readers without the service (the dashboard's read-only connection) load it from the same chunk.
export { ExecutionQueries };

import { metrics } from '../telemetry/metrics.js';
import { ATTR, annotate, inSpan, inSpanSync, spanEvent } from '../telemetry/trace.js';
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
  /** Runs the checks steps name (`verify`); without it a step naming one is CHECK_UNAVAILABLE. */
  checks?: CheckRunner;
  /** The clock approval timeouts are measured by (ms since the epoch); tests inject one. */
  clock?: () => number;
  /**
   * Principals the operator lets decide other principals' approvals, where a step names them
   * (WORKFLOWLOOKUP_APPROVERS); a workflow's `approvers` alone grants nothing (approvers.ts).
   */
  approvers?: ReadonlySet<string>;
}

/** Who asks for a change of state, and from where (a person's pause holds against the agent). */
export interface StateChange {
  via: StateRoute;
  /** The person or principal recorded (default: the caller's principal). */
  by?: string;
  /** The principal's explicit choice to lift a person's pause (never offered in `next`). */
  override?: boolean;
}

/** What a person decided on: the approval they were shown and, where known, the digest of its output. */
export interface DecisionTarget {
  approval_id: string;
  output_sha256?: string | undefined;
}

/** Who decides an approval, and how: a signed-in principal, the host's operator, the client's user. */
export interface Decider {
  /** The principal deciding; null for the operator on the server host (the CLI). */
  principal: string | null;
  /** What the record says decided it (a principal, `cli:<user>`, ...). */
  name: string;
  via: 'dashboard' | 'cli' | 'elicitation' | 'timeout';
  /** The host's operator may decide any approval; others only as the step's approvers allow. */
  operator?: boolean;
}

const NOBODY: ReadonlySet<string> = new Set();

/** The token nonce of a poll answered by a decision: any output sent with it replays the decision. */
const DECIDED = 'approval-decision';

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
  /** One check run per token (see check-claims.ts); none without checks. */
  private readonly claims: CheckClaims | undefined;
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
    this.claims = deps.checks && new CheckClaims(this.machine, deps.checks, () => this.now());
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
    // A step naming a check this server will not run would strand the execution there: refuse now.
    const steps = promptSteps(workflow);
    const unknown = steps.filter(
      (s) =>
        s.verify !== undefined &&
        this.deps.checks?.configured === true &&
        !this.deps.checks.known(s.verify.check),
    );
    if (unknown.length > 0) {
      // A name the operator never defined is the workflow's mistake (a typo): a validation error.
      fail({
        code: 'workflow_invalid',
        message: 'Invalid workflow',
        workflowId: workflow.id,
        violations: unknown.map((s) => ({
          path: `/steps/${s.id}/verify/check`,
          rule: 'knownCheck',
          message: `step "${s.id}" names check "${s.verify?.check}", which the server's checks file does not define`,
          actual: s.verify?.check ?? '',
        })),
      });
    }
    for (const step of steps) {
      if (step.verify === undefined) continue;
      if (this.deps.checks === undefined) {
        fail({
          code: 'check_unavailable',
          message: `check "${step.verify.check}" is not available: this server has no checks (WORKFLOWLOOKUP_CHECKS_FILE is unset)`,
          check: step.verify.check,
          reason: 'not_configured',
          workflowId: workflow.id,
          stepId: step.id,
        });
      }
      this.deps.checks.available(step.verify.check, { workflowId: workflow.id, stepId: step.id });
    }
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
    const paused = current.paused ? { paused: current.paused } : {};
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
          ...paused,
        }
      : {
          v: 1,
          kind: 'ended',
          origin: 'existing',
          execution_id: exec.execution_id,
          workflow_id: exec.workflow_name,
          state: current.state,
          commands: [],
          ...paused,
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
      const { verified, claim } = await this.runCheck(payload, outputHash, caller);
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
        return this.askPerson(advanced, output, caller);
      }
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

  /**
   * The check the current step names, run before the submission's transaction (a check may take
   * minutes; no row stays locked meanwhile). The token is claimed first, so a check runs once per token:
   * concurrent submissions of it wait for the claimer's answer and replay it. Nothing runs for a token
   * already used, no longer current, or polling an approval: the transaction answers those.
   */
  private async runCheck(
    payload: TokenPayload,
    outputHash: string,
    caller: Caller,
  ): Promise<{ verified?: CheckResult; claim?: HeldClaim }> {
    const { store, checks } = this.deps;
    // Without checks no step can name one (start refuses such workflows; advance refuses the rest):
    // the ordinary step pays nothing for this feature.
    if (checks === undefined || this.claims === undefined) return {};
    // One read first: most steps name no check and need no claim (a transaction).
    const exec = await store.getExecution(payload.execution_id);
    if (exec === undefined || exec.token_nonce !== payload.nonce || exec.state !== 'running') return {};
    if (typeof exec.metadata.awaiting_approval === 'string') return {};
    const workflow = await this.machine.definition(exec);
    if (findPromptStep(workflow, exec.current_step ?? '')?.verify === undefined) return {};
    for (;;) {
      const claim = await this.claims.take(payload, outputHash);
      if (claim.kind === 'none') return {};
      // A check (or another request's check) takes a while: later requests need not wait for it.
      caller.onNetworkWait?.();
      if (claim.kind === 'wait') {
        await this.claims.wait(payload.nonce, caller.signal);
        continue;
      }
      try {
        caller.onProgress?.(`running check ${claim.check}`);
        const roots = await caller.roots?.().catch(() => undefined);
        const verified = await claim.holding(() =>
          checks.run(claim.check, { roots, signal: caller.signal, principal: caller.principal }),
        );
        return { verified, claim };
      } catch (error) {
        await claim.release();
        throw error;
      }
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
      const waiting = await this.pendingApproval(tx, exec);
      if (waiting !== undefined) {
        const decided = await this.expireIfDue(tx, exec, waiting);
        if (decided !== undefined) return decided;
        return this.awaitingOutcome(exec, waiting);
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
        const walked = this.walkAfter(workflow, exec, step, output, context);
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
        outcome = await this.requestApproval(tx, exec, workflow, step, row, output, verified);
      } else if (!validation.valid || next === undefined) {
        outcome = await this.reject(tx, exec, workflow, step, row, {
          reason: 'validation',
          validation,
          named,
          at,
          extra: verified !== undefined ? { check: verified } : {},
        });
      } else {
        outcome = await this.complete(tx, exec, workflow, step, row, output, next);
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

  /**
   * The walk after an accepted output: the context with the step's output, and the step that follows;
   * or, when a loop ahead cannot start (its list or count is missing), the refusal to send back.
   */
  private walkAfter(
    workflow: Workflow,
    exec: ExecutionRecord,
    step: PromptStep,
    output: StepOutput,
    context: Context,
  ): { next: ReturnType<typeof nextStep> } | { validation: ValidationResult; named: string[] } {
    const reported = checkSubmission(workflow, step, output);
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

  /** Completes the current step with its output and enters the next one (or completes the execution). */
  /**
   * The step stays current: one more attempt, a `step_failed` event with the issues, a fresh token, and
   * the answer that says what to fix (by validation, or by a person's rejection of the held output).
   */
  private async reject(
    tx: StoreWriter,
    exec: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    row: StepRecord,
    why: {
      reason: 'validation' | 'approval';
      validation: ValidationResult;
      named: string[];
      at: string;
      extra: { check?: CheckResult; approval?: ReturnType<typeof approvalView> };
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

  private async complete(
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
      await machine.event(tx, 'artifact_stored', exec, step.id, { artifact_id: id, name: artifact.name });
    }
    await machine.event(tx, 'step_completed', exec, step.id, {
      seq: row.seq,
      duration_ms: row.duration_ms,
    });
    const view = await machine.enterStep(tx, exec, workflow, next);
    await tx.updateExecution(exec);
    return view === 'command'
      ? { v: 1, kind: 'pending', execution_id: exec.execution_id, done_step: step.id }
      : this.outcome(exec, view, 'advanced', [], step.id);
  }

  // ------------------------------------------------------------------------------------------
  // Approvals: a step output a person must clear

  private now(): number {
    return this.deps.clock?.() ?? Date.now();
  }

  /** Holds the accepted output for a person's decision; the agent's next token only polls. */
  private async requestApproval(
    tx: StoreWriter,
    exec: ExecutionRecord,
    workflow: Workflow,
    step: PromptStep,
    row: StepRecord,
    output: StepOutput,
    verified: CheckResult | undefined,
  ): Promise<Outcome> {
    const { machine } = this;
    const gate = step.approval as NonNullable<PromptStep['approval']>;
    const requested = this.now();
    machine.mintToken(exec, step.id);
    const record: ApprovalRecord = {
      approval_id: `appr_${randomBytes(9).toString('hex')}`,
      execution_id: exec.execution_id,
      principal: exec.principal,
      workflow_name: workflow.id,
      step_name: step.id,
      seq: row.seq,
      prompt: gate.prompt,
      approvers: gate.approvers ?? null,
      status: 'pending',
      requested_at: new Date(requested).toISOString(),
      expires_at:
        gate.timeout === undefined ? null : new Date(requested + durationMs(gate.timeout, 0)).toISOString(),
      output,
      poll_nonce: exec.token_nonce as string,
      decided_by: null,
      decided_via: null,
      decided_at: null,
      reason: null,
    };
    await tx.insertApproval(record);
    exec.metadata = { ...exec.metadata, awaiting_approval: record.approval_id };
    exec.updated_at = nowIso();
    await tx.updateExecution(exec);
    await machine.event(tx, 'approval_requested', exec, step.id, {
      seq: row.seq,
      approval_id: record.approval_id,
      prompt: record.prompt,
      approvers: record.approvers,
      expires_at: record.expires_at,
    });
    return { ...this.awaitingOutcome(exec, record, verified), requested: true };
  }

  private awaitingOutcome(
    exec: ExecutionRecord,
    record: ApprovalRecord,
    verified?: CheckResult,
  ): Extract<Outcome, { kind: 'awaiting_approval' }> {
    return {
      v: 1,
      kind: 'awaiting_approval',
      origin: 'advanced',
      execution_id: exec.execution_id,
      workflow_id: exec.workflow_name,
      state: exec.state,
      step_name: record.step_name,
      approval: approvalView(record),
      token: this.machine.liveToken(exec),
      ...(verified !== undefined ? { check: verified } : {}),
    };
  }

  /** The approval the execution's current step waits on, if any. */
  private async pendingApproval(tx: StoreWriter, exec: ExecutionRecord): Promise<ApprovalRecord | undefined> {
    const id = exec.metadata.awaiting_approval;
    if (typeof id !== 'string') return undefined;
    const record = await tx.getApproval(id);
    return record?.status === 'pending' ? record : undefined;
  }

  /** A pending approval past its timeout is rejected now (by `timeout`); the outcome of that, if so. */
  private async expireIfDue(
    tx: StoreWriter,
    exec: ExecutionRecord,
    record: ApprovalRecord,
  ): Promise<Outcome | undefined> {
    if (record.expires_at === null || Date.parse(record.expires_at) > this.now()) return undefined;
    return this.applyDecision(tx, exec, record, 'reject', {
      decider: { principal: null, name: 'timeout', via: 'timeout' },
      reason: `no decision by ${record.expires_at}`,
    });
  }

  /**
   * Records a decision and moves the execution: approved, the held output completes the step; rejected
   * (or timed out), the step stays current with a fresh token and the reason. The outcome is recorded
   * as the answer to the poll token, so the agent's next poll gets it.
   */
  private async applyDecision(
    tx: StoreWriter,
    exec: ExecutionRecord,
    record: ApprovalRecord,
    decision: 'approve' | 'reject',
    how: { decider: Decider; reason: string | undefined },
  ): Promise<Outcome> {
    const { machine } = this;
    const decidedAt = new Date(this.now()).toISOString();
    record.status = decision === 'approve' ? 'approved' : 'rejected';
    record.decided_by = how.decider.name;
    record.decided_via = how.decider.via;
    record.decided_at = decidedAt;
    record.reason = how.reason ?? null;
    await tx.updateApproval(record);
    const { awaiting_approval: _done, ...metadata } = exec.metadata;
    exec.metadata = metadata;
    await machine.event(tx, 'approval_decided', exec, record.step_name, {
      seq: record.seq,
      approval_id: record.approval_id,
      decision: record.status,
      decided_by: record.decided_by,
      decided_via: record.decided_via,
      decided_at: decidedAt,
      // What was decided on: the held output, by digest (never its text).
      output_sha256: outputDigest(record.output),
      ...(record.reason !== null ? { reason: record.reason } : {}),
    });
    const workflow = await machine.definition(exec, tx);
    const step = findPromptStep(workflow, record.step_name);
    const row = await tx.getStep(exec.execution_id, record.seq);
    if (!step || !row) {
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: 'the approved step record is missing',
      });
    }
    const output = record.output as StepOutput;
    let outcome: Outcome | undefined;
    let refusal: { validation: ValidationResult; named: string[] } | undefined;
    if (decision === 'approve') {
      const context: Context = { ...exec.context, ...(output.context ?? {}) };
      const walked = this.walkAfter(workflow, exec, step, output, context);
      if ('next' in walked) outcome = await this.complete(tx, exec, workflow, step, row, output, walked.next);
      else refusal = walked;
    }
    if (outcome === undefined) {
      const who =
        how.decider.via === 'timeout' ? 'nobody decided in time' : `${record.decided_by} rejected it`;
      const validation = refusal?.validation ?? {
        valid: false,
        issues: [`APPROVAL_REJECTED: ${who}${record.reason ? `: ${record.reason}` : ''}`],
        suggestions: [
          'Revise the work as the reason says, then send the step again; it needs a new approval.',
        ],
      };
      outcome = await this.reject(tx, exec, workflow, step, row, {
        reason: decision === 'approve' ? 'validation' : 'approval',
        validation,
        named: refusal?.named ?? [],
        at: nowIso(),
        extra: { approval: approvalView(record) },
      });
    }
    await tx.recordSubmission({
      nonce: record.poll_nonce,
      execution_id: exec.execution_id,
      output_hash: DECIDED,
      response: outcome,
      created_at: decidedAt,
    });
    return outcome;
  }

  /**
   * A person's decision on the approval an execution waits on (the dashboard, the CLI, elicitation).
   * Refused when nothing is pending (decided already, or timed out: that is recorded first), and when
   * the decider may not decide it: only the step's approvers, or without approvers the execution's
   * owner; the operator on the host may decide any.
   */
  async decide(
    executionId: string,
    decision: 'approve' | 'reject',
    decider: Decider,
    reason: string | undefined,
    on: DecisionTarget,
  ): Promise<{ approval: ApprovalView; state: string }> {
    return inSpan(
      'approval decision',
      {
        [ATTR.execution]: executionId,
        [ATTR.principal]: decider.principal ?? undefined,
        'workflowlookup.approval.decision': decision,
        'workflowlookup.approval.decided_via': decider.via,
      },
      async (span) => {
        const decided = await this.decideUntraced(executionId, decision, decider, reason, on);
        // After the commit; who decided is a principal (enduser.id), the reason free text kept out.
        span?.addEvent('approval decided', {
          [ATTR.approval]: decided.approval.approval_id,
          [ATTR.execution]: executionId,
          'workflowlookup.approval.status': decided.approval.status,
          ...(decided.approval.decided_via !== undefined
            ? { 'workflowlookup.approval.decided_via': decided.approval.decided_via }
            : {}),
        });
        return decided;
      },
    );
  }

  private async decideUntraced(
    executionId: string,
    decision: 'approve' | 'reject',
    decider: Decider,
    reason: string | undefined,
    on: DecisionTarget,
  ): Promise<{ approval: ApprovalView; state: string }> {
    await this.ready();
    const team = this.team();
    return this.deps.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      const record = exec && (await this.pendingApproval(tx, exec));
      // Another principal's execution is not this one's to see, unless it decides the pending step.
      const operator = decider.operator === true;
      const concerned =
        operator ||
        (exec !== undefined && exec.principal === decider.principal) ||
        (record !== undefined && mayDecide(record, decider.principal, team));
      if (!exec || !concerned)
        fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
      if (record === undefined) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `execution ${executionId} has no approval pending (decided already, or none asked)`,
          stale: { approval_id: null },
        });
      }
      if (!operator && !mayDecide(record, decider.principal, team)) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `only ${deciders(record, team).join(', ')} may decide this approval (the step names its approvers, and the server's operator lets them decide)`,
        });
      }
      // A decision lands only on what the person was shown: a stale form, a replayed request or a CLI
      // command typed before the agent sent another output must not approve an output nobody saw.
      if (record.approval_id !== on.approval_id) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `approval ${on.approval_id} no longer waits: the agent sent another output since, which waits as ${record.approval_id}; look at that output, then decide on it`,
          stale: { approval_id: record.approval_id },
        });
      }
      if (on.output_sha256 !== undefined && on.output_sha256 !== outputDigest(record.output)) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId,
          state: exec.state,
          details: `the output of approval ${record.approval_id} is not the one shown (its digest differs); look at it again, then decide`,
          stale: { approval_id: record.approval_id },
        });
      }
      if ((await this.expireIfDue(tx, exec, record)) !== undefined) {
        return { approval: approvalView(record), state: exec.state };
      }
      await this.applyDecision(tx, exec, record, decision, { decider, reason });
      return { approval: approvalView(record), state: exec.state };
    });
  }

  /** Who decides an approval (approvers.ts): the pages say whom a pending approval waits for. */
  decidersOf(record: ApprovalRecord): string[] {
    return deciders(record, this.team());
  }

  /** The principals the operator lets decide others' approvals. */
  private team(): ReadonlySet<string> {
    return this.deps.approvers ?? NOBODY;
  }

  /**
   * Pending approvals, oldest first: every one (the operator), or those a principal may decide. Any
   * past its timeout is rejected on the way (by `timeout`) and left out.
   */
  async pendingApprovals(principal: string | null, limit = 200): Promise<ApprovalRecord[]> {
    await this.ready();
    const { store } = this.deps;
    const pending = await store.listApprovals({
      status: 'pending',
      ...(principal !== null ? { principal } : {}),
      limit,
    });
    const now = this.now();
    const team = this.team();
    const out: ApprovalRecord[] = [];
    for (const record of pending) {
      if (principal !== null && !mayDecide(record, principal, team) && record.principal !== principal)
        continue;
      if (record.expires_at !== null && Date.parse(record.expires_at) <= now) {
        await store
          .transaction(async (tx) => {
            const exec = await tx.getExecution(record.execution_id);
            const still = exec && (await this.pendingApproval(tx, exec));
            if (exec && still) await this.expireIfDue(tx, exec, still);
          })
          .catch(() => undefined);
        continue;
      }
      out.push(record);
    }
    return out;
  }

  /** One approval by id, whoever's it is: for the operator on the host (the CLI). */
  async approvalById(approvalId: string): Promise<ApprovalRecord | undefined> {
    return this.deps.store.getApproval(approvalId);
  }

  /** Every approval of an execution (its history), oldest first; undefined unless `principal` may see it. */
  async approvalsOf(executionId: string, principal: string | null): Promise<ApprovalRecord[] | undefined> {
    const { store } = this.deps;
    const exec = await store.getExecution(executionId);
    if (exec === undefined) return undefined;
    const all = await store.listApprovals({ execution_id: executionId, limit: 1000 });
    const team = this.team();
    if (principal !== null && exec.principal !== principal && !all.some((a) => mayDecide(a, principal, team)))
      return undefined;
    return all;
  }

  /**
   * After the output went to approval: where the client's user can be asked (elicitation), ask; a
   * decision is then answered as the poll would answer it. No answer leaves it pending.
   */
  private async askPerson(advanced: Outcome, output: StepOutput, caller: Caller): Promise<Outcome> {
    // Asked once, by the submission that asked for the approval (or its retry); polls only look.
    if (advanced.kind !== 'awaiting_approval' || caller.askApproval === undefined) return advanced;
    if (advanced.requested !== true) return advanced;
    if (advanced.approval.status !== 'pending' || advanced.token === null) return advanced;
    // The client's user is the owner: asked only when the owner decides this step (not its approvers).
    const record = await this.deps.store.getApproval(advanced.approval.approval_id);
    if (record === undefined || !mayDecide(record, caller.principal, this.team())) return advanced;
    // A person answers in their own time: later requests need not wait for them.
    caller.onNetworkWait?.();
    // The asker never fails: no answer is undefined. It may end the call instead, for the client to
    // ask its user and send the same call again with the answer (2026-07-28): the retry replays this.
    const answer = await caller.askApproval({
      execution_id: advanced.execution_id,
      workflow_id: advanced.workflow_id,
      step_name: advanced.step_name,
      prompt: advanced.approval.prompt,
      summary: output.summary,
    });
    if (answer === undefined) return advanced;
    try {
      await this.decide(
        advanced.execution_id,
        answer.decision,
        { principal: caller.principal, name: `${caller.principal} (client user)`, via: 'elicitation' },
        answer.reason,
        // What the form showed: this approval and its output.
        { approval_id: record.approval_id, output_sha256: outputDigest(record.output) },
      );
    } catch (error) {
      // Decided meanwhile (the dashboard, a timeout), or this principal may not decide: the poll tells.
      if (!(error instanceof DomainFailure)) throw error;
    }
    return this.nextStep(advanced.token, { summary: 'polling the approval' }, caller);
  }

  // ------------------------------------------------------------------------------------------
  // workflow_set_state

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
          executionId,
          state: from,
          allowed: ['abandoned'],
          details: `${pausePhrase(pause)}: it stays paused until they resume it. Tell the user, then wait; workflow_resume shows when it runs again. Only if the user tells you to go on now, send workflow_set_state again with "override_pause": true`,
          pausedBy: pause,
        });
      }
      const by = how.by ?? caller.principal;
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
        const waiting = await this.pendingApproval(tx, exec);
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
        let waiting = await this.pendingApproval(tx, exec);
        if (waiting !== undefined && (await this.expireIfDue(tx, exec, waiting)) !== undefined) {
          waiting = undefined;
        }
        if (exec.token_expires_at !== null && Date.parse(exec.token_expires_at) <= Date.now()) {
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
      return {
        ...base,
        on_command: false,
        ...(view ? { view } : {}),
        ...(approval ? { approval } : {}),
        ...(pause ? { paused: pause } : {}),
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

/** A check's verdict added to the step's validation: a failure is one more issue, with the output tail. */
function withCheck(validation: ValidationResult, result: CheckResult): ValidationResult {
  if (result.passed) return validation;
  const how = result.error
    ? result.error
    : result.timed_out
      ? `timed out after ${result.duration_ms} ms and was stopped`
      : `exited with ${result.exit_code ?? `signal ${result.signal ?? 'unknown'}`}`;
  return {
    valid: false,
    issues: [...validation.issues, `CHECK_FAILED: check "${result.check}" ${how}`],
    suggestions: [
      ...validation.suggestions,
      `Fix what the check's output (check.tail) shows, then send the step again: the server runs "${result.check}" again.`,
    ],
  };
}

/** Every prompt step of a workflow, loop bodies included. */
function promptSteps(workflow: Workflow): PromptStep[] {
  return [...allStepIds(workflow)].flatMap((id) => findPromptStep(workflow, id) ?? []);
}
