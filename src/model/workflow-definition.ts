/** The workflow definition: its top-level fields around the steps (the root of the JSON Schema). */
import * as z from 'zod';
import { IdSchema, SEMVER, VAR_NAME } from './names.js';
import { inputSchemas } from './workflow-inputs.js';
import { stepSchemas } from './workflow-steps.js';
import { workrailSchemas } from './workrail-fields.js';

function buildWorkflowSchemas() {
  const { ModelTierSchema, FunctionDefinitionsSchema, AssessmentSchema } = workrailSchemas();
  const { InputSpecSchema } = inputSchemas();
  const { StepSchema } = stepSchemas();
  const WorkflowSchema = z
    .strictObject({
      $schema: z.string().optional().describe('Optional reference to this schema'),
      id: IdSchema.describe('Workflow id, unique across all sources'),
      name: z.string().min(1).max(200).describe('Human-friendly name'),
      description: z.string().min(1).describe('What the workflow accomplishes'),
      version: z
        .string()
        .regex(SEMVER, 'must be a semantic version such as "1.0.0" (major.minor.patch)')
        .describe('Semantic version of the definition'),
      category: z
        .string()
        .min(1)
        .max(64)
        .optional()
        .describe('Grouping such as development, review, documentation (default general)'),
      preconditions: z.array(z.string().min(1)).optional().describe('What must be true before starting'),
      clarificationPrompts: z
        .array(z.string().min(1))
        .optional()
        .describe('Questions to ask the user up front'),
      metaGuidance: z.array(z.string().min(1)).optional().describe('Guidance that applies to every step'),
      inputs: z
        .record(z.string().regex(VAR_NAME), InputSpecSchema)
        .optional()
        .describe('Named inputs, referenced as ${{ inputs.<name> }}'),
      requires: z
        .strictObject({
          catalogs: z.array(IdSchema).optional().describe('Catalogs (OpenAPI imports) the command steps use'),
        })
        .optional()
        .describe('What must be installed for the workflow to run'),
      final_output: z.unknown().optional().describe('What the workflow produces; may use ${{ }} templates'),
      about: z
        .string()
        .min(1)
        .optional()
        .describe('Longer Markdown description (WorkRail); shown by workflow_get'),
      examples: z
        .array(z.string().min(1))
        .optional()
        .describe('Example goals for the workflow (WorkRail); shown by workflow_get'),
      agentRole: z.string().min(1).optional().describe('Role for every step that sets none (WorkRail)'),
      modelTier: ModelTierSchema.optional(),
      functionDefinitions: FunctionDefinitionsSchema,
      assessments: z
        .array(AssessmentSchema)
        .optional()
        .describe('Judgments steps ask the agent to report (assessmentRefs)'),
      references: z
        .array(
          z
            .looseObject({
              id: z.string().min(1).describe('Reference id'),
              title: z.string().min(1).describe('Title'),
              source: z.string().min(1).describe('Path or URL of the document'),
              purpose: z.string().optional().describe('Why it matters'),
              authoritative: z.boolean().optional().describe('Whether it is the source of truth'),
            })
            .describe('One reference'),
        )
        .optional()
        .describe('Documents the agent may read (WorkRail); listed in the first step guidance'),
      metricsProfile: z
        .string()
        .min(1)
        .optional()
        .describe(
          'WorkRail session-metrics profile (coding, review, research, none); accepted, no effect here',
        ),
      recommendedPreferences: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('WorkRail autonomy and risk preferences; accepted, no effect here'),
      features: z
        .array(
          z.union([
            z.string().min(1),
            z.looseObject({ id: z.string().min(1).describe('Feature id') }).describe('A feature with config'),
          ]),
        )
        .optional()
        .describe(
          'WorkRail compiler features (e.g. wr.features.subagent_guidance); accepted, no effect here',
        ),
      capabilities: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('WorkRail agent capabilities (delegation, web_browsing); accepted, no effect here'),
      extensionPoints: z
        .array(z.looseObject({}).describe('One extension point'))
        .optional()
        .describe('WorkRail binding slots; accepted, no effect here'),
      validatedAgainstSpecVersion: z
        .union([z.number(), z.string()])
        .optional()
        .describe('WorkRail authoring-spec stamp; accepted, no effect here'),
      steps: z.array(StepSchema).min(1).describe('Ordered steps'),
    })
    .meta({
      id: 'Workflow',
      title: 'workflowlookup workflow',
      description: 'A multi-step workflow served by workflowlookup (a superset of the WorkRail format)',
    });
  return { WorkflowSchema };
}

type Schemas = ReturnType<typeof buildWorkflowSchemas>;
let built: Schemas | undefined;

/** The workflow schema (built once, on the first call). */
export function workflowSchemas(): Schemas {
  built ??= buildWorkflowSchemas();
  return built;
}

export type Workflow = z.infer<Schemas['WorkflowSchema']>;

export const DEFAULT_CATEGORY = 'general';
