/**
 * The model's limits: durations (a cap written into the JSON Schema itself), delegation, approval,
 * command-step and loop caps, and the patterns of child and check names. The docs quote these numbers.
 */
import * as z from 'zod';

/**
 * A regular expression source matching the decimal integers 0..max (no leading zeros), so the JSON
 * Schema itself refuses an out-of-range duration string.
 */
export function upToPattern(max: number): string {
  const digits = String(max);
  const alternatives = ['0'];
  // Every number with fewer digits than max, then those with as many digits, digit by digit.
  if (digits.length === 2) alternatives.push('[1-9]');
  if (digits.length > 2) alternatives.push(`[1-9]\\d{0,${digits.length - 2}}`);
  for (let i = 0; i < digits.length; i++) {
    const d = Number(digits[i]);
    const low = i === 0 ? 1 : 0;
    if (d - 1 < low) continue;
    const range = d - 1 === low ? String(low) : `[${low}-${d - 1}]`;
    const rest = digits.length - i - 1;
    alternatives.push(
      `${digits.slice(0, i)}${range}${rest === 0 ? '' : rest === 1 ? '\\d' : `\\d{${rest}}`}`,
    );
  }
  if (max > 0) alternatives.push(digits);
  return `(?:${[...new Set(alternatives)].join('|')})`;
}

/** "1m", "90s" or "1500ms" for a number of milliseconds, in the largest unit that divides it. */
export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The longest an approval may wait before it counts as rejected (7 days). */
export const APPROVAL_MAX_TIMEOUT_MS = 604_800_000;

/** The longest a delegating step waits for its children before the wait times out (7 days). */
export const DELEGATION_MAX_TIMEOUT_MS = 604_800_000;

/** Most child executions one delegating step creates (a fixed list, a count, or one per list item). */
export const DELEGATION_MAX_CHILDREN = 50;

/** A child's name within its step: it names the child's results in the parent's context. */
export const CHILD_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$';

/** A check name: the key of an operator-defined check (WORKFLOWLOOKUP_CHECKS_FILE). */
export const CHECK_NAME_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,63}$';

/**
 * A duration of at most `maxMs`: milliseconds, or a number with ms, s or m ("500ms", "2s", "1m"). The
 * cap is part of the schema (number maximum, string pattern), so no path can accept a longer one.
 */
export function durationSchema(maxMs: number) {
  const units: [string, number][] = [
    ['ms', 1],
    ['s', 1000],
    ['m', 60_000],
  ];
  const pattern = `^(?:${units.map(([unit, size]) => `${upToPattern(Math.floor(maxMs / size))}${unit}`).join('|')})$`;
  const limit = `at most ${formatDuration(maxMs)} (${maxMs}ms)`;
  return z
    .union([
      z
        .number()
        .int()
        .min(0)
        .max(maxMs, { message: `must be ${limit}` }),
      z.string().regex(new RegExp(pattern), { message: `must be "<n>ms", "<n>s" or "<n>m", ${limit}` }),
    ])
    .describe(`Milliseconds, or "500ms" / "2s" / "1m"; ${limit}`);
}

/** Upper bounds of command-step durations and retries (docs/automation.md, authoring guide). */
export const COMMAND_LIMITS = {
  /** One request of a command step. */
  timeoutMs: 300_000,
  /** The pause between two polls of `repeat`. */
  everyMs: 600_000,
  /** The whole of a `repeat`. */
  repeatTimeoutMs: 3_600_000,
  /** Requests of a `repeat`. */
  maxAttempts: 1000,
} as const;

/** Iteration cap of every loop. */
export const MAX_LOOP_ITERATIONS = 10_000;
