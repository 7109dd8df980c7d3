import { randomBytes } from 'node:crypto';
import { afterEach } from 'vitest';
import { ValidationEngine } from '../../src/engine/validation-engine.js';
import { Approvals } from '../../src/executions/approvals.js';
import { CommandPhase } from '../../src/executions/command-phase.js';
import { DEFAULT_DELEGATION_LIMITS, Delegation } from '../../src/executions/delegation.js';
import type { ExecutionDeps, ServiceParts } from '../../src/executions/execution-deps.js';
import { localCaller } from '../../src/executions/execution-model.js';
import { StepMachine } from '../../src/executions/execution-steps.js';
import { Starting } from '../../src/executions/starting.js';
import { StateChanges } from '../../src/executions/state-changes.js';
import { StepChecks } from '../../src/executions/step-checks.js';
import { StepOutcomes } from '../../src/executions/step-outcomes.js';
import { Submission } from '../../src/executions/submission.js';
import { TokenService } from '../../src/executions/tokens.js';
import type { Workflow } from '../../src/model/workflow.js';
import { openScratchStore, type ScratchStore } from '../../src/store/scratch-store.js';
import { PersonaRegistry } from '../../src/workflows/personas.js';
import type { WorkflowRegistry } from '../../src/workflows/registry.js';
import { validationWorkerUrl } from './validation-worker.js';

/**
 * The parts of the execution service built for a unit test of one of them: a real SQLite store (a scratch
 * one), the real step machine, tokens and validation engine; a workflow is given inline (as a manifest is),
 * so no registry is read. `now` is the clock the parts measure timeouts and claims by.
 */
export interface PartsKit {
  parts: ServiceParts;
  scratch: ScratchStore;
  /** Moves the injected clock. */
  advance(ms: number): void;
  /** The inline definition of `workflow`, as StartInput takes it. */
  definition(workflow: Workflow): { workflow: Workflow; hash: string };
  close(): Promise<void>;
}

export async function partsKit(options: Partial<ExecutionDeps> = {}): Promise<PartsKit> {
  const scratch = await openScratchStore();
  let now = Date.parse('2026-12-07T10:00:00.000Z');
  const engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });
  const registry = { ready: async () => undefined } as unknown as WorkflowRegistry;
  const deps: ExecutionDeps = {
    store: scratch.store,
    registry,
    personas: new PersonaRegistry([]),
    engine,
    tokens: new TokenService(randomBytes(32)),
    clock: () => now,
    ...options,
  };
  const machine = new StepMachine({
    store: scratch.store,
    personas: deps.personas,
    tokens: deps.tokens,
    allowedEnv: {},
    observe: undefined,
    now: () => now,
  });
  return {
    parts: { deps, machine, now: () => now },
    scratch,
    advance(ms) {
      now += ms;
    },
    definition: (workflow) => ({ workflow, hash: randomBytes(32).toString('hex') }),
    async close() {
      engine.unload();
      await scratch.dispose();
    },
  };
}

/** Two agent steps; the first may carry more (an approval, a check). */
export function twoStepWorkflow(first: Record<string, unknown> = {}): Workflow {
  return {
    id: 'two',
    name: 'Two',
    description: 'two agent steps',
    version: '1.0.0',
    steps: [
      { id: 'first', title: 'First', prompt: 'Do the first thing.', ...first },
      { id: 'second', title: 'Second', prompt: 'Do the second thing.' },
    ],
  } as unknown as Workflow;
}

export const LOCAL = localCaller();

/** Every part, assembled as the service assembles them (ExecutionService's constructor). */
export function assemble(kit: PartsKit) {
  const { parts } = kit;
  const outcomes = new StepOutcomes(parts);
  const approvals = new Approvals(parts, outcomes);
  const phase = new CommandPhase(parts.machine, parts.deps.commands);
  const states = new StateChanges(parts, approvals, phase, outcomes);
  const starting = new Starting(parts, outcomes, states, phase);
  const checks = new StepChecks(parts);
  const delegation = new Delegation(parts, outcomes, starting, states, DEFAULT_DELEGATION_LIMITS);
  parts.machine.hooks = {
    entered: (tx, exec, workflow, step, next) => delegation.open(tx, exec, workflow, step, next),
    transitioned: (tx, exec, from, to, reason) => delegation.transitioned(tx, exec, from, to, reason),
  };
  const submission = new Submission(parts, outcomes, approvals, checks, phase, delegation);
  return { outcomes, approvals, states, starting, checks, submission, delegation };
}

/**
 * A maker of assembled kits for one test file: each kit it makes is closed after the test that made it
 * (call it at the top of the file, where `afterEach` registers).
 */
export function assembledKits(): (
  options?: Partial<ExecutionDeps>,
) => Promise<{ kit: PartsKit; parts: ReturnType<typeof assemble> }> {
  const open: PartsKit[] = [];
  afterEach(async () => {
    for (const kit of open.splice(0)) await kit.close();
  });
  return async (options = {}) => {
    const kit = await partsKit(options);
    open.push(kit);
    return { kit, parts: assemble(kit) };
  };
}
