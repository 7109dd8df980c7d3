/** The fields every kind of step shares (prompt, loop and command steps). */
import * as z from 'zod';
import { conditionSchemas } from './conditions.js';
import { IdSchema } from './names.js';

function buildStepCommon() {
  const { ConditionSchema } = conditionSchemas();
  const DependsOnSchema = z
    .array(IdSchema)
    .optional()
    .describe('Steps whose results this step uses (documentation for plans; steps still run in order)');

  const stepCommon = {
    id: IdSchema.describe('Step id, unique within the workflow'),
    title: z.string().min(1).max(200).describe('Short human-readable title'),
    runCondition: ConditionSchema.optional().describe(
      'The step runs only when this holds against the context',
    ),
  };
  return { DependsOnSchema, stepCommon };
}

type Schemas = ReturnType<typeof buildStepCommon>;
let built: Schemas | undefined;

/** The shared step fields (built once, on the first call). */
export function stepCommonSchemas(): Schemas {
  built ??= buildStepCommon();
  return built;
}
