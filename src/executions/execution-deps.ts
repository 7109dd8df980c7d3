// What the execution service is built from (its dependencies) and what its parts share, and the shapes
// of the requests it takes (a start, a decision, a change of state).
import type { CatalogRegistry } from '../catalogs/catalog-registry.js';
import type { CommandStepRunner } from '../catalogs/command-steps.js';
import type { InputChecker } from '../catalogs/input-check.js';
import type { Context } from '../engine/conditions.js';
import type { WalkEvent } from '../engine/next-step.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { Workflow } from '../model/workflow.js';
import type { ExecutionStore } from '../store/execution-store.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import type { CheckRunner } from './checks.js';
import type { StateRoute } from './execution-model.js';
import type { StepMachine } from './execution-steps.js';
import type { TokenService } from './tokens.js';

/** Told what each walk that moves an execution decided, and whose workflow it walked (the workflow tests' coverage). */
export type ExecutionObserver = (event: WalkEvent, workflowId: string) => void;

export interface ExecutionDeps {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  tokens: TokenService;
  /**
   * Runs command steps; without it a command step waits with `unknown_command`. The workflow tests give
   * canned responses through the same runner and catalogs that say every catalog is installed.
   */
  commands?: { runner: Pick<CommandStepRunner, 'run'>; catalogs: Pick<CatalogRegistry, 'get' | 'ready'> };
  /** Environment variables templates may read. */
  allowedEnv?: Record<string, string>;
  /**
   * The inputs check workflow_resolve_inputs reports (providers included); without it, defaults and
   * rules are checked but providers are not asked.
   */
  inputs?: InputChecker;
  /** Told what each walk that moves an execution decided (the workflow tests' coverage). */
  observe?: ExecutionObserver;
  /** Runs the checks steps name (`verify`); without it a step naming one is CHECK_UNAVAILABLE. */
  checks?: CheckRunner;
  /** The clock approval and delegation timeouts and token lifetimes are measured by (ms since the epoch); tests inject one. */
  clock?: () => number;
  /**
   * Principals the operator lets decide other principals' approvals, where a step names them
   * (WORKFLOWLOOKUP_APPROVERS); a workflow's `approvers` alone grants nothing (approvers.ts).
   */
  approvers?: ReadonlySet<string>;
  /** The app's instruments (step latency by outcome); without them nothing is recorded. */
  metrics?: Metrics;
  /** How deep child executions may nest and how many a principal may have open (default 3 and 200). */
  delegation?: { maxDepth: number; maxOpenChildren: number };
}

/** Who asks for a change of state, and from where (a person's pause holds against the agent). */
export interface StateChange {
  via: StateRoute;
  /** The person or principal recorded (default: the caller's principal). */
  by?: string;
  /** The principal's explicit choice to lift a person's pause (never offered in `next`). */
  override?: boolean;
}

/** What a person decided on: the approval they were shown and, where known, the digest of its output. */
export interface DecisionTarget {
  approval_id: string;
  output_sha256?: string | undefined;
}

/** Who decides an approval, and how: a signed-in principal, the host's operator, the client's user. */
export interface Decider {
  /** The principal deciding; null for the operator on the server host (the CLI). */
  principal: string | null;
  /** What the record says decided it (a principal, `cli:<user>`, ...). */
  name: string;
  via: 'dashboard' | 'cli' | 'elicitation' | 'timeout';
  /** The host's operator may decide any approval; others only as the step's approvers allow. */
  operator?: boolean;
}

export interface StartInput {
  workflow_id: string;
  execution_id?: string | undefined;
  context?: Context | undefined;
  inputs?: Record<string, unknown> | undefined;
  /** A validated definition to run instead of the registry's (a manifest given inline), with its hash. */
  definition?: { workflow: Workflow; hash: string; definitionHash?: string | undefined } | undefined;
}

/** What every part of the service shares: its dependencies, the step machine and the clock. */
export interface ServiceParts {
  deps: ExecutionDeps;
  machine: StepMachine;
  /** ms since the epoch: approval timeouts, token lifetimes and check claims are measured by it (deps.clock, else Date.now). */
  now(): number;
}
