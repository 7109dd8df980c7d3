// What a workflow test's scenario walks with in place of the world: the agent's answers (AnswerBook), the
// APIs of command steps (canned answers through the real runner), the operator's checks (canned results),
// and the budget of work a run may do. No network, no process, no person.
import type { LoadedCatalog } from '../catalogs/catalog-registry.js';
import { type CommandCalls, CommandStepRunner } from '../catalogs/command-steps.js';
import { CommandFailure } from '../catalogs/http-runner.js';
import type { CatalogCommand } from '../catalogs/openapi-plan.js';
import type { DomainError } from '../engine/errors.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { Violation } from '../model/violation.js';
import type { Answer, CheckAnswers, Scenario, TestFile } from '../workflows/test-format.js';
import type { CheckResult, CheckRunner } from './checks.js';
import type { StepOutput } from './execution-model.js';
import type { SentRequest } from './workflow-test-results.js';

/**
 * The work units a run may still use, taken as the walk does the work (a start, a report, an API call):
 * what bounds a run is what it did, never how long it took, so a loaded machine cannot change a verdict.
 */
export class WorkBudget {
  used = 0;
  spent = false;

  constructor(
    readonly max: number,
    readonly onSpent: 'stop' | 'refuse',
    readonly signal: AbortSignal | undefined,
  ) {}

  /** Takes `units`, or none when they do not fit (the budget is then spent). */
  take(units: number): boolean {
    // Once spent, always: the walks after it never start, whatever their first step would cost.
    if (this.spent || this.used + units > this.max) {
      this.spent = true;
      return false;
    }
    this.used += units;
    return true;
  }

  get why(): string {
    return `the test file's budget of ${this.max} work units is spent`;
  }
}

/** Thrown by a canned API call the budget has no unit left for: it ends the walk it is part of. */
export class WorkSpent extends Error {}

export const DEFAULT_SUMMARY = 'done';
/** Longest value quoted in a failure line. */
export const MAX_SHOWN = 200;

export function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 3)}...` : text;
}

export function errorText(error: DomainError): string {
  const details = 'details' in error ? error.details : undefined;
  const violations =
    'violations' in error && Array.isArray(error.violations)
      ? error.violations.map((v: Violation) => `${v.path || '(root)'}: ${v.message}`).join('; ')
      : undefined;
  return [error.message, details, violations].filter(Boolean).join(': ');
}

/**
 * The n-th (from 0) of a list of canned answers, each standing for `times` uses (default 1); past the
 * end, the last one holds. Steps, checks and command responses all count this way.
 */
export function nthOf<T extends { times?: number | undefined }>(
  entries: readonly T[],
  n: number,
): T | undefined {
  let seen = 0;
  for (const e of entries) {
    seen += e.times ?? 1;
    if (n < seen) return e;
  }
  return entries.at(-1);
}

type StepAnswers = NonNullable<Scenario['steps']>[string];

/** Where an agent's answers come from: answers by step id (the first layer naming a step wins), and defaults (later over earlier). */
export interface AnswerSource {
  steps: readonly (Record<string, StepAnswers> | undefined)[];
  defaults: readonly (Answer | undefined)[];
}

/** The answers of one agent (a scenario's, or a child's), read in order per step (the last entry repeats). */
export class AnswerBook {
  private readonly used = new Map<string, number>();

  constructor(private readonly source: AnswerSource) {}

  /** The scenario's agent: its steps over the file's, its defaults over the file's. */
  static of(scenario: Scenario, file: TestFile): AnswerBook {
    return new AnswerBook({
      steps: [scenario.steps, file.steps],
      defaults: [file.defaults, scenario.defaults],
    });
  }

  private entries(stepId: string): (Answer & { times?: number | undefined })[] {
    const given = this.source.steps.map((layer) => layer?.[stepId]).find((a) => a !== undefined);
    if (given === undefined) return [{}];
    return Array.isArray(given) ? given : [given];
  }

  private total(stepId: string): number {
    return this.entries(stepId).reduce((n, e) => n + (e.times ?? 1), 0);
  }

  /** The step's last report used its final answer: the next one would say the same. */
  exhausted(stepId: string): boolean {
    return (this.used.get(stepId) ?? 0) >= this.total(stepId);
  }

  /** The step's n-th report (from 0) with the defaults under it: the entry whose `times` cover n, else the last. */
  private answer(stepId: string, n: number): Answer {
    const { times: _times, ...answer } = nthOf(this.entries(stepId), n) ?? {};
    return Object.assign({}, ...this.source.defaults, answer) as Answer;
  }

  next(stepId: string): StepOutput {
    const n = this.used.get(stepId) ?? 0;
    this.used.set(stepId, n + 1);
    const { approval: _decision, approval_reason: _reason, ...output } = this.answer(stepId, n);
    return { ...output, summary: output.summary ?? DEFAULT_SUMMARY };
  }

  /** What the person decides about the step's latest report (its answer's `approval`, default approve). */
  decision(stepId: string): { decision: 'approve' | 'reject'; reason: string | undefined } {
    const merged = this.answer(stepId, Math.max(0, (this.used.get(stepId) ?? 1) - 1));
    return { decision: merged.approval ?? 'approve', reason: merged.approval_reason };
  }
}

/** Server-run checks answered from the test file (`checks`): the n-th run gets the n-th entry; unnamed pass. */
export class CannedChecks implements CheckRunner {
  readonly configured = true;
  private readonly runs = new Map<string, number>();

  constructor(private readonly table: Record<string, CheckAnswers>) {}

  known(): boolean {
    return true;
  }

  available(): void {}

  async run(name: string): Promise<CheckResult> {
    const given = this.table[name];
    type Entry = {
      passed?: boolean | undefined;
      exit_code?: number | undefined;
      output?: string | undefined;
      times?: number | undefined;
    };
    const entries: Entry[] = given === undefined ? [{}] : Array.isArray(given) ? given : [given];
    const n = this.runs.get(name) ?? 0;
    this.runs.set(name, n + 1);
    const entry: Entry = nthOf(entries, n) ?? {};
    const passed = entry.passed ?? true;
    const tail = entry.output ?? '';
    return {
      check: name,
      passed,
      exit_code: entry.exit_code ?? (passed ? 0 : 1),
      timed_out: false,
      duration_ms: 0,
      output_bytes: Buffer.byteLength(tail),
      truncated: false,
      tail,
    };
  }
}

/** The operator a workflow test's approvals are decided by. */
export const TEST_DECIDER = { principal: null, name: 'workflow test', via: 'cli' as const, operator: true };

export type Responses = NonNullable<TestFile['commands']>;
export type ResponseEntry = Exclude<Responses[string], unknown[]> & { times?: number | undefined };

/** A catalog that exists only in a test: every catalog a workflow names is there and enabled. */
export function cannedCatalog(id: string): LoadedCatalog {
  return {
    config: {
      id,
      base_url: 'http://canned.invalid',
      auth: null,
      title: id,
      vendor: null,
      enabled: true,
      source: 'workflow test',
      imported_at: '',
      manifest: '',
    },
    manifest: { catalog_id: id, commands: [], providers: [], warnings: [] },
    configPath: '',
    manifestPath: '',
  };
}

export function cannedCommand(name: string): CatalogCommand {
  return {
    name,
    group: 'default',
    method: 'GET',
    path: '/',
    summary: '',
    parameters: [],
    body_required: false,
    idempotent: true,
  };
}

/**
 * Command steps answered from the test file: the real command runner (templates rendered, `repeat`
 * polled without waiting, `output_contract` checked, failures classified) over canned API answers.
 */
export class CannedCommands {
  private readonly used = new Map<string, number>();
  /** What each step sent, call by call. */
  readonly requests: Record<string, SentRequest[]> = {};
  readonly catalogs = {
    get: (id: string): LoadedCatalog | undefined => cannedCatalog(id),
    ready: async (): Promise<void> => undefined,
  };
  readonly runner: Pick<CommandStepRunner, 'run'>;

  constructor(
    private readonly responses: Responses,
    engine: ValidationEngine,
    private readonly budget: WorkBudget,
  ) {
    this.runner = {
      run: (step, scope, key, options) => {
        // Virtual time: canned answers take none, and each poll's wait moves it, so `repeat.timeout`
        // gives the same verdict on any machine, however loaded.
        let virtual = 0;
        const sleep = async (ms: number) => {
          virtual += ms;
        };
        return new CommandStepRunner(this.callsFor(step.id), engine, { sleep, now: () => virtual }).run(
          step,
          scope,
          key,
          options,
        );
      },
    };
  }

  private next(stepId: string): ResponseEntry | undefined {
    const given = this.responses[stepId];
    if (given === undefined) return undefined;
    const entries: ResponseEntry[] = Array.isArray(given) ? given : [given];
    const n = this.used.get(stepId) ?? 0;
    this.used.set(stepId, n + 1);
    return nthOf(entries, n);
  }

  private callsFor(stepId: string): CommandCalls {
    return {
      ready: async () => undefined,
      resolve: async (ref) => {
        const [catalog = '', command = ''] = ref.split(' ');
        return { catalog: cannedCatalog(catalog), command: cannedCommand(command) };
      },
      call: async (_catalog, _command, options) => {
        // Each call is work (a `repeat` polls up to 1,000 times, and no report stands between them).
        if (!this.budget.take(1)) throw new WorkSpent(this.budget.why);
        this.requests[stepId] ??= [];
        this.requests[stepId].push({
          with: options.params,
          ...(options.body !== undefined ? { body: options.body } : {}),
        });
        const response = this.next(stepId);
        if (response === undefined) {
          throw new Error(
            `command step "${stepId}" has no canned API answer: add commands.${stepId} to the scenario or the file`,
          );
        }
        if (response.error !== undefined) {
          const { reason, message, status } = response.error;
          throw new CommandFailure(message ?? `canned ${reason}`, reason, status, response.output);
        }
        return {
          status: response.status ?? 200,
          output: response.output ?? null,
          attempts: 1,
          duration_ms: 0,
        };
      },
    };
  }
}
