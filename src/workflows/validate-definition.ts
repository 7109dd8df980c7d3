import type * as z from 'zod';
import { didYouMean } from '../engine/nearest.js';
import { expressionsIn, parseReference } from '../engine/templating.js';
import { workrailViolations } from '../engine/workrail.js';
import type { Violation } from '../model/violation.js';
import { isCommandStep, isLoopStep, modelSchemas, type Workflow } from '../model/workflow.js';
import { propertyNamesAt } from './schema-names.js';

/**
 * `workflow` is the model whenever the schema passed, even when a rule beyond it failed (duplicate
 * step ids, loop bodies, templates): later checks can still run on it, so one pass reports everything.
 */
export type DefinitionResult =
  | { ok: true; workflow: Workflow }
  | { ok: false; violations: Violation[]; workflow?: Workflow };

/** Checks a parsed definition against the workflow schema and the rules a schema cannot express. */
export function validateDefinition(data: unknown): DefinitionResult {
  const parsed = modelSchemas().WorkflowSchema.safeParse(data);
  if (!parsed.success) return { ok: false, violations: issuesToViolations(parsed.error.issues, data) };
  const semantic = semanticViolations(parsed.data);
  return semantic.length > 0
    ? { ok: false, violations: semantic, workflow: parsed.data }
    : { ok: true, workflow: parsed.data };
}

export function toPointer(path: ReadonlyArray<PropertyKey>): string {
  return path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let cur = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** What a value is, for "must be a string, not a number". */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `a ${typeof value}`;
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  object: 'a mapping (object)',
  array: 'a list (array)',
  int: 'a whole number',
};

function describeValue(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return `array(${value.length})`;
  if (typeof value === 'object') return 'object';
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

type Issue = z.core.$ZodIssue;

/** Unknown properties named in one violation; the rest are counted. */
const MAX_KEYS_SHOWN = 10;

/** Zod issues as violations (JSON Pointer paths), the closest branch of a union only. */
export function issuesToViolations(
  issues: readonly Issue[],
  root: unknown,
  base: PropertyKey[] = [],
  /** The names allowed at a path, for did-you-mean (default: the workflow schema's). */
  namesAt: (path: readonly PropertyKey[]) => string[] = propertyNamesAt,
): Violation[] {
  const out: Violation[] = [];
  for (const issue of issues) {
    const path = [...base, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // Report the alternative that came closest rather than every branch's complaints; a branch
      // that only says "wrong type here" loses a tie (a string duration is not "expected number").
      // Unknown keys count one per key: a command step is not "a prompt step with two unknown keys".
      const score = (branch: readonly Issue[]) =>
        branch.reduce((n, i) => n + (i.code === 'unrecognized_keys' ? i.keys.length : 1), 0) +
        (branch.every((i) => i.code === 'invalid_type' && i.path.length === 0) ? 0.5 : 0);
      const best = [...issue.errors].sort((a, b) => score(a) - score(b))[0] ?? [];
      const nearest = best.filter((i) => !(i.code === 'unrecognized_keys' && best.length > 1));
      out.push(...issuesToViolations(nearest.length > 0 ? nearest : best, root, path, namesAt));
      continue;
    }
    if (issue.code === 'unrecognized_keys') out.push(...unknownKeyViolations(issue.keys, path, namesAt));
    else out.push(issueToViolation(issue, path, root));
  }
  return dedupe(out);
}

/**
 * One violation per unknown property, at the property itself (so its line and column are the key's),
 * with the nearest allowed names; the rest of a long list is counted in one more.
 */
function unknownKeyViolations(
  keys: readonly string[],
  path: PropertyKey[],
  namesAt: (path: readonly PropertyKey[]) => string[],
): Violation[] {
  let known: string[] | undefined;
  const out: Violation[] = keys.slice(0, MAX_KEYS_SHOWN).map((key) => {
    known ??= namesAt(path);
    const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
    return {
      path: toPointer([...path, key]),
      rule: 'additionalProperties',
      message: `unknown property "${shown}"${didYouMean(key, known)}`,
      actual: shown,
    };
  });
  if (keys.length > MAX_KEYS_SHOWN) {
    out.push({
      path: toPointer(path),
      rule: 'additionalProperties',
      message: `${keys.length - MAX_KEYS_SHOWN} more unknown properties`,
      actual: String(keys.length),
    });
  }
  return out;
}

function issueToViolation(issue: Issue, path: PropertyKey[], root: unknown): Violation {
  const pointer = toPointer(path);
  const actualValue = valueAt(root, path);
  switch (issue.code) {
    case 'invalid_type':
      return {
        path: pointer,
        rule: actualValue === undefined ? 'required' : 'type',
        message:
          actualValue === undefined
            ? `${path.length > 0 ? `"${String(path.at(-1))}"` : 'a value'} is required`
            : `must be ${ARTICLE[issue.expected] ?? issue.expected}, not ${kindOf(actualValue)}`,
        expected: issue.expected,
        actual: describeValue(actualValue),
      };
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? 'minimum' : 'maximum';
      const limit = String(issue.code === 'too_small' ? issue.minimum : issue.maximum);
      return {
        path: pointer,
        rule: issue.origin === 'string' || issue.origin === 'array' ? `${bound}Length` : bound,
        message: issue.message,
        expected: `${bound === 'minimum' ? '>=' : '<='} ${limit}`,
        actual: describeValue(actualValue),
      };
    }
    case 'invalid_format':
      return {
        path: pointer,
        rule: 'pattern',
        // A schema-authored message says what the pattern means; zod's default only quotes it.
        message: issue.message.startsWith('Invalid')
          ? `must match ${'pattern' in issue && issue.pattern ? issue.pattern : issue.format}`
          : issue.message,
        expected: 'pattern' in issue && issue.pattern ? String(issue.pattern) : issue.format,
        actual: describeValue(actualValue),
      };
    case 'invalid_value':
      return {
        path: pointer,
        rule: 'enum',
        message: issue.message,
        expected: issue.values.map((v) => JSON.stringify(v)).join(' | '),
        actual: describeValue(actualValue),
      };
    default: {
      // A refinement may name its rule (PromptStep's promptSource).
      const rule = (issue as { params?: { rule?: unknown } }).params?.rule;
      return {
        path: pointer,
        rule: typeof rule === 'string' ? rule : issue.code,
        message: issue.message,
        actual: describeValue(actualValue),
      };
    }
  }
}

/** Each finding once (the same path, rule and message reported twice). */
export function dedupe(violations: Violation[]): Violation[] {
  const seen = new Set<string>();
  return violations.filter((v) => {
    const key = `${v.path}|${v.rule}|${v.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function semanticViolations(workflow: Workflow): Violation[] {
  const out: Violation[] = [];
  const seen = new Map<string, string>();
  const note = (id: string, path: string) => {
    const first = seen.get(id);
    if (first !== undefined) {
      out.push({
        path,
        rule: 'uniqueStepId',
        message: `step id "${id}" is already used at ${first}`,
        actual: id,
      });
    } else {
      seen.set(id, path);
    }
  };
  workflow.steps.forEach((step, i) => {
    note(step.id, `/steps/${i}/id`);
    if (isLoopStep(step) && Array.isArray(step.body)) {
      step.body.forEach((inner, j) => {
        note(inner.id, `/steps/${i}/body/${j}/id`);
      });
    }
  });
  const bodyRefs = new Map<string, number>();
  const topLevel = new Map<string, Workflow['steps'][number]>();
  for (const step of workflow.steps) if (!topLevel.has(step.id)) topLevel.set(step.id, step);
  workflow.steps.forEach((step, i) => {
    if (!isLoopStep(step) || typeof step.body !== 'string') return;
    const target = topLevel.get(step.body);
    const path = `/steps/${i}/body`;
    if (target === undefined) {
      out.push({
        path,
        rule: 'loopBody',
        message: `loop body names unknown step "${step.body}"`,
        actual: step.body,
      });
    } else if (target === step || isLoopStep(target)) {
      out.push({
        path,
        rule: 'loopBody',
        message: `loop body "${step.body}" must be a prompt step other than the loop itself`,
        actual: step.body,
      });
    } else if (bodyRefs.has(step.body)) {
      out.push({
        path,
        rule: 'loopBody',
        message: `step "${step.body}" is already the body of another loop`,
        actual: step.body,
      });
    }
    bodyRefs.set(step.body, i);
  });
  out.push(...workrailViolations(workflow));
  out.push(...templateViolations(workflow));
  return out;
}

/** Whether a step ran before a template place (its output is then available there). */
export interface RanBefore {
  has(stepId: string): boolean;
}

/** Places that may hold `${{ }}` templates, in run order, with the step ids that ran before each. */
export function templatePlaces(workflow: Workflow): { path: string; value: unknown; before: RanBefore }[] {
  const places: { path: string; value: unknown; before: RanBefore }[] = [];
  // Run order by index instead of a set per place: linear however many steps there are.
  const order = new Map<string, number>();
  const ranBefore = (position: number): RanBefore => ({
    has: (id) => (order.get(id) ?? Number.POSITIVE_INFINITY) < position,
  });
  for (const [name, spec] of Object.entries(workflow.inputs ?? {})) {
    if (spec.provider?.with)
      places.push({ path: `/inputs/${name}/provider/with`, value: spec.provider.with, before: ranBefore(0) });
  }
  const visit = (step: Workflow['steps'][number], path: string) => {
    const before = ranBefore(order.size);
    if (isCommandStep(step)) {
      if (step.with) places.push({ path: `${path}/with`, value: step.with, before });
      if (step.body !== undefined) places.push({ path: `${path}/body`, value: step.body, before });
    } else if (!isLoopStep(step)) {
      places.push({ path: `${path}/title`, value: step.title, before });
      if (step.prompt !== undefined) places.push({ path: `${path}/prompt`, value: step.prompt, before });
      if (step.promptBlocks !== undefined)
        places.push({ path: `${path}/promptBlocks`, value: step.promptBlocks, before });
      if (step.promptFragments !== undefined)
        places.push({ path: `${path}/promptFragments`, value: step.promptFragments, before });
      if (step.guidance) places.push({ path: `${path}/guidance`, value: step.guidance, before });
      // A delegation's context is rendered for its children when the step is reached.
      const d = step.delegate;
      if (d?.context !== undefined)
        places.push({ path: `${path}/delegate/context`, value: d.context, before });
      d?.children?.forEach((child, k) => {
        if (child.context !== undefined)
          places.push({ path: `${path}/delegate/children/${k}/context`, value: child.context, before });
      });
    }
    if (!order.has(step.id)) order.set(step.id, order.size);
  };
  workflow.steps.forEach((step, i) => {
    if (isLoopStep(step) && Array.isArray(step.body)) {
      step.body.forEach((inner, j) => {
        visit(inner, `/steps/${i}/body/${j}`);
      });
    }
    visit(step, `/steps/${i}`);
  });
  if (workflow.final_output !== undefined)
    places.push({
      path: '/final_output',
      value: workflow.final_output,
      before: ranBefore(Number.POSITIVE_INFINITY),
    });
  return places;
}

export interface TemplateUse {
  /** Where the template is (a JSON Pointer). */
  path: string;
  /** The text between `${{` and `}}`. */
  expr: string;
  ref: ReturnType<typeof parseReference>;
  before: RanBefore;
}

const usesCache = new WeakMap<Workflow, TemplateUse[]>();

/** Every `${{ }}` expression of a workflow with its place, computed once per workflow object. */
export function templateUses(workflow: Workflow): TemplateUse[] {
  let uses = usesCache.get(workflow);
  if (uses === undefined) {
    uses = [];
    for (const place of templatePlaces(workflow)) {
      for (const expr of expressionsIn(place.value))
        uses.push({ path: place.path, expr, ref: parseReference(expr), before: place.before });
    }
    usesCache.set(workflow, uses);
  }
  return uses;
}

function templateViolations(workflow: Workflow): Violation[] {
  const out: Violation[] = [];
  const inputs = new Set(Object.keys(workflow.inputs ?? {}));
  for (const { path, expr, ref, before } of templateUses(workflow)) {
    const fault = (message: string) =>
      out.push({ path, rule: 'templateReference', message, actual: `\${{ ${expr} }}` });
    if (ref === undefined)
      fault(`"\${{ ${expr} }}" is not inputs.<name>, steps.<id>.output[.path] or env.<NAME>`);
    else if (ref.kind === 'inputs' && !inputs.has(ref.name))
      fault(`the workflow declares no input "${ref.name}"`);
    else if (ref.kind === 'steps' && !before.has(ref.step))
      fault(`step "${ref.step}" does not run before this point, so its output is not available`);
  }
  return out;
}
