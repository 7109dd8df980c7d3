/**
 * A builder of the composition root (re-exported by src/app.ts, which composes it): workflow tests, with
 * what they build built here as the server builds it.
 */
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { WorkflowTests } from '../executions/workflow-tests.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import { WorkflowRegistry } from '../workflows/registry.js';

/**
 * Workflow tests (`workflowlookup test`, workflow_test) on the app's registry, personas and engine.
 * What they build is built here, as the server builds it: a registry over a folder no source reads
 * (the sources' checks and variant rules), and for each scenario the execution service over the run's
 * scratch store, with the scenario's canned commands and checks (and its own signing secret). Loaded
 * on first use.
 */
export async function buildWorkflowTests(
  config: Config,
  parts: { registry: WorkflowRegistry; personas: PersonaRegistry; engine: ValidationEngine },
): Promise<WorkflowTests> {
  const [{ WorkflowTests }, { openScratchStore }, { ExecutionService }, { TokenService }] = await Promise.all(
    [
      import('../executions/workflow-tests.js'),
      import('../store/scratch-store.js'),
      import('../executions/execution-service.js'),
      import('../executions/tokens.js'),
    ],
  );
  const { registry, personas, engine } = parts;
  const tokens = new TokenService(randomBytes(32));
  return new WorkflowTests({
    registry,
    personas,
    engine,
    scratchStore: openScratchStore,
    folderRegistry: (dir) =>
      new WorkflowRegistry([{ kind: 'runtime', dir }], { engine, allowedEnv: config.allowedEnvNames }),
    executionService: (scenario) =>
      new ExecutionService({
        ...scenario,
        registry,
        personas,
        engine,
        tokens,
        allowedEnv: config.allowedEnv,
      }),
  });
}
