import type { CatalogRegistry } from '../catalogs/catalog-registry.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { ExecutionService } from '../executions/execution-service.js';
import type { ExecutionStore } from '../store/execution-store.js';
import type { Logger } from '../telemetry/log.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import type { RuntimeWorkflows } from '../workflows/runtime-workflows.js';
import { Orchestrations } from './orchestrations.js';
import { RunService, type RunWording } from './run-service.js';
import { TaskService } from './task-service.js';

/** Tasks, runs and orchestrations over one store (built once, when the store is first needed). */
export interface RunServices {
  tasks: TaskService;
  runs: RunService;
  orchestrations: Orchestrations;
}

export interface RunServiceDeps {
  executions: ExecutionService;
  store: ExecutionStore;
  registry: WorkflowRegistry;
  engine: ValidationEngine;
  personas: PersonaRegistry;
  catalogs: CatalogRegistry;
  runtime: RuntimeWorkflows;
  allowedEnv: Record<string, string>;
  allowedEnvNames: ReadonlySet<string>;
  /** The runs face's wording of what a run tells the agent (faces/runs/run-presenter.ts). */
  wording: RunWording;
  log: Logger;
}

export function createRunServices(deps: RunServiceDeps): RunServices {
  const tasks = new TaskService(deps.store, deps.log);
  const runs = new RunService({ ...deps, tasks });
  const orchestrations = new Orchestrations({ ...deps, runs });
  return { tasks, runs, orchestrations };
}
