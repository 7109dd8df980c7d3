import type * as z from 'zod';

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
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
  handler: (input: z.output<In>) => Promise<z.input<Out>> | z.input<Out>;
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
