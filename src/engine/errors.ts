import type { Violation } from '../model/violation.js';

/**
 * Domain errors are plain values keyed by a stable string `code`. The protocol layer maps them to
 * JSON-RPC errors and tool error results in one place (src/protocol/error-mapping.ts).
 */
export type DomainError =
  /** `didYouMean`: the served ids nearest to the unknown one (a typo, an id cut short). */
  | { code: 'workflow_not_found'; message: string; workflowId: string; didYouMean?: string[] }
  | { code: 'workflow_invalid'; message: string; workflowId?: string; file?: string; violations: Violation[] }
  | { code: 'step_not_found'; message: string; workflowId: string; stepId: string }
  | { code: 'criteria_invalid'; message: string; workflowId: string; stepId: string; details: string }
  | { code: 'invalid_params'; message: string; details: string }
  | { code: 'storage_error'; message: string; details: string }
  | { code: 'execution_not_found'; message: string; executionId: string }
  /** The execution is not in a state that allows the request (stale or reused token, bad transition). */
  | {
      code: 'state_conflict';
      message: string;
      executionId: string;
      state?: string;
      allowed?: readonly string[];
      details: string;
      /** A decision named an approval (or output) that no longer waits: the one that waits now, if any. */
      stale?: { approval_id: string | null };
      /** Who paused the execution, when a person did: it waits for them, not for the agent. */
      pausedBy?: { by: string; via: string; at: string; reason?: string };
    }
  | { code: 'token_invalid'; message: string; details: string }
  | { code: 'token_expired'; message: string; executionId: string; expiredAt: string }
  /** Submitted manifest content that does not validate (nothing was written). */
  | { code: 'manifest_invalid'; message: string; workflowId?: string; violations: Violation[] }
  /** A save/rename target exists, or the file changed since it was read (optimistic concurrency). */
  | { code: 'workflow_conflict'; message: string; workflowId: string; path?: string; details: string }
  /** Only workflows in the writable runtime dir can be changed. */
  | { code: 'workflow_read_only'; message: string; workflowId: string; source: string; path: string }
  /** The runtime workflow dir cannot be written: a read-only file system or missing permissions. */
  | { code: 'runtime_dir_read_only'; message: string; path: string; details: string }
  /** No space (or quota) left where the runtime workflow dir lives. */
  | { code: 'storage_full'; message: string; path: string; details: string }
  /** A write that would land outside the runtime dir. */
  | { code: 'path_outside_runtime'; message: string; path: string }
  /** A destructive call that needs an explicit yes: `confirm: true`, or the user's answer through elicitation. */
  | {
      code: 'confirmation_required';
      message: string;
      workflowId?: string;
      /** The tool to call again with `confirm: true` (default workflow_delete). */
      tool?: string;
      arguments?: Record<string, unknown>;
    }
  /** A command step (or input provider) call that failed after its retries (seed 003 §10.3). */
  | {
      code: 'command_failed';
      message: string;
      reason: string;
      stepId: string;
      command: string;
      executionId?: string;
      status?: number;
      responsePayload?: unknown;
      retryable: boolean;
    }
  /** An OpenAPI source that cannot be imported, or a catalog name that exists or does not. */
  | { code: 'catalog_invalid'; message: string; violations: Violation[] }
  | { code: 'catalog_not_found'; message: string; catalog: string }
  | { code: 'catalog_conflict'; message: string; catalog: string }
  /**
   * The context lacks what the workflow needs to go on (WorkRail's PRECONDITION_FAILED): a forEach/for
   * loop's list or count is missing or of the wrong type, or a variable conditions read has a value of the
   * wrong type or outside the values they compare against. Nothing advanced; `retry` is the call that
   * supplies it, when the face knows it.
   */
  | {
      code: 'precondition_failed';
      message: string;
      workflowId: string;
      /** The context variable (dotted path) to supply or correct. */
      variable: string;
      /** What it must be, e.g. 'an array' or 'one of "small", "medium", "large" (case-insensitive)'. */
      expected: string;
      loopId?: string;
      retry?: { tool: string; arguments: Record<string, unknown>; fill: Record<string, string> };
    }
  /** Inputs that are missing or invalid when starting a workflow. */
  | { code: 'inputs_not_ready'; message: string; workflowId: string; inputs: unknown[] }
  /** A long-running tool called without MCP tasks (seed 003 §13.2): it never runs synchronously. */
  | { code: 'task_capability_required'; message: string; tool: string }
  /** The client did not declare what the tool needs of it (sampling, elicitation), or failed at it. */
  | { code: 'client_capability_required'; message: string; tool: string; capabilities: string[] }
  /** The client refused or failed a request the server sent it (sampling), saying why. */
  | { code: 'client_request_failed'; message: string; tool: string; method: string; details: string }
  | { code: 'task_not_found'; message: string; taskId: string }
  /** A task that already finished cannot be cancelled (MCP 2025-11-25). */
  | { code: 'task_terminal'; message: string; taskId: string; status: string }
  /** The task was cancelled (by tasks/cancel, workflow_cancel or the user's answer): it has no result. */
  | { code: 'task_cancelled'; message: string; taskId?: string; runId?: string }
  /**
   * A step names a server-run check (`verify.check`) this server will not run now: checks are not
   * configured, the check is disabled, or this is an HTTP server without WORKFLOWLOOKUP_HTTP_CHECKS.
   * Nothing advanced; an operator has to act.
   */
  | {
      code: 'check_unavailable';
      message: string;
      check: string;
      workflowId?: string;
      stepId?: string;
      executionId?: string;
      reason: 'not_configured' | 'disabled' | 'http_not_allowed' | 'unknown';
    }
  /**
   * A step's check cannot even wait for a slot: as many checks as the server allows are running and as
   * many runs as it queues are waiting (WORKFLOWLOOKUP_CHECKS_MAX_*). Nothing ran and nothing advanced;
   * the same call sent again later runs it. `limit`: the queue length reached; `retryAfterMs`: how long
   * the check's last run took, when known.
   */
  | {
      code: 'check_busy';
      message: string;
      check: string;
      principal?: string;
      limit: number;
      retryAfterMs?: number;
    }
  /**
   * The regex and JSON Schema rules of a call were not checked: their own work ran past the validation
   * budget, or no answer came within the hard cap (src/engine/validation-engine.ts). Not a verdict on
   * the output or the definition: nothing was decided or recorded (a token stays valid), and the same
   * call may be sent again. `retry` is that call, when the face knows it.
   */
  | {
      code: 'validation_not_checked';
      message: string;
      details: string;
      workflowId?: string;
      stepId?: string;
      retry?: { tool: string; arguments: Record<string, unknown>; fill?: Record<string, string> };
    }
  /**
   * Workflow tests that would do more than one tool call may (src/workflows/test-format.ts,
   * TOOL_TEST_LIMITS): more scenarios, a larger `max_reports`, or more work units than a call allows.
   * No verdict was given (not a partial pass); the command line (`workflowlookup test`) runs larger
   * suites. `limit` names the bound, `max` its value.
   */
  | {
      code: 'tests_too_large';
      message: string;
      workflowId?: string;
      limit: 'scenarios' | 'max_reports' | 'work';
      max: number;
      details: string;
    }
  /**
   * The principal already has as many workflow tests running (workflow_test, or the tests of
   * workflow_validate_manifest) as one may at once; nothing ran, and the same call succeeds once one ends.
   */
  | { code: 'tests_busy'; message: string; principal: string; running: number; max: number };

export type DomainErrorCode = DomainError['code'];

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
