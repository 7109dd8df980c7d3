import { fail } from '../../engine/errors.js';
import type { Caller } from '../../executions/execution-model.js';
import type { ExecutionService } from '../../executions/execution-service.js';
import type { FamilyView } from '../../executions/family-queries.js';
import { isPromptStep, type Workflow } from '../../model/workflow.js';
import type { Records } from '../../record/records.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import type { ResourceDefinition } from '../resource.js';
import { appViewResource } from './app-view.js';
import { EXECUTION_URI as BASE, presentCurrent } from './execution-presenter.js';

const TELEMETRY_LIMIT = 100;
const MAX_TELEMETRY_LIMIT = 1000;

function phases(workflow: Workflow) {
  return workflow.steps.map((s) => ({
    phase: s.id,
    agent: isPromptStep(s) ? (s.agent ?? null) : null,
    description: s.title,
  }));
}

function complexity(stepCount: number): 'low' | 'medium' | 'high' {
  return stepCount <= 3 ? 'low' : stepCount <= 6 ? 'medium' : 'high';
}

/** Seed 004's `workflow_name` (the workflow id) beside our workflow_id, where its examples show it. */
async function withWorkflowName<T extends { workflow_id: string }>(value: T | Promise<T>) {
  const resolved = await value;
  return { ...resolved, workflow_name: resolved.workflow_id };
}

/**
 * Where an execution sits among delegations, for its status: `parent` for a child (the execution and
 * step that created it, and its name there); for an execution whose workflow delegates, `children`
 * (every child: name, execution id, workflow, state, progress, the step that created it) and
 * `delegations` (each delegating step handed out: its join rule, where the join stands while it is
 * open, the results' states after it).
 */
function familyFields(family: FamilyView) {
  const delegates = family.delegations.length > 0;
  return {
    ...(family.parent !== null ? { parent: family.parent } : {}),
    ...(delegates
      ? {
          children: family.delegations.flatMap((d) => d.children),
          delegations: family.delegations.map(({ children, ...d }) => ({
            ...d,
            children: children.map((c) => c.name),
          })),
          ...(family.more ? { more_children: true } : {}),
        }
      : {}),
  };
}

function one(value: string | undefined): string {
  return decodeURIComponent(value ?? '');
}

/** Seed 004's resources, under workflowlookup://workflow/. */
export function executionResources(
  registry: WorkflowRegistry,
  service: () => Promise<ExecutionService>,
  viewHtml: () => Promise<string>,
  records: Records,
): ResourceDefinition[] {
  const queries = async () => (await service()).queries;
  const recentIds = async (prefix: string, caller: Caller) =>
    (await (await queries()).find({ limit: 50, states: undefined }, caller))
      .map((e) => e.execution_id)
      .filter((id) => id.startsWith(prefix));
  const executionList = (kind: string) => async (caller: Caller) =>
    (await (await queries()).find({ limit: 50, states: ['idle', 'running', 'paused'] }, caller)).map((e) => ({
      uri: `${BASE}/${kind}/${e.execution_id}`,
      name: `${kind} of ${e.execution_id} (${e.workflow_id})`,
    }));
  const executionTemplate = (
    kind: string,
    title: string,
    description: string,
    read: (id: string, caller: Caller) => Promise<unknown>,
  ): ResourceDefinition => ({
    name: kind,
    uri: `${BASE}/${kind}/{executionId}`,
    title,
    description,
    list: executionList(kind),
    complete: { executionId: recentIds },
    read: (vars, _uri, caller) => read(one(vars.executionId), caller),
  });

  return [
    {
      name: 'available_workflows',
      uri: `${BASE}/available_workflows`,
      title: 'Available workflows',
      description: 'Every valid workflow with its phases (steps) and agents',
      read: async () => {
        await registry.ready();
        return registry.list().workflows.map((summary) => {
          const { workflow } = registry.require(summary.id);
          return {
            // Seed 004 names a workflow by `name` (its id); ours is workflow_id. Both, as the seed shows.
            name: workflow.id,
            workflow_id: workflow.id,
            title: workflow.name,
            description: workflow.description,
            version: workflow.version,
            tags: [summary.category],
            complexity: complexity(workflow.steps.length),
            phases: phases(workflow),
          };
        });
      },
    },
    {
      name: 'workflow_details',
      uri: `${BASE}/workflow_details/{workflowId}`,
      title: 'Workflow details',
      description: 'One workflow: its definition as content, phases and metadata',
      list: async () => {
        await registry.ready();
        return registry
          .list()
          .workflows.map((w) => ({ uri: `${BASE}/workflow_details/${w.id}`, name: w.name }));
      },
      complete: { workflowId: (prefix) => registry.ids(prefix) },
      read: async (vars) => {
        await registry.ready();
        const entry = registry.require(one(vars.workflowId));
        const w = entry.workflow;
        return {
          name: w.id,
          workflow_id: w.id,
          title: w.name,
          description: w.description,
          version: w.version,
          content: JSON.stringify(w),
          format: entry.format,
          tags: [w.category ?? 'general'],
          complexity: complexity(w.steps.length),
          phases: phases(w),
        };
      },
    },
    executionTemplate(
      'current_step',
      'Current step',
      'The step to do now, with persona (agent_content), instructions and the next call (with its token)',
      async (id, caller) => withWorkflowName(presentCurrent(await (await service()).current(id, caller))),
    ),
    executionTemplate(
      'workflow_status',
      'Execution status',
      'State and step counts of an execution; its parent (a child execution) and children (a delegating one)',
      async (id, caller) => {
        const q = await queries();
        return {
          ...(await withWorkflowName(q.status(id, caller))),
          ...familyFields(await q.family(id, caller)),
        };
      },
    ),
    executionTemplate(
      'execution_progress',
      'Execution progress',
      'Every planned step with its status (done, current, pending, skipped, failed), counts, the last validation',
      async (id, caller) => (await queries()).progress(id, caller),
    ),
    appViewResource(viewHtml),
    executionTemplate(
      'step_history',
      'Step history',
      'Every step handed out, with outputs',
      async (id, caller) => (await queries()).history(id, caller),
    ),
    executionTemplate(
      'execution_record',
      'Signed record',
      "The execution's signed, tamper-evident record (a Sigstore bundle: an in-toto statement in a DSSE envelope, docs/records.md), to attach to a pull request; `workflowlookup verify` checks it",
      async (id, caller) => records.signed(id, caller),
    ),
    executionTemplate(
      'workflow_artifacts',
      'Artifacts',
      'Artifacts stored by an execution',
      async (id, caller) => (await queries()).artifacts(id, caller),
    ),
    {
      name: 'workflow_step_artifacts',
      uri: `${BASE}/workflow_artifacts/{executionId}/{stepName}`,
      title: 'Artifacts of one step',
      description: 'Artifacts stored by one step of an execution',
      complete: { executionId: recentIds },
      read: async (vars, _uri, caller) =>
        (await queries()).artifacts(one(vars.executionId), caller, one(vars.stepName)),
    },
    {
      name: 'telemetry',
      uri: `${BASE}/telemetry`,
      title: 'Telemetry',
      description: 'The 100 most recent telemetry events',
      read: async (_vars, _uri, caller) => telemetry(await queries(), caller, undefined, {}),
    },
    {
      name: 'telemetry_query',
      uri: `${BASE}/telemetry{?event_type,limit}`,
      title: 'Telemetry',
      description: 'Recent telemetry events (optionally ?event_type=...&limit=...; default limit 100)',
      read: async (vars, _uri, caller) => telemetry(await queries(), caller, undefined, vars),
    },
    {
      name: 'execution_telemetry',
      uri: `${BASE}/telemetry/{executionId}{?event_type,limit}`,
      title: 'Telemetry of one execution',
      description: 'Telemetry events of one execution (optionally ?event_type=...&limit=...)',
      complete: { executionId: recentIds },
      read: async (vars, _uri, caller) => telemetry(await queries(), caller, one(vars.executionId), vars),
    },
  ];
}

async function telemetry(
  queries: ExecutionService['queries'],
  caller: Caller,
  executionId: string | undefined,
  vars: Record<string, string>,
) {
  const limitText = vars.limit;
  const limit = limitText === undefined || limitText === '' ? TELEMETRY_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_TELEMETRY_LIMIT) {
    fail({
      code: 'invalid_params',
      message: 'Invalid params',
      details: `limit must be 1-${MAX_TELEMETRY_LIMIT}`,
    });
  }
  const eventType = vars.event_type ? one(vars.event_type) : undefined;
  return queries.telemetry({ limit, execution_id: executionId, event_type: eventType }, caller);
}
