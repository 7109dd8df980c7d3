import { join, relative } from 'node:path';
import type { Violation } from '../../model/violation.js';
import type { CachedFile } from '../definition-loading.js';
import { type BrokenWorkflow, brokenEntry } from '../entry.js';
import type { GitProvenance } from '../sources.js';

// A git source's checkout as the registry serves it: what one is, whether a commit's files may replace
// the served set, and the provenance its workflows carry. The registry keeps which checkout each source
// serves (its state); git-sources.ts fetches and writes the checkouts.

/** The checkout of one commit of a git source (immutable: a new commit is a new folder). */
export interface GitCheckout extends GitProvenance {
  /** The folder holding the commit's files (its configured subfolder). */
  dir: string;
}

/** What replacing a git source's checkout came to (see `WorkflowRegistry.useCheckout`). */
export type CheckoutOutcome =
  | { outcome: 'served' }
  /** Some file is broken: the last good set stays, and these files are reported. */
  | { outcome: 'broken'; broken: BrokenWorkflow[] }
  /** Some file's rules were not checked in time: no verdict, the next sync tries again. */
  | { outcome: 'not-checked'; files: string[] };

/**
 * The broken files of a checkout (none: it may be served): the files refused before it was written,
 * then the broken ones read from it. Named by repository, commit and path: the folder they were read
 * from is removed.
 */
export function brokenInCheckout(
  checkout: GitCheckout,
  refusedFiles: readonly { path: string; violation: Violation }[],
  read: ReadonlyMap<string, CachedFile>,
): BrokenWorkflow[] {
  const broken = [
    ...refusedFiles.map((f) => brokenEntry(join(checkout.dir, f.path), 'git', [f.violation])),
    ...[...read.values()].flatMap((f) => (f.entry.status === 'broken' ? [f.entry] : [])),
  ];
  return broken.map((b) => ({
    ...b,
    file: `${checkout.repository}@${checkout.commit}:${relative(checkout.dir, b.file)}`,
  }));
}

/** Marks the valid entries read from a git checkout with the repository, ref and commit they came from. */
export function withProvenance(files: Map<string, CachedFile>, checkout: GitCheckout): void {
  const provenance: GitProvenance = {
    repository: checkout.repository,
    ref: checkout.ref,
    commit: checkout.commit,
  };
  for (const [file, cached] of files) {
    if (cached.entry.status !== 'valid' || cached.entry.provenance?.commit === checkout.commit) continue;
    files.set(file, { ...cached, entry: { ...cached.entry, provenance } });
  }
}
