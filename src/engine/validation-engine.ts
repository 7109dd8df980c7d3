import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Violation } from '../model/violation.js';
import {
  isLoopStep,
  isPromptStep,
  type ValidationCriteria,
  type ValidationCriterion,
  type ValidationRule,
  type Workflow,
} from '../model/workflow.js';
import { type Context, evaluateCondition } from './conditions.js';
import { fail } from './errors.js';
import { MAX_DEPTH, nestedDeeperThan } from './json-text.js';
import {
  type RequestLimits,
  SYSTEM_CLOCK,
  ValidationWorkerClient,
  type WorkClock,
  WorkerTimeout,
} from './validation-worker-client.js';
import type { Check, CheckReply, CheckResult, WorkerStats } from './validation-worker-protocol.js';

export interface ValidationResult {
  valid: boolean;
  issues: string[];
  suggestions: string[];
}

/** Raised for criteria that parse but cannot be evaluated (bad regex, min > max, bad JSON Schema). */
export class CriteriaError extends Error {
  constructor(
    message: string,
    /** `schema` when a schema rule's JSON Schema does not compile (seed 002 maps that to -32002). */
    readonly kind: 'criteria' | 'schema',
  ) {
    super(message);
    this.name = 'CriteriaError';
  }
}

export const GENERIC_SUGGESTION = 'Review validation criteria and adjust output accordingly.';

/**
 * How much work one call (a validation, a criteria check, an output_contract check) may spend on
 * regexes and JSON Schemas: the worker thread's own CPU time where it can be read, counted from when
 * the worker began the call (starting the worker and waiting for a core never count). Past it the
 * worker is terminated and replaced, and the call is not checked: a retryable `validation_not_checked`
 * error, never a verdict on the output or the definition. Why a worker and a synchronous wait: see
 * validation-worker-client.ts.
 */
export const VALIDATION_BUDGET_MS = 1000;

/**
 * The hard cap on one call's wait, in budgets: the longest the event loop is ever held (start-up and a
 * loaded machine included), so the longest every other client of the server waits on one hostile rule.
 * Held against what a rule needs: at a load of 8 on 2 cores a thread gets a fifth of a core or less,
 * so a rule still gets about a second of CPU before the cap (ordinary rules need a few ms); past it the
 * call is "not checked" (retryable), never a verdict. 10 budgets held the loop 8-9 s at load 15.
 */
export const VALIDATION_CAP_BUDGETS = 5;

/** The retryable error of a call whose regex and schema rules were not checked (never a verdict). */
function notChecked(timeout: WorkerTimeout): never {
  const why =
    timeout.reason === 'work'
      ? `their own work ran past the ${timeout.budgetMs} ms budget`
      : `no answer came within ${timeout.capMs} ms${timeout.reason === 'start' ? ' while the validation worker was starting' : ''} (the machine is very busy)`;
  fail({
    code: 'validation_not_checked',
    message: `The regex and JSON Schema rules were not checked: ${why}. Nothing was decided; send the same call again.`,
    details: `${why}; if this keeps happening, a regex or schema rule is probably too expensive for this input`,
  });
}

interface Outcome {
  pass: boolean;
  issues: string[];
  suggestions: string[];
}

const PASS: Outcome = { pass: true, issues: [], suggestions: [] };

type WorkerRule = Extract<ValidationRule, { type: 'regex' | 'schema' }>;

function isWorkerRule(rule: ValidationRule): rule is WorkerRule {
  return rule.type === 'regex' || rule.type === 'schema';
}

function tooDeep(): never {
  throw new CriteriaError(`validation criteria are nested deeper than ${MAX_DEPTH} levels`, 'criteria');
}

/** Every rule of a criteria tree, in order, with the JSON Pointer of each. */
function leaves(
  criteria: ValidationCriteria | undefined,
  base = '',
): { rule: ValidationRule; path: string }[] {
  const out: { rule: ValidationRule; path: string }[] = [];
  const visit = (c: ValidationCriterion, path: string, depth: number) => {
    if (depth > MAX_DEPTH) tooDeep();
    if ('and' in c || 'or' in c) {
      const key = 'and' in c ? 'and' : 'or';
      ('and' in c ? c.and : c.or).forEach((x, i) => {
        visit(x, `${path}/${key}/${i}`, depth + 1);
      });
    } else if ('not' in c) visit(c.not, `${path}/not`, depth + 1);
    else out.push({ rule: c, path });
  };
  if (Array.isArray(criteria)) {
    criteria.forEach((c, i) => {
      visit(c, `${base}/${i}`, 0);
    });
  } else if (criteria !== undefined) visit(criteria, base, 0);
  return out;
}

/**
 * The rules of criteria met before, by the criteria object: a definition keeps its criteria for its
 * life, and walking them again on every step was a few hundred bytes of garbage per step
 * (bench/scenarios/step-allocation.mjs). Criteria nested too deeply are never cached (they throw).
 */
const RULES = new WeakMap<object, readonly ValidationRule[]>();

function rulesOf(criteria: ValidationCriteria): readonly ValidationRule[] {
  let rules = RULES.get(criteria);
  if (rules === undefined) {
    rules = leaves(criteria).map(({ rule }) => rule);
    RULES.set(criteria, rules);
  }
  return rules;
}

/** No regex or schema rule ran (the common step: `contains` and `length` rules only). */
const NO_RESULTS: ReadonlyMap<WorkerRule, CheckResult | undefined> = new Map();

/**
 * dist/validation-worker.js, an entry point of the bundle. This module may be bundled into cli.js or
 * into a chunk under dist/chunks/ (esbuild decides by who imports it), so both places are tried.
 */
function bundledWorker(): URL {
  const candidates = ['./validation-worker.js', '../validation-worker.js'].map(
    (p) => new URL(p, import.meta.url),
  );
  return candidates.find((url) => existsSync(fileURLToPath(url))) ?? (candidates[0] as URL);
}

export interface ValidationEngineOptions {
  /** The worker script; by default validation-worker.js beside this module (as bundled in dist/). */
  workerUrl?: URL;
  /** Work budget of one call in milliseconds (default VALIDATION_BUDGET_MS). */
  budgetMs?: number;
  /** Hard cap on one call's wait, start-up included, in ms (default VALIDATION_CAP_BUDGETS budgets). */
  capMs?: number;
  /** How time and work are measured (default: SYSTEM_CLOCK); tests make slow machines and rules with it. */
  clock?: WorkClock;
}

/**
 * The ValidationEngine of seed 002: checks one step output against the step's criteria in the given
 * context. `contains` and `length` rules run here; `regex` and `schema` rules run in a worker thread
 * under a budget of their own work and a hard cap on the wait (see validation-worker-client.ts): past
 * either, a call throws the retryable `validation_not_checked` instead of answering. Await `load()` (or
 * `loadFor(criteria)`) before checking so that no check waits for the worker to start on the event loop
 * (a start never counts against the budget, but it holds the loop while a check waits for it).
 *
 * What the synchronous wait costs other requests: it holds the event loop for as long as the call's
 * regex and schema work takes in wall time. For rules that finish, that is their work (milliseconds);
 * for a rule that runs out, one budget of CPU time, which on a loaded machine is several budgets of wall
 * time, never more than the cap (bench/scenarios/validation-under-load.mjs measures both).
 */
export class ValidationEngine {
  private readonly worker: ValidationWorkerClient;
  private readonly limits: RequestLimits;
  /** Schemas already measured (definitions keep theirs), so each is walked once. */
  private readonly shallowSchemas = new WeakSet<object>();

  constructor(options: ValidationEngineOptions = {}) {
    this.worker = new ValidationWorkerClient(options.workerUrl ?? bundledWorker());
    const budgetMs = options.budgetMs ?? VALIDATION_BUDGET_MS;
    this.limits = { budgetMs, capMs: options.capMs ?? VALIDATION_CAP_BUDGETS * budgetMs };
    if (options.clock !== undefined) this.worker.clock = options.clock;
  }

  /**
   * Measures time and work with `clock` from now on (undefined: the system's). For tests that drive the
   * app's own engine through the protocol; an engine of its own takes `clock` in its options.
   */
  useClock(clock: WorkClock | undefined): void {
    this.worker.clock = clock ?? SYSTEM_CLOCK;
  }

  /**
   * Starts the worker that runs regex and JSON Schema checks, unless it runs already, and resolves
   * when it is ready. Cheap when it is; callers await it before checking so that no check waits for
   * a start on the event loop (the worker stops when idle, and after a check that ran over).
   */
  load(): Promise<void> {
    return this.worker.start();
  }

  /** Whether the worker runs now (started by load() or a check, and not yet stopped as idle). */
  get loaded(): boolean {
    return this.worker.running;
  }

  /** Worker threads started so far (a counter for tests and diagnostics, never reset). */
  get workerStarts(): number {
    return this.worker.starts;
  }

  /** Stops the worker now instead of when it has been idle a while; the next load() starts another. */
  unload(): void {
    this.worker.release();
  }

  /**
   * load(), only when `criteria` hold a regex or JSON Schema rule. The worker holds ~15 MB while it
   * runs, and most steps check only `contains` and `length` rules, which need no worker.
   */
  loadFor(criteria: ValidationCriteria | undefined): Promise<void> {
    let needed: boolean;
    try {
      needed = criteria !== undefined && rulesOf(criteria).some(isWorkerRule);
    } catch {
      needed = false; // nested too deeply: check() refuses the criteria before anything runs
    }
    return needed ? this.load() : Promise.resolve();
  }

  validate(criteria: ValidationCriteria | undefined, output: string, context: Context): ValidationResult {
    if (criteria === undefined) return { valid: true, issues: [], suggestions: [] };
    const list = Array.isArray(criteria) ? criteria : [criteria];
    const applicable = rulesOf(criteria).filter(
      (rule): rule is WorkerRule =>
        isWorkerRule(rule) && (rule.condition === undefined || evaluateCondition(rule.condition, context)),
    );
    const results = applicable.length === 0 ? NO_RESULTS : this.runRules(applicable, { text: output });
    const outcome = this.all(list, output, context, results, 0);
    // Seed 002's failed validation: the general advice first, then the rules' own suggestions.
    const suggestions = outcome.pass ? [] : [GENERIC_SUGGESTION, ...outcome.suggestions];
    return {
      valid: outcome.pass,
      issues: [...new Set(outcome.issues)],
      suggestions: [...new Set(suggestions)],
    };
  }

  /**
   * Whether `text` matches an RE2 pattern (used by input validation); bad patterns throw
   * CriteriaError, and a match that runs over the budget the retryable `validation_not_checked`.
   */
  matches(pattern: string, text: string): boolean {
    const [result] = this.run([{ kind: 'regex', pattern, flags: '' }], { text });
    if (result === undefined) throw new Error('the validation worker answered no result');
    if ('invalid' in result) throw new CriteriaError(result.invalid, result.kind);
    return result.ok;
  }

  /**
   * Why `value` fails a JSON Schema (empty when it passes); a schema that does not compile throws
   * CriteriaError, and a check that runs over the budget the retryable `validation_not_checked`.
   */
  schemaErrors(schema: Record<string, unknown>, value: unknown): string[] {
    this.refuseDeepSchema(schema);
    if (nestedDeeperThan(value, MAX_DEPTH)) return [`(root) is nested deeper than ${MAX_DEPTH} levels`];
    const [result] = this.run([{ kind: 'schema', schema }], { value });
    if (result === undefined) throw new Error('the validation worker answered no result');
    if ('invalid' in result) throw new CriteriaError(result.invalid, result.kind);
    if (result.ok) return [];
    return result.errors ?? [`(root) ${result.detail ?? 'is invalid'}`];
  }

  /**
   * Checks that every rule can be evaluated, without needing an output: CriteriaError when one cannot,
   * the retryable `validation_not_checked` when compiling them ran over the budget.
   */
  check(criteria: ValidationCriteria | undefined): void {
    if (criteria === undefined) return;
    const rules = rulesOf(criteria);
    for (const rule of rules) if (rule.type === 'length') checkLength(rule);
    const checks = rules.filter(isWorkerRule);
    for (const result of this.compile(checks)) {
      if ('invalid' in result) throw new CriteriaError(result.invalid, result.kind);
    }
  }

  /**
   * Every rule of every step that cannot be evaluated, as violations (one per rule). Compiling them
   * past the budget is no violation of the workflow: it throws the retryable `validation_not_checked`.
   */
  checkWorkflow(workflow: Workflow): Violation[] {
    const out: Violation[] = [];
    const found: { rule?: ValidationRule; path: string; problem?: string }[] = [];
    workflow.steps.forEach((step, i) => {
      const steps = isLoopStep(step)
        ? (Array.isArray(step.body) ? step.body : []).map((s, j) => [s, `/steps/${i}/body/${j}`] as const)
        : [[step, `/steps/${i}`] as const];
      for (const [s, path] of steps) {
        if (!isPromptStep(s)) continue;
        try {
          found.push(...leaves(s.validationCriteria, `${path}/validationCriteria`));
        } catch (error) {
          if (!(error instanceof CriteriaError)) throw error;
          found.push({ path: `${path}/validationCriteria`, problem: error.message });
        }
      }
    });
    const batch: { item: (typeof found)[number]; check: Check }[] = [];
    for (const item of found) {
      const { rule } = item;
      if (rule === undefined) continue;
      try {
        if (rule.type === 'length') checkLength(rule);
        else if (isWorkerRule(rule)) batch.push({ item, check: this.toCheck(rule) });
      } catch (error) {
        if (!(error instanceof CriteriaError)) throw error;
        item.problem = error.message;
      }
    }
    const results =
      batch.length === 0 ? [] : this.send({ op: 'compile', checks: batch.map((b) => b.check) }, batch.length);
    results.forEach((result, k) => {
      const entry = batch[k];
      if (entry && 'invalid' in result) entry.item.problem = result.invalid;
    });
    for (const { path, problem } of found)
      if (problem !== undefined) out.push({ path, rule: 'criteria', message: problem });
    return out;
  }

  /** Cache sizes of the worker (tests and diagnostics). */
  stats(): WorkerStats {
    const reply = this.worker.request({ op: 'stats' }, this.limits);
    if (!('stats' in reply)) throw new Error('the validation worker did not report its stats');
    return reply.stats;
  }

  private refuseDeepSchema(schema: Record<string, unknown>): void {
    if (this.shallowSchemas.has(schema)) return;
    if (!nestedDeeperThan(schema, MAX_DEPTH)) {
      this.shallowSchemas.add(schema);
      return;
    }
    throw new CriteriaError(
      `JSON Schema of a schema rule does not compile: it is nested deeper than ${MAX_DEPTH} levels`,
      'schema',
    );
  }

  private toCheck(rule: WorkerRule): Check {
    if (rule.type === 'regex') return { kind: 'regex', pattern: rule.pattern, flags: rule.flags ?? '' };
    this.refuseDeepSchema(rule.schema);
    return { kind: 'schema', schema: rule.schema };
  }

  private compile(rules: readonly WorkerRule[]): CheckResult[] {
    if (rules.length === 0) return [];
    return this.send({ op: 'compile', checks: rules.map((r) => this.toCheck(r)) }, rules.length);
  }

  /** Results by rule (a rule maps to undefined only when the worker answered too few). */
  private runRules(
    rules: readonly WorkerRule[],
    input: { text: string },
  ): Map<WorkerRule, CheckResult | undefined> {
    const unique = [...new Set(rules)];
    const results = this.run(
      unique.map((r) => this.toCheck(r)),
      input,
    );
    return new Map(unique.map((rule, i) => [rule, results[i]]));
  }

  private run(checks: Check[], input: { text: string } | { value: unknown }): CheckResult[] {
    if (checks.length === 0) return [];
    return this.send({ op: 'run', checks, input }, checks.length);
  }

  /**
   * One worker round trip within the budget: a result per check, or the retryable
   * `validation_not_checked` when the work ran over (or no answer came within the cap).
   */
  private send(
    request:
      | { op: 'compile'; checks: Check[] }
      | { op: 'run'; checks: Check[]; input: { text: string } | { value: unknown } },
    count: number,
  ): CheckResult[] {
    let reply: CheckReply;
    try {
      reply = this.worker.request(request, this.limits);
    } catch (error) {
      if (error instanceof WorkerTimeout) notChecked(error);
      throw error;
    }
    if ('results' in reply && reply.results.length === count) return reply.results;
    throw new Error(`the validation worker failed: ${'failure' in reply ? reply.failure : 'no results'}`);
  }

  private all(
    list: readonly ValidationCriterion[],
    output: string,
    context: Context,
    results: ReadonlyMap<WorkerRule, CheckResult | undefined>,
    depth: number,
  ): Outcome {
    const failed = list.map((c) => this.one(c, output, context, results, depth + 1)).filter((o) => !o.pass);
    if (failed.length === 0) return PASS;
    return {
      pass: false,
      issues: failed.flatMap((o) => o.issues),
      suggestions: failed.flatMap((o) => o.suggestions),
    };
  }

  private one(
    c: ValidationCriterion,
    output: string,
    context: Context,
    results: ReadonlyMap<WorkerRule, CheckResult | undefined>,
    depth: number,
  ): Outcome {
    if (depth > MAX_DEPTH) tooDeep();
    if ('and' in c) return withMessage(this.all(c.and, output, context, results, depth), c.message);
    if ('or' in c) {
      const outcomes = c.or.map((x) => this.one(x, output, context, results, depth + 1));
      if (outcomes.some((o) => o.pass)) return PASS;
      return withMessage(
        {
          pass: false,
          issues: outcomes.flatMap((o) => o.issues),
          suggestions: outcomes.flatMap((o) => o.suggestions),
        },
        c.message,
      );
    }
    if ('not' in c) {
      const inner = this.one(c.not, output, context, results, depth + 1);
      if (!inner.pass) return PASS;
      return {
        pass: false,
        issues: [
          c.message ??
            `Output must not satisfy: ${describeCriterion(c.not, undefined, depth + 1).join('; ')}`,
        ],
        suggestions: [],
      };
    }
    return this.rule(c, output, context, results);
  }

  private rule(
    rule: ValidationRule,
    output: string,
    context: Context,
    results: ReadonlyMap<WorkerRule, CheckResult | undefined>,
  ): Outcome {
    if (rule.condition !== undefined && !evaluateCondition(rule.condition, context)) return PASS;
    let pass: boolean;
    let detail: string | undefined;
    switch (rule.type) {
      case 'contains':
        pass = output.includes(rule.value);
        break;
      case 'length': {
        checkLength(rule);
        const length = codePointLength(output);
        pass =
          (rule.min === undefined || length >= rule.min) && (rule.max === undefined || length <= rule.max);
        break;
      }
      default: {
        const result = results.get(rule);
        if (result === undefined) {
          throw new Error('the validation worker answered no result for a rule');
        } else if ('invalid' in result) {
          throw new CriteriaError(result.invalid, result.kind);
        } else {
          pass = result.ok;
          if (!result.ok) detail = result.detail ?? result.errors?.slice(0, 5).join('; ');
        }
      }
    }
    if (pass) return PASS;
    return {
      pass: false,
      issues: [detail ? `${rule.message} (${detail})` : rule.message],
      suggestions: rule.suggestion ? [rule.suggestion] : [],
    };
  }
}

function checkLength(rule: Extract<ValidationRule, { type: 'length' }>): void {
  if (rule.min === undefined && rule.max === undefined) {
    throw new CriteriaError('a length rule needs min, max or both', 'criteria');
  }
  if (rule.min !== undefined && rule.max !== undefined && rule.min > rule.max) {
    throw new CriteriaError(`length rule has min ${rule.min} greater than max ${rule.max}`, 'criteria');
  }
}

function withMessage(outcome: Outcome, message: string | undefined): Outcome {
  return outcome.pass || message === undefined ? outcome : { ...outcome, issues: [message] };
}

function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Human-readable criteria for `guidance.validationCriteria`, limited to rules that apply in context. */
export function describeCriteria(criteria: ValidationCriteria | undefined, context: Context): string[] {
  if (criteria === undefined) return [];
  const list = Array.isArray(criteria) ? criteria : [criteria];
  return [...new Set(list.flatMap((c) => describeCriterion(c, context, 0)))];
}

/** Descriptions are for display: past MAX_DEPTH they stop rather than fail (checks report the depth). */
function describeCriterion(c: ValidationCriterion, context: Context | undefined, depth: number): string[] {
  if (depth > MAX_DEPTH) return ['…'];
  if ('and' in c)
    return c.message ? [c.message] : c.and.flatMap((x) => describeCriterion(x, context, depth + 1));
  if ('or' in c) {
    if (c.message) return [c.message];
    const parts = c.or.flatMap((x) => describeCriterion(x, context, depth + 1));
    return parts.length > 0 ? [`One of: ${parts.join(' | ')}`] : [];
  }
  if ('not' in c) {
    if (c.message) return [c.message];
    const parts = describeCriterion(c.not, context, depth + 1);
    return parts.length > 0 ? [`Not: ${parts.join('; ')}`] : [];
  }
  if (context !== undefined && c.condition !== undefined && !evaluateCondition(c.condition, context))
    return [];
  return [c.message];
}
