import { type Context, evaluateCondition } from '../engine/conditions.js';
import { fail } from '../engine/errors.js';
import { render, TemplateError, type TemplateScope } from '../engine/templating.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { CommandStep } from '../workflows/model.js';
import type { CatalogRegistry } from './catalog-registry.js';
import { CommandFailure, type CommandResult, callCommand, DEFAULT_TIMEOUT_MS } from './http-runner.js';

export function durationMs(value: number | string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number') return value;
  const m = /^(\d+)(ms|s|m)$/.exec(value);
  if (!m) return fallback;
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const RETRYABLE = new Set(['timeout', 'network', 'http_status']);

export interface StepRun extends CommandResult {
  command: string;
  polls: number;
}

/**
 * Runs command steps for the engine: resolves `run` against the enabled catalogs, renders `with` and
 * `body`, calls the API (retries, timeouts, host pinning in the HTTP runner), polls for `repeat`, and
 * checks `output_contract`. Failures become `command_failed` domain errors with a safe payload.
 */
export class CommandStepRunner {
  constructor(
    private readonly catalogs: CatalogRegistry,
    private readonly engine: ValidationEngine,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  async run(
    step: CommandStep,
    scope: TemplateScope,
    idempotencyKey: string,
    executionId?: string,
  ): Promise<StepRun> {
    await Promise.all([this.catalogs.ready(), this.engine.load()]);
    const failed = (
      reason: string,
      message: string,
      extra: { status?: number; payload?: unknown } = {},
    ): never =>
      fail({
        code: 'command_failed',
        message: `step "${step.id}" (${step.run}): ${message}`,
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
    const found = this.catalogs.command(step.run);
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
    const deadline = repeat ? Date.now() + durationMs(repeat.timeout, 60_000) : Number.POSITIVE_INFINITY;
    const maxPolls = repeat?.max_attempts ?? 1;
    let result: CommandResult | undefined;
    let polls = 0;
    for (;;) {
      polls++;
      const remaining = deadline - Date.now();
      try {
        result = await callCommand(found.catalog.config, found.command, {
          params,
          body,
          timeoutMs: Math.max(1, Math.min(timeoutMs, remaining)),
          idempotencyKey: `${idempotencyKey}-${polls}`,
          env: this.env,
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
      if (Date.now() + wait >= deadline) {
        return failed('timeout', `repeat timed out after ${durationMs(repeat.timeout, 60_000)} ms`, {
          payload: result.output,
        });
      }
      await sleep(wait);
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
