import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { CatalogRegistry } from '../catalogs/catalog-registry.js';
import type { CommandStepRunner, StepRun } from '../catalogs/command-steps.js';
import type { HttpCall } from '../catalogs/http-runner.js';
import { asRecord, type Context } from '../engine/conditions.js';
import { type DomainError, DomainFailure, fail } from '../engine/errors.js';
import { findActionStep, type nextStep } from '../engine/next-step.js';
import { terminalSafe } from '../engine/terminal-text.js';
import { type CommandStep, isCommandStep } from '../model/workflow.js';
import type { ExecutionRecord, StoreWriter } from '../store/execution-store.js';
import type { Caller, CommandRun, CommandWait } from './execution-model.js';
import { nowIso } from './execution-model.js';
import type { StepMachine } from './execution-steps.js';

/**
 * A lease lasts this long and is renewed at a third of it while the call runs, so a worker that died
 * on another host is replaced within one lease; one on this host is replaced at once (its pid is gone).
 */
const LEASE_MS = 30_000;
const RENEW_MS = LEASE_MS / 3;

/**
 * Failures a later attempt may get past once the cause is fixed (a credential set, a catalog imported,
 * an API back up): the execution waits on the step, and `workflow_resume` tries it again.
 */
const WAITING_REASONS = new Set([
  'missing_credential',
  'unknown_command',
  'network',
  'timeout',
  'host',
  'repeat_exhausted',
  'cancelled',
]);

function waits(error: Extract<DomainError, { code: 'command_failed' }>): boolean {
  if (error.reason === 'http_status')
    return error.status === undefined || error.status >= 500 || error.status === 429;
  return WAITING_REASONS.has(error.reason);
}

export interface CommandPhaseResult {
  runs: CommandRun[];
  /** Another worker holds the current command step's lease. */
  busy: boolean;
}

/**
 * Runs the command steps an execution is on, one after another, until an agent step or the end. Each
 * step is claimed with a lease, so of several processes (or replicas) resuming one execution only one
 * calls the API; a worker that dies holding a lease loses it when it expires. The Idempotency-Key is
 * derived from the execution, the step's sequence number and its id, so every attempt at one logical
 * call, on any process, sends the same key.
 */
export class CommandPhase {
  readonly owner = leaseOwner();

  constructor(
    private readonly machine: StepMachine,
    private readonly commands:
      | { runner: Pick<CommandStepRunner, 'run'>; catalogs: Pick<CatalogRegistry, 'get' | 'ready'> }
      | undefined,
  ) {}

  async run(executionId: string, caller: Caller): Promise<CommandPhaseResult> {
    const runs: CommandRun[] = [];
    for (;;) {
      const claim = await this.claim(executionId);
      if (claim === 'busy') return { runs, busy: true };
      if (claim === undefined) return { runs, busy: false };
      const { step, seq, scope } = claim;
      const calls: (HttpCall & { poll: number })[] = [];
      let result: StepRun;
      try {
        if (!this.commands) {
          fail({
            code: 'command_failed',
            message: `step "${step.id}" (${step.run}): no catalogs are configured`,
            reason: 'unknown_command',
            stepId: step.id,
            command: step.run,
            executionId,
            retryable: true,
          });
        }
        caller.onCommandStep?.(step.id, step.run);
        caller.onNetworkWait?.();
        const runner = this.commands.runner;
        result = await this.holdingLease(executionId, seq, () =>
          runner.run(step, scope, `${executionId}:${seq}:${step.id}`, {
            executionId,
            ...(caller.signal ? { signal: caller.signal } : {}),
            ...(caller.onProgress ? { onProgress: caller.onProgress } : {}),
            onRequest: (call) => calls.push(call),
          }),
        );
      } catch (error) {
        throw await this.failed(executionId, step, seq, error, calls);
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
      await this.completed(executionId, step, seq, result, calls);
    }
  }

  /** Takes the lease on the current command step, or says another worker holds it. */
  private claim(executionId: string) {
    const { machine } = this;
    return machine.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      if (exec?.state !== 'running' || exec.current_step === null) return undefined;
      const workflow = await machine.definition(exec, tx);
      const step = findActionStep(workflow, exec.current_step);
      const row = await tx.getStep(executionId, exec.current_seq);
      if (!step || !isCommandStep(step) || !row) return undefined;
      const now = Date.now();
      // A live lease, ours included (another request of this process is running the step), means busy.
      if (
        row.lease_owner !== null &&
        row.lease_expires_at !== null &&
        Date.parse(row.lease_expires_at) > now &&
        (row.lease_owner === this.owner || ownerAlive(row.lease_owner))
      ) {
        return 'busy' as const;
      }
      row.attempts += 1;
      row.status = 'running';
      row.lease_owner = this.owner;
      row.lease_expires_at = new Date(now + LEASE_MS).toISOString();
      await tx.updateStep(row);
      await machine.event(tx, 'command_claimed', exec, step.id, {
        seq: row.seq,
        attempt: row.attempts,
        owner: this.owner,
      });
      return { step, seq: row.seq, scope: machine.scope(exec.context) };
    });
  }

  /** Runs `work` while renewing the step's lease; a lease lost to another worker stops the renewals. */
  private async holdingLease<T>(executionId: string, seq: number, work: () => Promise<T>): Promise<T> {
    const renew = setInterval(() => {
      this.machine.store
        .transaction(async (tx) => {
          const row = await tx.getStep(executionId, seq);
          if (row?.lease_owner !== this.owner) return;
          row.lease_expires_at = new Date(Date.now() + LEASE_MS).toISOString();
          await tx.updateStep(row);
        })
        .catch(() => undefined);
    }, RENEW_MS);
    renew.unref();
    try {
      return await work();
    } finally {
      clearInterval(renew);
    }
  }

  private async completed(
    executionId: string,
    step: CommandStep,
    seq: number,
    result: StepRun,
    calls: readonly HttpCall[],
  ): Promise<void> {
    const { machine } = this;
    await machine.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      const current = await tx.getStep(executionId, seq);
      // A lease that expired and was taken over means another worker now owns the step's outcome.
      if (!exec || !current || exec.current_seq !== seq || current.lease_owner !== this.owner) return;
      const at = nowIso();
      current.status = 'completed';
      current.completed_at = at;
      current.duration_ms = current.started_at ? Date.parse(at) - Date.parse(current.started_at) : null;
      current.output = { status: result.status, output: result.output, polls: result.polls };
      current.lease_owner = null;
      current.lease_expires_at = null;
      await tx.updateStep(current);
      await this.recordCalls(tx, exec, step, seq, calls);
      await machine.event(tx, 'step_completed', exec, step.id, {
        seq,
        command: step.run,
        http_status: result.status,
        attempts: result.attempts,
      });
      const { waiting: _cleared, ...metadata } = exec.metadata;
      exec.metadata = metadata;
      const workflow = await machine.definition(exec, tx);
      const context: Context = {
        ...exec.context,
        steps: { ...asRecord(exec.context.steps), [step.id]: result.output },
      };
      let next: ReturnType<typeof nextStep>;
      try {
        next = machine.walk(workflow, [...exec.completed_steps, step.id], context);
      } catch (error) {
        // A loop ahead reads a list or count the response did not provide: no agent can supply it here.
        if (!(error instanceof DomainFailure) || error.error.code !== 'precondition_failed') throw error;
        exec.completed_steps = [...exec.completed_steps, step.id];
        exec.context = context;
        await machine.transition(tx, exec, 'failed', `PRECONDITION_FAILED: ${error.error.message}`);
        await tx.updateExecution(exec);
        return;
      }
      await machine.enterStep(tx, exec, workflow, next);
      await tx.updateExecution(exec);
    });
  }

  /** One `http_request` telemetry event per request the step made (the URL without credentials). */
  private async recordCalls(
    tx: StoreWriter,
    exec: ExecutionRecord,
    step: CommandStep,
    seq: number,
    calls: readonly HttpCall[],
  ): Promise<void> {
    for (const call of calls) {
      await this.machine.event(tx, 'http_request', exec, step.id, { seq, command: step.run, ...call });
    }
  }

  /**
   * Records a failed attempt. A failure a retry may fix leaves the execution waiting on the step (the
   * lease released); any other fails the execution. Returns the error for the caller to throw.
   */
  private async failed(
    executionId: string,
    step: CommandStep,
    seq: number,
    error: unknown,
    calls: readonly HttpCall[],
  ): Promise<unknown> {
    const domain =
      error instanceof DomainFailure && error.error.code === 'command_failed' ? error.error : undefined;
    // The response's output_contract was not checked in time (a busy machine): no verdict, so the step
    // waits and workflow_resume checks it again; it never fails the execution.
    const notChecked = error instanceof DomainFailure && error.error.code === 'validation_not_checked';
    const wait: CommandWait = {
      step_id: step.id,
      command: step.run,
      reason: domain?.reason ?? (notChecked ? 'not_checked' : 'internal'),
      // Kept on the execution, shown by workflow_resume and the dashboard: any error's text made safe.
      message: terminalSafe(domain?.message ?? (error as Error).message),
      ...(domain?.status !== undefined ? { status: domain.status } : {}),
    };
    const retry = notChecked || (domain !== undefined && waits(domain));
    const { machine } = this;
    await machine.store.transaction(async (tx) => {
      const exec = await tx.getExecution(executionId);
      const row = await tx.getStep(executionId, seq);
      if (!exec || !row || exec.state !== 'running' || row.lease_owner !== this.owner) return;
      row.output = { error: wait };
      row.lease_owner = null;
      row.lease_expires_at = null;
      if (!retry) {
        row.status = 'failed';
        row.completed_at = nowIso();
      }
      await tx.updateStep(row);
      await this.recordCalls(tx, exec, step, seq, calls);
      await machine.event(tx, 'step_failed', exec, step.id, { seq, ...wait, will_retry: retry });
      if (retry) {
        exec.metadata = { ...exec.metadata, waiting: wait };
        exec.updated_at = nowIso();
      } else {
        await machine.transition(tx, exec, 'failed', wait.message);
      }
      await tx.updateExecution(exec);
    });
    if (domain === undefined) return error;
    return new DomainFailure({ ...domain, retryable: retry });
  }
}

/** This process as a lease owner: host, pid and a random part (pids are reused). */
export function leaseOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
}

/**
 * Whether a lease owner may still be running. An owner on this host whose process is gone is not
 * (killed, crashed); an owner elsewhere is trusted until its lease expires.
 */
export function ownerAlive(owner: string): boolean {
  const [host, pid] = owner.split(':');
  if (host !== hostname() || pid === undefined) return true;
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The wait recorded on an execution, if its current command step failed in a retryable way. */
export function waitingOn(metadata: Record<string, unknown>): CommandWait | undefined {
  const waiting = asRecord(metadata.waiting);
  return typeof waiting.step_id === 'string' ? (waiting as unknown as CommandWait) : undefined;
}
