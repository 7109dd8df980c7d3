/**
 * "Did you mean" hints for unknown method, tool and argument names. The unknown name is the client's
 * text and can be megabytes long, so the work is bounded whatever it is: a name much longer than every
 * known one gets no hint without being read, at most MAX_COMPARED characters are ever compared, and
 * every comparison stops once it cannot come close enough (see `closest`).
 */

/** Longest unknown name that is compared at all (known names are far shorter). */
export const MAX_COMPARED = 96;
/** Edit-distance cells computed for one hint at most, across every known name. */
const MAX_CELLS = 100_000;

/**
 * Edit distance (Levenshtein) between two short names, or `limit + 1` as soon as it must exceed
 * `limit` (a row whose every cell is over the limit only grows). `budget.cells` counts the work.
 */
function distance(a: string, b: string, limit: number, budget: { cells: number }): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      const cell = Math.min(
        above + 1,
        (row[j - 1] as number) + 1,
        diagonal + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      row[j] = cell;
      if (cell < best) best = cell;
      diagonal = above;
    }
    budget.cells += b.length;
    if (best > limit) return limit + 1;
  }
  return row[b.length] as number;
}

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * The known names closest to an unknown one (at most three), for "did you mean" answers: close in
 * spelling, or the same words in another form (`workflowId` for `workflow_id`, `workflow.start` for
 * `workflow_start`). O(known names × MAX_COMPARED²) at worst, whatever the unknown name's length.
 */
export function closest(unknown: string, known: Iterable<string>, limit = 3): string[] {
  const names = [...new Set(known)];
  const longest = names.reduce((max, n) => Math.max(max, n.length), 0);
  // Far longer than every known name: no hint could be close, and the text is never read.
  if (unknown.length > Math.min(MAX_COMPARED, 2 * longest + 8)) return [];
  const target = norm(unknown);
  if (target === '') return [];
  const budget = { cells: 0 };
  const scored: { name: string; d: number }[] = [];
  for (const name of names) {
    if (budget.cells > MAX_CELLS) break;
    const allowed = Math.max(1, Math.floor(Math.min(name.length, unknown.length) / 4));
    const n = norm(name);
    const d =
      n === target ? 0 : n.includes(target) || target.includes(n) ? 1 : distance(target, n, allowed, budget);
    if (d <= allowed) scored.push({ name, d });
  }
  // Only the nearest: a hint with several far candidates misleads more than it helps.
  const best = Math.min(...scored.map((s) => s.d));
  return scored
    .filter((s) => s.d === best)
    .sort((x, y) => x.name.localeCompare(y.name))
    .slice(0, limit)
    .map(({ name }) => name);
}

export function didYouMean(unknown: string, known: Iterable<string>): string {
  const names = closest(unknown, known);
  return names.length > 0 ? ` (did you mean ${names.map((n) => `"${n}"`).join(' or ')}?)` : '';
}
