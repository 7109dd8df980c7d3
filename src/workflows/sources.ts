import type { RuntimeDocumentStore } from '../store/runtime-documents.js';

export type SourceKind = 'bundled' | 'user' | 'project' | 'storage' | 'runtime' | 'database';

/** A directory of workflow definitions; later sources override earlier ones by id. */
export interface WorkflowSource {
  kind: SourceKind;
  /** The directory; for a `database` source, where its documents live (a location, for paths and messages). */
  dir: string;
  /**
   * A `database` source: the definitions agents saved, kept in the database that replicas share
   * (PostgreSQL) instead of files. Checked exactly as files are.
   */
  documents?: RuntimeDocumentStore;
}
