import type { Condition } from '../model/workflow.js';
import { fail } from './errors.js';
import { MAX_DEPTH } from './json-text.js';

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

/**
 * Structural equality of JSON values. Iterative, so a deeply nested context value is compared like
 * any other instead of overflowing the stack.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  const pending: [unknown, unknown][] = [[a, b]];
  for (let pair = pending.pop(); pair !== undefined; pair = pending.pop()) {
    const [x, y] = pair;
    if (Object.is(x, y)) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pending.push([x[i], y[i]]);
      continue;
    }
    const kx = Object.keys(x);
    if (kx.length !== Object.keys(y).length) return false;
    for (const k of kx) {
      if (!Object.hasOwn(y, k)) return false;
      pending.push([(x as Context)[k], (y as Context)[k]]);
    }
  }
  return true;
}

/** A condition nested past MAX_DEPTH comes from a definition no schema check should have let through. */
function tooDeep(): never {
  fail({
    code: 'workflow_invalid',
    message: 'Invalid workflow',
    violations: [
      { path: '', rule: 'maxDepth', message: `a condition is nested deeper than ${MAX_DEPTH} levels` },
    ],
  });
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return Boolean(value);
}

const TRUE_WORDS = new Set(['true', '1', 'yes']);
const FALSE_WORDS = new Set(['false', '0', 'no']);

/**
 * Equality as WorkRail compares condition values, for every workflow: strings ignore case and
 * surrounding spaces ("Small" equals "small "), a numeric string equals its number ("10" equals 10),
 * "true"/"yes"/"1" equal true and "false"/"no"/"0" equal false, and a missing value equals null. Arrays
 * and objects compare by structure (WorkRail compares them by identity, so never equal: a superset).
 */
export function looseEquals(a: unknown, b: unknown): boolean {
  if (a === undefined || a === null || b === undefined || b === null)
    return (a === undefined || a === null) && (b === undefined || b === null);
  if (typeof a === 'string' && typeof b === 'string')
    return a.trim().toLowerCase() === b.trim().toLowerCase();
  if ((typeof a === 'string' && typeof b === 'number') || (typeof a === 'number' && typeof b === 'string')) {
    const x = Number(a);
    const y = Number(b);
    // Number('') is 0; WorkRail's coercion has the same quirk, and so equals it: "" equals 0.
    if (!Number.isNaN(x) && !Number.isNaN(y)) return x === y;
  }
  if (typeof a === 'string' && typeof b === 'boolean')
    return (b ? TRUE_WORDS : FALSE_WORDS).has(a.trim().toLowerCase());
  if (typeof a === 'boolean' && typeof b === 'string') return looseEquals(b, a);
  return deepEqual(a, b);
}

/**
 * The value a condition's `var` names: the context key of that exact name (WorkRail's flat lookup),
 * else the dotted path ("ticket.priority").
 */
function conditionValue(context: Context, name: string): unknown {
  return Object.hasOwn(context, name) ? context[name] : readPath(context, name);
}

/**
 * Evaluates a condition. `equals`, `not_equals` and `in` compare as looseEquals does (WorkRail's rule),
 * so a missing variable equals null and nothing else. Numeric comparisons hold for numbers only (a
 * missing variable or a string is false), text operators ignore case, and a bare `{ var }` tests
 * truthiness (a missing variable, 0, "", false and [] are false).
 */
export function evaluateCondition(condition: Condition, context: Context): boolean {
  return evaluate(condition, context, 0);
}

function evaluate(condition: Condition, context: Context, depth: number): boolean {
  if (depth > MAX_DEPTH) tooDeep();
  if ('and' in condition) return condition.and.every((c) => evaluate(c, context, depth + 1));
  if ('or' in condition) return condition.or.some((c) => evaluate(c, context, depth + 1));
  if ('not' in condition) return !evaluate(condition.not, context, depth + 1);
  const value = conditionValue(context, condition.var);
  let tested = false;
  let result = true;
  const check = (present: boolean, holds: () => boolean) => {
    if (!present) return;
    tested = true;
    result &&= holds();
  };
  const num = typeof value === 'number' && Number.isFinite(value) ? value : undefined;
  check('equals' in condition, () => looseEquals(value, condition.equals));
  check('not_equals' in condition, () => !looseEquals(value, condition.not_equals));
  check(condition.in !== undefined, () => (condition.in ?? []).some((v) => looseEquals(value, v)));
  // Text operators read strings, numbers and booleans as text, and a list as its items joined by
  // commas (as WorkRail reads it, so `contains` finds an item); anything else reads as empty.
  const lower = () =>
    typeof value === 'string' ||
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    Array.isArray(value)
      ? String(value).trim().toLowerCase()
      : '';
  check(condition.contains !== undefined, () => lower().includes((condition.contains ?? '').toLowerCase()));
  check(condition.startsWith !== undefined, () =>
    lower().startsWith((condition.startsWith ?? '').trim().toLowerCase()),
  );
  check(condition.endsWith !== undefined, () =>
    lower().endsWith((condition.endsWith ?? '').trim().toLowerCase()),
  );
  check(condition.gt !== undefined, () => num !== undefined && num > (condition.gt as number));
  check(condition.gte !== undefined, () => num !== undefined && num >= (condition.gte as number));
  check(condition.lt !== undefined, () => num !== undefined && num < (condition.lt as number));
  check(condition.lte !== undefined, () => num !== undefined && num <= (condition.lte as number));
  return tested ? result : truthy(value);
}

/** Every variable a condition reads, in order (with repeats). */
export function conditionVariables(condition: Condition | undefined): string[] {
  const out: string[] = [];
  const visit = (c: Condition, depth: number): void => {
    if (depth > MAX_DEPTH) tooDeep();
    if ('and' in c) for (const x of c.and) visit(x, depth + 1);
    else if ('or' in c) for (const x of c.or) visit(x, depth + 1);
    else if ('not' in c) visit(c.not, depth + 1);
    else out.push(c.var);
  };
  if (condition !== undefined) visit(condition, 0);
  return out;
}
