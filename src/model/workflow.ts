/**
 * The workflow model. These zod schemas are the single source of truth: the TypeScript types are
 * inferred from them and `schema/workflow.schema.json` is generated from them (a test fails when the
 * committed file drifts).
 *
 * Each job of the model lives in a file of its own (names, limits, conditions, validation criteria,
 * WorkRail fields, the delegate format, each kind of step, inputs, the definition, the JSON Schema
 * export); this module is the one callers import, so it gathers them without adding any of its own.
 *
 * Every zod schema is built on first use: building them costs several milliseconds of every start, and
 * a start that serves definitions checked at build time or cached in the data dir (and `tools/list`)
 * never needs them. Only a check of a definition (validate-definition.ts), the JSON Schema of the
 * format and WorkRail conditions read from a definition do.
 */
import { commandStepSchemas } from './command-step.js';
import { conditionSchemas } from './conditions.js';
import { loopStepSchemas } from './loop-step.js';
import { promptStepSchemas } from './prompt-step.js';
import { validationSchemas } from './validation-criteria.js';
import { workflowSchemas } from './workflow-definition.js';
import { inputSchemas } from './workflow-inputs.js';
import { stepSchemas } from './workflow-steps.js';
import { workrailSchemas } from './workrail-fields.js';

export type { CommandStep } from './command-step.js';
export type { Condition, VarCondition } from './conditions.js';
export {
  APPROVAL_MAX_TIMEOUT_MS,
  CHECK_NAME_PATTERN,
  CHILD_NAME_PATTERN,
  COMMAND_LIMITS,
  DELEGATION_MAX_CHILDREN,
  DELEGATION_MAX_TIMEOUT_MS,
  durationSchema,
  formatDuration,
  MAX_LOOP_ITERATIONS,
  upToPattern,
} from './limits.js';
export type { ConditionSource, LoopConfig, LoopStep } from './loop-step.js';
export { isArtifactLoop, loopCondition } from './loop-step.js';
export { ID_PATTERN, IdSchema } from './names.js';
export type { Approval, PromptStep, Verify } from './prompt-step.js';
export { confirmationRule } from './prompt-step.js';
export type {
  ValidationComposition,
  ValidationCriteria,
  ValidationCriterion,
  ValidationRule,
} from './validation-criteria.js';
export type { Workflow } from './workflow-definition.js';
export { DEFAULT_CATEGORY } from './workflow-definition.js';
export type { InputSpec } from './workflow-inputs.js';
export { workflowJsonSchema } from './workflow-json-schema.js';
export type { ActionStep, Step } from './workflow-steps.js';
export { isCommandStep, isLoopStep, isPromptStep } from './workflow-steps.js';
export type {
  Assessment,
  AssessmentConsequence,
  FunctionDefinition,
  OutputContract,
  PromptBlock,
  PromptBlocks,
  PromptFragment,
  PromptPart,
} from './workrail-fields.js';
export { PROMPT_BLOCK_ORDER } from './workrail-fields.js';

/** Every zod schema of the model in one object, built in the order they depend on each other. */
function buildSchemas() {
  const { ConditionSchema } = conditionSchemas();
  const { ValidationRuleSchema, ValidationCriterionSchema, ValidationCriteriaSchema } = validationSchemas();
  const w = workrailSchemas();
  const { ApprovalSchema, VerifySchema, PromptStepSchema } = promptStepSchemas();
  const { InputSpecSchema } = inputSchemas();
  const { ConditionSourceSchema, LoopConfigSchema, LoopStepSchema } = loopStepSchemas();
  const { CommandStepSchema } = commandStepSchemas();
  const { StepSchema } = stepSchemas();
  const { WorkflowSchema } = workflowSchemas();
  return {
    ConditionSchema,
    ValidationRuleSchema,
    ValidationCriterionSchema,
    ValidationCriteriaSchema,
    PromptPartSchema: w.PromptPartSchema,
    PromptBlockSchema: w.PromptBlockSchema,
    PromptBlocksSchema: w.PromptBlocksSchema,
    PromptFragmentSchema: w.PromptFragmentSchema,
    FunctionDefinitionSchema: w.FunctionDefinitionSchema,
    ModelTierSchema: w.ModelTierSchema,
    GateSchema: w.GateSchema,
    RequireConfirmationSchema: w.RequireConfirmationSchema,
    OutputContractSchema: w.OutputContractSchema,
    AssessmentConsequenceSchema: w.AssessmentConsequenceSchema,
    AssessmentSchema: w.AssessmentSchema,
    ApprovalSchema,
    VerifySchema,
    PromptStepSchema,
    InputSpecSchema,
    ConditionSourceSchema,
    LoopConfigSchema,
    LoopStepSchema,
    CommandStepSchema,
    StepSchema,
    WorkflowSchema,
  };
}

type Schemas = ReturnType<typeof buildSchemas>;
let built: Schemas | undefined;

/** The zod schemas of the workflow model (built once, on the first call). */
export function modelSchemas(): Schemas {
  built ??= buildSchemas();
  return built;
}
