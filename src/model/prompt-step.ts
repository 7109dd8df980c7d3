/**
 * The prompt step: what the agent carries out, with what may follow its output (validation criteria,
 * an operator's check, a person's approval) or a delegation in its place, and the WorkRail fields.
 */
import * as z from 'zod';
import type { Condition } from './conditions.js';
import { delegateSchemas } from './delegate.js';
import { APPROVAL_MAX_TIMEOUT_MS, CHECK_NAME_PATTERN, durationSchema } from './limits.js';
import { PERSONA_NAME } from './names.js';
import { stepCommonSchemas } from './step-common.js';
import { validationSchemas } from './validation-criteria.js';
import { workrailSchemas } from './workrail-fields.js';

function buildPromptStepSchemas() {
  const { ValidationCriteriaSchema } = validationSchemas();
  const { RequireConfirmationSchema, workrailStepFields } = workrailSchemas();
  const { DependsOnSchema, stepCommon } = stepCommonSchemas();
  const { DelegateSchema } = delegateSchemas();
  const ApprovalSchema = z
    .strictObject({
      prompt: z
        .string()
        .min(1)
        .max(2000)
        .describe('What the person approves (shown to them, never to the agent as a way out)'),
      approvers: z
        .array(z.string().min(1).max(256))
        .min(1)
        .max(50)
        .optional()
        .describe(
          "Principals who decide instead of the execution's owner, among those the server's operator names (WORKFLOWLOOKUP_APPROVERS); others are ignored",
        ),
      timeout: durationSchema(APPROVAL_MAX_TIMEOUT_MS)
        .optional()
        .describe('No decision by then rejects the output (default: waits until someone decides)'),
    })
    .describe(
      "A person must approve the step's accepted output before the execution moves on (dashboard, CLI, or the client's user through elicitation); the agent cannot",
    );

  const VerifySchema = z
    .strictObject({
      check: z
        .string()
        .regex(new RegExp(CHECK_NAME_PATTERN))
        .describe(
          "Name of a check the server's operator defined (WORKFLOWLOOKUP_CHECKS_FILE); the server runs it",
        ),
    })
    .describe(
      'A check the server runs when the agent submits the step: the step advances only when it passes',
    );

  const PromptStepSchema = z
    .strictObject({
      ...stepCommon,
      type: z
        .literal('parallel')
        .optional()
        .describe('WorkRail: the step is its parallelDelegations, which then give its prompt'),
      prompt: z
        .string()
        .min(1)
        .optional()
        .describe('What the agent must do in this step (or promptBlocks, or templateCall)'),
      agentRole: z.string().min(1).optional().describe('Role the agent should adopt for this step'),
      agent: z
        .string()
        .regex(PERSONA_NAME)
        .optional()
        .describe('Persona (agent definition) that should carry out the step'),
      guidance: z.array(z.string().min(1)).optional().describe('Extra hints shown with the prompt'),
      askForFiles: z.boolean().optional().describe('The agent should ask the user for relevant files first'),
      requireConfirmation: RequireConfirmationSchema.optional(),
      modelHint: z.string().min(1).optional().describe('Suggested kind of model for this step'),
      validationCriteria: ValidationCriteriaSchema.optional(),
      verify: VerifySchema.optional(),
      approval: ApprovalSchema.optional(),
      delegate: DelegateSchema.optional(),
      depends_on: DependsOnSchema,
      ...workrailStepFields,
    })
    .superRefine((step, ctx) => {
      // One source of text: prompt, or WorkRail's promptBlocks or templateCall.
      const sources = [step.prompt, step.promptBlocks, step.templateCall].filter(
        (v) => v !== undefined,
      ).length;
      if (step.type === 'parallel' && (step.parallelDelegations ?? []).length === 0)
        ctx.addIssue({
          code: 'custom',
          path: ['parallelDelegations'],
          message: 'a parallel step needs at least one of parallelDelegations',
          params: { rule: 'parallelStep' },
        });
      // A delegating step's work is its children's: no output of its own to check, verify or approve.
      for (const field of ['validationCriteria', 'verify', 'approval', 'outputContract'] as const) {
        if (step.delegate !== undefined && step[field] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: `a delegating step has no output of its own for ${field}: put it on the children's workflow, or on a step after this one`,
            params: { rule: 'delegateAlone' },
          });
      }
      if (sources === 0 && step.type !== 'parallel')
        ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['prompt'] });
      else if (sources > 1)
        ctx.addIssue({
          code: 'custom',
          path: [],
          message: 'give only one of prompt, promptBlocks and templateCall',
          params: { rule: 'promptSource' },
        });
    })
    .meta({ id: 'PromptStep', description: 'A step the agent carries out' });
  return { ApprovalSchema, VerifySchema, PromptStepSchema };
}

type Schemas = ReturnType<typeof buildPromptStepSchemas>;
let built: Schemas | undefined;

/** The prompt step schemas (built once, on the first call). */
export function promptStepSchemas(): Schemas {
  built ??= buildPromptStepSchemas();
  return built;
}

export type Approval = z.infer<Schemas['ApprovalSchema']>;
export type Verify = z.infer<Schemas['VerifySchema']>;
export type PromptStep = z.infer<Schemas['PromptStepSchema']>;

/** A WorkRail gate counts as a confirmation: its condition when it has one, else always. */
export function confirmationRule(step: {
  requireConfirmation?: PromptStep['requireConfirmation'];
}): boolean | Condition | undefined {
  const rc = step.requireConfirmation;
  if (rc === undefined || typeof rc === 'boolean') return rc;
  if ('kind' in rc) return rc.condition ?? true;
  return rc;
}
