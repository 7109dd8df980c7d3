// Shapes and pure helpers of durable executions, shared by the service, its phases and its presenters.
import { asRecord } from '../engine/conditions.js';
import { fail } from '../engine/errors.js';
import type { Guidance } from '../engine/guidance.js';
import type { LoopPosition, StepsAhead } from '../engine/next-step.js';
import type { ExecutionState } from '../engine/state-machine.js';
import type { ValidationResult } from '../engine/validation-engine.js';
import { isLoopStep, type PromptStep, type Workflow } from '../model/workflow.js';
import type { ApprovalRecord } from '../store/execution-store.js';
import type { CheckResult } from './checks.js';
import type { JoinRule } from './delegation-model.js';

export const MAX_ARTIFACT_BYTES = 1024 * 1024;
export const MAX_STEP_ARTIFACT_BYTES = 8 * 1024 * 1024;
export const DEFAULT_AGENT = 'default';

/** The principal of the local stdio user: the one owner when nothing authenticates callers. */
export const LOCAL_PRINCIPAL = 'local';

/** Who asks, and what the transport offers the call while it runs. */
export interface Caller {
  /** Executions belong to the principal that started them; others never see them. */
  principal: string;
  /** Aborts the server's own work (command steps) when the request is cancelled. */
  signal?: AbortSignal | undefined;
  /** Called before the call waits on the network, so a transport may serve later requests meanwhile. */
  onNetworkWait?: (() => void) | undefined;
  /** Progress of long work (command steps and their polls). */
  onProgress?: ((message: string) => void) | undefined;
  /** Told as each command step starts (runs report their current step). */
  onCommandStep?: ((stepId: string, command: string) => void) | undefined;
  /**
   * Asks the client's user (not the model) to approve a step output: MCP elicitation in form mode.
   * Absent when the client cannot, or WORKFLOWLOOKUP_APPROVAL_ELICITATION is off. Undefined: no answer
   * (declined to answer, cancelled, failed): the approval stays pending for the other ways.
   */
  askApproval?: ((question: ApprovalQuestion) => Promise<ApprovalAnswer | undefined>) | undefined;
  /** The client's MCP roots (file:// URIs), where it offers them: the working directory of checks. */
  roots?: (() => Promise<string[] | undefined>) | undefined;
}

/** What a person is asked to approve. */
export interface ApprovalQuestion {
  execution_id: string;
  workflow_id: string;
  step_name: string;
  prompt: string;
  /** The agent's summary of the step (what is being approved). */
  summary: string;
}

export interface ApprovalAnswer {
  decision: 'approve' | 'reject';
  reason?: string | undefined;
}

/** An approval as answers and pages show it. */
export interface ApprovalView {
  approval_id: string;
  status: 'pending' | 'approved' | 'rejected';
  prompt: string;
  requested_at: string;
  expires_at: string | null;
  decided_by?: string;
  decided_via?: string;
  decided_at?: string;
  reason?: string;
}

export const localCaller = (): Caller => ({ principal: LOCAL_PRINCIPAL });

/** A WorkRail artifact as WorkRail takes it: `kind` and the contract's fields (kept as a JSON data artifact). */
export type KindArtifact = { kind: string } & Record<string, unknown>;

export type ArtifactInput =
  | string
  | {
      type: 'file' | 'data' | 'report' | 'finding';
      name: string;
      content: string;
      content_type?: string | undefined;
      metadata?: Record<string, unknown> | undefined;
    }
  | KindArtifact;

/** How an artifact is kept: a WorkRail artifact becomes a JSON `data` artifact named by its kind. */
export function storedArtifact(a: Exclude<ArtifactInput, string>) {
  if ('kind' in a && typeof a.kind === 'string' && !('content' in a)) {
    return {
      type: 'data' as const,
      name: a.kind,
      content: JSON.stringify(a),
      content_type: 'application/json',
      metadata: undefined,
    };
  }
  return a as Exclude<ArtifactInput, string | KindArtifact>;
}

/** A step's criteria result with the context check added: every problem is reported at once. */
export function withContextCheck(
  validation: ValidationResult,
  check: { issues: string[] },
): ValidationResult {
  if (check.issues.length === 0) return validation;
  return {
    valid: false,
    issues: [...validation.issues, ...check.issues],
    suggestions: [
      ...validation.suggestions,
      'Set the context values as the fill of the call in next says (text compares ignoring case).',
    ],
  };
}

export interface StepOutput {
  summary: string;
  artifacts?: ArtifactInput[] | undefined;
  findings?: string[] | undefined;
  next_step_recommendation?: string | undefined;
  context?: Record<string, unknown> | undefined;
}

/** The step an execution is on, as handed to the agent. */
export interface StepView {
  step_name: string;
  agent_name: string;
  agent_content: string;
  progress: string;
  /** What `progress` counted: the steps after this one as the context decides them now. */
  progress_note: string;
  step: PromptStep;
  guidance: Guidance;
  loop?: LoopPosition;
  notices?: string[];
  /**
   * What only the agent can supply when it reports the step (the `fill` of its workflow_next_step call):
   * the summary, the context variables later conditions and loops read, the artifacts its contracts
   * require. Absent from replay records written before it existed (see `reports`).
   */
  fill?: Record<string, string>;
  /** Replay records written before `fill`: the loop variables the agent was asked to report. */
  reports?: { name: string; hint: string }[];
}

/** One command step the server ran while advancing an execution. */
export interface CommandRun {
  step_id: string;
  command: string;
  status: number;
  output: unknown;
  attempts: number;
  polls: number;
  duration_ms: number;
}

/** Why an execution waits on a command step the server could not finish yet (it retries on resume). */
export interface CommandWait {
  step_id: string;
  command: string;
  reason: string;
  message: string;
  status?: number;
}

/** How the call that produced an outcome came about; presenters word their answer from it. */
export type Origin = 'started' | 'existing' | 'advanced';

/**
 * What starting or advancing an execution produced. Outcomes, not answers, are stored as the replay
 * record of a submission (`v` versions the shape), so the wire format can change without migrating.
 */
export type Outcome =
  | {
      v: 1;
      kind: 'step';
      origin: Origin;
      execution_id: string;
      workflow_id: string;
      state: ExecutionState;
      view: StepView;
      token: string | null;
      commands: CommandRun[];
      /** The step whose output was accepted (advanced only). */
      done_step?: string;
      /** Who paused it (an existing execution, paused). */
      paused?: PauseRecord;
    }
  | {
      v: 1;
      /** No agent step to hand out: completed, or an existing execution that is finished or busy. */
      kind: 'ended';
      origin: Origin;
      execution_id: string;
      workflow_id: string;
      state: ExecutionState;
      final_output?: unknown;
      commands: CommandRun[];
      done_step?: string;
      paused?: PauseRecord;
      /** A child execution that ended: where its results went (its subagent's work is done). */
      parent?: { execution_id: string; name: string };
    }
  | {
      v: 1;
      kind: 'rejected';
      origin: 'advanced';
      execution_id: string;
      workflow_id: string;
      state: ExecutionState;
      step_name: string;
      validation: ValidationResult;
      token: string | null;
      /** The fill of the retry: what the step asks for, and what the refusal named. */
      fill?: Record<string, string>;
      /** The server-run check of the step, when it ran (its failure is among the issues). */
      check?: CheckResult;
      /** The person's decision, when a rejection (or a timeout) sent the step back. */
      approval?: ApprovalView;
      /** The step delegates: its wait timed out; the fresh token waits on the children again. */
      delegation?: DelegationView;
    }
  | {
      v: 1;
      /** The output passed; a person must approve it before the execution moves on. */
      kind: 'awaiting_approval';
      origin: 'advanced';
      execution_id: string;
      workflow_id: string;
      state: ExecutionState;
      step_name: string;
      approval: ApprovalView;
      /** The poll token: sending it answers the same until someone decides. */
      token: string | null;
      check?: CheckResult;
      /** This submission asked for the approval (a poll only looks): the client's user is asked then. */
      requested?: boolean;
    }
  | {
      v: 1;
      /** The step hands its work to child executions; the token waits on their join (it polls). */
      kind: 'delegated';
      origin: Origin;
      execution_id: string;
      workflow_id: string;
      state: ExecutionState;
      step_name: string;
      view: StepView;
      delegation: DelegationView;
      /** The poll token: sending it answers where the children stand until the join holds. */
      token: string | null;
      commands: CommandRun[];
      done_step?: string;
    }
  | {
      v: 1;
      /** Recorded with the accepted output before its command steps ran; replaced by the final outcome. */
      kind: 'pending';
      execution_id: string;
      done_step: string;
    }
  | {
      v: 0;
      /** A replay record written before outcomes were versioned: the answer as it was sent. */
      kind: 'legacy';
      answer: Record<string, unknown>;
    };

/** Where an execution stands (workflow_resume, the current_step resource). */
export interface CurrentState {
  execution_id: string;
  workflow_id: string;
  state: ExecutionState;
  current_step: string | null;
  /** The current step is a command step the server runs (no token until an agent step). */
  on_command: boolean;
  view?: StepView;
  token: string | null;
  /** Command steps this call ran. */
  commands?: CommandRun[];
  /** The last attempt at the current command step failed in a way a retry may fix. */
  waiting?: CommandWait;
  /** The current step's output waits for a person's approval (the token polls). */
  approval?: ApprovalView;
  /** Who paused it, while it is paused. */
  paused?: PauseRecord;
  /** The current step delegated to child executions: where they stand, and their calls. */
  delegation?: DelegationView;
}

/** A delegation as an answer shows it: the join, and each child with the call a subagent makes. */
export interface DelegationView {
  step_name: string;
  join: JoinRule;
  into: string;
  deadline: string | null;
  progress: string;
  children: {
    name: string;
    execution_id: string;
    workflow_id: string;
    state: ExecutionState;
    model_tier?: string;
    /** The child's live token, while it is on an agent step (the subagent sends it to get its step). */
    token: string | null;
    /** The child is on a command step the server runs (workflow_resume on it runs it). */
    on_command: boolean;
  }[];
}

/**
 * Where a change of state came from: a person (the dashboard), the agent (workflow_set_state), or the
 * parent execution a child follows (its pause, resume or end).
 */
export type StateRoute = 'dashboard' | 'agent' | 'parent';

/** Who paused an execution, from where, when and why: kept in its metadata (`paused_by`) while paused. */
export interface PauseRecord {
  by: string;
  via: StateRoute;
  at: string;
  reason?: string;
}

/** The pause an execution's metadata records, if it is paused. */
export function pauseOf(metadata: Record<string, unknown>): PauseRecord | undefined {
  const pause = asRecord(metadata.paused_by);
  return typeof pause.by === 'string' &&
    typeof pause.at === 'string' &&
    (pause.via === 'dashboard' || pause.via === 'agent' || pause.via === 'parent')
    ? (pause as unknown as PauseRecord)
    : undefined;
}

/** "alice paused it from the dashboard at <time> ("lunch break")": who, where, when and why. */
export function pausePhrase(pause: PauseRecord): string {
  const where =
    pause.via === 'dashboard'
      ? 'from the dashboard'
      : pause.via === 'parent'
        ? 'with its parent execution'
        : 'with workflow_set_state';
  return `${pause.by} paused it ${where} at ${pause.at}${pause.reason ? ` (${JSON.stringify(pause.reason)})` : ''}`;
}

/** A pause a person made holds until a person (or the principal's explicit override) lifts it. */
export function pausedByPerson(pause: PauseRecord | undefined): pause is PauseRecord {
  return pause !== undefined && pause.via !== 'agent';
}

/** The agent-visible part of a step output, kept in the context as `steps.<id>.output`. */
export function outputForTemplates(output: StepOutput): Record<string, unknown> {
  return {
    summary: output.summary,
    ...(output.findings ? { findings: output.findings } : {}),
    ...(output.next_step_recommendation ? { next_step_recommendation: output.next_step_recommendation } : {}),
  };
}

export const nowIso = () => new Date().toISOString();

/**
 * JSON with object keys sorted (by UTF-16 code units, as RFC 8785) and undefined members left out: what
 * outputs and record events are hashed as. Built by concatenation, without the arrays of entries a
 * map/filter/join would make: every step hashes several of these.
 */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) text += ',';
      text += canonical(value[i]);
    }
    return `${text}]`;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let text = '{';
    let first = true;
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      if (!first) text += ',';
      first = false;
      text += `${JSON.stringify(key)}:${canonical(member)}`;
    }
    return `${text}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * `progress` of a step handed out: the steps handed out so far (the current one included) over those
 * plus the ones still to run as far as the context decides now, and a note that says what was counted.
 */
export function progressOf(seq: number, ahead: StepsAhead): { progress: string; progress_note: string } {
  const parts = [
    `step ${seq} of ${seq + ahead.ahead} as far as the context decides now`,
    ...(ahead.skipped > 0 ? [`${ahead.skipped} skipped by their runCondition`] : []),
    ...(ahead.undecided > 0
      ? [`${ahead.undecided} counted whose runCondition reads values not set yet`]
      : []),
  ];
  return {
    progress: `${seq}/${seq + ahead.ahead}`,
    progress_note: `${parts.join('; ')} (retries and repeated loop iterations count as steps handed out).`,
  };
}

/** Number of steps a definition has (loop bodies counted once): what a workflow is said to have. */
export function plannedSteps(workflow: Workflow): number {
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  return workflow.steps.reduce((n, s) => {
    if (bodyRefs.has(s.id)) return n;
    return n + (isLoopStep(s) ? (Array.isArray(s.body) ? s.body.length : 1) : 1);
  }, 0);
}

/** Refuses oversized artifacts before anything is written. */
export function checkArtifacts(artifacts: readonly ArtifactInput[]): void {
  let total = 0;
  for (const a of artifacts) {
    if (typeof a === 'string') continue;
    const stored = storedArtifact(a);
    const size = Buffer.byteLength(stored.content);
    total += size;
    if (size > MAX_ARTIFACT_BYTES) {
      fail({
        code: 'invalid_params',
        message: 'Invalid params',
        details: `artifact '${stored.name}' is ${size} bytes; the limit is ${MAX_ARTIFACT_BYTES} bytes per artifact`,
      });
    }
  }
  if (total > MAX_STEP_ARTIFACT_BYTES) {
    fail({
      code: 'invalid_params',
      message: 'Invalid params',
      details: `artifacts total ${total} bytes; the limit is ${MAX_STEP_ARTIFACT_BYTES} bytes per step`,
    });
  }
}

/** An approval record as answers and pages show it (no held output, no nonce). */
export function approvalView(record: ApprovalRecord): ApprovalView {
  return {
    approval_id: record.approval_id,
    status: record.status,
    prompt: record.prompt,
    requested_at: record.requested_at,
    expires_at: record.expires_at,
    ...(record.decided_by !== null ? { decided_by: record.decided_by } : {}),
    ...(record.decided_via !== null ? { decided_via: record.decided_via } : {}),
    ...(record.decided_at !== null ? { decided_at: record.decided_at } : {}),
    ...(record.reason !== null ? { reason: record.reason } : {}),
  };
}
