/**
 * "Did you mean" hints for unknown method, tool and argument names, worded for protocol errors. The
 * search is the engine's one bounded search (src/engine/nearest.ts): the unknown name is the client's
 * text and can be megabytes long, and the work stays bounded whatever it is.
 */
import { nearestNames } from '../engine/nearest.js';

/** The known names closest to an unknown one (at most three). */
export function closest(unknown: string, known: Iterable<string>, limit = 3): string[] {
  const names = [...new Set(known)];
  // Far longer than every known name (a megabyte method name): no hint could be close, and the text
  // is never read.
  const longest = names.reduce((max, n) => Math.max(max, n.length), 0);
  if (unknown.length > 2 * longest + 8) return [];
  return nearestNames(unknown, names, limit);
}

/** ` (did you mean "a" or "b"?)`, or nothing when no known name is near. */
export function didYouMean(unknown: string, known: Iterable<string>): string {
  const names = closest(unknown, known);
  return names.length > 0 ? ` (did you mean ${names.map((n) => `"${n}"`).join(' or ')}?)` : '';
}
