// What a workflow test run reports: per scenario, per file, per run.
import type { CoverageReport } from '../engine/coverage.js';
import type { ExecutionState } from '../engine/state-machine.js';
import type { Violation } from '../model/violation.js';
import type { JOIN_ENDS } from '../workflows/test-format.js';

/** A request a command step sent (to its canned API). */
export interface SentRequest {
  with: Record<string, unknown>;
  body?: unknown;
}

/** One report the engine refused. */
export interface Rejection {
  step: string;
  issues: string[];
}

/** One child execution a delegating step created, as its agent walked it. */
export interface ChildRun {
  name: string;
  workflow_id: string;
  /** Its state at the end of the scenario. */
  state: ExecutionState;
  /** Every step of its workflow entered, in order. */
  path: string[];
  /** Its agent's refused reports, in order. */
  rejected: Rejection[];
  /** Reports its agent made. */
  reports: number;
}

/** One time a delegating step handed its work to children, and how its join ended. */
export interface DelegationRun {
  step: string;
  /** held (enough completed), continued (onChildFailure: continue), failed (the parent failed), waiting (never joined). */
  join: JoinEnd;
  /** How many times the wait on the children timed out. */
  timeouts: number;
  children: ChildRun[];
}

export type JoinEnd = (typeof JOIN_ENDS)[number];

export interface ScenarioResult {
  name: string;
  passed: boolean;
  /** Each expectation that did not hold, in a line. */
  failures: string[];
  /** Every step entered, in order (command steps included). */
  path: string[];
  /** The execution state at the end; null when it never started. */
  state: ExecutionState | null;
  /** The step the execution is on at the end, when it did not finish. */
  stopped_at?: string;
  rejected: Rejection[];
  /** Rounds each loop reached ran. */
  loops: Record<string, number>;
  /** Reports made for the agent. */
  reports: number;
  /** What each command step sent, call by call (`with` and `body` rendered). */
  requests: Record<string, SentRequest[]>;
  final_output?: unknown;
  /** A call that failed (a start refused, a command step that failed). */
  error?: { code: string; message: string };
  /** Each time a delegating step handed its work to children, in order (absent when none did). */
  delegations?: DelegationRun[];
}

export interface SuiteResult {
  /** The test file (absent for tests given inline). */
  file?: string;
  workflow_id?: string;
  /** The definition under test. */
  workflow_file?: string;
  /** Why nothing ran: the test file (or the workflow under test) is malformed. */
  errors: Violation[];
  /** What the errors are about. */
  invalid?: 'tests' | 'workflow';
  scenarios: ScenarioResult[];
  passed: number;
  failed: number;
  coverage?: CoverageReport;
  /** The work units the run used, of the most it could (`spent`: it needed more, and was stopped). */
  work?: { used: number; max: number; spent: boolean };
}

export interface TestRun {
  suites: SuiteResult[];
  passed: number;
  failed: number;
  /** Test files (or paths) that could not be run. */
  errors: number;
  /** Paths that name nothing to test. */
  problems: { path: string; message: string }[];
}
