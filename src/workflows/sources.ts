import type { RuntimeDocumentStore } from '../store/runtime-documents.js';

export type SourceKind = 'bundled' | 'user' | 'project' | 'storage' | 'git' | 'runtime' | 'database';

/** Where a workflow from a git source came from: what workflow_list, workflow_get and executions name. */
export interface GitProvenance {
  /** The remote as configured (never with credentials: a URL carrying them is refused). */
  repository: string;
  /** The branch, tag or commit configured (`HEAD`: the remote's default branch). */
  ref: string;
  /** The commit served (full hash). */
  commit: string;
}

/** A git source as configured (src/workflows/git/spec.ts parses and checks it). */
export interface GitSourceSpec {
  /** The remote: a URL, `user@host:path`, or an absolute path (file protocol). */
  url: string;
  /** Branch, tag, full commit hash, or `HEAD`. */
  ref: string;
  /** The folder of the repository the workflows are in ('' for its root). */
  subdir: string;
  /** Stable id of the source (hash of url, ref and subdir): its folder in the data dir. */
  id: string;
  /** The protocol the URL uses (https, http, ssh, git, file): checked against the allowed ones. */
  protocol: string;
  /** Sync interval of this source in ms (0: only at start and on `workflowlookup sources sync`). */
  intervalMs?: number;
}

/** A directory of workflow definitions; later sources override earlier ones by id. */
export interface WorkflowSource {
  kind: SourceKind;
  /**
   * The directory; for a `database` source, where its documents live (a location, for paths and
   * messages); for a `git` source, its folder in the data dir (the files served are in the checkout
   * of the last good commit below it).
   */
  dir: string;
  /**
   * A `database` source: the definitions agents saved, kept in the database that replicas share
   * (PostgreSQL) instead of files. Checked exactly as files are.
   */
  documents?: RuntimeDocumentStore;
  /** A `git` source: the repository, ref and folder it serves (src/workflows/git/). */
  git?: GitSourceSpec;
}
