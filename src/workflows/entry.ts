import { createHash } from 'node:crypto';
import type { Violation } from '../model/violation.js';
import type { Workflow } from '../model/workflow.js';
import type { DefinitionFormat } from './parse.js';
import type { GitProvenance, SourceKind } from './sources.js';

// What the registry holds per definition file, in a module of its own: the registry, the definition
// cache (which stores these entries across restarts) and the registry's parts (loading, precedence,
// composition, git checkouts) all need them, and none imports the registry for them.

/** The version of a definition file: sha256 of its bytes (pins executions, guards saves). */
export function contentVersion(bytes: string | Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export interface LoadedWorkflow {
  status: 'valid';
  workflow: Workflow;
  file: string;
  source: SourceKind;
  format: DefinitionFormat;
  /** sha256 of the file bytes. */
  hash: string;
  /**
   * What executions pin, when it is not the file: a definition whose templateCalls were expanded from
   * installed routines is the file and those routines (sha256 of the expanded definition).
   */
  definitionHash?: string;
  /** A workflow from a git source: its repository, ref and commit (executions record them). */
  provenance?: GitProvenance;
}

export interface BrokenWorkflow {
  status: 'broken';
  file: string;
  source: SourceKind;
  id?: string;
  violations: Violation[];
}

export type RegistryEntry = LoadedWorkflow | BrokenWorkflow;

/** A file the registry serves no workflow from, with why (its id, when it has one). */
export function brokenEntry(
  file: string,
  source: SourceKind,
  violations: Violation[],
  id?: string,
): BrokenWorkflow {
  return { status: 'broken', file, source, ...(id !== undefined ? { id } : {}), violations };
}
