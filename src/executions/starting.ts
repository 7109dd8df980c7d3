// workflow_start: a new execution (its definition pinned, its first step entered) or, for an id that
// exists, that execution as it is.
import { randomBytes } from 'node:crypto';
import { InputChecker } from '../catalogs/input-check.js';
import { requiredCatalogs } from '../catalogs/requirements.js';
import type { Context } from '../engine/conditions.js';
import { checkContextValues, refuseContext } from '../engine/context-needs.js';
import { fail } from '../engine/errors.js';
import type { Workflow } from '../model/workflow.js';
import type { ExecutionRecord, StoreWriter } from '../store/execution-store.js';
import type { GitProvenance } from '../workflows/sources.js';
import type { CommandPhase } from './command-phase.js';
import type { ServiceParts, StartInput } from './execution-deps.js';
import { type Caller, nowIso, type Outcome, type StepView } from './execution-model.js';
import { digest } from './record-model.js';
import type { StateChanges } from './state-changes.js';
import { promptSteps, type StepOutcomes } from './step-outcomes.js';

export class Starting {
  constructor(
    private readonly parts: ServiceParts,
    private readonly outcomes: StepOutcomes,
    private readonly states: StateChanges,
    private readonly commandPhase: CommandPhase,
  ) {}

  private get deps() {
    return this.parts.deps;
  }

  private get machine() {
    return this.parts.machine;
  }

  async start(input: StartInput, caller: Caller): Promise<Outcome> {
    const { store, registry, engine } = this.deps;
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
      const { exec, view } = await this.create(tx, {
        executionId,
        principal: caller.principal,
        entry,
        context,
      });
      if (view === 'command') return 'command';
      return this.outcomes.answer(tx, exec, view, 'started', []);
    });
    if (started !== 'command') return started;
    const { runs } = await this.commandPhase.run(executionId, caller);
    return this.outcomes.afterCommands(executionId, runs, 'started');
  }

  /**
   * Creates an execution and enters its first step, in `tx`: a start, or a child a delegating step
   * creates (with its parent and link). The definition is pinned by its hash; the execution is saved.
   */
  async create(
    tx: StoreWriter,
    spec: {
      executionId: string;
      principal: string;
      entry: {
        workflow: Workflow;
        hash: string;
        definitionHash?: string | undefined;
        /** A git source's repository, ref and commit: recorded, so a force-push never rewrites it. */
        provenance?: GitProvenance | undefined;
      };
      context: Context;
      parentId?: string;
      metadata?: Record<string, unknown>;
    },
  ): Promise<{ exec: ExecutionRecord; view: StepView | undefined | 'command' }> {
    const { workflow } = spec.entry;
    const at = nowIso();
    // The file's hash, or the expanded definition's when routines were expanded into it.
    const pin = spec.entry.definitionHash ?? spec.entry.hash;
    await tx.pinDefinition(pin, workflow.id, JSON.stringify(workflow));
    this.machine.remember(pin, workflow);
    const exec: ExecutionRecord = {
      execution_id: spec.executionId,
      principal: spec.principal,
      workflow_name: workflow.id,
      definition_hash: pin,
      state: 'idle',
      current_step: null,
      current_seq: 0,
      completed_steps: [],
      context: spec.context,
      token_nonce: null,
      token_attempt: 0,
      token_issued_at: null,
      token_expires_at: null,
      started_at: at,
      updated_at: at,
      completed_at: null,
      duration_ms: null,
      metadata: {
        ...(spec.metadata ?? {}),
        ...(spec.entry.provenance !== undefined ? { source: { ...spec.entry.provenance } } : {}),
      },
      parent_id: spec.parentId ?? null,
    };
    await tx.insertExecution(exec);
    await this.machine.event(tx, 'workflow_created', exec, null, {
      workflow_name: workflow.id,
      workflow_version: workflow.version,
      definition_hash: pin,
      // What a verifier holding the workflow's file compares (the pin differs when routines were expanded).
      file_sha256: spec.entry.hash,
      inputs_sha256: digest(spec.context),
      ...(spec.entry.provenance !== undefined ? { source: { ...spec.entry.provenance } } : {}),
      ...(spec.parentId !== undefined ? { parent_id: spec.parentId } : {}),
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
    return { exec, view };
  }

  /** Catalogs the workflow requires, and those its command steps name, must be installed and enabled. */
  checkRequirements(workflow: Workflow): void {
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
    const current = await this.states.current(exec.execution_id, caller, tx);
    const paused = current.paused ? { paused: current.paused } : {};
    if (current.view && current.delegation && current.state === 'running') {
      return {
        v: 1,
        kind: 'delegated',
        origin: 'existing',
        execution_id: exec.execution_id,
        workflow_id: exec.workflow_name,
        state: current.state,
        step_name: current.view.step_name,
        view: current.view,
        delegation: current.delegation,
        token: current.token,
        commands: [],
      };
    }
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
}
