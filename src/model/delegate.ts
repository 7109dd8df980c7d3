/**
 * The delegate format: a step that hands its work to child executions the server creates, tracks and
 * joins (docs/workflow-format.md, "Delegation"). Its cross-field rules (one way of naming children, a
 * workflow for each, a join that can hold) live beside it, so the format is read in one place.
 */
import * as z from 'zod';
import { conditionSchemas } from './conditions.js';
import {
  CHILD_NAME_PATTERN,
  DELEGATION_MAX_CHILDREN,
  DELEGATION_MAX_TIMEOUT_MS,
  durationSchema,
} from './limits.js';
import { IdSchema } from './names.js';
import { workrailSchemas } from './workrail-fields.js';

function buildDelegateSchemas() {
  const { ConditionSchema } = conditionSchemas();
  const { ModelTierSchema } = workrailSchemas();
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
  return { DelegateSchema };
}

type Schemas = ReturnType<typeof buildDelegateSchemas>;
let built: Schemas | undefined;

/** The delegate schema (built once, on the first call). */
export function delegateSchemas(): Schemas {
  built ??= buildDelegateSchemas();
  return built;
}
