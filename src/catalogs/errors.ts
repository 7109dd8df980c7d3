// Domain errors of OpenAPI catalogs and command steps (see DomainErrors in src/engine/errors.ts).
import type { Violation } from '../model/violation.js';

declare module '../engine/errors.js' {
  interface DomainErrors {
    /** A command step (or input provider) call that failed after its retries (seed 003 §10.3). */
    command_failed: {
      message: string;
      reason: string;
      stepId: string;
      command: string;
      executionId?: string;
      status?: number;
      responsePayload?: unknown;
      retryable: boolean;
    };
    /** An OpenAPI source that cannot be imported, or a catalog name that exists or does not. */
    catalog_invalid: { message: string; violations: Violation[] };
    catalog_not_found: { message: string; catalog: string };
    catalog_conflict: { message: string; catalog: string };
  }
}
