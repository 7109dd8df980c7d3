/** Edit distance (Levenshtein) between two short names. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/**
 * The known names closest to an unknown one (at most three), for "did you mean" answers: close in
 * spelling, or the same words in another form (`workflowId` for `workflow_id`, `workflow.start` for
 * `workflow_start`).
 */
export function closest(unknown: string, known: Iterable<string>, limit = 3): string[] {
  const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');
  const target = norm(unknown);
  const scored = [...new Set(known)]
    .map((name) => {
      const n = norm(name);
      const d = n === target ? 0 : n.includes(target) || target.includes(n) ? 1 : distance(target, n);
      return { name, d };
    })
    .filter(({ name, d }) => d <= Math.max(1, Math.floor(Math.min(name.length, unknown.length) / 4)));
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
