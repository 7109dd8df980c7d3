import type { Ajv, Options, ValidateFunction } from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { RE2JS } from 're2js';
import {
  isLoopStep,
  isPromptStep,
  type ValidationCriteria,
  type ValidationCriterion,
  type ValidationRule,
  type Workflow,
} from '../workflows/model.js';
import type { Violation } from '../workflows/validate-definition.js';
import { type Context, evaluateCondition } from './conditions.js';

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

interface Outcome {
  pass: boolean;
  issues: string[];
  suggestions: string[];
}

const PASS: Outcome = { pass: true, issues: [], suggestions: [] };

interface Libraries {
  RE2JS: typeof RE2JS;
  Ajv: new (opts: Options) => Ajv;
  Ajv2020: new (opts: Options) => Ajv2020;
  addFormats: (ajv: Ajv | Ajv2020) => void;
}

/**
 * The regex and JSON Schema engines are loaded on first use rather than at start-up: together they
 * are half the bundle, and the server answers `initialize` before anything needs them.
 */
async function importLibraries(): Promise<Libraries> {
  const [re2, ajv, ajv2020, formats] = await Promise.all([
    import('re2js'),
    import('ajv'),
    import('ajv/dist/2020.js'),
    import('ajv-formats'),
  ]);
  return {
    RE2JS: re2.RE2JS,
    Ajv: commonJsExport(ajv, 'Ajv') as Libraries['Ajv'],
    Ajv2020: commonJsExport(ajv2020, 'Ajv2020') as Libraries['Ajv2020'],
    addFormats: commonJsExport(formats, 'default') as Libraries['addFormats'],
  };
}

/** A named export of a CommonJS module, however the loader (Node, esbuild, vitest) wrapped it. */
function commonJsExport(namespace: object, name: string): unknown {
  const candidates = [namespace, (namespace as { default?: object }).default];
  for (const candidate of candidates) {
    const value = (candidate as Record<string, unknown> | undefined)?.[name];
    if (typeof value === 'function') return value;
  }
  const fallback = (namespace as { default?: unknown }).default;
  if (typeof fallback === 'function') return fallback;
  throw new Error(`cannot load ${name}`);
}

/**
 * The ValidationEngine of seed 002: checks one step output against the step's criteria in the given
 * context. Pure apart from caches of compiled regexes and schemas. Call `load()` once before use.
 */
export class ValidationEngine {
  private readonly regexCache = new Map<string, RE2JS>();
  private readonly schemaCache = new WeakMap<object, ValidateFunction>();
  private ajv2020: Ajv2020 | undefined;
  private ajv07: Ajv | undefined;
  private libs: Libraries | undefined;
  private loading: Promise<void> | undefined;

  /** Loads the regex and JSON Schema libraries (once). */
  load(): Promise<void> {
    this.loading ??= importLibraries().then((libs) => {
      this.libs = libs;
    });
    return this.loading;
  }

  private get lib(): Libraries {
    if (this.libs === undefined) throw new Error('ValidationEngine used before load()');
    return this.libs;
  }

  validate(criteria: ValidationCriteria | undefined, output: string, context: Context): ValidationResult {
    if (criteria === undefined) return { valid: true, issues: [], suggestions: [] };
    const list = Array.isArray(criteria) ? criteria : [criteria];
    const outcome = this.all(list, output, context);
    const suggestions = [...new Set(outcome.suggestions)];
    if (!outcome.pass) suggestions.push(GENERIC_SUGGESTION);
    return {
      valid: outcome.pass,
      issues: [...new Set(outcome.issues)],
      suggestions: [...new Set(suggestions)],
    };
  }

  /** Whether `text` matches an RE2 pattern (used by input validation); bad patterns throw CriteriaError. */
  matches(pattern: string, text: string): boolean {
    return this.regex(pattern, undefined).matcher(text).find();
  }

  /** Why `value` fails a JSON Schema (empty when it passes); a schema that does not compile throws. */
  schemaErrors(schema: Record<string, unknown>, value: unknown): string[] {
    const validate = this.schema(schema);
    if (validate(value) === true) return [];
    return (validate.errors ?? [])
      .slice(0, 10)
      .map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
  }

  /** Checks that every rule can be evaluated, without needing an output. */
  check(criteria: ValidationCriteria | undefined): void {
    if (criteria === undefined) return;
    for (const c of Array.isArray(criteria) ? criteria : [criteria]) this.checkOne(c);
  }

  /** Every rule of every step that cannot be evaluated, as violations (one per rule). */
  checkWorkflow(workflow: Workflow): Violation[] {
    const out: Violation[] = [];
    const visit = (c: ValidationCriterion, path: string) => {
      if ('and' in c || 'or' in c) {
        const key = 'and' in c ? 'and' : 'or';
        ('and' in c ? c.and : c.or).forEach((x, i) => {
          visit(x, `${path}/${key}/${i}`);
        });
      } else if ('not' in c) visit(c.not, `${path}/not`);
      else {
        try {
          this.checkOne(c);
        } catch (error) {
          if (!(error instanceof CriteriaError)) throw error;
          out.push({ path, rule: 'criteria', message: error.message });
        }
      }
    };
    workflow.steps.forEach((step, i) => {
      const steps = isLoopStep(step)
        ? (Array.isArray(step.body) ? step.body : []).map((s, j) => [s, `/steps/${i}/body/${j}`] as const)
        : [[step, `/steps/${i}`] as const];
      for (const [s, path] of steps) {
        if (!isPromptStep(s)) continue;
        const criteria = s.validationCriteria;
        if (criteria === undefined) continue;
        if (Array.isArray(criteria)) {
          criteria.forEach((c, k) => {
            visit(c, `${path}/validationCriteria/${k}`);
          });
        } else visit(criteria, `${path}/validationCriteria`);
      }
    });
    return out;
  }

  private checkOne(c: ValidationCriterion): void {
    if ('and' in c || 'or' in c) {
      for (const x of 'and' in c ? c.and : c.or) this.checkOne(x);
    } else if ('not' in c) this.checkOne(c.not);
    else if (c.type === 'regex') this.regex(c.pattern, c.flags);
    else if (c.type === 'length') checkLength(c);
    else if (c.type === 'schema') this.schema(c.schema);
  }

  private all(list: readonly ValidationCriterion[], output: string, context: Context): Outcome {
    const failed = list.map((c) => this.one(c, output, context)).filter((o) => !o.pass);
    if (failed.length === 0) return PASS;
    return {
      pass: false,
      issues: failed.flatMap((o) => o.issues),
      suggestions: failed.flatMap((o) => o.suggestions),
    };
  }

  private one(c: ValidationCriterion, output: string, context: Context): Outcome {
    if ('and' in c) return withMessage(this.all(c.and, output, context), c.message);
    if ('or' in c) {
      const outcomes = c.or.map((x) => this.one(x, output, context));
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
      const inner = this.one(c.not, output, context);
      if (!inner.pass) return PASS;
      return {
        pass: false,
        issues: [c.message ?? `Output must not satisfy: ${describeCriterion(c.not).join('; ')}`],
        suggestions: [],
      };
    }
    return this.rule(c, output, context);
  }

  private rule(rule: ValidationRule, output: string, context: Context): Outcome {
    if (rule.condition !== undefined && !evaluateCondition(rule.condition, context)) return PASS;
    let pass: boolean;
    let detail: string | undefined;
    switch (rule.type) {
      case 'contains':
        pass = output.includes(rule.value);
        break;
      case 'regex':
        pass = this.regex(rule.pattern, rule.flags).matcher(output).find();
        break;
      case 'length': {
        checkLength(rule);
        const length = codePointLength(output);
        pass =
          (rule.min === undefined || length >= rule.min) && (rule.max === undefined || length <= rule.max);
        break;
      }
      case 'schema': {
        const validate = this.schema(rule.schema);
        let parsed: unknown;
        try {
          parsed = JSON.parse(output);
        } catch (error) {
          pass = false;
          detail = `output is not valid JSON (${(error as Error).message})`;
          break;
        }
        pass = validate(parsed) === true;
        if (!pass) {
          detail = (validate.errors ?? [])
            .slice(0, 5)
            .map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`)
            .join('; ');
        }
        break;
      }
    }
    if (pass) return PASS;
    return {
      pass: false,
      issues: [detail ? `${rule.message} (${detail})` : rule.message],
      suggestions: rule.suggestion ? [rule.suggestion] : [],
    };
  }

  private regex(pattern: string, flags: string | undefined): RE2JS {
    const key = `${flags ?? ''}/${pattern}`;
    const cached = this.regexCache.get(key);
    if (cached) return cached;
    const { RE2JS } = this.lib;
    let bits = 0;
    for (const flag of flags ?? '') {
      if (flag === 'i') bits |= RE2JS.CASE_INSENSITIVE;
      else if (flag === 'm') bits |= RE2JS.MULTILINE;
      else if (flag === 's') bits |= RE2JS.DOTALL;
      else if (flag !== 'u')
        throw new CriteriaError(`regex flag "${flag}" is not supported (use i, m, s)`, 'criteria');
    }
    try {
      const compiled = RE2JS.compile(pattern, bits);
      if (this.regexCache.size > 1000) this.regexCache.clear();
      this.regexCache.set(key, compiled);
      return compiled;
    } catch (error) {
      throw new CriteriaError(
        `regex pattern ${JSON.stringify(pattern)} is invalid: ${(error as Error).message}`,
        'criteria',
      );
    }
  }

  private schema(schema: Record<string, unknown>): ValidateFunction {
    const cached = this.schemaCache.get(schema);
    if (cached) return cached;
    const draft07 = typeof schema.$schema === 'string' && schema.$schema.includes('draft-07');
    const { Ajv, Ajv2020, addFormats } = this.lib;
    const make = <T extends Ajv | Ajv2020>(Ctor: new (opts: Options) => T): T => {
      const instance = new Ctor({ allErrors: true, strict: false, validateFormats: true });
      addFormats(instance);
      return instance;
    };
    if (draft07) this.ajv07 ??= make(Ajv);
    else this.ajv2020 ??= make(Ajv2020);
    const ajv = (draft07 ? this.ajv07 : this.ajv2020) as Ajv | Ajv2020;
    try {
      const compiled = ajv.compile(schema);
      this.schemaCache.set(schema, compiled);
      return compiled;
    } catch (error) {
      throw new CriteriaError(
        `JSON Schema of a schema rule does not compile: ${(error as Error).message}`,
        'schema',
      );
    }
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
  return [...new Set(list.flatMap((c) => describeCriterion(c, context)))];
}

function describeCriterion(c: ValidationCriterion, context?: Context): string[] {
  if ('and' in c) return c.message ? [c.message] : c.and.flatMap((x) => describeCriterion(x, context));
  if ('or' in c) {
    if (c.message) return [c.message];
    const parts = c.or.flatMap((x) => describeCriterion(x, context));
    return parts.length > 0 ? [`One of: ${parts.join(' | ')}`] : [];
  }
  if ('not' in c) {
    if (c.message) return [c.message];
    const parts = describeCriterion(c.not, context);
    return parts.length > 0 ? [`Not: ${parts.join('; ')}`] : [];
  }
  if (context !== undefined && c.condition !== undefined && !evaluateCondition(c.condition, context))
    return [];
  return [c.message];
}
