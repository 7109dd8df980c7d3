import type { Violation } from '../model/violation.js';

/**
 * Domain errors are plain values keyed by a stable string `code`. The protocol layer maps them to
 * JSON-RPC errors and tool error results in one place (src/protocol/error-mapping.ts).
 *
 * Each layer declares its own codes, beside its code, by adding them to this interface (declaration
 * merging, as Hono's ContextVariableMap or Fastify's FastifyInstance are extended):
 * `declare module '../engine/errors.js' { interface DomainErrors { storage_error: {...} } }` in
 * src/store/errors.ts, src/workflows/errors.ts, src/catalogs/errors.ts, src/executions/errors.ts,
 * src/runs/errors.ts and src/faces/errors.ts. The engine declares only its own; `fail` takes any.
 */
export interface DomainErrors {
  invalid_params: { message: string; details: string };
  criteria_invalid: { message: string; workflowId: string; stepId: string; details: string };
  step_not_found: { message: string; workflowId: string; stepId: string };
  /**
   * The context lacks what the workflow needs to go on (WorkRail's PRECONDITION_FAILED): a forEach/for
   * loop's list or count is missing or of the wrong type, or a variable conditions read has a value of the
   * wrong type or outside the values they compare against. Nothing advanced; `retry` is the call that
   * supplies it, when the face knows it.
   */
  precondition_failed: {
    message: string;
    workflowId: string;
    /** The context variable (dotted path) to supply or correct. */
    variable: string;
    /** What it must be, e.g. 'an array' or 'one of "small", "medium", "large" (case-insensitive)'. */
    expected: string;
    loopId?: string;
    retry?: { tool: string; arguments: Record<string, unknown>; fill: Record<string, string> };
  };
  /**
   * The regex and JSON Schema rules of a call were not checked: their own work ran past the validation
   * budget, or no answer came within the hard cap (src/engine/validation-engine.ts). Not a verdict on
   * the output or the definition: nothing was decided or recorded (a token stays valid), and the same
   * call may be sent again. `retry` is that call, when the face knows it.
   */
  validation_not_checked: {
    message: string;
    details: string;
    workflowId?: string;
    stepId?: string;
    retry?: { tool: string; arguments: Record<string, unknown>; fill?: Record<string, string> };
  };
  workflow_invalid: { message: string; workflowId?: string; file?: string; violations: Violation[] };
}

export type DomainErrorCode = keyof DomainErrors;

/** One error: its code and the fields its layer declared for it. */
export type DomainError = { [C in DomainErrorCode]: { code: C } & DomainErrors[C] }[DomainErrorCode];

export class DomainFailure extends Error {
  constructor(readonly error: DomainError) {
    super(error.message);
    this.name = 'DomainFailure';
  }
}

/** Throws a domain error; faces use this so handlers stay linear. */
export function fail(error: DomainError): never {
  throw new DomainFailure(error);
}
