// Domain errors of durable executions, their checks and workflow tests (see DomainErrors in src/engine/errors.ts).
// A module (so that the block below adds to DomainErrors rather than declaring a new module).
export {};

declare module '../engine/errors.js' {
  interface DomainErrors {
    execution_not_found: { message: string; executionId: string };
    /** The execution is not in a state that allows the request (stale or reused token, bad transition). */
    state_conflict: {
      message: string;
      executionId: string;
      state?: string;
      allowed?: readonly string[];
      details: string;
      /** A decision named an approval (or output) that no longer waits: the one that waits now, if any. */
      stale?: { approval_id: string | null };
      /** Who paused the execution, when a person did: it waits for them, not for the agent. */
      pausedBy?: { by: string; via: string; at: string; reason?: string };
    };
    token_invalid: { message: string; details: string };
    token_expired: { message: string; executionId: string; expiredAt: string };
    /** Inputs that are missing or invalid when starting a workflow. */
    inputs_not_ready: { message: string; workflowId: string; inputs: unknown[] };
    /**
     * A step names a server-run check (`verify.check`) this server will not run now: checks are not
     * configured, the check is disabled, or this is an HTTP server without WORKFLOWLOOKUP_HTTP_CHECKS.
     * Nothing advanced; an operator has to act.
     */
    check_unavailable: {
      message: string;
      check: string;
      workflowId?: string;
      stepId?: string;
      executionId?: string;
      reason: 'not_configured' | 'disabled' | 'http_not_allowed' | 'unknown';
    };
    /**
     * A step's check cannot even wait for a slot: as many checks as the server allows are running and as
     * many runs as it queues are waiting (WORKFLOWLOOKUP_CHECKS_MAX_*). Nothing ran and nothing advanced;
     * the same call sent again later runs it. `limit`: the queue length reached; `retryAfterMs`: how long
     * the check's last run took, when known.
     */
    check_busy: {
      message: string;
      check: string;
      principal?: string;
      limit: number;
      retryAfterMs?: number;
    };
    /**
     * Workflow tests that would do more than one tool call may (src/workflows/test-format.ts,
     * TOOL_TEST_LIMITS): more scenarios, a larger `max_reports`, or more work units than a call allows.
     * No verdict was given (not a partial pass); the command line (`workflowlookup test`) runs larger
     * suites. `limit` names the bound, `max` its value.
     */
    tests_too_large: {
      message: string;
      workflowId?: string;
      limit: 'scenarios' | 'max_reports' | 'work';
      max: number;
      details: string;
    };
    /**
     * The principal already has as many workflow tests running (workflow_test, or the tests of
     * workflow_validate_manifest) as one may at once; nothing ran, and the same call succeeds once one ends.
     */
    tests_busy: { message: string; principal: string; running: number; max: number };
    /**
     * A delegating step cannot create its children: they would nest deeper than the server allows, the
     * principal has as many open children as it may, or the step's child context cannot be rendered.
     * Nothing was created and nothing advanced.
     */
    delegation_refused: {
      message: string;
      reason: 'depth' | 'fan_out' | 'template';
      executionId: string;
      workflowId: string;
      stepId: string;
      limit?: number;
    };
  }
}
