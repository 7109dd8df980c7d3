import { basename } from 'node:path';
import type { BrokenWorkflow, RegistryEntry } from './entry.js';

// Which file of one source stands for each id: WorkRail's variant files, and ids defined twice. Apart
// from the registry, whose rebuild applies it source after source (later sources override by id).

/** Which variant of a workflow a file is, by its name (WorkRail's `x.v2.json` beside `x.json`). */
type VariantKind = 'v2' | 'agentic' | 'standard' | 'lean';

/**
 * WorkRail's precedence among files of one folder that define the same id (its defaults: v2 tools and
 * agentic routines on, lean workflows off): `.v2.` over `.agentic.` over the plain file. A `.lean.` file
 * is served only when it is the only one (WorkRail serves it only with its lean flag).
 */
const VARIANT_RANK: Record<VariantKind, number> = { v2: 3, agentic: 2, standard: 1, lean: 0 };

function variantOf(file: string): VariantKind {
  const name = basename(file);
  if (name.includes('.lean.')) return 'lean';
  if (name.includes('.v2.')) return 'v2';
  if (name.includes('.agentic.')) return 'agentic';
  return 'standard';
}

/**
 * The entries of one source's files (sorted by file) that stand for an id, in order, and the broken
 * ones: broken files, and a second file defining an id already defined in the source (`uniqueId`).
 * Variants of one id: the best-ranked valid file stands for the id, the others step aside (neither
 * served nor broken), as WorkRail resolves them. A broken file with an id stands for it too.
 */
export function servedInSource(files: readonly RegistryEntry[]): {
  served: { id: string; entry: RegistryEntry }[];
  broken: BrokenWorkflow[];
} {
  const served: { id: string; entry: RegistryEntry }[] = [];
  const broken: BrokenWorkflow[] = [];
  const seenHere = new Map<string, string>();
  const best = new Map<string, string>();
  for (const entry of files) {
    if (entry.status !== 'valid') continue;
    const id = entry.workflow.id;
    const current = best.get(id);
    if (current === undefined || VARIANT_RANK[variantOf(entry.file)] > VARIANT_RANK[variantOf(current)])
      best.set(id, entry.file);
  }
  for (const entry of files) {
    const id = entry.status === 'valid' ? entry.workflow.id : entry.id;
    if (entry.status === 'broken') broken.push(entry);
    if (id === undefined) continue;
    const chosen = best.get(id);
    if (
      entry.status === 'valid' &&
      chosen !== undefined &&
      chosen !== entry.file &&
      variantOf(chosen) !== variantOf(entry.file)
    )
      continue;
    const clash = seenHere.get(id);
    if (clash !== undefined) {
      broken.push({
        status: 'broken',
        file: entry.file,
        source: entry.source,
        id,
        violations: [
          {
            path: '/id',
            rule: 'uniqueId',
            message: `workflow id "${id}" is already defined by ${clash}`,
            actual: id,
          },
        ],
      });
      continue;
    }
    seenHere.set(id, entry.file);
    served.push({ id, entry });
  }
  return { served, broken };
}
