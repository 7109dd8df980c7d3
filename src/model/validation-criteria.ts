/**
 * Validation criteria (seed 002 ValidationEngine): the rules a step output is checked against
 * (contains, regex, length, JSON Schema) and their and/or/not compositions.
 */
import * as z from 'zod';
import { conditionSchemas } from './conditions.js';

/** The rules (a separate builder: the composition's type below refers to the rule's inferred type). */
function buildRuleSchemas() {
  const { ConditionSchema } = conditionSchemas();
  const ruleCommon = {
    message: z.string().min(1).describe('Reported as an issue when the rule fails'),
    suggestion: z.string().min(1).optional().describe('Reported as a suggestion when the rule fails'),
    condition: ConditionSchema.optional().describe('The rule applies only when this condition holds'),
  };

  const ValidationRuleSchema = z
    .discriminatedUnion('type', [
      z
        .strictObject({
          type: z.literal('contains').describe('Output must contain a substring'),
          value: z.string().min(1).describe('Text the output must contain (case-sensitive)'),
          ...ruleCommon,
        })
        .describe('Substring rule'),
      z
        .strictObject({
          type: z.literal('regex').describe('Output must match a regular expression'),
          pattern: z
            .string()
            .min(1)
            .max(2000)
            .describe('RE2 syntax; evaluated in linear time so no pattern can stall the server'),
          flags: z
            .string()
            .regex(/^[imsu]*$/)
            .optional()
            .describe(
              'Any of i (ignore case), m (multi-line), s (dot matches newline), u (accepted, always on)',
            ),
          ...ruleCommon,
        })
        .describe('Regular expression rule'),
      z
        .strictObject({
          type: z.literal('length').describe('Output length must fall in a range'),
          min: z.number().int().min(0).optional().describe('Minimum length in characters'),
          max: z.number().int().min(0).optional().describe('Maximum length in characters'),
          ...ruleCommon,
        })
        .describe('Length rule'),
      z
        .strictObject({
          type: z.literal('schema').describe('Output, parsed as JSON, must satisfy a JSON Schema'),
          schema: z.record(z.string(), z.unknown()).describe('JSON Schema (draft 2020-12 or draft-07)'),
          ...ruleCommon,
        })
        .describe('JSON Schema rule'),
    ])
    .meta({ id: 'ValidationRule', description: 'One validation rule' });
  return { ValidationRuleSchema };
}

type RuleSchemas = ReturnType<typeof buildRuleSchemas>;
let builtRules: RuleSchemas | undefined;
const ruleSchemas = (): RuleSchemas => {
  builtRules ??= buildRuleSchemas();
  return builtRules;
};

function buildCriteriaSchemas() {
  const { ValidationRuleSchema } = ruleSchemas();
  const compositionMessage = z
    .string()
    .min(1)
    .optional()
    .describe('Reported instead of the member issues when the composition fails');

  const ValidationCriterionSchema: z.ZodType<ValidationCriterion> = z
    .lazy(() =>
      z.union([
        ValidationRuleSchema,
        z
          .strictObject({
            and: z.array(ValidationCriterionSchema).min(1).describe('All must pass'),
            message: compositionMessage,
          })
          .describe('AND composition'),
        z
          .strictObject({
            or: z.array(ValidationCriterionSchema).min(1).describe('At least one must pass'),
            message: compositionMessage,
          })
          .describe('OR composition'),
        z
          .strictObject({ not: ValidationCriterionSchema.describe('Must fail'), message: compositionMessage })
          .describe('NOT composition'),
      ]),
    )
    .meta({
      id: 'ValidationCriterion',
      description: 'A validation rule or an and/or/not composition of rules',
    });

  const ValidationCriteriaSchema = z
    .union([z.array(ValidationCriterionSchema).describe('All of these must pass'), ValidationCriterionSchema])
    .describe('Checks applied to a step output: an array (all must pass), one rule, or a composition');
  return { ValidationRuleSchema, ValidationCriterionSchema, ValidationCriteriaSchema };
}

type Schemas = ReturnType<typeof buildCriteriaSchemas>;
let built: Schemas | undefined;

/** The validation rule and criteria schemas (built once, on the first call). */
export function validationSchemas(): Schemas {
  built ??= buildCriteriaSchemas();
  return built;
}

export type ValidationRule = z.infer<RuleSchemas['ValidationRuleSchema']>;

export type ValidationComposition =
  | { and: ValidationCriterion[]; message?: string | undefined }
  | { or: ValidationCriterion[]; message?: string | undefined }
  | { not: ValidationCriterion; message?: string | undefined };

export type ValidationCriterion = ValidationRule | ValidationComposition;

export type ValidationCriteria = z.infer<Schemas['ValidationCriteriaSchema']>;
