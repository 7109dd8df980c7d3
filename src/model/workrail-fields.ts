/**
 * WorkRail-compatible fields (docs/workrail-compatibility.md says what each one does here): prompt
 * blocks and fragments, function definitions, model tiers, confirmation gates, output contracts,
 * assessments, and the WorkRail fields every prompt step may carry.
 */
import * as z from 'zod';
import { conditionSchemas } from './conditions.js';
import { FUNCTION_NAME } from './names.js';

/** The block order of a rendered prompt (fixed, whatever order the file uses). */
export const PROMPT_BLOCK_ORDER = ['goal', 'constraints', 'procedure', 'outputRequired', 'verify'] as const;

function buildWorkrailSchemas() {
  const { ConditionSchema } = conditionSchemas();
  /** A piece of a prompt block item: text, or a reference to a built-in snippet (`{kind: "ref", refId}`). */
  const PromptPartSchema = z
    .union([
      z.string().describe('Plain text'),
      z
        .looseObject({
          kind: z.string().min(1).describe('"ref" (a built-in snippet named by refId) or "text"'),
          refId: z
            .string()
            .min(1)
            .optional()
            .describe('For kind "ref": the snippet, e.g. wr.refs.notes_first_durability'),
          text: z.string().optional().describe('For kind "text": the text'),
        })
        .describe('A structured part'),
    ])
    .meta({ id: 'PromptPart', description: 'Text or a reference inside a prompt block item' });
  const PromptBlockItemSchema = z
    .union([z.string(), z.array(PromptPartSchema)])
    .describe('One line of a block: text, or parts joined together');

  const PromptBlockSchema = z
    .union([
      z.string().describe('A paragraph'),
      z.array(PromptBlockItemSchema).describe('A list'),
      z.record(z.string(), PromptBlockItemSchema).describe('Named entries, shown as "name: text"'),
    ])
    .meta({ id: 'PromptBlock', description: 'The content of one prompt block' });
  const PromptBlocksSchema = z
    .strictObject({
      goal: PromptBlockSchema.optional().describe('What the step must achieve (rendered first, as "Goal")'),
      constraints: PromptBlockSchema.optional().describe('Rules the work must respect ("Constraints")'),
      procedure: PromptBlockSchema.optional().describe('How to go about it, as numbered steps ("Procedure")'),
      outputRequired: PromptBlockSchema.optional().describe(
        'What the step must hand back ("Output required")',
      ),
      verify: PromptBlockSchema.optional().describe('Checks before finishing ("Verify")'),
    })
    .meta({
      id: 'PromptBlocks',
      description:
        'A structured prompt (WorkRail): rendered as Markdown sections in the fixed order goal, constraints, procedure, outputRequired, verify',
    });
  const PromptFragmentSchema = z
    .strictObject({
      id: z.string().min(1).max(128).describe('Fragment id, unique within the step'),
      when: ConditionSchema.optional().describe(
        'The fragment is appended only when this holds (always when absent)',
      ),
      text: z.string().min(1).describe('Text appended to the step prompt'),
    })
    .meta({ id: 'PromptFragment', description: 'Conditional text appended to a step prompt (WorkRail)' });
  const FunctionDefinitionSchema = z
    .strictObject({
      name: z.string().regex(FUNCTION_NAME).describe('Function name (an identifier)'),
      definition: z.string().min(1).describe('What the function means, shown to the agent'),
      parameters: z
        .array(
          z
            .strictObject({
              name: z.string().regex(FUNCTION_NAME).describe('Parameter name'),
              type: z.enum(['string', 'number', 'boolean', 'array', 'object']).describe('Parameter type'),
              required: z.boolean().optional().describe('Must be given'),
              description: z.string().optional().describe('What it is for'),
              enum: z
                .array(z.union([z.string(), z.number(), z.boolean()]))
                .min(1)
                .optional()
                .describe('Allowed values'),
              default: z.unknown().optional().describe('Default value'),
            })
            .describe('One parameter'),
        )
        .optional()
        .describe('Parameters, shown with the definition'),
      scope: z.enum(['workflow', 'loop', 'step']).optional().describe('Where it is declared (informational)'),
    })
    .meta({
      id: 'FunctionDefinition',
      description: 'A named instruction steps can refer to as name() (WorkRail functionDefinitions)',
    });
  const FunctionDefinitionsSchema = z
    .array(FunctionDefinitionSchema)
    .optional()
    .describe('Named instructions; steps that reference them (functionReferences) get their definitions');

  const ModelTierSchema = z
    .enum(['lightweight', 'mid', 'heavy'])
    .describe('Recommended model tier (WorkRail); shown as the step model hint');

  const GateSchema = z
    .strictObject({
      kind: z
        .enum(['coordinator_eval', 'human_approval'])
        .describe('Who resolves the gate in WorkRail; here both ask the user to confirm'),
      condition: ConditionSchema.optional().describe('The gate applies only when this holds'),
    })
    .describe('A confirmation gate with a kind (WorkRail)');

  const RequireConfirmationSchema = z
    .union([z.boolean(), ConditionSchema, GateSchema])
    .describe(
      'Ask the user to confirm before moving on: true, a condition (context-dependent), or a WorkRail gate {kind, condition}',
    );

  const OutputContractSchema = z
    .strictObject({
      contractRef: z
        .string()
        .min(1)
        .describe('Artifact contract, e.g. wr.contracts.loop_control (the agent reports a loop decision)'),
      required: z.boolean().optional().describe('The artifact must be in the output (default true)'),
    })
    .meta({ id: 'OutputContract', description: 'A typed artifact the step output must carry (WorkRail)' });
  const AssessmentConsequenceSchema = z
    .strictObject({
      when: z
        .strictObject({
          anyEqualsLevel: z.string().min(1).describe('Fires when any reported dimension has this level'),
          forAssessment: z
            .string()
            .min(1)
            .optional()
            .describe('Only dimensions of this assessment (one of the step assessmentRefs)'),
        })
        .describe('The trigger'),
      effect: z
        .strictObject({
          kind: z.literal('require_followup').describe('The step stays current until reported otherwise'),
          guidance: z.string().min(1).describe('What the agent must do before submitting again'),
        })
        .describe('What happens when it fires'),
    })
    .meta({ id: 'AssessmentConsequence', description: 'What a reported assessment level does (WorkRail)' });
  const AssessmentSchema = z
    .strictObject({
      id: z.string().min(1).max(128).describe('Assessment id, referenced by steps (assessmentRefs)'),
      purpose: z.string().min(1).optional().describe('What the assessment judges'),
      dimensions: z
        .array(
          z
            .strictObject({
              id: z.string().min(1).max(128).describe('Dimension id'),
              purpose: z.string().min(1).optional().describe('What this dimension judges'),
              levels: z.array(z.string().min(1)).min(1).describe('Allowed levels, e.g. ["low", "high"]'),
            })
            .describe('One dimension'),
        )
        .min(1)
        .describe('The dimensions the agent rates'),
    })
    .meta({
      id: 'Assessment',
      description: 'A judgment the agent reports with a level per dimension (WorkRail)',
    });
  /** WorkRail step fields shared by prompt steps (inline loop bodies included). */
  const workrailStepFields = {
    promptBlocks: PromptBlocksSchema.optional(),
    promptFragments: z
      .array(PromptFragmentSchema)
      .optional()
      .describe('Conditional text appended to the prompt when its `when` holds'),
    functionDefinitions: FunctionDefinitionsSchema,
    functionReferences: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*\(\)$/))
      .optional()
      .describe('Functions (name()) whose definitions are shown with this step'),
    functionCalls: z
      .array(
        z
          .strictObject({
            name: z.string().regex(FUNCTION_NAME).describe('Function name'),
            args: z.record(z.string(), z.unknown()).describe('Arguments'),
          })
          .describe('One call'),
      )
      .optional()
      .describe('Function calls with arguments (shown with the step)'),
    templateCall: z
      .strictObject({
        templateId: z
          .string()
          .min(1)
          .describe('A built-in template, e.g. wr.templates.routine.design-review'),
        args: z.record(z.string(), z.unknown()).optional().describe('Template arguments'),
      })
      .optional()
      .describe('Expands a built-in template into this step (instead of prompt)'),
    outputContract: OutputContractSchema.optional(),
    assessmentRefs: z
      .array(z.string().min(1))
      .optional()
      .describe('Workflow assessments the agent reports with this step'),
    assessmentConsequences: z
      .array(AssessmentConsequenceSchema)
      .max(10)
      .optional()
      .describe('What reported levels do (at most 10)'),
    modelTier: ModelTierSchema.optional(),
    hasValidation: z.boolean().optional().describe('WorkRail marker; accepted, no effect here'),
    notesOptional: z.boolean().optional().describe('WorkRail marker; accepted, no effect here'),
    parallelDelegations: z
      .array(
        z
          .looseObject({
            workflowId: z.string().min(1).optional().describe('The workflow (routine) the sub-agent follows'),
            modelTier: ModelTierSchema.optional(),
            args: z.record(z.string(), z.unknown()).optional().describe('Arguments for the sub-agent'),
          })
          .describe('One delegation'),
      )
      .optional()
      .describe(
        'WorkRail sub-agent delegations: listed in the prompt (its whole text when the step has no other); the server spawns no sub-agent',
      ),
    synthesis: z
      .strictObject({
        prompt: z
          .string()
          .min(1)
          .max(4096)
          .optional()
          .describe("What the synthesis step asks (default: read the children's results and combine them)"),
        outputContract: OutputContractSchema.optional(),
      })
      .optional()
      .describe(
        "WorkRail: a step right after a parallel step that brings its delegations' results together (`<id>-synthesis`)",
      ),
    audit: z
      .looseObject({})
      .optional()
      .describe(
        'WorkRail audit hand-off (e.g. {delegate: {workflowId, modelTier, args}}); kept, no effect here',
      ),
    verification: z
      .looseObject({})
      .optional()
      .describe('WorkRail verification settings (e.g. {cognitive: true}); kept, no effect here'),
  };

  return {
    PromptPartSchema,
    PromptBlockSchema,
    PromptBlocksSchema,
    PromptFragmentSchema,
    FunctionDefinitionSchema,
    FunctionDefinitionsSchema,
    ModelTierSchema,
    GateSchema,
    RequireConfirmationSchema,
    OutputContractSchema,
    AssessmentConsequenceSchema,
    AssessmentSchema,
    workrailStepFields,
  };
}

type Schemas = ReturnType<typeof buildWorkrailSchemas>;
let built: Schemas | undefined;

/** The WorkRail field schemas (built once, on the first call). */
export function workrailSchemas(): Schemas {
  built ??= buildWorkrailSchemas();
  return built;
}

export type PromptPart = z.infer<Schemas['PromptPartSchema']>;

export type PromptBlock = z.infer<Schemas['PromptBlockSchema']>;

export type PromptBlocks = z.infer<Schemas['PromptBlocksSchema']>;

export type PromptFragment = z.infer<Schemas['PromptFragmentSchema']>;

export type FunctionDefinition = z.infer<Schemas['FunctionDefinitionSchema']>;

export type OutputContract = z.infer<Schemas['OutputContractSchema']>;

export type AssessmentConsequence = z.infer<Schemas['AssessmentConsequenceSchema']>;

export type Assessment = z.infer<Schemas['AssessmentSchema']>;
