/**
 * Conditions: the `{var, equals, ...}` tests and their and/or/not compositions, evaluated against the
 * execution context (src/engine/conditions.ts). Steps, fragments, gates, rules, loops and command polls
 * all take one.
 */
import * as z from 'zod';

export type VarCondition = {
  var: string;
  equals?: unknown;
  not_equals?: unknown;
  in?: unknown[] | undefined;
  contains?: string | undefined;
  startsWith?: string | undefined;
  endsWith?: string | undefined;
  gt?: number | undefined;
  gte?: number | undefined;
  lt?: number | undefined;
  lte?: number | undefined;
};
export type Condition = VarCondition | { and: Condition[] } | { or: Condition[] } | { not: Condition };

/** The condition schema (the rest of the model refers to it; built on first use, as every schema). */
function buildConditionSchemas() {
  const VarConditionSchema = z
    .strictObject({
      var: z
        .string()
        .min(1)
        .max(256)
        .describe('Context variable to test; dotted paths such as "ticket.priority" reach into objects'),
      equals: z.unknown().optional().describe('True when the variable deep-equals this value'),
      not_equals: z.unknown().optional().describe('True when the variable does not deep-equal this value'),
      in: z.array(z.unknown()).optional().describe('True when the variable deep-equals one of these values'),
      contains: z
        .string()
        .optional()
        .describe('True when the variable, as text, contains this (ignoring case; WorkRail)'),
      startsWith: z
        .string()
        .optional()
        .describe('True when the variable, as text, starts with this (ignoring case; WorkRail)'),
      endsWith: z
        .string()
        .optional()
        .describe('True when the variable, as text, ends with this (ignoring case; WorkRail)'),
      gt: z.number().optional().describe('True when the variable is a number greater than this'),
      gte: z.number().optional().describe('True when the variable is a number greater than or equal to this'),
      lt: z.number().optional().describe('True when the variable is a number less than this'),
      lte: z.number().optional().describe('True when the variable is a number less than or equal to this'),
    })
    .describe('Tests one context variable; with no operator it tests that the variable is truthy');

  const ConditionSchema: z.ZodType<Condition> = z
    .lazy(() =>
      z.union([
        VarConditionSchema,
        z
          .strictObject({ and: z.array(ConditionSchema).min(1).describe('All of these must hold') })
          .describe('Logical AND'),
        z
          .strictObject({ or: z.array(ConditionSchema).min(1).describe('At least one of these must hold') })
          .describe('Logical OR'),
        z.strictObject({ not: ConditionSchema.describe('This must not hold') }).describe('Logical NOT'),
      ]),
    )
    .meta({ id: 'Condition', description: 'A condition evaluated against the execution context' });

  return { ConditionSchema };
}

type Schemas = ReturnType<typeof buildConditionSchemas>;
let built: Schemas | undefined;

/** The condition schema (built once, on the first call). */
export function conditionSchemas(): Schemas {
  built ??= buildConditionSchemas();
  return built;
}
