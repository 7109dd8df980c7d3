import * as z from 'zod';
import type { CatalogRegistry } from '../../catalogs/catalog-registry.js';
import { missingCatalogs, requiredCatalogs } from '../../catalogs/requirements.js';
import { checkContextValues, refuseContext } from '../../engine/context-needs.js';
import { DomainFailure, fail } from '../../engine/errors.js';
import { stepFill } from '../../engine/fill.js';
import { buildGuidance, contextScope } from '../../engine/guidance.js';
import { allStepIds, findActionStep, nextStep } from '../../engine/next-step.js';
import { CriteriaError, GENERIC_SUGGESTION, type ValidationEngine } from '../../engine/validation-engine.js';
import { checkSubmission, withSubmissionCheck } from '../../engine/workrail.js';
import { ID_PATTERN, IdSchema, isCommandStep, type Workflow } from '../../model/workflow.js';
import { ATTR, inSpanSync } from '../../telemetry/trace.js';
import { contextTable, toMermaid, workflowDiagram } from '../../workflows/diagram.js';
import { contentVersion } from '../../workflows/entry.js';
import type { Listing } from '../../workflows/listing.js';
import { formatOf } from '../../workflows/parse.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { NextSchema, next as nextCall, retryingContext } from '../next.js';
import { ViolationSchema } from '../schemas.js';
import { defineTool, READ_ONLY, type ToolDefinition } from '../tool.js';

const orUndefined = (fill: Record<string, string>) => (Object.keys(fill).length > 0 ? fill : undefined);

/** The context needs of a workflow for the source and diagram views; absent when it reads none. */
function contextOf(workflow: Workflow | undefined) {
  const context = workflow === undefined ? [] : contextTable(workflow);
  return context.length > 0 ? { context } : {};
}

/** Step outputs above this size are rejected as invalid params (1 MiB of text). */
export const MAX_OUTPUT_CHARS = 1_048_576;

const ContextSchema = z
  .record(z.string(), z.unknown())
  .describe('Variables conditions read (taskScope, complexity, ...)');

const StepIdSchema = z.string().regex(new RegExp(ID_PATTERN)).min(3).max(64);

const SummarySchema = z.object({
  id: z.string().describe('Workflow id'),
  name: z.string().describe('Human-friendly name'),
  description: z.string().describe('What the workflow accomplishes'),
  category: z.string().describe('Category (general when the workflow declares none)'),
  version: z.string().describe('Semantic version'),
  ready: z
    .literal(false)
    .optional()
    .describe('Present (false) when the workflow cannot start yet; absent when it can'),
  reason: z.string().optional().describe('Why it cannot start yet, and what fixes it'),
});

/** Most workflows one workflow_list page holds. */
export const MAX_LIST_LIMIT = 1000;

/** The page cursor: the id of the last workflow the previous page held (ids are sorted, so pages are stable). */
const encodeCursor = (id: string) => Buffer.from(JSON.stringify({ after: id })).toString('base64url');
function decodeCursor(cursor: string): string {
  try {
    const after = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown })
      .after;
    if (typeof after === 'string') return after;
  } catch {
    // reported below
  }
  return fail({
    code: 'invalid_params',
    message: 'Invalid params',
    details: 'cursor: not a cursor this server gave; pass the next_cursor of the previous page, or omit it',
  });
}

const GuidanceSchema = z
  .object({
    prompt: z.string().describe('The step prompt framed with role, hints, loop position and checks'),
    modelHint: z.string().describe('Suggested kind of model, e.g. model-with-strong-reasoning'),
    requiresConfirmation: z.boolean().describe('Whether the user must confirm before moving on'),
    validationCriteria: z.array(z.string()).describe('What the output will be checked for'),
  })
  .describe('Orchestration guidance');

function checkStepIds(workflow: Workflow, ids: readonly string[]): void {
  const known = allStepIds(workflow);
  for (const stepId of ids) {
    if (!known.has(stepId)) {
      fail({ code: 'step_not_found', message: 'Step not found', workflowId: workflow.id, stepId });
    }
  }
}

/** A command step's output (a response body, as JSON text) checked against its output_contract. */
function commandOutputCheck(
  engine: ValidationEngine,
  contract: Record<string, unknown> | undefined,
  output: string,
) {
  if (contract === undefined) return { valid: true, issues: [], suggestions: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(output);
  } catch (error) {
    return {
      valid: false,
      issues: [`the output is not valid JSON (${(error as Error).message})`],
      suggestions: ['Pass the response body of the command as JSON text.'],
    };
  }
  const issues = engine.schemaErrors(contract, parsed);
  return {
    valid: issues.length === 0,
    issues: issues.map((i) => `output_contract: ${i}`),
    suggestions: issues.length > 0 ? [GENERIC_SUGGESTION] : [],
  };
}

export interface GuidanceDeps {
  registry: WorkflowRegistry;
  /** Imported catalogs: workflows whose command steps need one that is missing are listed as not ready. */
  catalogs?: CatalogRegistry;
  engine: ValidationEngine;
  /** Environment variables `${{ env.X }}` may read in prompts. */
  allowedEnv?: Record<string, string>;
}

/** The stateless guidance face (seeds 001/002): the client holds completedSteps and context. */
export function guidanceTools({
  registry,
  engine,
  catalogs,
  allowedEnv = {},
}: GuidanceDeps): ToolDefinition[] {
  // The listing with readiness marks, rebuilt only when the definitions or the missing catalogs change
  // (the same object is handed out again, and its text copy is serialized once).
  let marked: { base: Listing; key: string; listing: Listing } | undefined;
  /**
   * The listed workflows that need some catalog, found once per listing (walking every step of a
   * thousand workflows on each call was a third of a paged workflow_list).
   */
  let needing: { base: Listing; workflows: Workflow[] } | undefined;
  const listing = async (): Promise<Listing> => {
    await registry.ready();
    const base = registry.list();
    if (catalogs === undefined) return base;
    // Listing never depends on the store: catalogs that cannot be read now (a database that is down)
    // leave the workflows unmarked, and workflow_start says what is wrong.
    if (
      !(await catalogs.ready().then(
        () => true,
        () => false,
      ))
    )
      return base;
    if (needing?.base !== base) {
      const workflows: Workflow[] = [];
      for (const summary of base.workflows) {
        const entry = registry.get(summary.id);
        if (entry?.status === 'valid' && requiredCatalogs(entry.workflow).size > 0)
          workflows.push(entry.workflow);
      }
      needing = { base, workflows };
    }
    const reasons = new Map<string, string>();
    for (const workflow of needing.workflows) {
      const reason = missingCatalogs(workflow, catalogs);
      if (reason !== undefined) reasons.set(workflow.id, reason);
    }
    const key = JSON.stringify([...reasons]);
    if (marked?.base !== base || marked.key !== key) {
      const workflows = base.workflows.map((w) => {
        const reason = reasons.get(w.id);
        return reason === undefined ? w : { ...w, ready: false as const, reason };
      });
      marked = { base, key, listing: reasons.size === 0 ? base : { ...base, workflows } };
    }
    return marked.listing;
  };
  return [
    defineTool({
      name: 'workflow_list',
      scope: 'read',
      core: true,
      aliases: ['workflow.list'],
      title: 'List workflows',
      description:
        'Lists workflows (ready: false says why one cannot start); broken lists invalid files. Page with limit, then cursor = next_cursor.',
      inputSchema: z.strictObject({
        limit: z
          .number()
          .int()
          .min(1)
          .max(MAX_LIST_LIMIT)
          .optional()
          .describe('Page size (default: no paging)'),
        cursor: z.string().max(512).optional().describe('next_cursor of the last page'),
      }),
      outputSchema: z.object({
        workflows: z.array(SummarySchema).describe('Valid workflows, sorted by id'),
        broken: z
          .array(
            z.object({
              file: z.string().describe('Path of the broken file'),
              source: z.string().describe('Which source it came from'),
              id: z.string().optional().describe('Its id, where readable'),
              violations: z.array(ViolationSchema).describe('Why it is broken'),
            }),
          )
          .describe('Definition files that could not be loaded (on the first page only)'),
        next_cursor: z
          .string()
          .optional()
          .describe('Pass as cursor for the next page; absent on the last page'),
      }),
      annotations: READ_ONLY,
      summarize: (r) =>
        `${r.workflows.length} workflow(s)${r.broken.length > 0 ? `, ${r.broken.length} broken file(s)` : ''}.`,
      handler: async ({ limit, cursor }) => {
        const all = await listing();
        // Seed 001: without arguments, the whole list.
        if (limit === undefined && cursor === undefined) return all;
        const after = cursor === undefined ? undefined : decodeCursor(cursor);
        let start = 0;
        if (after !== undefined) {
          // The first id after the cursor's (binary search: ids are sorted).
          let lo = 0;
          let hi = all.workflows.length;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            if ((all.workflows[mid]?.id as string) <= after) lo = mid + 1;
            else hi = mid;
          }
          start = lo;
        }
        const size = limit ?? 100;
        const workflows = all.workflows.slice(start, start + size);
        const last = workflows.at(-1);
        return {
          workflows,
          broken: after === undefined ? all.broken : [],
          ...(all.git_sources !== undefined ? { git_sources: all.git_sources } : {}),
          ...(start + size < all.workflows.length && last ? { next_cursor: encodeCursor(last.id) } : {}),
        };
      },
    }),
    defineTool({
      name: 'workflow_get',
      scope: 'read',
      core: true,
      aliases: ['workflow.get'],
      title: 'Get a workflow',
      description:
        'Retrieves a workflow by ID. view source: its file, to edit; view diagram: a Mermaid flowchart to show the user.',
      // Seed 001 fixes this schema (id); workflow_id, the name every other tool uses, is accepted too.
      argumentAliases: { workflow_id: 'id' },
      inputSchema: z.strictObject({
        id: IdSchema.describe('Workflow id'),
        view: z.enum(['definition', 'source', 'diagram']).optional().describe('Default: definition'),
      }),
      outputSchema: z
        .looseObject({
          id: z.string().optional().describe('Workflow id (definition view)'),
          name: z.string().optional().describe('Name (definition view)'),
          description: z.string().optional().describe('Description (definition view)'),
          version: z
            .string()
            .optional()
            .describe('Semver (definition view) or sha256 of the file (source view)'),
          steps: z.array(z.looseObject({})).optional().describe('Steps (definition view)'),
          workflow_id: z.string().optional().describe('Workflow id (source view)'),
          path: z.string().optional().describe('File path (source view)'),
          format: z.enum(['json', 'yaml']).optional().describe('File format (source view)'),
          content: z.string().optional().describe('File text (source view)'),
          parsed: z
            .looseObject({})
            .nullable()
            .optional()
            .describe('Parsed definition, null if invalid (source view)'),
          violations: z.array(ViolationSchema).optional().describe('Why the file is invalid (source view)'),
          mermaid: z
            .string()
            .optional()
            .describe('Mermaid flowchart: steps, conditions on edges, loops, command steps (diagram view)'),
          context: z
            .array(z.looseObject({}))
            .optional()
            .describe(
              'Context variables the workflow reads: {variable, expects, set_by, required, read_by, at_start?} (source and diagram views)',
            ),
        })
        .describe('The workflow definition (valid against the workflow JSON Schema), or its source view'),
      annotations: READ_ONLY,
      summarize: (r) => `Workflow ${String(r.id ?? r.workflow_id)}.`,
      handler: async ({ id, view }) => {
        await registry.ready();
        if (view === 'diagram') {
          const { workflow } = registry.require(id);
          return {
            workflow_id: id,
            mermaid: toMermaid(workflowDiagram(workflow)),
            ...contextOf(workflow),
          };
        }
        if (view !== 'source') {
          const loaded = registry.require(id);
          // A workflow from git says which repository, ref and commit it is (beside the definition).
          return loaded.provenance === undefined
            ? loaded.workflow
            : { ...loaded.workflow, source: loaded.provenance };
        }
        const entry = registry.get(id);
        if (entry === undefined) return registry.missing(id);
        // Read the safe way: a link that now leaves its source dir is refused, never followed.
        const bytes = await registry.readSource(entry);
        return {
          workflow_id: id,
          path: entry.file,
          format: formatOf(entry.file) ?? 'json',
          content: bytes.toString('utf8'),
          parsed: entry.status === 'valid' ? entry.workflow : null,
          version: contentVersion(bytes),
          ...(entry.status === 'valid' && entry.provenance !== undefined ? { source: entry.provenance } : {}),
          ...contextOf(entry.status === 'valid' ? entry.workflow : undefined),
          ...(entry.status === 'broken' ? { violations: entry.violations } : {}),
        };
      },
    }),
    defineTool({
      name: 'workflow_next',
      instructions: {
        rank: 20,
        text: (listed) =>
          listed('workflow_next')
            ? `Stateless guidance: workflow_next {workflowId, completedSteps, context} returns one step and, in next, the workflow_next call to send when it is done (fill names the context variables to add)${listed('workflow_validate') ? ', and check a step output with workflow_validate' : ''}.`
            : undefined,
      },
      scope: 'read',
      core: true,
      aliases: ['workflow.next'],
      // Seed 001 fixes the guidance tools' schemas (workflowId); workflow_id is accepted too.
      argumentAliases: { workflow_id: 'workflowId' },
      title: 'Next workflow step',
      description:
        'Gets the next step guidance from the completed steps and the context; send back the completedSteps and context it returns.',
      inputSchema: z.strictObject({
        workflowId: IdSchema.describe('The workflow ID'),
        currentStep: StepIdSchema.optional().describe('Current step ID (optional)'),
        completedSteps: z
          .array(z.string().regex(new RegExp(ID_PATTERN)))
          .max(10_000)
          .refine((a) => new Set(a).size === a.length, 'completedSteps must not repeat an id')
          .meta({ uniqueItems: true })
          .describe('Array of completed step IDs'),
        context: ContextSchema.optional(),
      }),
      outputSchema: z.object({
        step: z
          .looseObject({
            id: z.string(),
            title: z.string(),
            prompt: z.string().optional(),
            run: z.string().optional(),
          })
          .nullable()
          .describe('The next step, or null when the workflow is complete'),
        guidance: GuidanceSchema,
        isComplete: z.boolean().describe('True when no step is left'),
        completedSteps: z.array(z.string()).describe('Completed step ids to send with the next call'),
        context: ContextSchema.describe(
          'Context to send with the next call (includes loop progress in _loops)',
        ),
        loop: z
          .object({
            loopId: z.string().describe('Loop step id'),
            title: z.string().describe('Loop title'),
            type: z.string().describe('while, until, for or forEach'),
            iteration: z.number().describe('1-based iteration in progress'),
            maxIterations: z.number().describe('Iteration cap'),
            total: z.number().optional().describe('forEach: number of items'),
            item: z
              .object({
                var: z.string().describe('Context variable'),
                value: z.unknown().describe('The item'),
              })
              .optional()
              .describe('forEach: the current item'),
          })
          .optional()
          .describe('Present when the step is part of a loop body'),
        notices: z
          .array(z.string())
          .optional()
          .describe('Things to know, e.g. a loop that stopped at its iteration limit'),
        next: NextSchema.optional().describe(
          'The workflow_next call to send once the step is done (fill: the context variables to add); empty when complete',
        ),
      }),
      annotations: READ_ONLY,
      summarize: (r) => (r.step ? `Next step: ${r.step.id}.` : 'The workflow is complete.'),
      handler: async (args) => {
        const { workflowId, currentStep, completedSteps, context } = args;
        await registry.ready();
        const { workflow } = registry.require(workflowId);
        checkStepIds(workflow, currentStep === undefined ? completedSteps : [currentStep, ...completedSteps]);
        const next = await retryingContext('workflow_next', args, async () => {
          // Every value the conditions read must fit what they compare it with.
          const check = checkContextValues(workflow, context, 'context.');
          if (check.issues.length > 0) refuseContext(workflow, check);
          return nextStep(workflow, completedSteps, context ?? {});
        });
        const guidance = next.step
          ? buildGuidance(
              workflow,
              next.step,
              next.context,
              next.loop,
              next.notices,
              contextScope(next.context, allowedEnv),
              // The client holds the state: the first step carries the meta guidance in full.
              {
                metaGuidance: completedSteps.length === 0 ? 'full' : 'reference',
                // No executions here: a delegating step's children are the client's to do.
                stateless: true,
              },
            )
          : {
              prompt: [
                ...next.notices,
                `Workflow "${workflow.name}" is complete: every applicable step is done.`,
              ].join('\n\n'),
              modelHint: 'general-purpose',
              requiresConfirmation: false,
              validationCriteria: [],
            };
        return {
          step: next.step,
          guidance,
          isComplete: next.isComplete,
          completedSteps: next.completedSteps,
          context: next.context,
          ...(next.loop ? { loop: next.loop } : {}),
          ...(next.notices.length > 0 ? { notices: next.notices } : {}),
          next: next.step
            ? [
                nextCall(
                  'workflow_next',
                  {
                    workflowId,
                    completedSteps: [...next.completedSteps, next.step.id],
                    context: next.context,
                  },
                  orUndefined(stepFill(workflow, next.step, next.context, 'stateless')),
                ),
              ]
            : [],
        };
      },
    }),
    defineTool({
      name: 'workflow_validate',
      scope: 'read',
      core: true,
      argumentAliases: { workflow_id: 'workflowId' },
      title: 'Validate step output',
      description:
        "Validates a step's output against its criteria (a manifest check is workflow_validate_manifest).",
      inputSchema: z.strictObject({
        workflowId: IdSchema.describe('The workflow ID'),
        stepId: StepIdSchema.describe('The step ID to validate'),
        output: z.string().min(1).max(MAX_OUTPUT_CHARS).describe('The step output to validate'),
        context: ContextSchema.optional(),
      }),
      outputSchema: z.object({
        valid: z.boolean().describe('Whether the output meets every applicable criterion'),
        issues: z.array(z.string()).describe('Problems found (empty when valid)'),
        suggestions: z.array(z.string()).describe('Actionable suggestions'),
      }),
      annotations: READ_ONLY,
      summarize: (r) => (r.valid ? 'The output passes.' : `The output fails: ${r.issues.join('; ')}`),
      handler: async ({ workflowId, stepId, output, context }) => {
        await registry.ready();
        const { workflow } = registry.require(workflowId);
        const step = findActionStep(workflow, stepId);
        if (step === undefined)
          fail({ code: 'step_not_found', message: 'Step not found', workflowId, stepId });
        // The regex and JSON Schema worker starts only when this check needs it.
        if (!isCommandStep(step)) await engine.loadFor(step.validationCriteria);
        else if (step.output_contract !== undefined) await engine.load();
        try {
          if (isCommandStep(step)) return commandOutputCheck(engine, step.output_contract, output);
          const validation = inSpanSync(
            'validation check',
            { [ATTR.workflow]: workflowId, [ATTR.step]: stepId },
            (span) => {
              engine.check(step.validationCriteria);
              const result = engine.validate(step.validationCriteria, output, context ?? {});
              span?.setAttribute('workflowlookup.validation.valid', result.valid);
              return result;
            },
          );
          return withSubmissionCheck(validation, checkSubmission(workflow, step, { summary: output }));
        } catch (error) {
          if (error instanceof DomainFailure && error.error.code === 'validation_not_checked') {
            // Not checked in time: no verdict. The same call again, the output left for the agent to
            // send once more (it may be a megabyte: not echoed back).
            fail({
              ...error.error,
              workflowId,
              stepId,
              retry: {
                tool: 'workflow_validate',
                arguments: { workflowId, stepId, ...(context !== undefined ? { context } : {}) },
                fill: { output: 'the same output, unchanged' },
              },
            });
          }
          if (!(error instanceof CriteriaError)) throw error;
          if (error.kind === 'schema') {
            fail({
              code: 'workflow_invalid',
              message: 'Invalid workflow',
              workflowId,
              violations: [
                { path: `/steps/${stepId}/validationCriteria`, rule: 'schema', message: error.message },
              ],
            });
          }
          fail({
            code: 'criteria_invalid',
            message: 'Validation error',
            workflowId,
            stepId,
            details: error.message,
          });
        }
      },
    }),
  ];
}
