import { contextScope } from '../engine/guidance.js';
import { type ExecutionState, isTerminal } from '../engine/state-machine.js';
import { promptBudget, renderPrompt } from '../engine/templating.js';
import { isCommandStep, isLoopStep, type Step, type Workflow } from '../model/workflow.js';
import type {
  ExecutionHead,
  ExecutionRecord,
  StepRecord,
  TelemetryRecord,
} from '../store/execution-store.js';
import { type CommandWait, type PauseRecord, pauseOf } from './execution-model.js';

// What one execution looks like to the resources, `workflow_executions` and the dashboard, made from
// the records already read: pure functions, no store and no caller. The queries (execution-queries.ts,
// family-queries.ts) read and scope; these only present, so the pages and the resources share them.

export interface ExecutionSummary {
  execution_id: string;
  workflow_id: string;
  state: ExecutionState;
  current_step: string | null;
  started_at: string;
  updated_at: string;
  /** The execution that delegated to this one, for a child. */
  parent_id?: string;
}

export interface ExecutionStatus extends ExecutionSummary {
  completed_at: string | null;
  duration_ms: number | null;
  steps: { total: number; completed: number; failed: number; running: number; pending: number };
}

export interface StepHistoryEntry {
  step_name: string;
  agent_name: string;
  status: StepRecord['status'];
  seq: number;
  iteration: number | null;
  attempts: number;
  started_at: string | null;
  completed_at: string | null;
  duration_ms: number | null;
  output: unknown;
}

/** Everything about one execution except its steps, artifacts and telemetry; never a token. */
export interface ExecutionDetail extends ExecutionSummary {
  principal: string;
  completed_at: string | null;
  duration_ms: number | null;
  current_seq: number;
  /** Failed validations of the current step so far (the token's attempt number). */
  attempt: number;
  token_issued_at: string | null;
  token_expires_at: string | null;
  /** Why it was paused, failed, abandoned, ... (workflow_set_state's reason), by state. */
  reasons: Record<string, string>;
  /** The current command step failed in a way a retry may fix. */
  waiting: CommandWait | null;
  /** Who paused it, from where and when (while paused). */
  paused_by: PauseRecord | null;
  final_output?: unknown;
  /** The context the conditions read (server-owned keys included). */
  context: Record<string, unknown>;
  /** The definition the execution runs (pinned when it started). */
  workflow: Workflow;
}

export type ProgressStatus = 'done' | 'current' | 'pending' | 'skipped' | 'failed';

/** Where an execution stands, step by step: the dashboard's live updates and the MCP App view. */
export interface ExecutionProgress {
  execution_id: string;
  workflow_id: string;
  workflow_title: string;
  state: ExecutionState;
  current_step: string | null;
  updated_at: string;
  /** Steps done, and steps planned (loop bodies counted once). */
  done: number;
  total: number;
  steps: {
    id: string;
    title: string;
    kind: 'prompt' | 'command';
    /** The loop whose body the step is in. */
    loop?: string;
    status: ProgressStatus;
  }[];
  /** The most recent check of an agent step's output. */
  last_validation: { step: string; valid: boolean; issues: string[]; at: string } | null;
  token_expires_at: string | null;
}

/** The steps a definition plans, in order, loop bodies in place (each once). */
export function plannedOrder(workflow: Workflow): { step: Step; loop?: string }[] {
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  const byId = new Map(workflow.steps.map((s) => [s.id, s]));
  return workflow.steps.flatMap((s): { step: Step; loop?: string }[] => {
    if (bodyRefs.has(s.id)) return [];
    if (!isLoopStep(s)) return [{ step: s }];
    const body: Step[] =
      typeof s.body === 'string' ? [byId.get(s.body)].filter((b) => b !== undefined) : s.body;
    return body.map((step) => ({ step, loop: s.id }));
  });
}

/** A JSON object as a record; anything else as an empty one. */
export const stringRecord = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** Everything about one execution except its steps, artifacts and telemetry; never a token. */
export function detailOf(exec: ExecutionRecord, workflow: Workflow): ExecutionDetail {
  const reasons: Record<string, string> = {};
  for (const [key, value] of Object.entries(exec.metadata)) {
    if (key.endsWith('_reason') && typeof value === 'string')
      reasons[key.slice(0, -'_reason'.length)] = value;
  }
  const waiting = stringRecord(exec.metadata.waiting);
  return {
    ...summary(exec),
    principal: exec.principal,
    completed_at: exec.completed_at,
    duration_ms: exec.duration_ms,
    current_seq: exec.current_seq,
    attempt: exec.token_attempt,
    token_issued_at: isTerminal(exec.state) ? null : exec.token_issued_at,
    token_expires_at: isTerminal(exec.state) ? null : exec.token_expires_at,
    reasons,
    waiting: typeof waiting.step_id === 'string' ? (waiting as unknown as CommandWait) : null,
    paused_by: (exec.state === 'paused' && pauseOf(exec.metadata)) || null,
    ...('final_output' in exec.metadata ? { final_output: exec.metadata.final_output } : {}),
    context: exec.context,
    workflow,
  };
}

/** Where an execution stands, step by step, from its steps and its recent failed validations. */
export function progressOf(
  exec: ExecutionRecord,
  workflow: Workflow,
  records: StepRecord[],
  failures: TelemetryRecord[],
): ExecutionProgress {
  const planned = plannedOrder(workflow);
  const latest = new Map<string, StepRecord>();
  const everDone = new Set<string>();
  for (const r of records) {
    latest.set(r.step_name, r);
    if (r.status === 'completed') everDone.add(r.step_name);
  }
  const lastStarted = planned.reduce((max, p, i) => (latest.has(p.step.id) ? i : max), -1);
  const live = !isTerminal(exec.state);
  const scope = contextScope(exec.context);
  const steps = planned.map(({ step, loop }, i) => {
    let status: ProgressStatus;
    if (live && step.id === exec.current_step) status = 'current';
    else if (latest.get(step.id)?.status === 'failed') status = 'failed';
    else if (everDone.has(step.id)) status = 'done';
    else if (i < lastStarted || exec.state === 'completed') status = 'skipped';
    else status = 'pending';
    return {
      id: step.id,
      // As the agent was shown it: templates rendered with this execution's values, marked as data.
      title: renderPrompt(step.title, scope, promptBudget()),
      kind: isCommandStep(step) ? ('command' as const) : ('prompt' as const),
      ...(loop !== undefined ? { loop } : {}),
      status,
    };
  });
  return {
    execution_id: exec.execution_id,
    workflow_id: exec.workflow_name,
    workflow_title: workflow.name,
    state: exec.state,
    current_step: exec.current_step,
    updated_at: exec.updated_at,
    done: steps.filter((s) => s.status === 'done').length,
    total: steps.length,
    steps,
    last_validation: lastValidation(records, failures),
    token_expires_at: live ? exec.token_expires_at : null,
  };
}

/** The steps as the step_history resource shows them. */
export function historyOf(steps: StepRecord[]): StepHistoryEntry[] {
  return steps.map((s) => ({
    step_name: s.step_name,
    agent_name: s.agent_name,
    status: s.status,
    seq: s.seq,
    iteration: s.iteration,
    attempts: s.attempts,
    started_at: s.started_at,
    completed_at: s.completed_at,
    duration_ms: s.duration_ms,
    output: s.output,
  }));
}

/** The latest check of an agent's output: a failed validation event, or the last agent step completed. */
function lastValidation(
  records: StepRecord[],
  failures: TelemetryRecord[],
): ExecutionProgress['last_validation'] {
  const passed = records
    .filter((r) => r.status === 'completed' && r.agent_name !== 'server' && r.completed_at !== null)
    .at(-1);
  const failed = failures.filter((e) => stringRecord(e.metadata).reason === 'validation').at(-1);
  const failedAt = failed?.created_at ?? '';
  if (failed && failed.step_name !== null && (!passed || failedAt > (passed.completed_at ?? ''))) {
    const issues = stringRecord(failed.metadata).issues;
    return {
      step: failed.step_name,
      valid: false,
      issues: Array.isArray(issues) ? issues.map(String) : [],
      at: failedAt,
    };
  }
  return passed ? { step: passed.step_name, valid: true, issues: [], at: passed.completed_at ?? '' } : null;
}

/** What a listing shows of an execution. */
export function summary(e: ExecutionHead): ExecutionSummary {
  return {
    execution_id: e.execution_id,
    workflow_id: e.workflow_name,
    state: e.state,
    current_step: e.current_step,
    started_at: e.started_at,
    updated_at: e.updated_at,
    ...(e.parent_id !== null ? { parent_id: e.parent_id } : {}),
  };
}
