/** The loop step: a body of steps repeated while, until, a number of times, or for each item. */
import * as z from 'zod';
import { type Condition, conditionSchemas } from './conditions.js';
import { MAX_LOOP_ITERATIONS } from './limits.js';
import { IdSchema, VAR_NAME } from './names.js';
import { promptStepSchemas } from './prompt-step.js';
import { stepCommonSchemas } from './step-common.js';
import { workrailSchemas } from './workrail-fields.js';

function buildLoopSchemas() {
  const { ConditionSchema } = conditionSchemas();
  const { RequireConfirmationSchema, FunctionDefinitionsSchema } = workrailSchemas();
  const { stepCommon } = stepCommonSchemas();
  const { PromptStepSchema } = promptStepSchemas();
  /** Where a while/until loop gets its decision (WorkRail): the agent's loop-control artifact, or a condition. */
  const ConditionSourceSchema = z
    .union([
      z
        .strictObject({
          kind: z.literal('artifact_contract').describe("The agent's artifact decides"),
          contractRef: z
            .literal('wr.contracts.loop_control')
            .describe('The loop-control contract: {kind: "wr.loop_control", decision: "continue" | "stop"}'),
          loopId: z
            .string()
            .min(1)
            .optional()
            .describe("Name artifacts may give (loopId) to address this loop, besides the loop step's id"),
        })
        .describe('The loop goes on while the latest loop-control artifact says "continue"'),
      z
        .strictObject({
          kind: z.literal('context_variable').describe('A context condition decides'),
          condition: ConditionSchema,
        })
        .describe('Same as the loop condition'),
    ])
    .describe('Where the loop decision comes from; a while/until loop needs this or condition');
  const loopCommon = {
    maxIterations: z
      .number()
      .int()
      .min(1)
      .max(MAX_LOOP_ITERATIONS, { message: `must be at most ${MAX_LOOP_ITERATIONS} iterations` })
      .describe(`Hard cap on iterations (at most ${MAX_LOOP_ITERATIONS}); the loop ends when it is reached`),
    iterationVar: z
      .string()
      .regex(VAR_NAME)
      .optional()
      .describe('Context variable holding the 1-based iteration number (default currentIteration)'),
  };

  const LoopConfigSchema = z
    .discriminatedUnion('type', [
      z
        .strictObject({
          type: z
            .literal('while')
            .describe('Repeat while the condition holds (checked before each iteration)'),
          condition: ConditionSchema.optional(),
          conditionSource: ConditionSourceSchema.optional(),
          ...loopCommon,
        })
        .describe('while loop'),
      z
        .strictObject({
          type: z
            .literal('until')
            .describe('Repeat until the condition holds (checked after each iteration)'),
          condition: ConditionSchema.optional(),
          conditionSource: ConditionSourceSchema.optional(),
          ...loopCommon,
        })
        .describe('until loop'),
      z
        .strictObject({
          type: z.literal('for').describe('Repeat a fixed number of times'),
          count: z
            .union([z.number().int().min(0), z.string().min(1)])
            .describe('Number of iterations, or the name of a context variable holding it'),
          ...loopCommon,
        })
        .describe('for loop'),
      z
        .strictObject({
          type: z.literal('forEach').describe('Repeat once per item of a context array'),
          items: z.string().min(1).describe('Context variable (dotted path) holding the array'),
          itemVar: z
            .string()
            .regex(VAR_NAME)
            .optional()
            .describe('Context variable for the current item (default currentItem)'),
          indexVar: z
            .string()
            .regex(VAR_NAME)
            .optional()
            .describe('Context variable for the 0-based index (default currentIndex)'),
          ...loopCommon,
        })
        .describe('forEach loop'),
    ])
    .meta({ id: 'LoopConfig', description: 'How a loop step repeats its body' });
  const LoopStepSchema = z
    .strictObject({
      ...stepCommon,
      type: z.literal('loop').describe('Marks a loop step'),
      prompt: z.string().min(1).optional().describe('Optional note shown with each body step'),
      agentRole: z.string().min(1).optional().describe('Role for the body steps that set none'),
      requireConfirmation: RequireConfirmationSchema.optional().describe(
        'WorkRail allows it on loops; accepted, no effect here (set it on body steps)',
      ),
      functionDefinitions: FunctionDefinitionsSchema,
      loop: LoopConfigSchema,
      body: z
        .union([
          IdSchema.describe(
            'Id of another top-level step that forms the body (it then runs only inside the loop)',
          ),
          z.array(PromptStepSchema).min(1).describe('Inline body steps'),
        ])
        .describe('The steps repeated on each iteration'),
    })
    .meta({ id: 'LoopStep', description: 'A step that repeats a body of steps' });
  return { ConditionSourceSchema, LoopConfigSchema, LoopStepSchema };
}

type Schemas = ReturnType<typeof buildLoopSchemas>;
let built: Schemas | undefined;

/** The loop step schemas (built once, on the first call). */
export function loopStepSchemas(): Schemas {
  built ??= buildLoopSchemas();
  return built;
}

export type ConditionSource = z.infer<Schemas['ConditionSourceSchema']>;

export type LoopConfig = z.infer<Schemas['LoopConfigSchema']>;

export type LoopStep = z.infer<Schemas['LoopStepSchema']>;

/** The condition of a while/until loop: its own, or the one a context_variable conditionSource names. */
export function loopCondition(cfg: LoopConfig): Condition | undefined {
  if (cfg.type !== 'while' && cfg.type !== 'until') return undefined;
  if (cfg.condition !== undefined) return cfg.condition;
  return cfg.conditionSource?.kind === 'context_variable' ? cfg.conditionSource.condition : undefined;
}

/** A loop decided by the agent's loop-control artifact (WorkRail artifact_contract). */
export function isArtifactLoop(cfg: LoopConfig): boolean {
  return (
    (cfg.type === 'while' || cfg.type === 'until') &&
    cfg.condition === undefined &&
    cfg.conditionSource?.kind === 'artifact_contract'
  );
}
