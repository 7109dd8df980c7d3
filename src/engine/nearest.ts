/**
 * "Did you mean" for names a person typed: property names in a workflow file, workflow ids, URL schemes.
 * The work is bounded whatever the input: names are compared only up to MAX_COMPARED characters, at
 * most MAX_CANDIDATES known names are looked at, and the edit distance stops as soon as it exceeds
 * the largest distance that could still be suggested.
 */

/** Characters of each name compared; longer names are cut (a typo hint never needs more). */
export const MAX_COMPARED = 64;
/** Known names looked at per question. */
export const MAX_CANDIDATES = 10_000;
/** Edit-distance cells computed for one question at most, across every known name. */
const MAX_CELLS = 200_000;

/**
 * Edit distance of `a` and `b` (insertions, deletions, substitutions, and swaps of two neighbours:
 * `titel` is one edit from `title`), or `limit + 1` once it is certain to exceed `limit`.
 */
export function boundedDistance(
  a: string,
  b: string,
  limit: number,
  budget: { cells: number } = { cells: 0 },
): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      let value = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, (before[j - 2] as number) + 1);
      next.push(value);
      if (value < best) best = value;
    }
    budget.cells += b.length;
    if (best > limit) return limit + 1;
    before = row;
    row = next;
  }
  return row[b.length] as number;
}

const normal = (name: string) =>
  name
    .slice(0, MAX_COMPARED)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');

/**
 * The known names nearest to `unknown` (at most `limit`, nearest first, then alphabetical): the same
 * letters in another form (`workflowId` for `workflow_id`), one containing the other (`coding-task`
 * for `coding-task-workflow`), or a few edits apart (a quarter of the shorter name, at least one).
 * Only the nearest distance is kept: several far candidates mislead more than they help.
 */
export function nearestNames(unknown: string, known: Iterable<string>, limit = 3): string[] {
  const names = [...new Set(known)].slice(0, MAX_CANDIDATES);
  const target = normal(unknown);
  if (target === '') return [];
  const scored: { name: string; d: number }[] = [];
  const budget = { cells: 0 };
  for (const name of names) {
    if (budget.cells > MAX_CELLS) break;
    if (name === unknown) continue;
    const n = normal(name);
    if (n === '') continue;
    const allowed = Math.max(1, Math.floor(Math.min(n.length, target.length) / 4));
    const d =
      n === target
        ? 0
        : (n.length >= 3 && target.includes(n)) || (target.length >= 3 && n.includes(target))
          ? 1
          : boundedDistance(target, n, allowed, budget);
    if (d <= allowed) scored.push({ name, d });
  }
  const best = Math.min(...scored.map((s) => s.d));
  return scored
    .filter((s) => s.d === best)
    .sort((x, y) => x.name.localeCompare(y.name))
    .slice(0, limit)
    .map((s) => s.name);
}

/** `; did you mean "a" or "b"?`, or nothing when no known name is near. */
export function didYouMean(unknown: string, known: Iterable<string>): string {
  const names = nearestNames(unknown, known);
  return names.length > 0 ? `; did you mean ${names.map((n) => `"${n}"`).join(' or ')}?` : '';
}
