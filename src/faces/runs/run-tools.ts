import * as z from 'zod';
import { fail } from '../../engine/errors.js';
import { EXECUTION_STATES } from '../../engine/state-machine.js';
import { IdSchema } from '../../model/workflow.js';
import {
  type ClientAbilities,
  hasAgentSteps,
  newRunId,
  RUN_STATES,
  type TaskHandle,
} from '../../runs/run-model.js';
import type { RunResult } from '../../runs/run-service.js';
import type { RunServices } from '../../runs/run-services.js';
import { NextSchema, next } from '../next.js';
import { ViolationSchema } from '../schemas.js';
import { annotate, defineTool, requireConfirmation, type ToolContext, type ToolDefinition } from '../tool.js';

const ManifestSchema = z.string().min(1).max(1_048_576).describe('Or a manifest as JSON or YAML text');
const InputsSchema = z.record(z.string(), z.unknown()).describe('Values for the workflow inputs');
const ContextSchema = z.record(z.string(), z.unknown()).describe('Context variables step conditions read');
const RunIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/)
  .min(1)
  .max(64)
  .describe('Run (execution) id');

const RunShape = {
  workflow_id: IdSchema.optional().describe('A workflow the server serves'),
  manifest: ManifestSchema.optional(),
  inputs: InputsSchema.optional(),
  context: ContextSchema.optional(),
};
const oneSubject = (v: { workflow_id?: string | undefined; manifest?: string | undefined }) =>
  (v.workflow_id === undefined) !== (v.manifest === undefined);
const ONE_SUBJECT = { message: 'give exactly one of workflow_id or manifest', path: ['workflow_id'] };

const RunResultSchema = z.object({
  run_id: z.string().describe('Run id (the execution id)'),
  task_id: z.string(),
  workflow_id: z.string(),
  state: z.enum(RUN_STATES).describe('succeeded (failures and cancellations are errors)'),
  execution_state: z.enum(EXECUTION_STATES),
  summary: z.string(),
  outputs: z.unknown().describe('final_output, rendered (null without one)'),
  steps: z
    .array(
      z.object({
        step_id: z.string(),
        kind: z.enum(['agent', 'command']),
        status: z.string(),
        attempts: z.number(),
        duration_ms: z.number().nullable(),
        output: z.unknown().optional(),
      }),
    )
    .describe('Steps in order with outputs (command steps: the API response)'),
  commands_run: z.number().describe('API calls this server made for the run'),
});

const TASK_ONLY =
  ' Runs as an MCP task (tasks/get, tasks/result; or tasks/get and tasks/update on 2026-07-28); a client without tasks gets TASK_CAPABILITY_REQUIRED.';

/**
 * A run drives command steps, which call whatever operations of the imported APIs the workflow names
 * (deletes included); each call starts another run.
 */
const RUNS = annotate({ changes: 'destructively', repeatable: false, external: true });

/** The task this call runs in; a call without one never degrades to a long synchronous run (§13.2). */
function requireTask(ctx: ToolContext, tool: string): TaskHandle {
  if (ctx.task === undefined) {
    fail({
      code: 'task_capability_required',
      message: `${tool} runs long work and requires MCP tasks support; it is never run as a plain (synchronous) call`,
      tool,
    });
  }
  return ctx.task;
}

/** Fails fast when the client did not declare what the tool will ask of it. */
function requireAbilities(
  tool: string,
  can: ClientAbilities,
  needed: (keyof ClientAbilities)[],
  why: string,
) {
  const missing = needed.filter((n) => !can[n]);
  if (missing.length > 0) {
    fail({
      code: 'client_capability_required',
      message: `${tool} needs the client to support ${missing.join(' and ')} (${why}); the client did not declare ${missing.length === 1 ? 'it' : 'them'}`,
      tool,
      capabilities: missing,
    });
  }
}

const present = (run: RunResult, task: TaskHandle) => ({ ...run, task_id: task.taskId });

/** Runs, cancellation and history (seed 003 §5.2-5.3): long work as MCP tasks. */
export function runTools(services: () => Promise<RunServices>): ToolDefinition[] {
  return [
    defineTool({
      name: 'workflow_run',
      instructions: {
        rank: 60,
        text: (listed) =>
          listed('workflow_run')
            ? 'workflow_run runs a workflow as an MCP task the server drives.'
            : undefined,
      },
      scope: 'run',
      aliases: ['workflow.run'],
      title: 'Run a workflow',
      description: `Runs a workflow's server-side steps (command steps, polling) as a run; agent steps pause it until answered. Returns run_id with the task.${TASK_ONLY}`,
      inputSchema: z.strictObject(RunShape).refine(oneSubject, ONE_SUBJECT),
      outputSchema: RunResultSchema,
      annotations: RUNS,
      task: {
        support: 'required',
        resumable: true,
        admit: async (input) => {
          const { runs } = await services();
          const prepared = await runs.prepare(input, { inputs: 'require' });
          return {
            run_id: prepared.run_id,
            workflow_id: prepared.workflow.id,
            summary: `run ${prepared.run_id} of ${prepared.workflow.id} queued`,
          };
        },
      },
      handler: async (input, ctx) => {
        const task = requireTask(ctx, 'workflow_run');
        const { runs } = await services();
        const prepared = await runs.prepare(input, {
          runId: task.runId ?? undefined,
          inputs: 'require',
          resumed: task.resumed,
        });
        return present(await runs.drive(prepared, task, ctx.caller), task);
      },
    }),
    defineTool({
      name: 'workflow_cancel',
      scope: 'run',
      aliases: ['workflow.cancel'],
      title: 'Cancel a run',
      description:
        'Cancels a run by its task id or run id: the HTTP call in flight is aborted, the task ends cancelled and the execution abandoned. Needs confirm: true unless the user confirms through elicitation.',
      inputSchema: z.strictObject({
        operation_id: z.string().min(1).max(128).describe('Task id (from the CreateTaskResult) or run id'),
        reason: z.string().max(2000).optional().describe('Why (kept in telemetry)'),
        confirm: z.boolean().optional().describe('Must be true unless the user is asked through elicitation'),
      }),
      outputSchema: z.object({
        operation_id: z.string(),
        task_id: z.string().nullable().describe('The task, if the run had one'),
        run_id: z.string().nullable().describe('The run'),
        status: z.enum(['cancelled', 'already_terminal']).describe('What the call did'),
        task_status: z.string().nullable().describe('MCP task status now'),
        execution_state: z.enum(EXECUTION_STATES).nullable().describe('Execution state now'),
        message: z.string(),
      }),
      // Ends a run for good; cancelling it again finds it ended and changes nothing.
      annotations: annotate({ changes: 'destructively', repeatable: true, external: false }),
      handler: async ({ operation_id, reason, confirm }, ctx) => {
        const { runs } = await services();
        await requireConfirmation(ctx, confirm, {
          question: `Cancel run or task ${operation_id}?`,
          doing: `cancelling ${operation_id}`,
          tool: 'workflow_cancel',
          arguments: { operation_id },
        });
        const outcome = await runs.cancel(operation_id, ctx.caller, reason ?? 'cancelled by workflow_cancel');
        return {
          ...outcome,
          message:
            outcome.status === 'cancelled'
              ? `Cancelled ${operation_id}: the task is ${outcome.task_status ?? 'gone'}, the execution ${outcome.execution_state ?? 'gone'}.`
              : `${operation_id} had already finished (${outcome.task_status ?? outcome.execution_state}); nothing changed.`,
        };
      },
    }),
    defineTool({
      name: 'workflow_purge_history',
      scope: 'admin',
      aliases: ['workflow.purge_history'],
      title: 'Purge finished history',
      description:
        'Removes finished executions (never running ones) with their steps, artifacts, telemetry and tasks, by workflow, age or state; answers with counts. dry_run counts only. Needs confirm: true unless the user confirms through elicitation.',
      inputSchema: z
        .strictObject({
          workflow_id: IdSchema.optional().describe('Only this workflow'),
          older_than: z
            .string()
            .min(2)
            .max(40)
            .optional()
            .describe('Finished before: a duration back from now ("30d", "12h") or an ISO 8601 date'),
          state: z
            .enum(['completed', 'failed', 'abandoned', 'diverged', 'succeeded', 'canceled'])
            .optional()
            .describe('Only this final state (default: all finished states)'),
          dry_run: z.boolean().optional().describe('Count what would be removed; remove nothing'),
          confirm: z
            .boolean()
            .optional()
            .describe('Must be true unless the user is asked through elicitation'),
        })
        .refine((v) => v.workflow_id !== undefined || v.older_than !== undefined || v.state !== undefined, {
          message: 'give at least one of workflow_id, older_than or state',
          path: ['workflow_id'],
        }),
      outputSchema: z.object({
        dry_run: z.boolean().describe('True when nothing was removed'),
        removed: z
          .object({
            executions: z.number(),
            steps: z.number(),
            artifacts: z.number(),
            telemetry: z.number(),
            submissions: z.number(),
            tasks: z.number(),
          })
          .describe('What was (or, for a dry run, would be) removed'),
        message: z.string(),
        next: NextSchema,
      }),
      // Removes history for good; the same filter later may match runs that finished meanwhile.
      annotations: annotate({ changes: 'destructively', repeatable: false, external: false }),
      handler: async ({ workflow_id, older_than, state, dry_run, confirm }, ctx) => {
        const { runs } = await services();
        const filter = { workflow_id, older_than, state };
        const planned = await runs.purge(filter, ctx.caller, true);
        const nothing = planned.executions === 0 && planned.tasks === 0;
        if (dry_run === true || nothing) {
          // A dry run leads to the purge it counted (executions is its group: answers lead there).
          const asked = Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined));
          return {
            dry_run: true,
            removed: planned,
            message: nothing
              ? 'Nothing matches; nothing was removed.'
              : `Would remove ${planned.executions} execution(s) and ${planned.tasks} task(s); call again without dry_run (and with confirm) to remove them.`,
            next: nothing ? [] : [next('workflow_purge_history', { ...asked, confirm: true })],
          };
        }
        await requireConfirmation(ctx, confirm, {
          question: `Permanently remove ${planned.executions} finished execution(s) (${planned.steps} steps, ${planned.artifacts} artifacts, ${planned.telemetry} telemetry events) and ${planned.tasks} task(s)?`,
          doing: `removing ${planned.executions} execution(s) and ${planned.tasks} task(s)`,
          tool: 'workflow_purge_history',
          arguments: filter,
          workflowId: workflow_id,
        });
        const removed = await runs.purge(filter, ctx.caller, false);
        return {
          dry_run: false,
          removed,
          message: `Removed ${removed.executions} execution(s), ${removed.steps} step(s), ${removed.artifacts} artifact(s), ${removed.telemetry} telemetry event(s) and ${removed.tasks} task(s).`,
          next: [],
        };
      },
    }),
  ];
}

/** The seed 003 §6 orchestrations, as task-backed tools. */
export function orchestrationTools(services: () => Promise<RunServices>): ToolDefinition[] {
  return [
    defineTool({
      name: 'workflow_author_and_run',
      scope: 'author',
      aliases: ['workflow.author_and_run'],
      title: 'Author a workflow and run it',
      description: `Drafts a workflow for a request by sampling, validates and repairs it (more sampling) until clean, saves it, asks the user for missing inputs (elicitation), runs it and summarizes. Needs sampling and elicitation.${TASK_ONLY}`,
      inputSchema: z.strictObject({
        request: z.string().min(1).max(20_000).describe('What the workflow should do'),
        workflow_id: IdSchema.optional().describe('Id the new workflow must have'),
        inputs: InputsSchema.optional(),
        max_repairs: z.number().int().min(0).max(5).optional().describe('Repair rounds (default 3)'),
        overwrite: z.boolean().optional().describe('Replace a runtime workflow with the same id'),
      }),
      outputSchema: z.object({
        task_id: z.string(),
        workflow_id: z.string(),
        path: z.string().describe('Where the workflow was saved'),
        version: z.string().describe('sha256 of the saved manifest'),
        created: z.boolean(),
        drafts: z.number().describe('Drafts sampled'),
        repairs: z.number().describe('Of which repairs'),
        rejected: z.array(z.array(ViolationSchema)).describe('Violations of each rejected draft'),
        inputs: InputsSchema,
        run: RunResultSchema.omit({ task_id: true }),
        summary: z.string(),
      }),
      annotations: RUNS,
      task: {
        support: 'required',
        admit: (_input, { can }) => {
          requireAbilities(
            'workflow_author_and_run',
            can,
            ['sampling', 'elicitation'],
            'drafts and repairs are sampled; missing inputs are asked of the user',
          );
          return { run_id: newRunId(), summary: 'drafting a workflow' };
        },
      },
      handler: async (input, ctx) => {
        const task = requireTask(ctx, 'workflow_author_and_run');
        const { orchestrations } = await services();
        return { ...(await orchestrations.authorAndRun(input, task, ctx.caller)), task_id: task.taskId };
      },
    }),
    defineTool({
      name: 'workflow_execute',
      scope: 'run',
      aliases: ['workflow.execute'],
      title: 'Execute a workflow with live status',
      description: `Starts a run, asks the user for missing inputs and agent-step answers (elicitation), streams step status, and returns the final summary and outputs.${TASK_ONLY}`,
      inputSchema: z.strictObject(RunShape).refine(oneSubject, ONE_SUBJECT),
      outputSchema: RunResultSchema,
      annotations: RUNS,
      task: {
        support: 'required',
        resumable: true,
        admit: async (input, { can }) => {
          const { runs } = await services();
          const prepared = await runs.prepare(input, { inputs: 'report' });
          if (!prepared.resolution.ready)
            requireAbilities(
              'workflow_execute',
              can,
              ['elicitation'],
              'missing inputs are asked of the user',
            );
          if (hasAgentSteps(prepared.workflow))
            requireAbilities('workflow_execute', can, ['elicitation'], 'agent steps are answered through it');
          return {
            run_id: prepared.run_id,
            workflow_id: prepared.workflow.id,
            summary: `run ${prepared.run_id} of ${prepared.workflow.id} queued`,
          };
        },
      },
      handler: async (input, ctx) => {
        const task = requireTask(ctx, 'workflow_execute');
        const { orchestrations } = await services();
        return present(await orchestrations.execute(input, task, ctx.caller), task);
      },
    }),
    defineTool({
      name: 'workflow_repair_and_rerun',
      scope: 'author',
      aliases: ['workflow.repair_and_rerun'],
      title: 'Repair a failed workflow and rerun it',
      description: `Validates a failed run (run_id), a workflow (its last failed run) or a manifest, repairs it by sampling until it validates, saves it and runs it again with the same inputs. The repair keeps the workflow's id and replaces only that workflow: at the version it read (run_id, workflow_id), or with overwrite (a manifest whose id exists). Needs sampling.${TASK_ONLY}`,
      inputSchema: z
        .strictObject({
          run_id: RunIdSchema.optional(),
          workflow_id: IdSchema.optional().describe('Or a workflow (repairs its last failed run)'),
          manifest: ManifestSchema.optional(),
          inputs: InputsSchema.optional().describe('Inputs for the rerun (default: those of the failed run)'),
          max_repairs: z
            .number()
            .int()
            .min(1)
            .max(5)
            .optional()
            .describe('Sampled repairs at most (default 3)'),
          overwrite: z
            .boolean()
            .optional()
            .describe(
              "Replace the runtime workflow with the manifest's id (a run or workflow_id needs none)",
            ),
        })
        .refine((v) => [v.run_id, v.workflow_id, v.manifest].filter((x) => x !== undefined).length === 1, {
          message: 'give exactly one of run_id, workflow_id or manifest',
          path: ['run_id'],
        }),
      outputSchema: z.object({
        task_id: z.string(),
        workflow_id: z.string(),
        path: z.string(),
        version: z.string(),
        created: z.boolean(),
        repaired_from: z
          .object({
            run_id: z.string().optional(),
            workflow_id: z.string().optional(),
            manifest: z.literal(true).optional(),
          })
          .describe('The run, workflow or manifest repaired'),
        problems: z.array(z.string()).describe('What was wrong'),
        repairs: z.number().describe('Sampled drafts'),
        run: RunResultSchema.omit({ task_id: true }),
        summary: z.string(),
      }),
      annotations: RUNS,
      task: {
        support: 'required',
        admit: async (input, { can, caller }) => {
          requireAbilities('workflow_repair_and_rerun', can, ['sampling'], 'repairs are sampled');
          const { runs } = await services();
          if (input.run_id !== undefined) await runs.executions.queries.status(input.run_id, caller);
          return { run_id: newRunId(), summary: 'collecting what failed' };
        },
      },
      handler: async (input, ctx) => {
        const task = requireTask(ctx, 'workflow_repair_and_rerun');
        const { orchestrations } = await services();
        return { ...(await orchestrations.repairAndRerun(input, task, ctx.caller)), task_id: task.taskId };
      },
    }),
  ];
}
