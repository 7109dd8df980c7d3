// Domain errors of MCP tasks and runs (see DomainErrors in src/engine/errors.ts).
// A module (so that the block below adds to DomainErrors rather than declaring a new module).
export {};

declare module '../engine/errors.js' {
  interface DomainErrors {
    /** A long-running tool called without MCP tasks (seed 003 §13.2): it never runs synchronously. */
    task_capability_required: { message: string; tool: string };
    /** The client did not declare what the tool needs of it (sampling, elicitation), or failed at it. */
    client_capability_required: { message: string; tool: string; capabilities: string[] };
    /** The client refused or failed a request the server sent it (sampling), saying why. */
    client_request_failed: { message: string; tool: string; method: string; details: string };
    task_not_found: { message: string; taskId: string };
    /** A task that already finished cannot be cancelled (MCP 2025-11-25). */
    task_terminal: { message: string; taskId: string; status: string };
    /** The task was cancelled (by tasks/cancel, workflow_cancel or the user's answer): it has no result. */
    task_cancelled: { message: string; taskId?: string; runId?: string };
  }
}
