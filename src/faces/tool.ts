import type * as z from 'zod';

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** What a handler may ask of the client through the protocol layer. */
export interface ToolContext {
  /**
   * Asks the user a yes/no question through MCP elicitation. Absent when the client cannot be asked
   * (no elicitation capability, a direct JSON-RPC call, or the 2026-07-28 revision).
   */
  confirm?: (message: string) => Promise<boolean>;
}

/**
 * One tool of a face: its contract (zod schemas, which also produce the JSON Schemas that
 * `tools/list` publishes) and its handler. Handlers receive validated input and return the
 * structured result, or throw a DomainFailure.
 */
export interface ToolDefinition<In extends z.ZodType = z.ZodType, Out extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  inputSchema: In;
  outputSchema: Out;
  annotations: ToolAnnotations;
  handler: (input: z.output<In>, ctx: ToolContext) => Promise<z.input<Out>> | z.input<Out>;
}

/** Keeps each tool's handler checked against its own schemas while collecting them in one list. */
export function defineTool<In extends z.ZodType, Out extends z.ZodType>(
  tool: ToolDefinition<In, Out>,
): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

export const READ_ONLY: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};
