// Domain errors only a face raises (see DomainErrors in src/engine/errors.ts).
// A module (so that the block below adds to DomainErrors rather than declaring a new module).
export {};

declare module '../engine/errors.js' {
  interface DomainErrors {
    /** A destructive call that needs an explicit yes: `confirm: true`, or the user's answer through elicitation. */
    confirmation_required: {
      message: string;
      workflowId?: string;
      /** The tool to call again with `confirm: true` (default workflow_delete). */
      tool?: string;
      arguments?: Record<string, unknown>;
    };
  }
}
