import type { Condition } from '../workflows/model.js';

export type Context = Record<string, unknown>;

/**
 * Reads a dotted path ("ticket.priority", "items.0.name") from the context. Own properties only, so a
 * path such as "constructor" or "__proto__" never reaches the prototype chain.
 */
export function readPath(context: Context, path: string): unknown {
  let cur: unknown = context;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** A plain object as a record, anything else as an empty one (for values read from client context). */
export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Context)[k], (b as Context)[k]))
  );
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return Boolean(value);
}

/**
 * Evaluates a condition. A missing variable is `undefined`: `equals` is false (unless it equals
 * `null`, which a missing variable does not match either), `not_equals` is true, every numeric
 * comparison is false, and a bare `{ var }` test is false. Numeric comparisons are false for
 * non-numbers; they never coerce strings.
 */
export function evaluateCondition(condition: Condition, context: Context): boolean {
  if ('and' in condition) return condition.and.every((c) => evaluateCondition(c, context));
  if ('or' in condition) return condition.or.some((c) => evaluateCondition(c, context));
  if ('not' in condition) return !evaluateCondition(condition.not, context);
  const value = readPath(context, condition.var);
  let tested = false;
  let result = true;
  const check = (present: boolean, holds: () => boolean) => {
    if (!present) return;
    tested = true;
    result &&= holds();
  };
  const num = typeof value === 'number' && Number.isFinite(value) ? value : undefined;
  check('equals' in condition, () => value !== undefined && deepEqual(value, condition.equals));
  check('not_equals' in condition, () => value === undefined || !deepEqual(value, condition.not_equals));
  check(condition.gt !== undefined, () => num !== undefined && num > (condition.gt as number));
  check(condition.gte !== undefined, () => num !== undefined && num >= (condition.gte as number));
  check(condition.lt !== undefined, () => num !== undefined && num < (condition.lt as number));
  check(condition.lte !== undefined, () => num !== undefined && num <= (condition.lte as number));
  return tested ? result : truthy(value);
}

/** Every variable a condition reads, in order (with repeats). */
export function conditionVariables(condition: Condition | undefined): string[] {
  if (condition === undefined) return [];
  if ('and' in condition) return condition.and.flatMap(conditionVariables);
  if ('or' in condition) return condition.or.flatMap(conditionVariables);
  if ('not' in condition) return conditionVariables(condition.not);
  return [condition.var];
}
