// Domain errors of workflow definitions and the runtime dir (see DomainErrors in src/engine/errors.ts).
import type { Violation } from '../model/violation.js';

declare module '../engine/errors.js' {
  interface DomainErrors {
    /** `didYouMean`: the served ids nearest to the unknown one (a typo, an id cut short). */
    workflow_not_found: { message: string; workflowId: string; didYouMean?: string[] };
    /** Submitted manifest content that does not validate (nothing was written). */
    manifest_invalid: { message: string; workflowId?: string; violations: Violation[] };
    /** A save/rename target exists, or the file changed since it was read (optimistic concurrency). */
    workflow_conflict: { message: string; workflowId: string; path?: string; details: string };
    /** Only workflows in the writable runtime dir can be changed. */
    workflow_read_only: { message: string; workflowId: string; source: string; path: string };
    /** The runtime workflow dir cannot be written: a read-only file system or missing permissions. */
    runtime_dir_read_only: { message: string; path: string; details: string };
    /** No space (or quota) left where the runtime workflow dir lives. */
    storage_full: { message: string; path: string; details: string };
    /** A write that would land outside the runtime dir. */
    path_outside_runtime: { message: string; path: string };
  }
}
