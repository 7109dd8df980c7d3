// Shapes shared by tasks, runs and orchestrations, and by the faces that word them (kept free of
// heavy imports: the faces load it at start-up, the services only when a task runs).
import { randomBytes } from 'node:crypto';
import { isCommandStep, isLoopStep, type Workflow } from '../model/workflow.js';
import type { TaskInputRequest } from '../store/execution-store.js';

/** Seed 003 §10.4 progress states of a run (note the seed's spelling of "canceled"). */
export const RUN_STATES = ['pending', 'running', 'succeeded', 'failed', 'canceled'] as const;
export type RunState = (typeof RUN_STATES)[number];

/** A status snapshot (seed 003 §10.4): kept on the task, sent as its status message and as progress. */
export interface RunSnapshot {
  run_id: string | null;
  workflow_id: string | null;
  /** The current step's id and title, when the run is on one. */
  step_id: string | null;
  step_name: string | null;
  state: RunState;
  /** The latest summary message. */
  summary: string;
  /** What an orchestration is doing: drafting, repairing, saving, inputs, running, summarizing. */
  phase?: string;
  /** While the run waits on an agent step: the token `workflow_next_step` takes for it. */
  continuation_token?: string;
  /** While the run waits on an agent step: the step's instructions (persona, prompt, checks). */
  agent_content?: string;
  /** While the run waits on an agent step: the workflow_next_step call to send, with its `fill`. */
  next?: { tool: string; arguments: Record<string, unknown>; fill?: Record<string, string> }[];
}

/** What the requesting client declared it can do for a task (only those requests may be sent to it). */
export interface ClientAbilities {
  sampling: boolean;
  elicitation: boolean;
}

/**
 * A running task as the work inside it sees it: its identity, cancellation, status reports and input
 * requests. The protocol layer decides how requests reach the client (pushed, or listed in tasks/get).
 */
export interface TaskHandle {
  readonly taskId: string;
  /** The run id chosen when the task was admitted (runs and orchestrations that run a workflow). */
  readonly runId: string | null;
  /** True when a restarted server took the task over from a process that died. */
  readonly resumed: boolean;
  /** Aborted when the task is cancelled (tasks/cancel, workflow_cancel) or the server stops. */
  readonly signal: AbortSignal;
  readonly can: ClientAbilities;
  /** Records a status snapshot; `awaitingInput` marks the task input_required. */
  report(snapshot: RunSnapshot, options?: { awaitingInput?: boolean }): Promise<void>;
  /**
   * Asks the client (elicitation/create or sampling/createMessage) and waits for the answer. The
   * request is withdrawn when `signal` aborts. Keys are `<prefix>-<n>`, never reused within the task.
   */
  ask(prefix: string, request: TaskInputRequest, signal?: AbortSignal): Promise<Record<string, unknown>>;
}

/** The human-readable status message of a snapshot (MCP `statusMessage`). */
export function statusMessage(s: RunSnapshot): string {
  const where = [
    s.run_id !== null ? `run ${s.run_id}` : undefined,
    s.step_id !== null ? `step ${s.step_id}` : undefined,
  ].filter(Boolean);
  return `[${s.state}]${where.length > 0 ? ` ${where.join(', ')}:` : ''} ${s.summary}`;
}

/** A new run id (runs are executions: the id is the execution id). */
export const newRunId = () => `run_${randomBytes(12).toString('hex')}`;

/** Whether a workflow has steps only an agent can do (a run of it will wait for answers). */
export function hasAgentSteps(workflow: Workflow): boolean {
  return workflow.steps.some((s) =>
    isLoopStep(s) ? Array.isArray(s.body) && s.body.length > 0 : !isCommandStep(s),
  );
}
