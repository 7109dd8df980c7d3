import { fail } from '../../engine/errors.js';
import { isPromptStep, type Workflow } from '../../workflows/model.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { requireWorkflow } from '../guidance/guidance-tools.js';
import type { ResourceDefinition } from '../resource.js';
import type { ExecutionService } from './execution-service.js';

const BASE = 'workflowlookup://workflow';
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

function one(value: string | undefined): string {
  return decodeURIComponent(value ?? '');
}

/** Seed 004's resources, under workflowlookup://workflow/. */
export function executionResources(
  registry: WorkflowRegistry,
  service: () => Promise<ExecutionService>,
): ResourceDefinition[] {
  const recentIds = async (prefix: string) =>
    (await (await service()).find({ limit: 50, states: undefined }))
      .map((e) => e.execution_id)
      .filter((id) => id.startsWith(prefix));
  const executionList = (kind: string) => async () =>
    (await (await service()).find({ limit: 50, states: ['idle', 'running', 'paused'] })).map((e) => ({
      uri: `${BASE}/${kind}/${e.execution_id}`,
      name: `${kind} of ${e.execution_id} (${e.workflow_name})`,
    }));
  const executionTemplate = (
    kind: string,
    title: string,
    description: string,
    read: (id: string, vars: Record<string, string>) => Promise<unknown>,
  ): ResourceDefinition => ({
    name: kind,
    uri: `${BASE}/${kind}/{executionId}`,
    title,
    description,
    list: executionList(kind),
    complete: { executionId: recentIds },
    read: (vars) => read(one(vars.executionId), vars),
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
          const { workflow } = requireWorkflow(registry, summary.id);
          return {
            name: workflow.id,
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
      uri: `${BASE}/workflow_details/{workflowName}`,
      title: 'Workflow details',
      description: 'One workflow: its definition as content, phases and metadata',
      list: async () => {
        await registry.ready();
        return registry
          .list()
          .workflows.map((w) => ({ uri: `${BASE}/workflow_details/${w.id}`, name: w.name }));
      },
      complete: { workflowName: (prefix) => registry.ids(prefix) },
      read: async (vars) => {
        await registry.ready();
        const entry = requireWorkflow(registry, one(vars.workflowName));
        const w = entry.workflow;
        return {
          name: w.id,
          title: w.name,
          description: w.description,
          version: w.version,
          content: JSON.stringify(w, null, 2),
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
      'The step to do now, with persona (agent_content), instructions and continuation token',
      async (id) => {
        const { view: _view, ...current } = await (await service()).current(id);
        return current;
      },
    ),
    executionTemplate(
      'workflow_status',
      'Execution status',
      'State and step counts of an execution',
      async (id) => (await service()).status(id),
    ),
    executionTemplate('step_history', 'Step history', 'Every step handed out, with outputs', async (id) =>
      (await service()).history(id),
    ),
    executionTemplate('workflow_artifacts', 'Artifacts', 'Artifacts stored by an execution', async (id) =>
      (await service()).artifacts(id),
    ),
    {
      name: 'workflow_step_artifacts',
      uri: `${BASE}/workflow_artifacts/{executionId}/{stepName}`,
      title: 'Artifacts of one step',
      description: 'Artifacts stored by one step of an execution',
      complete: { executionId: recentIds },
      read: async (vars) => (await service()).artifacts(one(vars.executionId), one(vars.stepName)),
    },
    {
      name: 'telemetry',
      uri: `${BASE}/telemetry`,
      title: 'Telemetry',
      description: 'The 100 most recent telemetry events',
      read: async () => telemetry(await service(), undefined, {}),
    },
    {
      name: 'telemetry_query',
      uri: `${BASE}/telemetry{?event_type,limit}`,
      title: 'Telemetry',
      description: 'Recent telemetry events (optionally ?event_type=...&limit=...; default limit 100)',
      read: async (vars) => telemetry(await service(), undefined, vars),
    },
    {
      name: 'execution_telemetry',
      uri: `${BASE}/telemetry/{executionId}{?event_type,limit}`,
      title: 'Telemetry of one execution',
      description: 'Telemetry events of one execution (optionally ?event_type=...&limit=...)',
      complete: { executionId: recentIds },
      read: async (vars) => {
        const s = await service();
        const id = one(vars.executionId);
        await s.status(id); // not found -> resource not found
        return telemetry(s, id, vars);
      },
    },
  ];
}

async function telemetry(
  service: ExecutionService,
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
  return service.telemetry({
    limit,
    ...(executionId !== undefined ? { execution_id: executionId } : {}),
    ...(eventType !== undefined ? { event_type: eventType } : {}),
  });
}
