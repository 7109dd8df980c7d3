import * as z from 'zod';

/** A violation (seed 003 §10.2) as tools publish it: definitions, manifests and OpenAPI documents alike. */
export const ViolationSchema = z.object({
  path: z.string().describe('JSON Pointer to the offending place'),
  rule: z.string().describe('Rule that failed'),
  message: z.string().describe('What is wrong'),
  expected: z.string().optional().describe('What was expected'),
  actual: z.string().optional().describe('What was found'),
  line: z.number().optional().describe('1-based line in the source text, where known'),
  column: z.number().optional().describe('1-based column in the source text, where known'),
});
