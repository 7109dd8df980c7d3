import type { Violation } from '../model/violation.js';
import { DEFAULT_CATEGORY } from '../model/workflow.js';
import type { BrokenWorkflow, RegistryEntry } from './entry.js';
import type { GitProvenance, SourceKind } from './sources.js';

// What workflow_list serves, made from what the registry serves: the registry keeps it (rebuilt when a
// source changes) and the faces and the CLI read its shape, without needing the registry for it.

export interface WorkflowSummary {
  id: string;
  name: string;
  description: string;
  category: string;
  version: string;
  /**
   * A workflow from a git source: the key (`git:<source id>`) of its repository, ref and commit in the
   * listing's `git_sources` (one entry per source, so a thousand workflows do not repeat them).
   */
  source?: string;
}

/** What workflow_list serves; rebuilt only when a source changes, so callers may hand it out as is. */
export interface Listing {
  workflows: WorkflowSummary[];
  broken: { file: string; source: SourceKind; id?: string; violations: Violation[] }[];
  /** The repository, ref and commit of each git source a listed workflow comes from, by its key. */
  git_sources?: Record<string, GitProvenance>;
}

/**
 * The listing of the served entries `byId` (valid ones, sorted by id) and the `broken` files (sorted by
 * file, in place); `gitKeys` gives the key of the git source a file comes from.
 */
export function listingOf(
  byId: ReadonlyMap<string, RegistryEntry>,
  broken: BrokenWorkflow[],
  gitKeys: ReadonlyMap<string, string>,
): Listing {
  const gitSources: Record<string, GitProvenance> = {};
  const summaries: WorkflowSummary[] = [];
  for (const entry of byId.values()) {
    if (entry.status !== 'valid') continue;
    const w = entry.workflow;
    summaries.push({
      id: w.id,
      name: w.name,
      description: w.description,
      category: w.category ?? DEFAULT_CATEGORY,
      version: w.version,
    });
    const key = gitKeys.get(entry.file);
    if (key !== undefined && entry.provenance !== undefined) {
      (summaries.at(-1) as WorkflowSummary).source = key;
      gitSources[key] = entry.provenance;
    }
  }
  summaries.sort((a, b) => (a.id < b.id ? -1 : 1));
  broken.sort((a, b) => (a.file < b.file ? -1 : 1));
  return {
    workflows: summaries,
    broken: broken.map(({ file, source, id, violations }) => ({
      file,
      source,
      ...(id !== undefined ? { id } : {}),
      violations,
    })),
    ...(Object.keys(gitSources).length > 0 ? { git_sources: gitSources } : {}),
  };
}
