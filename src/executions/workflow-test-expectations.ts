// What must follow a workflow test's scenario (its `expect`), checked against what the walk recorded.
import { isDeepStrictEqual } from 'node:util';
import type { Context } from '../engine/conditions.js';
import { isTerminal } from '../engine/state-machine.js';
import type { Expectation } from '../workflows/test-format.js';

import { shown } from './workflow-test-doubles.js';
import type { ChildRun, Rejection, ScenarioResult } from './workflow-test-results.js';

/** Whether `actual` holds everything `expected` names (objects by subset, anything else deep-equal). */
export function holds(expected: unknown, actual: unknown): boolean {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const record = actual as Record<string, unknown>;
    return Object.entries(expected as Record<string, unknown>).every(([k, v]) => holds(v, record[k]));
  }
  return isDeepStrictEqual(expected, actual);
}

/** What a scenario's run left behind, for its expectations. */
export type RunFacts = Omit<ScenarioResult, 'passed' | 'failures'> & {
  finalContext: Context;
  /** Each child's context at the end. */
  childContexts?: ReadonlyMap<ChildRun, Context>;
};

type WantedRejection = { step: string; message?: string | undefined };

/** The refusals expected against those that happened: a line saying how they differ, or undefined. */
function rejectedLine(where: string, expected: readonly WantedRejection[], got: readonly Rejection[]) {
  const matches = (want: WantedRejection, r: Rejection | undefined) =>
    r !== undefined &&
    r.step === want.step &&
    (want.message === undefined ||
      r.issues.some((i) => i.toLowerCase().includes((want.message as string).toLowerCase())));
  const wrong = expected.findIndex((want, i) => !matches(want, got[i]));
  if (wrong === -1 && expected.length === got.length) return undefined;
  const lines = got.map((r) => `${r.step}: ${r.issues.join('; ')}`);
  return `${where}: expected ${expected.length} refused report(s) [${expected
    .map((r) => (r.message ? `${r.step}: ${shown(r.message)}` : r.step))
    .join(', ')}], got ${got.length}${lines.length > 0 ? ` [${lines.join(' | ')}]` : ''}`;
}

const sorted = (names: readonly string[]) => [...names].sort();

/** What each delegating step's children were expected to do that they did not. */
function childrenUnmet(expect: NonNullable<Expectation['children']>, result: RunFacts): string[] {
  const out: string[] = [];
  for (const [step, want] of Object.entries(expect)) {
    const runs = (result.delegations ?? []).filter((d) => d.step === step);
    const at = `children.${step}`;
    if (runs.length === 0) {
      out.push(`${at}: expected the step to hand its work to children, but it never did`);
      continue;
    }
    const children = runs.flatMap((r) => r.children);
    const lists = {
      completed: (c: ChildRun) => c.state === 'completed',
      failed: (c: ChildRun) => c.state === 'failed' || c.state === 'diverged',
      abandoned: (c: ChildRun) => c.state === 'abandoned',
      open: (c: ChildRun) => !isTerminal(c.state),
    } as const;
    for (const [list, picks] of Object.entries(lists) as [keyof typeof lists, (c: ChildRun) => boolean][]) {
      const expected = want[list];
      if (expected === undefined) continue;
      const got = children.filter(picks).map((c) => c.name);
      if (!isDeepStrictEqual(sorted(expected), sorted(got)))
        out.push(`${at}.${list}: expected [${sorted(expected).join(', ')}], got [${sorted(got).join(', ')}]`);
    }
    const last = runs.at(-1);
    if (want.join !== undefined && last?.join !== want.join)
      out.push(`${at}.join: expected ${want.join}, got ${last?.join}`);
    const timeouts = runs.reduce((n, r) => n + r.timeouts, 0);
    if (want.timeouts !== undefined && timeouts !== want.timeouts)
      out.push(`${at}.timeouts: expected ${want.timeouts}, got ${timeouts}`);
    for (const [name, child] of Object.entries(want.each ?? {})) {
      const ran = children.filter((c) => c.name === name).at(-1);
      const where = `${at}.each.${name}`;
      if (ran === undefined) {
        out.push(
          `${where}: no child "${name}" was created (children: ${children.map((c) => c.name).join(', ') || 'none'})`,
        );
        continue;
      }
      if (child.state !== undefined && ran.state !== child.state)
        out.push(`${where}.state: expected ${child.state}, got ${ran.state}`);
      if (child.path !== undefined && !isDeepStrictEqual(child.path, ran.path))
        out.push(`${where}.path: expected [${child.path.join(', ')}], got [${ran.path.join(', ')}]`);
      if (child.rejected !== undefined) {
        const line = rejectedLine(`${where}.rejected`, child.rejected, ran.rejected);
        if (line !== undefined) out.push(line);
      }
      const context = result.childContexts?.get(ran) ?? {};
      for (const [key, value] of Object.entries(child.context ?? {})) {
        if (!holds(value, context[key]))
          out.push(`${where}.context.${key}: expected ${shown(value)}, got ${shown(context[key])}`);
      }
    }
  }
  return out;
}

/** What a scenario expected that did not happen, each in a line. */
export function unmet(expect: Expectation, result: RunFacts): string[] {
  const out: string[] = [];
  if (expect.error !== undefined) {
    const { code, message } = expect.error;
    if (result.error === undefined) out.push(`error: expected ${code ?? 'an error'}, but no call failed`);
    else {
      if (code !== undefined && code.toLowerCase() !== result.error.code.toLowerCase())
        out.push(`error: expected ${code}, got ${result.error.code}: ${result.error.message}`);
      if (message !== undefined && !result.error.message.toLowerCase().includes(message.toLowerCase()))
        out.push(
          `error: expected a message containing ${shown(message)}, got ${shown(result.error.message)}`,
        );
    }
  } else if (result.error !== undefined) {
    out.push(`unexpected error ${result.error.code}: ${result.error.message}`);
  }
  const state =
    expect.state ?? (expect.stopped_at !== undefined || expect.error !== undefined ? undefined : 'completed');
  if (state !== undefined && result.state !== state) {
    const last = result.rejected.at(-1);
    const why =
      result.stopped_at !== undefined
        ? ` (on "${result.stopped_at}"${last?.step === result.stopped_at ? `, refused: ${last.issues.join('; ')}` : ''})`
        : '';
    out.push(`state: expected ${state}, got ${result.state ?? 'never started'}${why}`);
  }
  if (expect.stopped_at !== undefined && result.stopped_at !== expect.stopped_at)
    out.push(
      `stopped_at: expected "${expect.stopped_at}", got ${result.stopped_at ? `"${result.stopped_at}"` : 'none'}`,
    );
  if (expect.path !== undefined && !isDeepStrictEqual(expect.path, result.path)) {
    const at = expect.path.findIndex((id, i) => result.path[i] !== id);
    const where = at === -1 ? expect.path.length : at;
    out.push(
      `path: expected [${expect.path.join(', ')}], got [${result.path.join(', ')}] (first difference at position ${where + 1})`,
    );
  }
  const visits = (id: string) => result.path.filter((p) => p === id).length;
  for (const [id, n] of Object.entries(expect.visits ?? {})) {
    if (visits(id) !== n) out.push(`visits: expected "${id}" ${n} time(s), got ${visits(id)}`);
  }
  for (const id of expect.skipped ?? []) {
    if (visits(id) > 0) out.push(`skipped: expected "${id}" never entered, got ${visits(id)} time(s)`);
  }
  if (expect.rejected !== undefined) {
    const line = rejectedLine('rejected', expect.rejected, result.rejected);
    if (line !== undefined) out.push(line);
  }
  for (const [id, n] of Object.entries(expect.loops ?? {})) {
    const got = result.loops[id] ?? 0;
    if (got !== n) out.push(`loops: expected "${id}" to run ${n} round(s), got ${got}`);
  }
  if (expect.context !== undefined) {
    for (const [key, value] of Object.entries(expect.context)) {
      if (!holds(value, result.finalContext[key]))
        out.push(`context.${key}: expected ${shown(value)}, got ${shown(result.finalContext[key])}`);
    }
  }
  for (const [id, want] of Object.entries(expect.requests ?? {})) {
    const sent = result.requests[id] ?? [];
    const wanted = Array.isArray(want) ? want : [want];
    wanted.forEach((request, i) => {
      if (!holds(request, sent[i]))
        out.push(
          `requests.${id}[${i}]: expected ${shown(request)}, got ${sent[i] ? shown(sent[i]) : 'no request'}`,
        );
    });
    if (Array.isArray(want) && sent.length !== want.length)
      out.push(`requests.${id}: expected ${want.length} call(s), got ${sent.length}`);
  }
  if ('final_output' in expect && !isDeepStrictEqual(expect.final_output, result.final_output))
    out.push(`final_output: expected ${shown(expect.final_output)}, got ${shown(result.final_output)}`);
  if (expect.children !== undefined) out.push(...childrenUnmet(expect.children, result));
  return out;
}
