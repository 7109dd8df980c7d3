/** The command step: one HTTP call to an imported catalog operation, run by the server (docs/automation.md). */
import * as z from 'zod';
import { conditionSchemas } from './conditions.js';
import { COMMAND_LIMITS, durationSchema } from './limits.js';
import { stepCommonSchemas } from './step-common.js';

function buildCommandStepSchemas() {
  const { ConditionSchema } = conditionSchemas();
  const { DependsOnSchema, stepCommon } = stepCommonSchemas();
  const CommandStepSchema = z
    .strictObject({
      ...stepCommon,
      run: z
        .string()
        .regex(/^[a-z0-9-]+ [a-z0-9-]+$/)
        .describe('"<catalog> <command>": an operation of an imported OpenAPI catalog, run by the server'),
      with: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('Path, query and header parameters; values may be ${{ }} templates'),
      body: z.unknown().optional().describe('JSON request body; strings may be ${{ }} templates'),
      timeout: durationSchema(COMMAND_LIMITS.timeoutMs)
        .optional()
        .describe('Per-request timeout (default 10s)'),
      repeat: z
        .strictObject({
          until: ConditionSchema.describe(
            'Stop polling when this holds; `output` is the latest response body',
          ),
          every: durationSchema(COMMAND_LIMITS.everyMs).describe('Pause between attempts'),
          max_attempts: z
            .number()
            .int()
            .min(1)
            .max(COMMAND_LIMITS.maxAttempts, {
              message: `must be at most ${COMMAND_LIMITS.maxAttempts} requests`,
            })
            .describe(`Give up after this many requests (at most ${COMMAND_LIMITS.maxAttempts})`),
          timeout: durationSchema(COMMAND_LIMITS.repeatTimeoutMs).describe(
            'Give up after this long in total',
          ),
        })
        .optional()
        .describe('Poll the command until a condition holds'),
      output_contract: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('JSON Schema the response body must satisfy'),
      depends_on: DependsOnSchema,
    })
    .meta({
      id: 'CommandStep',
      description: 'A step the server executes: one HTTP call to a catalog operation',
    });
  return { CommandStepSchema };
}

type Schemas = ReturnType<typeof buildCommandStepSchemas>;
let built: Schemas | undefined;

/** The command step schema (built once, on the first call). */
export function commandStepSchemas(): Schemas {
  built ??= buildCommandStepSchemas();
  return built;
}

export type CommandStep = z.infer<Schemas['CommandStepSchema']>;
