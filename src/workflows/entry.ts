import type { Violation } from '../model/violation.js';
import type { Workflow } from '../model/workflow.js';
import type { DefinitionFormat } from './parse.js';
import type { GitProvenance, SourceKind } from './sources.js';

// What the registry holds per definition file, in a module of its own: the registry and the
// definition cache (which stores these entries across restarts) both need them, and neither imports
// the other for them.

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
