import { fail } from '../engine/errors.js';
import { contextScope } from '../engine/guidance.js';
import { EXECUTION_STATES, type ExecutionState, isTerminal } from '../engine/state-machine.js';
import { promptBudget, renderPrompt } from '../engine/templating.js';
import {
  DELEGATION_MAX_CHILDREN,
  isCommandStep,
  isLoopStep,
  isPromptStep,
  type PromptStep,
  type Step,
  type Workflow,
} from '../model/workflow.js';
import type {
  ArtifactRecord,
  ExecutionCursor,
  ExecutionHead,
  ExecutionRecord,
  ExecutionStore,
  StepRecord,
  TaskRecord,
  TaskStatus,
  TelemetryRecord,
} from '../store/execution-store.js';
import {
  countChildren,
  delegationOf,
  type JoinRule,
  joinProgress,
  type ParentLink,
  parentOf,
} from './delegation-model.js';
import type { CommandWait, PauseRecord } from './execution-model.js';
import { type Caller, pauseOf, plannedSteps } from './execution-model.js';

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

/** Filters of the execution list (the dashboard's executions page). */
export interface ExecutionListFilter {
  workflow_id?: string | undefined;
  states?: readonly ExecutionState[] | undefined;
  /** Only executions last changed at or after this time (ISO 8601). */
  updated_since?: string | undefined;
  /** Only executions last changed before this time (ISO 8601). */
  updated_before?: string | undefined;
}

export interface ExecutionPage {
  executions: (ExecutionSummary & {
    principal: string;
    current_seq: number;
    /** When it finished, and how long it took (null while unfinished). */
    completed_at: string | null;
    duration_ms: number | null;
  })[];
  /** Where the next (older) page starts, when there is one. */
  older?: ExecutionCursor;
  /** Where the previous (newer) page ends, when there is one. */
  newer?: ExecutionCursor;
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

/** The one-execution page of the dashboard (see `ExecutionQueries.executionPage`). */
export interface ExecutionPageView {
  /** Its parent and its children (delegation). */
  family: FamilyView;
  /** What a listing shows of it (the live updates' version of the page is made of it). */
  head: ExecutionHead;
  detail: ExecutionDetail;
  progress: ExecutionProgress;
  history: StepHistoryEntry[];
  artifacts: ArtifactRecord[];
  telemetry: TelemetryRecord[];
}

/** Failed validations read to find the latest check of an agent's output. */
const FAILURES_READ = 20;
/** Children an execution's page reads (newest first): a step hands out at most 50, a loop may repeat it. */
export const CHILDREN_READ = DELEGATION_MAX_CHILDREN * 4;

/** The steps a definition plans, in order, loop bodies in place (each once). */
function plannedOrder(workflow: Workflow): { step: Step; loop?: string }[] {
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

const stringRecord = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/**
 * The read side of durable executions: what the resources, `workflow_executions` and the dashboard
 * show. Every query is scoped to the caller's principal; another principal's execution is not found.
 */
export class ExecutionQueries {
  private readonly pinned = new Map<string, Workflow>();
  private readonly parents = new Map<
    string,
    { execution_id: string; step: string; name: string; trace: unknown } | null
  >();
  private readonly definition: (exec: ExecutionRecord) => Promise<Workflow>;

  /** `definition` defaults to reading the pinned definition from the store (cached by hash). */
  constructor(
    private readonly store: ExecutionStore,
    definition?: (exec: ExecutionRecord) => Promise<Workflow>,
  ) {
    this.definition = definition ?? ((exec) => this.pinnedDefinition(exec));
  }

  private async pinnedDefinition(exec: ExecutionRecord): Promise<Workflow> {
    return this.pinnedFrom(
      exec,
      this.pinned.has(exec.definition_hash)
        ? undefined
        : await this.store.getDefinition(exec.definition_hash),
    );
  }

  /** The pinned definition from its text (read just now), else from the cache. */
  private pinnedFrom(exec: ExecutionRecord, content: string | undefined): Workflow {
    const cached = this.pinned.get(exec.definition_hash);
    if (cached) return cached;
    if (content === undefined) {
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: `pinned definition ${exec.definition_hash} is missing`,
      });
    }
    if (this.pinned.size >= 256) this.pinned.clear();
    const workflow = JSON.parse(content) as Workflow;
    this.pinned.set(exec.definition_hash, workflow);
    return workflow;
  }

  private async owned(executionId: string, caller: Caller): Promise<ExecutionRecord> {
    const exec = await this.store.getExecution(executionId);
    if (!exec || exec.principal !== caller.principal) {
      fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
    }
    return exec;
  }

  async status(executionId: string, caller: Caller): Promise<ExecutionStatus> {
    const exec = await this.owned(executionId, caller);
    const [steps, workflow] = await Promise.all([this.store.getSteps(executionId), this.definition(exec)]);
    const count = (status: StepRecord['status']) => steps.filter((s) => s.status === status).length;
    const total = plannedSteps(workflow);
    const doneNames = new Set(steps.filter((s) => s.status === 'completed').map((s) => s.step_name));
    return {
      ...summary(exec),
      completed_at: exec.completed_at,
      duration_ms: exec.duration_ms,
      steps: {
        total,
        completed: count('completed'),
        failed: count('failed'),
        running: count('running'),
        pending: Math.max(0, total - doneNames.size - count('running')),
      },
    };
  }

  async history(executionId: string, caller: Caller): Promise<StepHistoryEntry[]> {
    await this.owned(executionId, caller);
    return historyOf(await this.store.getSteps(executionId));
  }

  async artifacts(executionId: string, caller: Caller, stepName?: string): Promise<ArtifactRecord[]> {
    await this.owned(executionId, caller);
    return this.store.getArtifacts(executionId, stepName);
  }

  async find(
    filter: {
      workflow_id?: string | undefined;
      states?: readonly ExecutionState[] | undefined;
      /** Only the children of this execution. */
      parent_id?: string | undefined;
      limit: number;
    },
    caller: Caller,
  ): Promise<ExecutionSummary[]> {
    const records = await this.store.listExecutions({
      principal: caller.principal,
      limit: filter.limit,
      ...(filter.parent_id !== undefined ? { parent_id: filter.parent_id } : {}),
      ...(filter.workflow_id !== undefined ? { workflow_name: filter.workflow_id } : {}),
      ...(filter.states !== undefined ? { states: filter.states } : {}),
    });
    return records.map(summary);
  }

  /** One page of executions, most recently updated first, with cursors to the neighbouring pages. */
  async page(
    filter: ExecutionListFilter & {
      limit: number;
      older_than?: ExecutionCursor | undefined;
      newer_than?: ExecutionCursor | undefined;
    },
    caller: Caller,
  ): Promise<ExecutionPage> {
    const { limit, older_than, newer_than } = filter;
    const rows = await this.store.listExecutionHeads({
      ...this.storeFilter(filter, caller),
      limit: limit + 1,
      ...(older_than !== undefined ? { older_than } : {}),
      ...(newer_than !== undefined ? { newer_than } : {}),
    });
    const listing = (h: ExecutionHead) => ({
      ...summary(h),
      principal: h.principal,
      current_seq: h.current_seq,
      completed_at: h.completed_at,
      duration_ms: h.duration_ms,
    });
    const cursor = (h: ExecutionHead | undefined) =>
      h === undefined ? undefined : { updated_at: h.updated_at, execution_id: h.execution_id };
    if (newer_than !== undefined && older_than === undefined) {
      // Fewer newer rows than a page: that is the first page, shown whole.
      if (rows.length <= limit) return this.page({ ...filter, newer_than: undefined }, caller);
      const shown = rows.slice(1);
      return withCursors(shown.map(listing), cursor(shown.at(-1)), cursor(shown[0]));
    }
    const shown = rows.slice(0, limit);
    return withCursors(
      shown.map(listing),
      rows.length > limit ? cursor(shown.at(-1)) : undefined,
      older_than !== undefined ? cursor(shown[0]) : undefined,
    );
  }

  /** How many executions match the filter, per state (the states filter itself is not applied). */
  async counts(filter: ExecutionListFilter, caller: Caller): Promise<Record<ExecutionState, number>> {
    const { states: _all, ...rest } = this.storeFilter(filter, caller);
    const found = await this.store.countExecutions(rest);
    return Object.fromEntries(EXECUTION_STATES.map((s) => [s, found[s] ?? 0])) as Record<
      ExecutionState,
      number
    >;
  }

  /**
   * Every principal that has executions. Not scoped: only for the owner of the store (the standalone
   * dashboard, which reads the data dir directly anyway); never for a caller authenticated over HTTP.
   */
  principals(): Promise<string[]> {
    return this.store.listPrincipals();
  }

  /** Calls `listener` after commits the store learns of (see ExecutionStore.watch); returns the unsubscribe. */
  watch(listener: () => void): () => void {
    return this.store.watch?.(listener) ?? (() => undefined);
  }

  /** The caller's executions changed at or after `since`, least recently updated first. */
  changedSince(since: string, caller: Caller, limit = 500): Promise<ExecutionHead[]> {
    return this.store.changedExecutions({ principal: caller.principal, since, limit });
  }

  async detail(executionId: string, caller: Caller): Promise<ExecutionDetail> {
    const exec = await this.owned(executionId, caller);
    return detailOf(exec, await this.definition(exec));
  }

  async progress(executionId: string, caller: Caller): Promise<ExecutionProgress> {
    const exec = await this.owned(executionId, caller);
    const [workflow, records, failures] = await Promise.all([
      this.definition(exec),
      this.store.getSteps(executionId),
      this.store.getTelemetry({ execution_id: executionId, event_type: 'step_failed', limit: FAILURES_READ }),
    ]);
    return progressOf(exec, workflow, records, failures);
  }

  /**
   * The one-execution page of the dashboard: detail, progress, history, artifacts and the `telemetry`
   * most recent events, from one snapshot of the store with the ownership checked once
   * (`ExecutionStore.executionPage`), where the separate reads each checked it again.
   */
  async executionPage(
    executionId: string,
    caller: Caller,
    options: { telemetry: number },
  ): Promise<ExecutionPageView> {
    const page = await this.store.executionPage(executionId, caller.principal, {
      telemetry: options.telemetry,
      failures: FAILURES_READ,
      known: (hash) => this.pinned.has(hash),
    });
    if (page === undefined)
      fail({ code: 'execution_not_found', message: 'Execution not found', executionId });
    const exec = page.execution;
    const workflow = this.pinnedFrom(exec, page.definition);
    // One more read, for a parent only: its children (their definitions come from the cache).
    const family = await this.familyOf(exec, workflow, caller);
    return {
      family,
      head: {
        execution_id: exec.execution_id,
        principal: exec.principal,
        workflow_name: exec.workflow_name,
        state: exec.state,
        current_step: exec.current_step,
        current_seq: exec.current_seq,
        token_attempt: exec.token_attempt,
        started_at: exec.started_at,
        updated_at: exec.updated_at,
        completed_at: exec.completed_at,
        duration_ms: exec.duration_ms,
        parent_id: exec.parent_id,
      },
      detail: detailOf(exec, workflow),
      progress: progressOf(exec, workflow, page.steps, page.failures),
      history: historyOf(page.steps),
      artifacts: page.artifacts,
      telemetry: page.telemetry,
    };
  }

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

  /** An execution's parent and children (the workflow_status resource), its ownership checked first. */
  async family(executionId: string, caller: Caller): Promise<FamilyView> {
    const exec = await this.owned(executionId, caller);
    return this.familyOf(exec, await this.definition(exec), caller);
  }

  /**
   * Its parent, from its own record; its children, read with one listing of the caller's executions
   * whose parent it is, and only when its workflow delegates at all.
   */
  private async familyOf(exec: ExecutionRecord, workflow: Workflow, caller: Caller): Promise<FamilyView> {
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

  private storeFilter(filter: ExecutionListFilter, caller: Caller) {
    return {
      principal: caller.principal,
      ...(filter.workflow_id !== undefined ? { workflow_name: filter.workflow_id } : {}),
      ...(filter.states !== undefined ? { states: filter.states } : {}),
      ...(filter.updated_since !== undefined ? { updated_since: filter.updated_since } : {}),
      ...(filter.updated_before !== undefined ? { updated_before: filter.updated_before } : {}),
    };
  }

  /** The caller's tasks (runs among them), newest first: the dashboard's runs page. */
  tasks(
    filter: {
      statuses?: readonly TaskStatus[] | undefined;
      before?: { created_at: string; task_id: string } | undefined;
      limit: number;
    },
    caller: Caller,
  ): Promise<TaskRecord[]> {
    return this.store.listTasks({
      principal: caller.principal,
      limit: filter.limit,
      ...(filter.statuses !== undefined ? { statuses: filter.statuses } : {}),
      ...(filter.before !== undefined ? { before: filter.before } : {}),
    });
  }

  async telemetry(
    filter: { execution_id?: string | undefined; event_type?: string | undefined; limit: number },
    caller: Caller,
  ): Promise<TelemetryRecord[]> {
    if (filter.execution_id !== undefined) await this.owned(filter.execution_id, caller);
    return this.store.getTelemetry({
      principal: caller.principal,
      limit: filter.limit,
      ...(filter.execution_id !== undefined ? { execution_id: filter.execution_id } : {}),
      ...(filter.event_type !== undefined ? { event_type: filter.event_type } : {}),
    });
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

/** Everything about one execution except its steps, artifacts and telemetry; never a token. */
function detailOf(exec: ExecutionRecord, workflow: Workflow): ExecutionDetail {
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
function progressOf(
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
function historyOf(steps: StepRecord[]): StepHistoryEntry[] {
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

function withCursors(
  executions: ExecutionPage['executions'],
  older: ExecutionCursor | undefined,
  newer: ExecutionCursor | undefined,
): ExecutionPage {
  return { executions, ...(older ? { older } : {}), ...(newer ? { newer } : {}) };
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

function summary(e: ExecutionHead): ExecutionSummary {
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
