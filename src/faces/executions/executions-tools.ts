import * as z from 'zod';
import { asRecord } from '../../engine/conditions.js';
import { EXECUTION_STATES, REQUESTABLE_STATES } from '../../engine/state-machine.js';
import type { ExecutionService } from '../../executions/execution-service.js';
import { IdSchema } from '../../model/workflow.js';
import { NextSchema, retryingContext } from '../next.js';
import { retryingNotChecked } from '../not-checked.js';
import { annotate, defineTool, READ_ONLY, type ToolDefinition } from '../tool.js';
import { VIEW_TOOL_META } from './app-view.js';
import { currentStepUri, presentCurrent, presentOutcome, resumeCall } from './execution-presenter.js';

const ExecutionIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/)
  .min(1)
  .max(64)
  .describe('Execution id');

const ContextSchema = z
  .record(z.string(), z.unknown())
  .describe('Variables conditions read (taskScope, complexity, ...)');

// Described once, on the list: each field's meaning is in its name (1 MiB per artifact, 8 MiB per step).
const ArtifactSchema = z.union([
  z.string().min(1).max(256),
  z.strictObject({
    type: z.enum(['file', 'data', 'report', 'finding']),
    name: z.string().min(1).max(256),
    content: z.string(),
    content_type: z.string().min(1).max(128).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
  z.looseObject({ kind: z.string().min(1).max(128) }),
]);

const OutputSchema = z.strictObject({
  summary: z.string().min(1).max(1_048_576).describe("What you did (checked against the step's criteria)"),
  artifacts: z
    .array(ArtifactSchema)
    .max(100)
    .optional()
    .describe('Ids, files {type, name, content}, or WorkRail artifacts {kind, ...}'),
  findings: z.array(z.string().max(10_000)).max(1000).optional(),
  next_step_recommendation: z.string().max(10_000).optional(),
  context: ContextSchema.optional(),
});

const StepViewShape = {
  step_name: z.string().optional().describe('Id of the step to do now'),
  agent_name: z.string().optional().describe('Persona that should do it'),
  agent_content: z
    .string()
    .optional()
    .describe('Persona and step instructions (title, prompt, guidance, what the output is checked for)'),
  progress: z
    .string()
    .optional()
    .describe('Steps handed out / those plus the steps still to run as far as the context decides now'),
  progress_note: z
    .string()
    .optional()
    .describe('What progress counted: steps skipped by their conditions, undecided ones'),
  guidance: z
    .object({ modelHint: z.string(), requiresConfirmation: z.boolean() })
    .optional()
    .describe('Suggested kind of model; whether the user confirms before moving on'),
  loop: z.looseObject({}).optional().describe('Loop position when the step is in a loop body'),
};

const CommandRunSchema = z
  .array(
    z.object({
      step_id: z.string().describe('Command step id'),
      command: z.string().describe('"<catalog> <command>"'),
      status: z.number().describe('HTTP status of the last response'),
      output: z.unknown().describe('Response body (JSON when the API sent JSON)'),
      attempts: z.number().describe('HTTP attempts of the last poll (retries included)'),
      polls: z.number().describe('Requests made for repeat'),
      duration_ms: z.number().describe('Time taken'),
    }),
  )
  .optional()
  .describe('Command steps the server ran before answering');

/** Who paused an execution: a person's pause (`via: dashboard`) waits for them, not for the agent. */
const PausedBySchema = z
  .object({
    by: z.string().describe('Who paused it'),
    via: z.enum(['dashboard', 'agent', 'parent']).describe('From where'),
    at: z.string().describe('When'),
    reason: z.string().optional().describe('Why'),
  })
  .optional()
  .describe('Present while paused');

const AdvanceResultSchema = z.object({
  success: z.boolean().describe('False when the output failed validation (nothing advanced)'),
  execution_id: z.string().describe('Execution id'),
  workflow_state: z.enum(EXECUTION_STATES).describe('State after the call'),
  message: z.string().describe('What happened and what to do next'),
  validation: z
    .object({
      valid: z.boolean().describe('Whether the output passed'),
      issues: z.array(z.string()).describe('Problems found'),
      suggestions: z.array(z.string()).describe('How to fix them'),
    })
    .optional()
    .describe('Present when validation failed'),
  commands: CommandRunSchema,
  final_output: z.unknown().optional().describe("The workflow's final_output, rendered, once completed"),
  ...StepViewShape,
  new_token: z.string().optional().describe('Continuation token for the next workflow_next_step'),
  next: NextSchema,
});

/**
 * Seed 004's error return (`{success: false, execution_id, workflow_state, error}`): beside the
 * structured error, the execution it concerns ("" when the call named none) and its state when known.
 */
function seedErrorFields(error: { data?: unknown }) {
  const data = asRecord(error.data);
  const id = data.executionId ?? asRecord(data.context).run_id;
  return {
    success: false,
    execution_id: typeof id === 'string' ? id : '',
    ...(typeof data.state === 'string' ? { workflow_state: data.state } : {}),
  };
}

/**
 * Advancing may run command steps, which call whatever operations of the imported APIs the workflow
 * names (deletes included): destructive and open world. Re-sending the same token and output returns
 * the recorded answer (nothing runs twice): repeatable.
 */
const EXECUTION_ANNOTATIONS = annotate({ changes: 'destructively', repeatable: true, external: true });
/** A second start without an execution_id starts a second execution: not repeatable. */
const START_ANNOTATIONS = annotate({ changes: 'destructively', repeatable: false, external: true });

/** The durable-executions face (seed 004): state on the server, a signed token with the agent. */
export function executionTools(service: () => Promise<ExecutionService>): ToolDefinition[] {
  return [
    defineTool({
      name: 'workflow_start',
      instructions: {
        rank: 10,
        text: (listed) =>
          listed('workflow_start') && listed('workflow_next_step')
            ? `Choose one${listed('workflow_list') ? ' with workflow_list' : ''}, begin it with workflow_start {workflow_id}, do what agent_content says and report it with the workflow_next_step call in the answer's next, filling in what its fill names (output.summary, the context variables later steps read).${listed('workflow_resume') ? ' After a context reset, workflow_resume {execution_id} hands back the current step.' : ''}`
            : undefined,
      },
      scope: 'run',
      core: true,
      aliases: ['workflow.start'],
      title: 'Start a workflow execution',
      description:
        'Starts a durable execution and returns its first step (an existing execution_id returns that execution).',
      argumentAliases: { workflow_name: 'workflow_id', workflowId: 'workflow_id' },
      inputSchema: z.strictObject({
        workflow_id: IdSchema.describe('Workflow to run'),
        execution_id: ExecutionIdSchema.optional().describe('Your id, for safe retries'),
        context: ContextSchema.optional(),
        inputs: z.record(z.string(), z.unknown()).optional().describe("The workflow's inputs"),
      }),
      outputSchema: AdvanceResultSchema,
      annotations: START_ANNOTATIONS,
      errorFields: seedErrorFields,
      meta: VIEW_TOOL_META,
      handler: async (input, { caller }) =>
        presentOutcome(
          await retryingContext('workflow_start', input, async () =>
            (await service()).start(
              {
                workflow_id: input.workflow_id,
                execution_id: input.execution_id,
                context: input.context,
                inputs: input.inputs,
              },
              caller,
            ),
          ),
        ) as z.input<typeof AdvanceResultSchema>,
    }),
    defineTool({
      name: 'workflow_next_step',
      scope: 'run',
      core: true,
      aliases: ['workflow.next_step'],
      title: 'Complete the current step',
      description:
        "Reports the step's output with its token: a valid one advances, an invalid one returns the issues and a fresh token. Resending both replays the answer.",
      argumentAliases: { continuation_token: 'token', new_token: 'token' },
      inputSchema: z.strictObject({
        token: z.string().min(1).max(4096).describe('new_token (or continuation_token) of the last answer'),
        output: OutputSchema,
      }),
      outputSchema: AdvanceResultSchema,
      annotations: EXECUTION_ANNOTATIONS,
      errorFields: seedErrorFields,
      meta: VIEW_TOOL_META,
      handler: async ({ token, output }, { caller }) => {
        // Rules not checked in time (a busy machine) decided nothing: the same call again, same token.
        const again = {
          tool: 'workflow_next_step',
          arguments: { token },
          fill: { output: 'the same output, unchanged' },
        };
        const outcome = await retryingNotChecked(again, async () =>
          (await service()).nextStep(token, output, caller),
        );
        return presentOutcome(outcome) as z.input<typeof AdvanceResultSchema>;
      },
    }),
    defineTool({
      name: 'workflow_set_state',
      scope: 'run',
      aliases: ['workflow.set_state'],
      title: 'Pause, resume or abandon an execution',
      description:
        'Moves an execution to another state: running -> paused|abandoned|diverged (the user took another path), paused -> running|abandoned. An execution completes only when workflow_next_step accepts its last step, and fails only by the server: neither can be set.',
      inputSchema: z.strictObject({
        execution_id: ExecutionIdSchema,
        state: z
          .enum(REQUESTABLE_STATES, {
            error: (issue) =>
              issue.input === 'completed' || issue.input === 'failed'
                ? `"${issue.input}" is the server's to set: an execution completes when workflow_next_step accepts its last step's output, and fails when a step or the server does; choose from ${REQUESTABLE_STATES.join(', ')}`
                : `state must be one of ${REQUESTABLE_STATES.join(', ')}`,
          })
          .describe('Target state'),
        reason: z
          .string()
          .max(2000)
          .optional()
          .describe('Why (kept in the execution metadata and telemetry)'),
        override_pause: z
          .boolean()
          .optional()
          .describe('Set running although a person paused it; only when the user tells you to go on'),
      }),
      outputSchema: z.object({
        success: z.boolean().describe('Always true (failures are errors)'),
        execution_id: z.string().describe('Execution id'),
        previous_state: z.enum(EXECUTION_STATES).describe('State before'),
        workflow_state: z.enum(EXECUTION_STATES).describe('State now'),
        allowed_next: z.array(z.string()).describe('States reachable from here'),
        next: NextSchema,
      }),
      // Abandoning ends an execution for good; asking for the state it is in again changes nothing.
      annotations: annotate({ changes: 'destructively', repeatable: true, external: false }),
      summarize: (r) => `Execution ${r.execution_id}: ${r.previous_state} -> ${r.workflow_state}.`,
      handler: async ({ execution_id, state, reason, override_pause }, { caller }) => {
        const changed = await (await service()).setState(execution_id, state, reason, caller, {
          via: 'agent',
          override: override_pause === true,
        });
        return {
          success: true,
          execution_id: changed.execution_id,
          previous_state: changed.previous_state,
          workflow_state: changed.state,
          allowed_next: changed.allowed_next,
          // Running again: the step (and a token) comes from workflow_resume. Paused: nothing until set running.
          next: changed.state === 'running' ? [resumeCall(changed.execution_id)] : [],
        };
      },
    }),
    defineTool({
      name: 'workflow_resume',
      scope: 'run',
      core: true,
      aliases: ['workflow.resume'],
      title: 'Get back to an execution',
      description:
        "Hands back an execution's current step and a valid token (after a context reset), retrying a command step that could not finish.",
      inputSchema: z.strictObject({ execution_id: ExecutionIdSchema }),
      outputSchema: z.object({
        execution_id: z.string().describe('Execution id'),
        workflow_id: z.string().describe('Workflow id'),
        workflow_state: z.enum(EXECUTION_STATES).describe('State'),
        current_step: z.string().nullable().describe('Step in progress'),
        step_status: z
          .string()
          .nullable()
          .describe('running, paused, awaiting_approval, server (a command step), or null when finished'),
        agent_name: z.string().nullable().describe('Persona for the step'),
        progress: z
          .string()
          .nullable()
          .describe('Steps handed out / those plus the steps still to run as far as the context decides now'),
        progress_note: z.string().optional().describe('What progress counted'),
        agent_content: z.string().nullable().describe('Persona and step instructions'),
        instructions: z.string().describe('What to do'),
        continuation_token: z.string().optional().describe('Token for workflow_next_step'),
        guidance: StepViewShape.guidance,
        loop: StepViewShape.loop,
        commands: CommandRunSchema,
        next: NextSchema,
        waiting: z
          .object({
            step_id: z.string().describe('Command step'),
            command: z.string().describe('"<catalog> <command>"'),
            reason: z.string().describe('Why the last attempt failed'),
            message: z.string().describe('What happened'),
            status: z.number().optional().describe('HTTP status, if any'),
          })
          .optional()
          .describe('The current command step failed in a way a retry may fix; workflow_resume retries it'),
        paused_by: PausedBySchema,
      }),
      annotations: EXECUTION_ANNOTATIONS,
      meta: VIEW_TOOL_META,
      summarize: (r) => r.instructions,
      handler: async ({ execution_id }, { caller }) =>
        presentCurrent(await (await service()).resume(execution_id, caller)),
    }),
    defineTool({
      name: 'workflow_executions',
      scope: 'run',
      aliases: ['workflow.executions'],
      title: 'Find executions',
      description:
        'Lists executions, most recently updated first, filtered by workflow and state (default: unfinished ones). Use it to find work to resume.',
      argumentAliases: { workflow_name: 'workflow_id' },
      inputSchema: z.strictObject({
        workflow_id: IdSchema.optional().describe('Only this workflow'),
        states: z
          .array(z.enum(EXECUTION_STATES))
          .max(7)
          .optional()
          .describe('Only these states (default: idle, running, paused)'),
        limit: z.number().int().min(1).max(200).optional().describe('At most this many (default 20)'),
        parent_id: ExecutionIdSchema.optional().describe(
          'Only the child executions this execution delegated to (in every state unless states says)',
        ),
      }),
      outputSchema: z.object({
        executions: z
          .array(
            z.object({
              execution_id: z.string().describe('Execution id'),
              workflow_id: z.string().describe('Workflow id'),
              state: z.enum(EXECUTION_STATES).describe('State'),
              current_step: z.string().nullable().describe('Step in progress'),
              started_at: z.string().describe('Start time'),
              updated_at: z.string().describe('Last change'),
              current_step_resource: z.string().describe('Resource with the current step and token'),
              parent_id: z.string().optional().describe('The execution that delegated to it (a child)'),
            }),
          )
          .describe('Matching executions'),
        next: NextSchema,
      }),
      annotations: READ_ONLY,
      summarize: (r) => `${r.executions.length} execution(s).`,
      handler: async ({ workflow_id, states, limit, parent_id }, { caller }) => {
        const found = await (await service()).queries.find(
          {
            workflow_id,
            // A parent's children are listed whatever state they ended in (its join reads them all).
            states: states ?? (parent_id !== undefined ? undefined : ['idle', 'running', 'paused']),
            parent_id,
            limit: limit ?? 20,
          },
          caller,
        );
        // A child is its subagent's work: the work to pick up again is the newest that is not one.
        const latest =
          found.find((e) => (e.state === 'running' || e.state === 'paused') && e.parent_id === undefined) ??
          found.find((e) => e.state === 'running' || e.state === 'paused');
        return {
          executions: found.map((e) => ({ ...e, current_step_resource: currentStepUri(e.execution_id) })),
          // The most recent unfinished one is the likeliest to pick up again; paused, workflow_resume says
          // who paused it and whether the agent may set it running (a person's pause it may not).
          next: latest ? [resumeCall(latest.execution_id)] : [],
        };
      },
    }),
  ];
}
