/** Workflow inputs: the named values a workflow takes, their types, defaults and where choices come from. */
import * as z from 'zod';

function buildInputSchemas() {
  const InputSpecSchema = z
    .strictObject({
      type: z.enum(['string', 'number', 'integer', 'boolean', 'array', 'object']).describe('Value type'),
      description: z.string().min(1).describe('What the input is for (shown when asking for it)'),
      required: z
        .boolean()
        .optional()
        .describe('Must be given (default false; an input with a default is never missing)'),
      default: z
        .union([
          z.strictObject({
            env: z
              .string()
              .regex(/^[A-Z_][A-Z0-9_]*$/)
              .describe('Environment variable to read'),
          }),
          z.unknown(),
        ])
        .optional()
        .describe('A literal value, or {env: NAME} to read an allowed environment variable'),
      enum: z.array(z.unknown()).min(1).optional().describe('Allowed values'),
      pattern: z.string().min(1).max(2000).optional().describe('RE2 pattern a string value must match'),
      minLength: z.number().int().min(0).optional().describe('Minimum string length'),
      maxLength: z.number().int().min(0).optional().describe('Maximum string length'),
      minimum: z.number().optional().describe('Minimum number'),
      maximum: z.number().optional().describe('Maximum number'),
      provider: z
        .strictObject({
          command: z
            .string()
            .regex(/^[a-z0-9-]+ [a-z0-9-]+$/)
            .describe('"<catalog> <command>" whose results are the choices'),
          with: z
            .record(z.string(), z.unknown())
            .optional()
            .describe('Parameters for the command (templates allowed)'),
          value_field: z.string().min(1).optional().describe('Field of each result used as the value'),
          label_field: z.string().min(1).optional().describe('Field of each result shown to the user'),
        })
        .optional()
        .describe('Where the allowed values come from'),
    })
    .meta({ id: 'InputSpec', description: 'One workflow input' });
  return { InputSpecSchema };
}

type Schemas = ReturnType<typeof buildInputSchemas>;
let built: Schemas | undefined;

/** The input schema (built once, on the first call). */
export function inputSchemas(): Schemas {
  built ??= buildInputSchemas();
  return built;
}

export type InputSpec = z.infer<Schemas['InputSpecSchema']>;
