import { type Context, evaluateCondition } from '../engine/conditions.js';
import { fail } from '../engine/errors.js';
import { render, TemplateError, type TemplateScope } from '../engine/templating.js';
import { terminalSafe } from '../engine/terminal-text.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { CommandStep } from '../model/workflow.js';
import type { CatalogService } from './catalog-service.js';
import { CommandFailure, type CommandResult, DEFAULT_TIMEOUT_MS, type HttpCall } from './http-runner.js';

export function durationMs(value: number | string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number') return value;
  const m = /^(\d+)(ms|s|m)$/.exec(value);
  if (!m) return fallback;
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

const RETRYABLE = new Set(['timeout', 'network', 'http_status']);
const DEFAULT_REPEAT_TIMEOUT_MS = 60_000;

/** Waits, or rejects early when the signal aborts (so a cancelled run stops polling at once). */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

export interface RunOptions {
  executionId?: string;
  /** Aborts the request in flight and any pending poll. */
  signal?: AbortSignal;
  /** Told before each poll after the first. */
  onProgress?: (message: string) => void;
  /** Told about every HTTP request made (retries and polls included). */
  onRequest?: (call: HttpCall & { poll: number }) => void;
}

/** What the runner needs of the catalogs: the catalog service, or the workflow tests' canned answers. */
export type CommandCalls = Pick<CatalogService, 'ready' | 'resolve' | 'call'>;

export interface CommandRunnerOptions {
  /** Waits between the polls of `repeat` (default: a real timer; the workflow tests do not wait). */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /**
   * The clock `repeat.timeout` is measured by (default: the wall clock). The workflow tests run a virtual
   * one that only their sleeps move, so a timeout's verdict never depends on how busy the machine is.
   */
  now?: () => number;
}

export interface StepRun extends CommandResult {
  command: string;
  polls: number;
}

/**
 * Runs command steps for the engine: resolves `run` against the enabled catalogs, renders `with` and
 * `body`, calls the API through the catalog service (host policy, credential binding, retries,
 * timeouts, and outputs with every credential scrubbed out), polls for `repeat`, and checks
 * `output_contract`. Failures become `command_failed` domain errors with a safe payload.
 */
export class CommandStepRunner {
  constructor(
    private readonly catalogs: CommandCalls,
    private readonly engine: ValidationEngine,
    private readonly options: CommandRunnerOptions = {},
  ) {}

  /**
   * Runs one command step. `idempotencyKey` names the logical call: every attempt (retries, resumes, other
   * processes) sends it unchanged; each poll of a `repeat` is its own call with a `:poll-N` suffix.
   */
  async run(
    step: CommandStep,
    scope: TemplateScope,
    idempotencyKey: string,
    options: RunOptions = {},
  ): Promise<StepRun> {
    const { executionId, signal } = options;
    await Promise.all([this.catalogs.ready(), this.engine.load()]);
    const failed = (
      reason: string,
      message: string,
      extra: { status?: number; payload?: unknown } = {},
    ): never =>
      fail({
        code: 'command_failed',
        // Shown to the agent and kept in telemetry; it may quote what the API or a template said.
        message: terminalSafe(`step "${step.id}" (${step.run}): ${message}`),
        reason,
        stepId: step.id,
        command: step.run,
        ...(executionId !== undefined ? { executionId } : {}),
        ...(extra.status !== undefined ? { status: extra.status } : {}),
        ...(extra.payload !== undefined ? { responsePayload: extra.payload } : {}),
        retryable:
          RETRYABLE.has(reason) &&
          (extra.status === undefined || extra.status >= 500 || extra.status === 429),
      });
    const found = await this.catalogs.resolve(step.run);
    if (!found) return failed('unknown_command', `no enabled catalog provides "${step.run}"`);
    let params: Record<string, unknown>;
    let body: unknown;
    try {
      params = (render(step.with ?? {}, scope) as Record<string, unknown>) ?? {};
      body = step.body === undefined ? undefined : render(step.body, scope);
    } catch (error) {
      if (error instanceof TemplateError) return failed('template', error.message);
      throw error;
    }
    const timeoutMs = durationMs(step.timeout, DEFAULT_TIMEOUT_MS);
    const repeat = step.repeat;
    const now = this.options.now ?? Date.now;
    const deadline = repeat
      ? now() + durationMs(repeat.timeout, DEFAULT_REPEAT_TIMEOUT_MS)
      : Number.POSITIVE_INFINITY;
    const maxPolls = repeat?.max_attempts ?? 1;
    let result: CommandResult | undefined;
    let polls = 0;
    for (;;) {
      polls++;
      const remaining = deadline - now();
      try {
        result = await this.catalogs.call(found.catalog, found.command, {
          params,
          body,
          timeoutMs: Math.max(1, Math.min(timeoutMs, remaining)),
          idempotencyKey: repeat ? `${idempotencyKey}:poll-${polls}` : idempotencyKey,
          ...(signal ? { signal } : {}),
          ...(options.onRequest
            ? { onRequest: (call: HttpCall) => options.onRequest?.({ ...call, poll: polls }) }
            : {}),
        });
      } catch (error) {
        if (error instanceof CommandFailure) {
          return failed(error.reason, error.message, {
            ...(error.status !== undefined ? { status: error.status } : {}),
            ...(error.responsePayload !== undefined ? { payload: error.responsePayload } : {}),
          });
        }
        throw error;
      }
      if (!repeat) break;
      const ctx: Context = { ...(scope.context ?? {}), output: result.output, status: result.status };
      if (evaluateCondition(repeat.until, ctx)) break;
      if (polls >= maxPolls) {
        return failed('repeat_exhausted', `condition not met after ${polls} attempts`, {
          payload: result.output,
        });
      }
      const wait = durationMs(repeat.every, 1000);
      if (now() + wait >= deadline) {
        return failed(
          'timeout',
          `repeat timed out after ${durationMs(repeat.timeout, DEFAULT_REPEAT_TIMEOUT_MS)} ms`,
          { payload: result.output },
        );
      }
      options.onProgress?.(`${step.id}: condition not met after poll ${polls}; polling again in ${wait} ms`);
      try {
        await (this.options.sleep ?? sleep)(wait, signal);
      } catch {
        return failed('cancelled', 'cancelled while polling');
      }
    }
    if (step.output_contract) {
      const problems = this.engine.schemaErrors(step.output_contract, result.output);
      if (problems.length > 0) {
        return failed('output_contract', `the response breaks the output_contract: ${problems.join('; ')}`, {
          status: result.status,
          payload: result.output,
        });
      }
    }
    return { ...result, command: step.run, polls };
  }
}
