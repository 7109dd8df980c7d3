import type { Context } from '../engine/conditions.js';
import { type ContextField, contextFields } from '../engine/context-needs.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { type InputResolution, resolveInputs } from '../engine/inputs.js';
import { type ExecutionState, isTerminal, TERMINAL_STATES } from '../engine/state-machine.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type {
  Caller,
  CommandRun,
  CommandWait,
  CurrentState,
  StepView,
} from '../executions/execution-model.js';
import type { ExecutionService } from '../executions/execution-service.js';
import type { Workflow } from '../model/workflow.js';
import type { ExecutionStore, PurgeCounts } from '../store/execution-store.js';
import type { Logger } from '../telemetry/log.js';
import { contentVersion } from '../workflows/entry.js';
import { checkManifest } from '../workflows/manifest-check.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import { newRunId, type RunSnapshot, type RunState, type TaskHandle } from './run-model.js';
import { InputFailed, type TaskService } from './task-service.js';

/** How often a run waiting on something (an agent, another worker, a paused execution) re-reads it. */
const WATCH_MS = 500;
/** A command step held by another worker is looked at again after this long at most. */
const BUSY_RECHECK_MS = 5000;

/** The finished states (the state machine's list, kept under the name the run tools know). */
export const TERMINAL_EXECUTION_STATES = TERMINAL_STATES;

/** An agent step a run waits on, for its status to word. */
export interface AgentStepWait {
  /** The step's title. */
  title: string;
  /** Why the last answer was refused, when it was. */
  issues: string[] | undefined;
  /** The client answers through the task's input requests (it declared elicitation). */
  elicitation: boolean;
  /** The continuation token that submits the step. */
  token: string;
  view: StepView;
}

/** How a run's status names the calls an agent makes: the runs face's wording (faces/runs/run-presenter.ts). */
export interface RunWording {
  /** While a run waits on an agent step: the summary, and the call that submits the step. */
  waitingForAgent(step: AgentStepWait): { summary: string; next: NonNullable<RunSnapshot['next']> };
}

export interface RunDeps {
  executions: ExecutionService;
  store: ExecutionStore;
  tasks: TaskService;
  registry: WorkflowRegistry;
  engine: ValidationEngine;
  allowedEnv: Record<string, string>;
  allowedEnvNames: ReadonlySet<string>;
  /** The face's wording of what an agent does next (a service never writes a tool call). */
  wording: RunWording;
  log?: Logger;
}

/** What to run: a served workflow or an inline manifest, with input values and context. */
export interface RunRequest {
  workflow_id?: string | undefined;
  manifest?: string | undefined;
  inputs?: Record<string, unknown> | undefined;
  context?: Context | undefined;
}

export interface PreparedRun {
  run_id: string;
  workflow: Workflow;
  /** Set for an inline manifest (the execution pins it like any other definition). */
  definition?: { workflow: Workflow; hash: string } | undefined;
  inputs: Record<string, unknown>;
  context?: Context | undefined;
  /** The inputs as the run would see them now (missing ones can still be asked for). */
  resolution: { ready: boolean; inputs: InputResolution[] };
}

export interface RunStep {
  step_id: string;
  kind: 'agent' | 'command';
  status: string;
  attempts: number;
  duration_ms: number | null;
  /** A command step's response (`{status, output, polls}`), or an agent step's summary. */
  output?: unknown;
}

/** How a run ended (a failed or cancelled run is an error instead; see `drive`). */
export interface RunResult {
  run_id: string;
  workflow_id: string;
  state: RunState;
  execution_state: ExecutionState;
  summary: string;
  /** The workflow's final_output, rendered. */
  outputs: unknown;
  steps: RunStep[];
  /** Command steps this process called for the run (after a restart, not those the dead one called). */
  commands_run: number;
}

export interface CancelOutcome {
  operation_id: string;
  task_id: string | null;
  run_id: string | null;
  status: 'cancelled' | 'already_terminal';
  task_status: string | null;
  execution_state: ExecutionState | null;
}

const cancelled = (message: string, taskId?: string, runId?: string) =>
  new DomainFailure({
    code: 'task_cancelled',
    message,
    ...(taskId !== undefined ? { taskId } : {}),
    ...(runId !== undefined ? { runId } : {}),
  });

const isCancellation = (error: unknown) =>
  (error instanceof DomainFailure && error.error.code === 'task_cancelled') ||
  (error instanceof Error && error.name === 'AbortError');

/**
 * Runs (seed 003 `workflow.run`): a durable execution the server drives itself. Command steps run
 * as soon as the run reaches them; an agent step pauses the run (input_required) until the agent
 * answers, through the task's input request or by calling workflow_next_step with the token. The run
 * is the execution: cancelling one abandons the other, a failed run is a failed execution.
 */
export class RunService {
  constructor(private readonly deps: RunDeps) {}

  get executions(): ExecutionService {
    return this.deps.executions;
  }

  /** Checks a run request before any task exists (fail fast): the workflow or manifest, the inputs. */
  async prepare(
    request: RunRequest,
    options: { runId?: string | undefined; inputs: 'require' | 'report'; resumed?: boolean },
  ): Promise<PreparedRun> {
    const { registry, engine, store } = this.deps;
    // One after the other: the registry's first load stops the worker it started for checking files.
    await registry.ready();
    await engine.load();
    if (options.resumed && options.runId !== undefined) {
      // A run taken over after a restart goes on with what its execution pinned (the workflow may have
      // changed or gone since), and with the inputs it started with.
      const exec = await store.getExecution(options.runId);
      const pinned = exec ? await store.getDefinition(exec.definition_hash) : undefined;
      if (exec && pinned !== undefined) {
        const workflow = JSON.parse(pinned) as Workflow;
        return {
          run_id: exec.execution_id,
          workflow,
          definition: { workflow, hash: exec.definition_hash },
          inputs: (exec.context.inputs as Record<string, unknown> | undefined) ?? {},
          resolution: { ready: true, inputs: [] },
        };
      }
    }
    let workflow: Workflow;
    let definition: PreparedRun['definition'];
    if (request.manifest !== undefined) {
      const report = await checkManifest(
        { content: request.manifest },
        engine,
        undefined,
        this.deps.allowedEnvNames,
      );
      if (!report.valid || !report.workflow) {
        fail({
          code: 'manifest_invalid',
          message: `the manifest has ${report.errors.length} violation(s); nothing was run`,
          violations: report.errors,
        });
      }
      workflow = report.workflow;
      definition = { workflow, hash: contentVersion(request.manifest) };
    } else {
      workflow = registry.require(request.workflow_id ?? '').workflow;
    }
    const inputs = request.inputs ?? {};
    const resolution = this.resolve(workflow, inputs);
    if (!resolution.ready && options.inputs === 'require') {
      fail({
        code: 'inputs_not_ready',
        message: `inputs are not ready: ${resolution.inputs
          .filter((i) => i.message)
          .map((i) => i.message)
          .join('; ')}`,
        workflowId: workflow.id,
        inputs: resolution.inputs,
      });
    }
    return {
      run_id: options.runId ?? newRunId(),
      workflow,
      definition,
      inputs,
      ...(request.context !== undefined ? { context: request.context } : {}),
      resolution,
    };
  }

  resolve(workflow: Workflow, inputs: Record<string, unknown>) {
    return resolveInputs(workflow.inputs, inputs, {
      env: this.deps.allowedEnv,
      matches: (pattern, text) => this.deps.engine.matches(pattern, text),
    });
  }

  /**
   * Drives a run to its end: starts the execution (or picks up the existing one after a restart), runs
   * command steps, waits on agent steps, and reports a §10.4 snapshot at every change. Resolves when the
   * run succeeded; a failed run rejects with its error (the execution marked failed), a cancelled one
   * with `task_cancelled` (the execution abandoned).
   */
  async drive(p: PreparedRun, handle: TaskHandle, base: Caller, phase?: string): Promise<RunResult> {
    const ex = this.deps.executions;
    const runId = p.run_id;
    const titles = new Map(actionSteps(p.workflow).map((s) => [s.id, s.title]));
    let stepId: string | null = null;
    const snap = (state: RunState, summary: string, extra: Partial<RunSnapshot> = {}): RunSnapshot => ({
      run_id: runId,
      workflow_id: p.workflow.id,
      step_id: stepId,
      step_name: stepId !== null ? (titles.get(stepId) ?? stepId) : null,
      state,
      summary,
      ...(phase !== undefined ? { phase } : {}),
      ...extra,
    });
    const report = (s: RunSnapshot, awaitingInput = false) =>
      handle
        .report(s, { awaitingInput })
        .catch((error: unknown) => this.deps.log?.error(`run ${runId}: ${String(error)}`));
    const caller: Caller = {
      principal: base.principal,
      signal: handle.signal,
      onCommandStep: (id, command) => {
        stepId = id;
        void report(snap('running', `calling ${command}`));
      },
      onProgress: (message) => void report(snap('running', message)),
    };
    const commands: CommandRun[] = [];
    let issues: string[] | undefined;
    try {
      await report(snap(handle.resumed ? 'running' : 'pending', handle.resumed ? 'resumed' : 'starting'));
      const started = await ex.start(
        {
          workflow_id: p.workflow.id,
          execution_id: runId,
          inputs: p.inputs,
          context: p.context,
          definition: p.definition,
        },
        caller,
      );
      if ('commands' in started) commands.push(...started.commands);
      for (;;) {
        handle.signal.throwIfAborted();
        const cur = await ex.current(runId, caller);
        stepId = cur.current_step;
        if (isTerminal(cur.state)) return await this.finished(runId, caller, commands, titles);
        if (cur.state !== 'running') {
          await report(snap('pending', `the execution is ${cur.state}; resume it with workflow_set_state`));
          await this.moved(runId, handle.signal, Number.POSITIVE_INFINITY);
          continue;
        }
        if (cur.on_command) {
          await report(snap('running', `running command step ${cur.current_step}`));
          const resumed = await ex.resume(runId, caller);
          commands.push(...(resumed.commands ?? []));
          // Nothing ran: another worker holds the step's lease. Look again when it moves (or its lease may lapse).
          if ((resumed.commands ?? []).length === 0 && resumed.on_command && !isTerminal(resumed.state)) {
            await this.moved(runId, handle.signal, BUSY_RECHECK_MS);
          }
          continue;
        }
        if (cur.approval !== undefined) {
          // A person decides (dashboard, CLI); the run waits for the execution to move, as a poll would.
          await report(
            snap('pending', `step ${cur.current_step} waits for a person's approval: ${cur.approval.prompt}`),
          );
          await this.moved(runId, handle.signal, BUSY_RECHECK_MS);
          continue;
        }
        if (cur.view && cur.token) {
          issues = await this.agentStep(
            p.workflow,
            runId,
            cur,
            handle,
            caller,
            issues,
            commands,
            (summary, extra) => report(snap('running', summary, extra), true),
          );
          continue;
        }
        await this.moved(runId, handle.signal, BUSY_RECHECK_MS);
      }
    } catch (error) {
      throw await this.stopped(runId, handle, caller, error);
    }
  }

  /**
   * One agent step: the run is input_required with the step's guidance until the agent answers, either
   * through the task's elicitation (when the client declared it) or by submitting the step itself (the
   * call the status names). Returns the validation issues of a rejected answer (asked again, with them).
   */
  private async agentStep(
    workflow: Workflow,
    runId: string,
    cur: CurrentState,
    handle: TaskHandle,
    caller: Caller,
    issues: string[] | undefined,
    commands: CommandRun[],
    waiting: (summary: string, extra: Partial<RunSnapshot>) => Promise<void>,
  ): Promise<string[] | undefined> {
    const view = cur.view as NonNullable<CurrentState['view']>;
    const token = cur.token as string;
    const fields = contextFields(workflow, view.step_name);
    const before = await this.fingerprint(runId);
    const told = this.deps.wording.waitingForAgent({
      title: view.step.title,
      issues,
      elicitation: handle.can.elicitation,
      token,
      view,
    });
    await waiting(told.summary, {
      continuation_token: token,
      agent_content: view.agent_content,
      next: told.next,
    });
    const stop = new AbortController();
    const signal = AbortSignal.any([handle.signal, stop.signal]);
    const never = new Promise<never>(() => undefined);
    const moved = this.moved(runId, signal, Number.POSITIVE_INFINITY, before).then(() => ({
      kind: 'moved' as const,
    }));
    const asked = handle.can.elicitation
      ? handle
          .ask('step', stepRequest(view, issues, fields), signal)
          .then((answer) => ({ kind: 'answer' as const, answer }))
          // A client that cannot answer leaves the agent to submit the step itself.
          .catch((error: unknown) => (error instanceof InputFailed ? never : Promise.reject(error)))
      : never;
    let first: Awaited<typeof moved> | Awaited<typeof asked>;
    try {
      first = await Promise.race([moved, asked]);
    } finally {
      stop.abort();
      moved.catch(() => undefined);
      asked.catch(() => undefined);
    }
    if (first.kind === 'moved') return undefined;
    const { action, content } = first.answer as { action?: unknown; content?: Record<string, unknown> };
    if (action !== 'accept') {
      throw cancelled(
        `the user ${action === 'decline' ? 'declined' : 'cancelled'} step "${view.step_name}"`,
        handle.taskId,
        runId,
      );
    }
    const summary = typeof content?.summary === 'string' ? content.summary.trim() : '';
    if (summary === '') return ['the answer carried no summary'];
    try {
      const context = answeredContext(fields, content);
      const outcome = await this.deps.executions.nextStep(
        token,
        { summary, ...(context ? { context } : {}) },
        caller,
      );
      if (outcome.kind === 'rejected') return outcome.validation.issues;
      if ('commands' in outcome) commands.push(...outcome.commands);
      return undefined;
    } catch (error) {
      // The agent (or another process) advanced the step meanwhile: go on from where it is now.
      if (error instanceof DomainFailure && error.error.code === 'state_conflict') return undefined;
      throw error;
    }
  }

  /** The result of a finished execution; failed and abandoned ones become their error. */
  private async finished(
    runId: string,
    caller: Caller,
    commands: CommandRun[],
    titles: Map<string, string>,
  ): Promise<RunResult> {
    const ex = this.deps.executions;
    const exec = await this.deps.store.getExecution(runId);
    // Purged meanwhile (workflow_purge_history removes finished executions).
    if (!exec) fail({ code: 'execution_not_found', message: 'Execution not found', executionId: runId });
    const history = await ex.queries.history(runId, caller);
    if (exec.state === 'abandoned') {
      throw cancelled(
        String(exec.metadata.abandoned_reason ?? 'the execution was abandoned'),
        undefined,
        runId,
      );
    }
    if (exec.state !== 'completed') {
      const wait = [...history]
        .reverse()
        .map((h) => (h.output as { error?: CommandWait } | null)?.error)
        .find((e) => e !== undefined);
      const reason = String(exec.metadata[`${exec.state}_reason`] ?? wait?.message ?? exec.state);
      if (wait) {
        fail({
          code: 'command_failed',
          message: wait.message,
          reason: wait.reason,
          stepId: wait.step_id,
          command: wait.command,
          executionId: runId,
          ...(wait.status !== undefined ? { status: wait.status } : {}),
          retryable: false,
        });
      }
      fail({
        code: 'state_conflict',
        message: `run ${runId} ended ${exec.state}: ${reason}`,
        executionId: runId,
        state: exec.state,
        details: `the execution ended ${exec.state}: ${reason}`,
      });
    }
    const steps: RunStep[] = history.map((h) => {
      const command = h.agent_name === 'server';
      const output = h.output as { summary?: unknown } | null;
      return {
        step_id: h.step_name,
        kind: command ? 'command' : 'agent',
        status: h.status,
        attempts: h.attempts,
        duration_ms: h.duration_ms,
        ...(command ? { output: h.output } : output?.summary !== undefined ? { output: output.summary } : {}),
      };
    });
    const ran = steps.filter((s) => s.kind === 'command').length;
    return {
      run_id: runId,
      workflow_id: exec.workflow_name,
      state: 'succeeded',
      execution_state: exec.state,
      summary: `workflow ${exec.workflow_name} completed: ${steps.length} step(s), ${ran} run by the server${
        steps.length > 0 ? ` (last: ${titles.get(steps[steps.length - 1]?.step_id ?? '') ?? ''})` : ''
      }`,
      outputs: exec.metadata.final_output ?? null,
      steps,
      commands_run: commands.length,
    };
  }

  /** Turns whatever stopped a run into its error, leaving the execution in the matching final state. */
  private async stopped(runId: string, handle: TaskHandle, caller: Caller, error: unknown): Promise<unknown> {
    if (handle.signal.aborted || isCancellation(error)) {
      const reason = handle.signal.aborted
        ? ((handle.signal.reason as Error | undefined)?.message ?? 'cancelled')
        : (error as Error).message;
      await this.abandon(runId, { principal: caller.principal }, reason, handle.taskId).catch(
        () => undefined,
      );
      return cancelled(reason, handle.taskId, runId);
    }
    if (error instanceof DomainFailure && error.error.code === 'command_failed') {
      // A run has no one to resume it later: a step the API refused for good fails the run and its execution.
      await this.failExecution(runId, caller, error.message);
      return new DomainFailure({ ...error.error, executionId: runId, retryable: false });
    }
    if (!(error instanceof DomainFailure)) {
      await this.failExecution(runId, caller, `internal error: ${(error as Error).message}`);
    }
    return error;
  }

  private async failExecution(runId: string, caller: Caller, reason: string): Promise<void> {
    try {
      await this.deps.executions.markFailed(runId, reason, { principal: caller.principal });
    } catch {
      // already finished, or never started
    }
  }

  /** Abandons a run's execution (if it is still going) and records why; false when it was not going. */
  async abandon(runId: string, caller: Caller, reason: string, taskId?: string): Promise<boolean> {
    try {
      await this.deps.executions.setState(runId, 'abandoned', reason, caller);
    } catch (error) {
      if (error instanceof DomainFailure) return false;
      throw error;
    }
    await this.deps.store.transaction((tx) =>
      tx.insertTelemetry({
        event_type: 'run_cancelled',
        execution_id: runId,
        step_name: null,
        agent_name: null,
        metadata: { reason, ...(taskId !== undefined ? { task_id: taskId } : {}) },
      }),
    );
    return true;
  }

  /**
   * workflow_cancel and tasks/cancel: the task (by task id, or the one driving a run id) is cancelled,
   * its work aborted (an HTTP call in flight included), and the execution abandoned, with telemetry.
   */
  async cancel(operationId: string, caller: Caller, reason: string): Promise<CancelOutcome> {
    const { tasks, store } = this.deps;
    let task = await tasks.get(operationId, caller.principal).catch(() => undefined);
    let runId = task?.run_id ?? null;
    if (!task) {
      const exec = await store.getExecution(operationId);
      if (!exec || exec.principal !== caller.principal) {
        fail({
          code: 'task_not_found',
          message: `no task or run "${operationId}"`,
          taskId: operationId,
        });
      }
      runId = operationId;
      task = await tasks.forRun(operationId, caller.principal);
    }
    let status: CancelOutcome['status'] = 'cancelled';
    if (task) {
      const outcome = await tasks.cancel(task.task_id, caller.principal, reason);
      task = outcome.record;
      if (outcome.wasTerminal) status = 'already_terminal';
    }
    if (runId !== null) {
      const abandoned = await this.abandon(runId, caller, reason, task?.task_id);
      if (!abandoned && !task) status = 'already_terminal';
    }
    const exec = runId !== null ? await store.getExecution(runId) : undefined;
    return {
      operation_id: operationId,
      task_id: task?.task_id ?? null,
      run_id: runId,
      status,
      task_status: task?.status ?? null,
      execution_state: exec?.state ?? null,
    };
  }

  /**
   * Removes finished history (executions that ended, with their steps, artifacts, telemetry and tasks)
   * of the caller; running and paused executions are never touched.
   */
  async purge(
    filter: { workflow_id?: string | undefined; older_than?: string | undefined; state?: string | undefined },
    caller: Caller,
    dryRun: boolean,
  ): Promise<PurgeCounts> {
    const states =
      filter.state === undefined ? [...TERMINAL_EXECUTION_STATES] : [terminalState(filter.state)];
    const before = filter.older_than === undefined ? undefined : cutoff(filter.older_than);
    return this.deps.store.transaction((tx) =>
      tx.purgeHistory({
        principal: caller.principal,
        states,
        dry_run: dryRun,
        ...(filter.workflow_id !== undefined ? { workflow_name: filter.workflow_id } : {}),
        ...(before !== undefined ? { finished_before: before } : {}),
      }),
    );
  }

  /** Waits until the execution changes (state, step, token), at most `maxMs`. */
  private async moved(runId: string, signal: AbortSignal, maxMs: number, before?: string): Promise<void> {
    const start = before ?? (await this.fingerprint(runId));
    const deadline = Date.now() + maxMs;
    for (;;) {
      await sleep(WATCH_MS, signal);
      if (Date.now() >= deadline || (await this.fingerprint(runId)) !== start) return;
    }
  }

  private async fingerprint(runId: string): Promise<string> {
    const e = await this.deps.store.getExecution(runId);
    return e ? `${e.state}|${e.current_seq}|${e.token_nonce}|${e.token_attempt}` : 'gone';
  }
}

/** The elicitation that asks for an agent step's output, and the context variables it must set. */
function stepRequest(
  view: NonNullable<CurrentState['view']>,
  issues: string[] | undefined,
  fields: readonly ContextField[],
) {
  const message = [
    issues ? `Your last answer did not pass validation: ${issues.join('; ')}.` : '',
    view.agent_content,
    "Answer with what the step produced: its summary is checked against the step's validation criteria.",
  ]
    .filter(Boolean)
    .join('\n\n');
  return {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message,
      requestedSchema: {
        type: 'object',
        properties: {
          summary: {
            type: 'string',
            title: 'Step output',
            description: `What step "${view.step.title}" produced`,
          },
          ...Object.fromEntries(fields.map((f) => [f.path, f.schema])),
        },
        required: ['summary'],
      },
    },
  };
}

/** The context values a form answer carries, lists split back into arrays. */
function answeredContext(
  fields: readonly ContextField[],
  content: Record<string, unknown> | undefined,
): Context | undefined {
  const context: Context = {};
  for (const f of fields) {
    const value = content?.[f.path];
    if (value === undefined) continue;
    const given =
      f.list && typeof value === 'string'
        ? value
            .split(/[\n,]/)
            .map((s) => s.trim())
            .filter((s) => s.length > 0)
        : value;
    const keys = f.path.split('.');
    let at = context;
    for (const key of keys.slice(0, -1)) {
      at[key] ??= {};
      at = at[key] as Context;
    }
    at[keys.at(-1) as string] = given;
  }
  return Object.keys(context).length > 0 ? context : undefined;
}

function actionSteps(workflow: Workflow) {
  return workflow.steps.flatMap((s) => ('body' in s && Array.isArray(s.body) ? [s, ...s.body] : [s])) as {
    id: string;
    title: string;
  }[];
}

/** Purge states in seed words or execution states; only finished ones. */
function terminalState(state: string): ExecutionState {
  const mapped =
    state === 'succeeded' ? 'completed' : state === 'canceled' || state === 'cancelled' ? 'abandoned' : state;
  if (!(TERMINAL_EXECUTION_STATES as readonly string[]).includes(mapped)) {
    fail({
      code: 'invalid_params',
      message: 'Invalid params',
      details: `state must be a finished state (${TERMINAL_EXECUTION_STATES.join(', ')}, or succeeded/canceled); running executions are never purged`,
    });
  }
  return mapped as ExecutionState;
}

/** `older_than`: a duration ("30d", "12h", "15m", "90s", "2w") back from now, or an ISO 8601 time. */
export function cutoff(olderThan: string, now = Date.now()): string {
  const m = /^(\d{1,9})(s|m|h|d|w)$/.exec(olderThan.trim());
  if (m) {
    const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] as 's'];
    return new Date(now - Number(m[1]) * unit).toISOString();
  }
  const at = /^\d{4}-\d{2}-\d{2}/.test(olderThan) ? Date.parse(olderThan) : Number.NaN;
  if (Number.isNaN(at)) {
    fail({
      code: 'invalid_params',
      message: 'Invalid params',
      details: 'older_than must be a duration such as "30d", "12h", "15m" or an ISO 8601 date',
    });
  }
  return new Date(at).toISOString();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    const aborted = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', aborted, { once: true });
  });
}
