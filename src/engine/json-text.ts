/**
 * How deep the engine follows nested values, conditions, criteria and template objects. Recursion
 * past a few thousand frames overflows the stack (JSON.stringify itself fails near 10,000 levels), and
 * a RangeError must never escape to the protocol; no real workflow or context nests this deep.
 */
export const MAX_DEPTH = 256;

/** Thrown by `exactJson` for a value nested deeper than MAX_DEPTH; callers turn it into their own error. */
export class NestingError extends Error {
  constructor(readonly depth: number) {
    super(`the value is nested deeper than ${depth} levels`);
    this.name = 'NestingError';
  }
}

/** A marker for the place where a preview stopped (depth or size). */
export const ELLIPSIS = '…';

class Full extends Error {}

interface Writer {
  parts: string[];
  length: number;
  max: number;
  /** Write ELLIPSIS instead of failing past MAX_DEPTH. */
  elide: boolean;
  elided: boolean;
}

function write(w: Writer, text: string): void {
  if (w.length + text.length > w.max) {
    w.parts.push(text.slice(0, Math.max(0, w.max - w.length)));
    w.length = w.max;
    throw new Full();
  }
  w.parts.push(text);
  w.length += text.length;
}

/** JSON.stringify's conversion of one value, or undefined for what it leaves out. */
function jsonScalar(value: unknown): string | undefined {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return value.toString();
    default:
      return undefined;
  }
}

function writeValue(w: Writer, input: unknown, depth: number): boolean {
  let value = input;
  if (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  )
    value = (value as { toJSON: () => unknown }).toJSON();
  // A preview needs no more of a long string than fits; escaping only makes it longer.
  if (typeof value === 'string' && value.length > w.max - w.length) value = value.slice(0, w.max - w.length);
  const scalar = jsonScalar(value);
  if (scalar !== undefined) {
    write(w, scalar);
    return true;
  }
  if (value === null || typeof value !== 'object') return false;
  if (depth >= MAX_DEPTH) {
    if (!w.elide) throw new NestingError(MAX_DEPTH);
    w.elided = true;
    write(w, Array.isArray(value) ? `[${ELLIPSIS}]` : `{${ELLIPSIS}}`);
    return true;
  }
  if (Array.isArray(value)) {
    write(w, '[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) write(w, ',');
      if (!writeValue(w, value[i], depth + 1)) write(w, 'null');
    }
    write(w, ']');
    return true;
  }
  write(w, '{');
  let first = true;
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    write(w, `${first ? '' : ','}${JSON.stringify(key)}:`);
    first = false;
    writeValue(w, v, depth + 1);
  }
  write(w, '}');
  return true;
}

/**
 * JSON text of a plain JSON value, as JSON.stringify makes it, but with a depth limit that fails with
 * NestingError instead of a stack overflow. Undefined for what JSON.stringify leaves out.
 */
export function exactJson(value: unknown): string | undefined {
  const w: Writer = { parts: [], length: 0, max: Number.POSITIVE_INFINITY, elide: false, elided: false };
  return writeValue(w, value, 0) ? w.parts.join('') : undefined;
}

/**
 * At most `maxChars` characters of a value's JSON text, for showing it. The work is bounded by
 * `maxChars` too (a million-element array costs as much as its first few thousand characters), and
 * levels past MAX_DEPTH are shown as ELLIPSIS. `complete` is false when something was left out.
 */
export function previewJson(value: unknown, maxChars: number): { text: string; complete: boolean } {
  const w: Writer = { parts: [], length: 0, max: maxChars, elide: true, elided: false };
  try {
    const written = writeValue(w, value, 0);
    return { text: written ? w.parts.join('') : '', complete: !w.elided };
  } catch (error) {
    if (error instanceof Full) return { text: w.parts.join(''), complete: false };
    throw error;
  }
}

/** Whether a value nests objects or arrays deeper than `max` levels (iterative, so any depth is safe). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const [v, depth] = item;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= max) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v)) pending.push([x, depth + 1]);
  }
  return false;
}
