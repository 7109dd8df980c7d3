// The shape of a delegation as the parent execution keeps it (its metadata's `delegation`), and what a
// child keeps of its parent (`parent`): plain data, read by the parts that answer for either (the
// delegation itself, where an execution stands, the presenters, the dashboard).
import { asRecord } from '../engine/conditions.js';
import type { ExecutionState } from '../engine/state-machine.js';
import { isTerminal } from '../engine/state-machine.js';

export type JoinRule = 'all' | 'any' | { atLeast: number };

/** What a finished child hands its parent: gathered into the parent's context under the child's name. */
export interface ChildResult {
  state: ExecutionState;
  /** The child's last accepted output's summary (what its agent reported last). */
  summary?: string;
  /** The child workflow's final_output, rendered, when it has one and completed. */
  final_output?: unknown;
  /** The context values the child's agent reported (server-owned keys left out). */
  context?: Record<string, unknown>;
  /** The child's artifacts: small ones with their content, the rest by name (read them from the child). */
  artifacts?: { name: string; type: string; step: string; content?: string; size_bytes: number }[];
  /** Why it did not complete (abandoned, failed). */
  reason?: string;
}

export interface ChildEntry {
  name: string;
  execution_id: string;
  workflow_id: string;
  state: ExecutionState;
  /** WorkRail's model tier hint for the subagent, when the delegation gives one. */
  model_tier?: string;
  /** Set once the child ended. */
  result?: ChildResult;
}

/** A delegating step's state, kept in the parent's metadata while the step is current. */
export interface DelegationState {
  step: string;
  seq: number;
  into: string;
  join: JoinRule;
  onChildFailure: 'fail' | 'continue';
  /** The wait's length (ms), and when the current wait times out (null: never). */
  timeout_ms: number | null;
  deadline: string | null;
  /** How many times the wait timed out (each recorded, each handed back with a fresh token). */
  timeouts: number;
  children: ChildEntry[];
}

/** What a child keeps of its parent: never a way to read or move it, only where its results go. */
export interface ParentLink {
  execution_id: string;
  step: string;
  seq: number;
  name: string;
  /** 1 for a child of a top-level execution, 2 for a grandchild, ... */
  depth: number;
}

/** The open delegation of an execution's current step, if any. */
export function delegationOf(metadata: Record<string, unknown>): DelegationState | undefined {
  const d = asRecord(metadata.delegation);
  return typeof d.step === 'string' && Array.isArray(d.children)
    ? (d as unknown as DelegationState)
    : undefined;
}

/** The parent link of a child execution, if it is one. */
export function parentOf(metadata: Record<string, unknown>): ParentLink | undefined {
  const p = asRecord(metadata.parent);
  return typeof p.execution_id === 'string' && typeof p.name === 'string'
    ? (p as unknown as ParentLink)
    : undefined;
}

export interface JoinCount {
  total: number;
  completed: number;
  /** Ended without completing (failed, abandoned, diverged). */
  failed: number;
  open: number;
}

export function countChildren(children: readonly ChildEntry[]): JoinCount {
  const completed = children.filter((c) => c.state === 'completed').length;
  const ended = children.filter((c) => isTerminal(c.state)).length;
  return { total: children.length, completed, failed: ended - completed, open: children.length - ended };
}

/** How many completed children the join needs. */
export function needed(join: JoinRule, total: number): number {
  if (join === 'all') return total;
  if (join === 'any') return Math.min(1, total);
  return join.atLeast;
}

/**
 * Where the join stands: `holds` (enough children completed), `impossible` (too many ended without
 * completing for it ever to hold), or `waiting`.
 */
export function joinVerdict(
  d: Pick<DelegationState, 'join' | 'children'>,
): 'holds' | 'impossible' | 'waiting' {
  const count = countChildren(d.children);
  const need = needed(d.join, count.total);
  if (count.completed >= need) return 'holds';
  if (count.completed + count.open < need) return 'impossible';
  return 'waiting';
}

/** "2 of 3 children completed, 1 running" */
export function joinProgress(d: Pick<DelegationState, 'join' | 'children'>): string {
  const c = countChildren(d.children);
  const need = needed(d.join, c.total);
  const parts = [`${c.completed} of ${c.total} children completed`];
  if (c.open > 0) parts.push(`${c.open} still open`);
  if (c.failed > 0) parts.push(`${c.failed} ended without completing`);
  const rule = d.join === 'all' ? 'all' : d.join === 'any' ? 'any one' : `at least ${need}`;
  return `${parts.join(', ')} (the step needs ${rule})`;
}
