/**
 * The workflow model. These zod schemas are the single source of truth: the TypeScript types are
 * inferred from them and `schema/workflow.schema.json` is generated from them (a test fails when the
 * committed file drifts).
 */
import * as z from 'zod';

/**
 * Ids: WorkRail's two forms, legacy (lowercase letters, digits, `_` and `-`) and namespaced
 * (`ns.name`, each part starting with a letter). No `/`, no leading dot and no `..`, so an id used as
 * a file name (`<id>.json`) always stays inside its directory.
 */
export const ID_PATTERN = '^(?:[a-z0-9_-]+|[a-z][a-z0-9_-]*\\.[a-z][a-z0-9_-]*)$';
const idRegex = new RegExp(ID_PATTERN);

/** Workflow ids and step ids share one shape (seed 001/002 input schemas, WorkRail's id forms). */
export const IdSchema = z
  .string()
  .min(3)
  .max(64)
  .regex(idRegex)
  .describe(
    'Lowercase letters, digits, _ and -, optionally namespaced as ns.name (e.g. wr.coding-task); 3-64 characters',
  );

/** Persona names stay plain (they are file names in the persona folder). */
const PERSONA_NAME = /^[a-z0-9-]+$/;

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

// ---------------------------------------------------------------------------------------------
// Conditions

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

/** The block order of a rendered prompt (fixed, whatever order the file uses). */
export const PROMPT_BLOCK_ORDER = ['goal', 'constraints', 'procedure', 'outputRequired', 'verify'] as const;

const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Loop variables are plain top-level context names (dotted names would be unreachable by conditions). */
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// ---------------------------------------------------------------------------------------------
// Limits

/**
 * A regular expression source matching the decimal integers 0..max (no leading zeros), so the JSON
 * Schema itself refuses an out-of-range duration string.
 */
export function upToPattern(max: number): string {
  const digits = String(max);
  const alternatives = ['0'];
  // Every number with fewer digits than max, then those with as many digits, digit by digit.
  if (digits.length === 2) alternatives.push('[1-9]');
  if (digits.length > 2) alternatives.push(`[1-9]\\d{0,${digits.length - 2}}`);
  for (let i = 0; i < digits.length; i++) {
    const d = Number(digits[i]);
    const low = i === 0 ? 1 : 0;
    if (d - 1 < low) continue;
    const range = d - 1 === low ? String(low) : `[${low}-${d - 1}]`;
    const rest = digits.length - i - 1;
    alternatives.push(
      `${digits.slice(0, i)}${range}${rest === 0 ? '' : rest === 1 ? '\\d' : `\\d{${rest}}`}`,
    );
  }
  if (max > 0) alternatives.push(digits);
  return `(?:${[...new Set(alternatives)].join('|')})`;
}

/** "1m", "90s" or "1500ms" for a number of milliseconds, in the largest unit that divides it. */
export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The longest an approval may wait before it counts as rejected (7 days). */
export const APPROVAL_MAX_TIMEOUT_MS = 604_800_000;

/** The longest a delegating step waits for its children before the wait times out (7 days). */
export const DELEGATION_MAX_TIMEOUT_MS = 604_800_000;

/** Most child executions one delegating step creates (a fixed list, a count, or one per list item). */
export const DELEGATION_MAX_CHILDREN = 50;

/** A child's name within its step: it names the child's results in the parent's context. */
export const CHILD_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$';

/** A check name: the key of an operator-defined check (WORKFLOWLOOKUP_CHECKS_FILE). */
export const CHECK_NAME_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,63}$';

/**
 * A duration of at most `maxMs`: milliseconds, or a number with ms, s or m ("500ms", "2s", "1m"). The
 * cap is part of the schema (number maximum, string pattern), so no path can accept a longer one.
 */
export function durationSchema(maxMs: number) {
  const units: [string, number][] = [
    ['ms', 1],
    ['s', 1000],
    ['m', 60_000],
  ];
  const pattern = `^(?:${units.map(([unit, size]) => `${upToPattern(Math.floor(maxMs / size))}${unit}`).join('|')})$`;
  const limit = `at most ${formatDuration(maxMs)} (${maxMs}ms)`;
  return z
    .union([
      z
        .number()
        .int()
        .min(0)
        .max(maxMs, { message: `must be ${limit}` }),
      z.string().regex(new RegExp(pattern), { message: `must be "<n>ms", "<n>s" or "<n>m", ${limit}` }),
    ])
    .describe(`Milliseconds, or "500ms" / "2s" / "1m"; ${limit}`);
}

/** Upper bounds of command-step durations and retries (docs/automation.md, authoring guide). */
export const COMMAND_LIMITS = {
  /** One request of a command step. */
  timeoutMs: 300_000,
  /** The pause between two polls of `repeat`. */
  everyMs: 600_000,
  /** The whole of a `repeat`. */
  repeatTimeoutMs: 3_600_000,
  /** Requests of a `repeat`. */
  maxAttempts: 1000,
} as const;

/** Iteration cap of every loop. */
export const MAX_LOOP_ITERATIONS = 10_000;

/** The condition and rule schemas (the rest of the model refers to them; built on first use). */
function buildRuleSchemas() {
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

  // ---------------------------------------------------------------------------------------------
  // Validation criteria (seed 002 ValidationEngine)

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
  return { ConditionSchema, ValidationRuleSchema };
}

/**
 * Every zod schema of the model, built on first use: building them costs several milliseconds of every
 * start, and a start that serves definitions checked at build time or cached in the data dir (and
 * `tools/list`) never needs them. Only a check of a definition (validate-definition.ts), the JSON
 * Schema of the format and WorkRail conditions read from a definition do.
 */
function buildSchemas() {
  const { ConditionSchema, ValidationRuleSchema } = ruleSchemas();
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
  // ---------------------------------------------------------------------------------------------
  // WorkRail fields (docs/workrail-compatibility.md says what each one does here)

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

  // ---------------------------------------------------------------------------------------------
  // Steps

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

  const ChildContextSchema = z
    .record(z.string(), z.unknown())
    .describe('Context the child execution starts with (values may use ${{ }} templates over the parent)');

  const DelegateChildSchema = z
    .strictObject({
      name: z
        .string()
        .regex(new RegExp(CHILD_NAME_PATTERN))
        .describe("The child's name: its results are gathered under it"),
      workflow: IdSchema.optional().describe("The workflow this child runs (default: the delegation's)"),
      context: ChildContextSchema.optional(),
      runCondition: ConditionSchema.optional().describe('The child is created only when this holds'),
      modelTier: ModelTierSchema.optional(),
    })
    .describe('One child execution');

  const DelegateSchema = z
    .strictObject({
      workflow: IdSchema.optional().describe(
        'The workflow (or routine) each child runs, unless a child names its own',
      ),
      children: z
        .array(DelegateChildSchema)
        .min(1)
        .max(DELEGATION_MAX_CHILDREN)
        .optional()
        .describe('A fixed list of children'),
      count: z
        .number()
        .int()
        .min(1)
        .max(DELEGATION_MAX_CHILDREN)
        .optional()
        .describe('That many identical children (named 1, 2, ...)'),
      forEach: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('One child per item of this context list (it must be set before the step)'),
      as: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/)
        .optional()
        .describe('With forEach: the context name each child finds its item under (default item)'),
      context: ChildContextSchema.optional(),
      join: z
        .union([
          z.enum(['all', 'any']),
          z.strictObject({ atLeast: z.number().int().min(1).max(DELEGATION_MAX_CHILDREN) }),
        ])
        .optional()
        .describe('When the step is done: all children completed (default), any one, or at least N'),
      onChildFailure: z
        .enum(['fail', 'continue'])
        .optional()
        .describe(
          'When failed or abandoned children make the join impossible: fail the execution (default), or continue with the children that completed',
        ),
      timeout: durationSchema(DELEGATION_MAX_TIMEOUT_MS)
        .optional()
        .describe(
          'How long the orchestrator waits before the wait times out (recorded; a fresh token waits again)',
        ),
      into: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/)
        .optional()
        .describe("Where the children's results go in the context (default: the step id)"),
    })
    .superRefine((d, ctx) => {
      const kinds = [d.children, d.count, d.forEach].filter((k) => k !== undefined).length;
      if (kinds !== 1)
        ctx.addIssue({
          code: 'custom',
          path: [],
          message: 'give exactly one of children, count and forEach',
          params: { rule: 'delegateChildren' },
        });
      if (
        d.workflow === undefined &&
        (d.children === undefined || d.children.some((c) => c.workflow === undefined))
      )
        ctx.addIssue({
          code: 'custom',
          path: ['workflow'],
          message: 'name the workflow the children run (here, or on every child)',
          params: { rule: 'delegateWorkflow' },
        });
      const names = (d.children ?? []).map((c) => c.name);
      const twice = names.find((n, i) => names.indexOf(n) !== i);
      if (twice !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['children'],
          message: `two children are named "${twice}"`,
          params: { rule: 'delegateChildNames' },
        });
      if (d.as !== undefined && d.forEach === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['as'],
          message: '`as` goes with forEach',
          params: { rule: 'delegateAs' },
        });
      const least = typeof d.join === 'object' ? d.join.atLeast : undefined;
      const known = d.children?.length ?? d.count;
      if (least !== undefined && known !== undefined && least > known)
        ctx.addIssue({
          code: 'custom',
          path: ['join', 'atLeast'],
          message: `atLeast ${least} of ${known} children can never hold`,
          params: { rule: 'delegateJoin' },
        });
    })
    .describe(
      'The step hands its work to child executions the server creates, tracks and joins: each child runs a workflow for a subagent; the step is done when the join holds, with their results in the context',
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
  const StepSchema = z.union([PromptStepSchema, LoopStepSchema, CommandStepSchema]);
  // ---------------------------------------------------------------------------------------------
  // Workflow

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
  return {
    ConditionSchema,
    ValidationRuleSchema,
    ValidationCriterionSchema,
    ValidationCriteriaSchema,
    PromptPartSchema,
    PromptBlockSchema,
    PromptBlocksSchema,
    PromptFragmentSchema,
    FunctionDefinitionSchema,
    ModelTierSchema,
    GateSchema,
    RequireConfirmationSchema,
    OutputContractSchema,
    AssessmentConsequenceSchema,
    AssessmentSchema,
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

type RuleSchemas = ReturnType<typeof buildRuleSchemas>;
type Schemas = ReturnType<typeof buildSchemas>;
let builtRules: RuleSchemas | undefined;
let built: Schemas | undefined;
const ruleSchemas = (): RuleSchemas => {
  builtRules ??= buildRuleSchemas();
  return builtRules;
};

/** The zod schemas of the workflow model (built once, on the first call). */
export function modelSchemas(): Schemas {
  built ??= buildSchemas();
  return built;
}

export type ValidationRule = z.infer<RuleSchemas['ValidationRuleSchema']>;

export type ValidationComposition =
  | { and: ValidationCriterion[]; message?: string | undefined }
  | { or: ValidationCriterion[]; message?: string | undefined }
  | { not: ValidationCriterion; message?: string | undefined };

export type ValidationCriterion = ValidationRule | ValidationComposition;

export type ValidationCriteria = z.infer<Schemas['ValidationCriteriaSchema']>;

export type PromptPart = z.infer<Schemas['PromptPartSchema']>;

export type PromptBlock = z.infer<Schemas['PromptBlockSchema']>;

export type PromptBlocks = z.infer<Schemas['PromptBlocksSchema']>;

export type PromptFragment = z.infer<Schemas['PromptFragmentSchema']>;

export type FunctionDefinition = z.infer<Schemas['FunctionDefinitionSchema']>;

export type OutputContract = z.infer<Schemas['OutputContractSchema']>;

export type AssessmentConsequence = z.infer<Schemas['AssessmentConsequenceSchema']>;

export type Assessment = z.infer<Schemas['AssessmentSchema']>;

export type Approval = z.infer<Schemas['ApprovalSchema']>;
export type Verify = z.infer<Schemas['VerifySchema']>;
export type PromptStep = z.infer<Schemas['PromptStepSchema']>;

export type InputSpec = z.infer<Schemas['InputSpecSchema']>;

export type ConditionSource = z.infer<Schemas['ConditionSourceSchema']>;

export type LoopConfig = z.infer<Schemas['LoopConfigSchema']>;

export type LoopStep = z.infer<Schemas['LoopStepSchema']>;

export type CommandStep = z.infer<Schemas['CommandStepSchema']>;

export type Step = z.infer<Schemas['StepSchema']>;

export type Workflow = z.infer<Schemas['WorkflowSchema']>;

export const DEFAULT_CATEGORY = 'general';

/** A step that does something (as opposed to a loop that repeats others). */
export type ActionStep = PromptStep | CommandStep;

export function isCommandStep(step: Step): step is CommandStep {
  return 'run' in step;
}

export function isPromptStep(step: Step): step is PromptStep {
  return !isLoopStep(step) && !isCommandStep(step);
}

/** The JSON Schema (draft 2020-12) of a workflow definition, generated from the zod model. */
export function workflowJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(modelSchemas().WorkflowSchema, {
    target: 'draft-2020-12',
    unrepresentable: 'any',
  });
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://workflowlookup.dev/schema/workflow.schema.json',
    ...generated,
  };
}

export function isLoopStep(step: Step): step is LoopStep {
  return 'type' in step && step.type === 'loop';
}

/** A WorkRail gate counts as a confirmation: its condition when it has one, else always. */
export function confirmationRule(step: {
  requireConfirmation?: PromptStep['requireConfirmation'];
}): boolean | Condition | undefined {
  const rc = step.requireConfirmation;
  if (rc === undefined || typeof rc === 'boolean') return rc;
  if ('kind' in rc) return rc.condition ?? true;
  return rc;
}

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
