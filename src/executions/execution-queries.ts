import { fail } from '../engine/errors.js';
import { EXECUTION_STATES, type ExecutionState } from '../engine/state-machine.js';
import type { Workflow } from '../model/workflow.js';
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
import { type Caller, plannedSteps } from './execution-model.js';
import {
  detailOf,
  type ExecutionDetail,
  type ExecutionProgress,
  type ExecutionStatus,
  type ExecutionSummary,
  historyOf,
  progressOf,
  type StepHistoryEntry,
  summary,
} from './execution-presenters.js';
import { FamilyQueries, type FamilyView } from './family-queries.js';

// The queries read and scope (the caller's principal, the pinned definitions); what they return is
// presented by execution-presenters.ts, and the delegation family is read by family-queries.ts.

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

/**
 * The read side of durable executions: what the resources, `workflow_executions` and the dashboard
 * show. Every query is scoped to the caller's principal; another principal's execution is not found.
 */
export class ExecutionQueries {
  private readonly pinned = new Map<string, Workflow>();
  private readonly definition: (exec: ExecutionRecord) => Promise<Workflow>;
  private readonly families: FamilyQueries;

  /** `definition` defaults to reading the pinned definition from the store (cached by hash). */
  constructor(
    private readonly store: ExecutionStore,
    definition?: (exec: ExecutionRecord) => Promise<Workflow>,
  ) {
    this.definition = definition ?? ((exec) => this.pinnedDefinition(exec));
    this.families = new FamilyQueries(store, (exec) => this.definition(exec));
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
    const family = await this.families.familyOf(exec, workflow, caller);
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

  /** A child's parent link, with the trace context of the span that created it (FamilyQueries.parentTrace). */
  parentTrace(
    executionId: string,
  ): Promise<{ execution_id: string; step: string; name: string; trace: unknown } | undefined> {
    return this.families.parentTrace(executionId);
  }

  /** An execution's parent and children (the workflow_status resource), its ownership checked first. */
  async family(executionId: string, caller: Caller): Promise<FamilyView> {
    const exec = await this.owned(executionId, caller);
    return this.families.familyOf(exec, await this.definition(exec), caller);
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

function withCursors(
  executions: ExecutionPage['executions'],
  older: ExecutionCursor | undefined,
  newer: ExecutionCursor | undefined,
): ExecutionPage {
  return { executions, ...(older ? { older } : {}), ...(newer ? { newer } : {}) };
}
