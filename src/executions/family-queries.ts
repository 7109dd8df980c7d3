import type { ExecutionState } from '../engine/state-machine.js';
import {
  DELEGATION_MAX_CHILDREN,
  isLoopStep,
  isPromptStep,
  type PromptStep,
  type Step,
  type Workflow,
} from '../model/workflow.js';
import type { ExecutionRecord, ExecutionStore } from '../store/execution-store.js';
import {
  countChildren,
  delegationOf,
  type JoinRule,
  joinProgress,
  type ParentLink,
  parentOf,
} from './delegation-model.js';
import type { Caller } from './execution-model.js';
import { plannedOrder, stringRecord } from './execution-presenters.js';

// The read side of delegation: where an execution sits among delegations (its parent, its children
// grouped by the delegating step that created them) and the parent link a child's spans follow. Apart
// from execution-queries.ts because it reads other executions than the one asked about.

/** One child execution, as its parent's page and `children` resource show it. */
export interface ChildSummary {
  /** Its name in the delegation (its results are gathered under it). */
  name: string;
  execution_id: string;
  workflow_id: string;
  state: ExecutionState;
  current_step: string | null;
  /** Sequence number of its step in progress (1-based count of steps handed out). */
  current_seq: number;
  /** Steps of its workflow done, and planned (loop bodies counted once). */
  done: number;
  total: number;
  started_at: string;
  updated_at: string;
  completed_at: string | null;
  /** The parent's delegating step that created it, and that step's sequence number. */
  step: string;
  seq: number;
  model_tier?: string;
}

/** One delegating step of the parent (one handing-out of it: a loop may hand it out again), with its children. */
export interface DelegationSummary {
  step: string;
  seq: number;
  /** The delegating step's title, as the definition says it. */
  title: string;
  /** How the join decides, in the definition's words (`all`, `any`, `{atLeast}`), and where the results go. */
  join: JoinRule;
  into: string;
  /** While the step is current: where the join stands, and when the wait times out (null: never). */
  open: {
    progress: string;
    completed: number;
    failed: number;
    running: number;
    deadline: string | null;
    timeouts: number;
    on_child_failure: 'fail' | 'continue';
  } | null;
  /** After the join: each child's result state, from the parent's context under `into`. */
  results: { name: string; state: string; summary?: string }[] | null;
  children: ChildSummary[];
}

/** Where an execution sits among delegations: its parent (a child), and its children (a parent). */
export interface FamilyView {
  parent: ParentLink | null;
  /** Newest handing-out first. */
  delegations: DelegationSummary[];
  /** More children than were read (the newest CHILDREN_READ are shown). */
  more: boolean;
}

/** Children an execution's page reads (newest first): a step hands out at most 50, a loop may repeat it. */
export const CHILDREN_READ = DELEGATION_MAX_CHILDREN * 4;

/** The family of an execution, read from the store; the caller's ownership is checked by the caller. */
export class FamilyQueries {
  private readonly parents = new Map<
    string,
    { execution_id: string; step: string; name: string; trace: unknown } | null
  >();

  /** `definition` is the queries' pinned definition of an execution (cached by hash). */
  constructor(
    private readonly store: ExecutionStore,
    private readonly definition: (exec: ExecutionRecord) => Promise<Workflow>,
  ) {}

  /**
   * What a child execution keeps of its parent, with the trace context of the span that created it
   * (`metadata.parent.trace`), for the spans of its steps to link to; undefined for an execution that
   * is no child. Not scoped: for the service's own spans of an execution its caller just moved. A
   * parent link never changes, so it is read once per execution (the last 1,024 remembered).
   */
  async parentTrace(
    executionId: string,
  ): Promise<{ execution_id: string; step: string; name: string; trace: unknown } | undefined> {
    if (!this.parents.has(executionId)) {
      const exec = await this.store.getExecution(executionId);
      if (exec === undefined) return undefined;
      const link = parentOf(exec.metadata);
      if (this.parents.size >= 1024) this.parents.clear();
      this.parents.set(
        executionId,
        link === undefined
          ? null
          : {
              execution_id: link.execution_id,
              step: link.step,
              name: link.name,
              trace: (exec.metadata.parent as { trace?: unknown }).trace,
            },
      );
    }
    return this.parents.get(executionId) ?? undefined;
  }

  /**
   * Its parent, from its own record; its children, read with one listing of the caller's executions
   * whose parent it is, and only when its workflow delegates at all.
   */
  async familyOf(exec: ExecutionRecord, workflow: Workflow, caller: Caller): Promise<FamilyView> {
    const link = parentOf(exec.metadata);
    // The link's own fields only (the metadata may carry more, such as the creating trace context).
    const parent: ParentLink | null =
      link === undefined
        ? null
        : {
            execution_id: link.execution_id,
            step: link.step,
            seq: link.seq,
            name: link.name,
            depth: link.depth,
          };
    const steps = new Map(
      [...everyStep(workflow)].flatMap((s) =>
        isPromptStep(s) && s.delegate !== undefined ? [[s.id, s] as [string, PromptStep]] : [],
      ),
    );
    const open = delegationOf(exec.metadata);
    if (steps.size === 0 && open === undefined) return { parent, delegations: [], more: false };
    const read = await this.store.listExecutions({
      parent_id: exec.execution_id,
      principal: caller.principal,
      limit: CHILDREN_READ + 1,
    });
    const records = read.slice(0, CHILDREN_READ);
    // Each child workflow's definition, once per version (the cache has it after the first page).
    const definitions = new Map<string, Workflow>();
    for (const r of records) {
      if (!definitions.has(r.definition_hash)) definitions.set(r.definition_hash, await this.definition(r));
    }
    const live = open !== undefined && open.step === exec.current_step && open.seq === exec.current_seq;
    const entries = new Map((live ? open.children : []).map((c, i) => [c.execution_id, { c, i }]));
    const groups = new Map<string, DelegationSummary>();
    const children = records
      .map((r): ChildSummary & { order: number } => {
        const link = parentOf(r.metadata);
        const entry = entries.get(r.execution_id);
        // After the join the delegation's list is gone: the results keep its order.
        const step = link === undefined ? undefined : steps.get(link.step);
        const gathered = Object.keys(stringRecord(exec.context[step?.delegate?.into ?? link?.step ?? '']));
        const name = link?.name ?? entry?.c.name ?? r.execution_id;
        const planned = plannedOrder(definitions.get(r.definition_hash) as Workflow).map((p) => p.step.id);
        const completed = new Set(r.completed_steps);
        return {
          name,
          execution_id: r.execution_id,
          workflow_id: r.workflow_name,
          state: r.state,
          current_step: r.current_step,
          current_seq: r.current_seq,
          done: planned.filter((id) => completed.has(id)).length,
          total: planned.length,
          started_at: r.started_at,
          updated_at: r.updated_at,
          completed_at: r.completed_at,
          step: link?.step ?? open?.step ?? '',
          seq: link?.seq ?? open?.seq ?? 0,
          ...(entry?.c.model_tier !== undefined ? { model_tier: entry.c.model_tier } : {}),
          order: entry?.i ?? (gathered.includes(name) ? gathered.indexOf(name) : gathered.length),
        };
      })
      // In the order the delegation (or its results) lists them, else as they were created.
      .sort((a, b) => a.order - b.order || a.started_at.localeCompare(b.started_at));
    for (const { order: _order, ...child } of children) {
      const key = `${child.seq}|${child.step}`;
      let group = groups.get(key);
      if (group === undefined) {
        const step = steps.get(child.step);
        const isOpen = live && open.step === child.step && open.seq === child.seq;
        const into = isOpen ? open.into : (step?.delegate?.into ?? child.step);
        group = {
          step: child.step,
          seq: child.seq,
          title: step?.title ?? child.step,
          join: isOpen ? open.join : (step?.delegate?.join ?? 'all'),
          into,
          open: null,
          results: null,
          children: [],
        };
        if (isOpen) {
          const count = countChildren(open.children);
          group.open = {
            progress: joinProgress(open),
            completed: count.completed,
            failed: count.failed,
            running: count.open,
            deadline: open.deadline,
            timeouts: open.timeouts,
            on_child_failure: open.onChildFailure,
          };
        } else {
          group.results = resultsIn(exec.context[into]);
        }
        groups.set(key, group);
      }
      group.children.push(child);
    }
    const delegations = [...groups.values()].sort((a, b) => b.seq - a.seq);
    // A step handed out again (in a loop) gathers into the same key: the context has the newest results only.
    const newest = new Set<string>();
    for (const d of delegations) {
      if (newest.has(d.step)) d.results = null;
      newest.add(d.step);
    }
    return { parent, delegations, more: read.length > CHILDREN_READ };
  }
}

/** Every step of a definition, loop bodies included. */
function* everyStep(workflow: Workflow): Generator<Step> {
  for (const step of workflow.steps) {
    yield step;
    if (isLoopStep(step) && Array.isArray(step.body)) yield* step.body;
  }
}

/**
 * The children's results a join gathered (`{name: {state, summary, ...}}` in the parent's context), as
 * name, state and summary; null when the context holds none there (a later step may have replaced it).
 */
function resultsIn(value: unknown): DelegationSummary['results'] {
  const gathered = stringRecord(value);
  const results = Object.entries(gathered).flatMap(([name, result]) => {
    const r = stringRecord(result);
    if (typeof r.state !== 'string') return [];
    return [{ name, state: r.state, ...(typeof r.summary === 'string' ? { summary: r.summary } : {}) }];
  });
  return results.length > 0 ? results : null;
}
