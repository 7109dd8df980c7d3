import * as z from 'zod';
import type { InputCheck, InputChecker } from '../../catalogs/input-check.js';
import type { Context } from '../../engine/conditions.js';
import { fail } from '../../engine/errors.js';
import { INPUT_STATUSES } from '../../engine/inputs.js';
import {
  promptBudget,
  renderPreview,
  renderPrompt,
  TemplateError,
  type TemplateScope,
} from '../../engine/templating.js';
import type { ValidationEngine } from '../../engine/validation-engine.js';
import { stepPromptText } from '../../engine/workrail.js';
import { IdSchema, isCommandStep, type Workflow } from '../../model/workflow.js';
import { type CheckPolicy, checkDefinition } from '../../workflows/check.js';
import { detectFormat } from '../../workflows/manifest-check.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { type NextCall, NextSchema, next, resolveInputsCall, startCall, startFill } from '../next.js';
import { annotate, defineTool, READ_ONLY, type ToolDefinition } from '../tool.js';
import { actionSteps, planSteps } from './step-plan.js';

export interface InputToolDeps {
  registry: WorkflowRegistry;
  engine: ValidationEngine;
  /** Environment values templates may read (WORKFLOWLOOKUP_ALLOWED_ENV), for the previews. */
  allowedEnv: Record<string, string>;
  /** The app's one check policy, as workflow_validate_manifest applies it to a manifest given as text. */
  checkPolicy: () => Promise<CheckPolicy>;
  /** The server's inputs check (the one workflow_start applies), providers included. */
  inputs: InputChecker;
}

const SubjectShape = {
  workflow_id: IdSchema.optional().describe('A workflow the server serves'),
  content: z.string().min(1).max(1_048_576).optional().describe('Or a manifest as JSON or YAML text'),
};
const subjectRefine = <T extends { workflow_id?: string | undefined; content?: string | undefined }>(v: T) =>
  (v.workflow_id === undefined) !== (v.content === undefined);
const SUBJECT_MESSAGE = { message: 'give exactly one of workflow_id or content', path: ['workflow_id'] };
const InputsSchema = z.record(z.string(), z.unknown()).describe('Input values by name');
const SubjectWithInputs = z
  .strictObject({ ...SubjectShape, inputs: InputsSchema.optional() })
  .refine(subjectRefine, SUBJECT_MESSAGE);

/**
 * What to do once the inputs were looked at: start with them when they are ready, else resolve them
 * again with the ones that were fine (and a fill entry for each of the others).
 */
function afterInputs(workflow: Workflow, r: InputCheck, context?: Record<string, unknown>): NextCall {
  if (!r.ready) return resolveInputsCall(workflow.id, r.inputs);
  return next(
    'workflow_start',
    {
      workflow_id: workflow.id,
      ...(Object.keys(r.values).length > 0 ? { inputs: r.values } : {}),
      ...(context !== undefined ? { context } : {}),
    },
    startFill(workflow),
  );
}

/**
 * A manifest given as text is not served: it is saved first, and the agent supplies the text it
 * already has (it is not repeated here). A served workflow goes on with `call`.
 */
function onSubject(content: string | undefined, call: NextCall): NextCall {
  if (content === undefined) return call;
  return next('workflow_save', {}, { content: 'the manifest text you sent' });
}

/** Seed 003 §5 input tools: a workflow's inputs, their providers, rendered templates and the run plan. */
export function inputTools(deps: InputToolDeps): ToolDefinition[] {
  const { registry, engine, checkPolicy, inputs } = deps;

  const subject = async (workflowId: string | undefined, content: string | undefined): Promise<Workflow> => {
    // One after the other: the registry's first load stops the worker it started for checking files.
    await registry.ready();
    await engine.load();
    if (workflowId !== undefined) return registry.require(workflowId).workflow;
    // The input schema gives exactly one of workflow_id and content.
    const text = content as string;
    const report = await checkDefinition(
      { text, format: detectFormat(text) },
      'authoring',
      await checkPolicy(),
    );
    if (!report.valid || !report.workflow) {
      fail({
        code: 'manifest_invalid',
        message: 'the manifest does not validate',
        violations: report.errors,
      });
    }
    return report.workflow;
  };

  const resolved = (workflow: Workflow, given: Record<string, unknown>, withProviders: boolean) =>
    inputs.check(workflow, given, { providers: withProviders });

  return [
    defineTool({
      name: 'workflow_preview_inputs',
      scope: 'read',
      aliases: ['workflow.preview_inputs'],
      title: 'Preview workflow inputs',
      description:
        "Lists a workflow's inputs: type, whether required, default, validation rules and provider.",
      inputSchema: z.strictObject(SubjectShape).refine(subjectRefine, SUBJECT_MESSAGE),
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        inputs: z
          .array(
            z.object({
              name: z.string().describe('Input name, used as ${{ inputs.<name> }}'),
              type: z.string().describe('Value type'),
              description: z.string().describe('What it is for'),
              required: z.boolean().describe('Must be given (no default)'),
              default: z.unknown().optional().describe('Default value, or {env} it reads'),
              rules: z
                .record(z.string(), z.unknown())
                .describe('enum, pattern, minLength, maxLength, minimum, maximum'),
              provider: z
                .record(z.string(), z.unknown())
                .optional()
                .describe('Command whose results are the choices'),
            }),
          )
          .describe('The inputs, in declaration order'),
        next: NextSchema,
      }),
      annotations: READ_ONLY,
      summarize: (r) => `${r.inputs.length} input(s).`,
      handler: async ({ workflow_id, content }) => {
        const workflow = await subject(workflow_id, content);
        return {
          workflow_id: workflow.id,
          inputs: Object.entries(workflow.inputs ?? {}).map(([name, spec]) => ({
            name,
            type: spec.type,
            description: spec.description,
            required: spec.required === true && spec.default === undefined,
            ...(spec.default !== undefined ? { default: spec.default } : {}),
            rules: Object.fromEntries(
              (['enum', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum'] as const)
                .filter((k) => spec[k] !== undefined)
                .map((k) => [k, spec[k]]),
            ),
            ...(spec.provider ? { provider: spec.provider } : {}),
          })),
          next: [onSubject(content, startCall(workflow))],
        };
      },
    }),
    defineTool({
      name: 'workflow_resolve_inputs',
      instructions: {
        rank: 40,
        text: (listed) =>
          listed('workflow_resolve_inputs')
            ? 'workflow_resolve_inputs checks the inputs a workflow declares before a run.'
            : undefined,
      },
      scope: 'read',
      aliases: ['workflow.resolve_inputs'],
      title: 'Resolve workflow inputs',
      description:
        'Applies defaults, checks values and asks providers for choices. ready is true only when every required input is valid and no provider needs a choice or failed.',
      inputSchema: SubjectWithInputs,
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        ready: z.boolean().describe('True when the workflow can start with these values'),
        values: z
          .record(z.string(), z.unknown())
          .describe('Resolved values (given or default) of valid inputs'),
        inputs: z
          .array(
            z.object({
              name: z.string().describe('Input name'),
              status: z.enum(INPUT_STATUSES).describe('What happened to it'),
              value: z.unknown().optional().describe('Its value'),
              message: z.string().optional().describe('Why it is not ready'),
              choices: z
                .array(z.object({ value: z.unknown(), label: z.string() }))
                .optional()
                .describe('Provider choices'),
            }),
          )
          .describe('Per-input status (the value only where it is not in values)'),
        next: NextSchema,
      }),
      // Input providers call list operations of the imported APIs.
      annotations: annotate({ changes: 'nothing', repeatable: true, external: true }),
      summarize: (r) =>
        r.ready
          ? 'The inputs are ready.'
          : `Not ready: ${r.inputs
              .filter((i) => i.message)
              .map((i) => `${i.name} (${i.status})`)
              .join(', ')}.`,
      handler: async ({ workflow_id, content, inputs }) => {
        const workflow = await subject(workflow_id, content);
        const r = await resolved(workflow, inputs ?? {}, true);
        return {
          workflow_id: workflow.id,
          ready: r.ready,
          values: r.values,
          // A valid value is in values; only a refused one is shown beside its reason.
          inputs: r.inputs.map(({ value, ...rest }) =>
            rest.status === 'invalid' ? { ...rest, value } : rest,
          ),
          next: [onSubject(content, afterInputs(workflow, r))],
        };
      },
    }),
    defineTool({
      name: 'workflow_preview_rendered',
      scope: 'read',
      aliases: ['workflow.preview_rendered'],
      title: 'Preview rendered steps',
      description:
        'Renders the ${{ }} templates of every step with the given inputs; references to step outputs are left as written and listed as deferred.',
      inputSchema: SubjectWithInputs,
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        ready: z.boolean().describe('Whether the inputs are ready'),
        steps: z
          .array(
            z.object({
              step_id: z.string().describe('Step id'),
              kind: z.enum(['agent', 'command']).describe('Who carries it out'),
              rendered: z.record(z.string(), z.unknown()).describe('Fields with templates resolved'),
              deferred: z.array(z.string()).describe('References resolved only at run time'),
              errors: z.array(z.string()).describe('References that cannot be resolved'),
            }),
          )
          .describe('Every prompt and command step'),
        final_output: z.unknown().optional().describe('final_output, rendered as far as possible'),
        next: NextSchema,
      }),
      annotations: READ_ONLY,
      summarize: (r) => `${r.steps.length} step(s) rendered${r.ready ? '' : '; the inputs are not ready'}.`,
      handler: async ({ workflow_id, content, inputs }) => {
        const workflow = await subject(workflow_id, content);
        const r = await resolved(workflow, inputs ?? {}, false);
        const scope: TemplateScope = { inputs: r.values, steps: {}, env: deps.allowedEnv };
        const renderField = (value: unknown, deferred: string[], errors: string[]) => {
          try {
            const out = renderPreview(value, scope);
            deferred.push(...out.deferred);
            return out.value;
          } catch (error) {
            if (!(error instanceof TemplateError)) throw error;
            errors.push(error.message);
            return value;
          }
        };
        const steps = actionSteps(workflow).map((step) => {
          const deferred: string[] = [];
          const errors: string[] = [];
          const fields: Record<string, unknown> = isCommandStep(step)
            ? {
                run: step.run,
                with: step.with ?? {},
                ...(step.body !== undefined ? { body: step.body } : {}),
              }
            : {
                title: step.title,
                prompt: stepPromptText(step),
                ...(step.guidance ? { guidance: step.guidance } : {}),
              };
          // Text an agent will read is shown as it will read it (values marked as data); command
          // arguments as the API will get them.
          const budget = promptBudget();
          const asPrompt = (v: unknown): unknown =>
            typeof v === 'string' ? renderPrompt(v, scope, budget) : Array.isArray(v) ? v.map(asPrompt) : v;
          const rendered = Object.fromEntries(
            Object.entries(fields).map(([k, v]) => {
              if (k === 'run') return [k, v];
              const data = renderField(v, deferred, errors);
              return [k, isCommandStep(step) ? data : asPrompt(v)];
            }),
          );
          return {
            step_id: step.id,
            kind: isCommandStep(step) ? ('command' as const) : ('agent' as const),
            rendered,
            deferred,
            errors,
          };
        });
        const finalDeferred: string[] = [];
        const finalErrors: string[] = [];
        return {
          workflow_id: workflow.id,
          ready: r.ready,
          steps,
          ...(workflow.final_output !== undefined
            ? { final_output: renderField(workflow.final_output, finalDeferred, finalErrors) }
            : {}),
          next: [onSubject(content, afterInputs(workflow, r))],
        };
      },
    }),
    defineTool({
      name: 'workflow_step_plan',
      scope: 'read',
      aliases: ['workflow.step_plan'],
      title: 'Plan a workflow run',
      description:
        'The ordered steps with their condition, what they depend on, and whether each will run, be skipped, or can only be decided at run time.',
      inputSchema: z
        .strictObject({
          ...SubjectShape,
          inputs: InputsSchema.optional(),
          context: z.record(z.string(), z.unknown()).optional().describe('Context the run will start with'),
        })
        .refine(subjectRefine, SUBJECT_MESSAGE),
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        ready: z.boolean().describe('Whether the inputs are ready'),
        steps: z
          .array(
            z.object({
              step_id: z.string().describe('Step id'),
              kind: z.enum(['agent', 'command', 'loop']).describe('Agent step, command step or loop'),
              title: z.string().describe('Title'),
              loop: z.string().optional().describe('Enclosing loop, for loop bodies'),
              condition: z.unknown().optional().describe('Its runCondition'),
              condition_result: z
                .union([z.boolean(), z.literal('runtime')])
                .describe('Value of the condition now'),
              depends_on: z
                .array(z.string())
                .describe('Declared depends_on plus steps whose outputs it uses'),
              decision: z.enum(['run', 'skip', 'runtime']).describe('What will happen'),
            }),
          )
          .describe('Steps in order'),
        next: NextSchema,
      }),
      annotations: READ_ONLY,
      summarize: (r) =>
        `${r.steps.filter((s) => s.decision !== 'skip').length} of ${r.steps.length} step(s) run or are decided at run time.`,
      handler: async ({ workflow_id, content, inputs, context }) => {
        const workflow = await subject(workflow_id, content);
        const r = await resolved(workflow, inputs ?? {}, false);
        const known: Context = { ...(context ?? {}), inputs: r.values };
        // Titles read as the run will show them: templates rendered, values marked as data.
        const scope: TemplateScope = { inputs: r.values, steps: {}, env: deps.allowedEnv, context: known };
        return {
          workflow_id: workflow.id,
          ready: r.ready,
          steps: planSteps(workflow, known).map((step) => ({
            ...step,
            title: renderPrompt(step.title, scope, promptBudget()),
          })),
          next: [onSubject(content, afterInputs(workflow, r, context))],
        };
      },
    }),
  ];
}
