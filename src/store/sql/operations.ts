import type { ExecutionState } from '../../engine/state-machine.js';
import {
  type ArtifactRecord,
  type ExecutionPageOptions,
  type ExecutionPageRecord,
  type PurgeCounts,
  type StoreReader,
  type StoreWriter,
  type SubmissionRecord,
  TERMINAL_TASK_STATUSES,
} from '../execution-store.js';
import {
  approvalQuery,
  countsQuery,
  headsQuery,
  listQuery,
  purgePlan,
  type SqlDialect,
  type Statement,
  taskQuery,
  telemetryQuery,
  writeValues,
} from './queries.js';
import {
  APPROVALS,
  ARTIFACTS,
  DEFINITIONS,
  EXECUTIONS,
  RECORD_EVENTS,
  type Row,
  STEPS,
  SUBMISSIONS,
  TASKS,
  type TableName,
  type TableSpec,
  TELEMETRY,
  toApproval,
  toArtifact,
  toDefinition,
  toExecution,
  toHead,
  toRecordEvent,
  toStep,
  toSubmission,
  toTask,
  toTelemetry,
} from './tables.js';

/**
 * How an adapter runs statements: on its connection (SQLite), on the pool or a transaction's client
 * (PostgreSQL).
 */
export interface SqlSession {
  /**
   * The rows of one statement. `reads` names the tables it reads ('*': any), so a session that holds
   * writes back (see `write`) can send those first: reads always see the transaction's own writes.
   */
  query(statement: Statement, reads: readonly TableName[] | '*'): Promise<Row[]>;
  /**
   * Inserts or updates one row (`values`: by column, as the table spec encodes them). A session may
   * hold it back and send it with others later in the transaction (PostgreSQL: write-batch.ts).
   */
  write(spec: TableSpec<never>, op: 'insert' | 'update', values: Row): Promise<void>;
  /** Inside a transaction: what is read by key is locked until it ends. */
  readonly locking: boolean;
  /**
   * The store's memory of each execution's parent (it never changes), so that locking a child's row,
   * which first locks its ancestors', costs no extra statement once the parent is known.
   */
  readonly parents?: Map<string, string | null>;
}

/** How many parents a store remembers before it forgets them all (ids are random: no churn to track). */
const PARENTS_REMEMBERED = 50_000;

/** A session's `write` that sends each row write at once, as one statement. */
export function writeNow(
  dialect: SqlDialect,
  query: SqlSession['query'],
): (spec: TableSpec<never>, op: 'insert' | 'update', values: Row) => Promise<void> {
  return async (spec, op, values) => {
    const text = dialect.writes.get(spec)?.[op] as string;
    await query({ text, values: writeValues(dialect, spec, op, values) }, '*');
  };
}

const now = () => new Date().toISOString();
const EXEC: readonly TableName[] = ['workflow_executions'];
const STEP: readonly TableName[] = ['workflow_steps'];

/**
 * The one-execution page through `reader`, which the adapter runs in one snapshot: a statement per
 * section, the ownership checked once on the execution itself.
 */
export async function readExecutionPage(
  reader: StoreReader,
  id: string,
  principal: string,
  options: ExecutionPageOptions,
): Promise<ExecutionPageRecord | undefined> {
  const execution = await reader.getExecution(id);
  if (execution === undefined || execution.principal !== principal) return undefined;
  const definition =
    options.known?.(execution.definition_hash) === true
      ? undefined
      : await reader.getDefinition(execution.definition_hash);
  return {
    execution,
    definition,
    steps: await reader.getSteps(id),
    artifacts: await reader.getArtifacts(id),
    telemetry: await reader.getTelemetry({ execution_id: id, limit: options.telemetry }),
    failures: await reader.getTelemetry({
      execution_id: id,
      event_type: 'step_failed',
      limit: options.failures,
    }),
  };
}

/** Every operation of the port, in SQL both adapters speak (the dialect says where they differ). */
export function sqlOperations(session: SqlSession, d: SqlDialect): StoreWriter {
  const sql = d.fixed;
  const rows = (text: string, values: unknown[], reads: readonly TableName[] | '*') =>
    session.query({ text, values }, reads);
  const first = async (text: string, values: unknown[], reads: readonly TableName[]) =>
    (await rows(text, values, reads))[0];
  const write = <R>(spec: TableSpec<R>, op: 'insert' | 'update', record: R) =>
    session.write(spec as TableSpec<never>, op, spec.values(record));
  const insertArtifact = async (record: Omit<ArtifactRecord, 'id'>) => {
    const statement = d.writes.get(ARTIFACTS as TableSpec<never>)?.insert as string;
    const values = writeValues(d, ARTIFACTS as TableSpec<never>, 'insert', ARTIFACTS.values(record));
    return (await rows(statement, values, '*'))[0]?.id as number;
  };
  // Row locks are taken ancestors first: a transaction that locks a child execution's row first locks its
  // parent's (and the parent's parent's). A child ending joins its parent, and a parent's join, pause or
  // end moves its children, so both orders happen; one order for everyone is what keeps children ending at
  // once on different replicas from deadlocking with the join that abandons them (PostgreSQL would break
  // the cycle only after deadlock_timeout, by failing one of them).
  const locked = new Set<string>();
  const remember = (id: string, parent: string | null) => {
    if (session.parents === undefined) return;
    if (session.parents.size >= PARENTS_REMEMBERED) session.parents.clear();
    session.parents.set(id, parent);
  };
  const parentOf = async (id: string): Promise<string | null> => {
    const known = session.parents?.get(id);
    if (known !== undefined) return known;
    const row = await first(sql.parentOf, [id], EXEC);
    if (row === undefined) return null;
    const parent = (row.parent_id as string | null) ?? null;
    remember(id, parent);
    return parent;
  };
  const lockAncestors = async (id: string, depth: number): Promise<void> => {
    const parent = await parentOf(id);
    // Depth is bounded by WORKFLOWLOOKUP_MAX_DELEGATION_DEPTH; the guard only stops a corrupt cycle.
    if (parent === null || locked.has(parent) || depth > 32) return;
    await lockAncestors(parent, depth + 1);
    await rows(sql.lockExecutionKey, [parent], EXEC);
    locked.add(parent);
  };
  const operations: StoreWriter = {
    executionPage: (id, principal, options) => readExecutionPage(operations, id, principal, options),
    getExecution: async (id) => {
      if (session.locking && !locked.has(id)) await lockAncestors(id, 0);
      const row = await first(session.locking ? sql.lockExecution : sql.getExecution, [id], EXEC);
      if (row === undefined) return undefined;
      if (session.locking) locked.add(id);
      const exec = toExecution(row);
      remember(id, exec.parent_id);
      return exec;
    },
    listExecutions: async (filter) => {
      const q = listQuery(d, filter);
      return (await rows(q.text, q.values, EXEC)).map(toExecution);
    },
    countOpenChildren: async (principal) =>
      Number((await first(sql.countOpenChildren, [principal], EXEC))?.n ?? 0),
    countChildren: async () =>
      Object.fromEntries(
        (await rows(sql.countChildren, [], EXEC)).map((r) => [r.state as ExecutionState, Number(r.n)]),
      ),
    pageExecutions: async (after, limit) =>
      (await rows(sql.pageExecutions, [after ?? '', limit], EXEC)).map(toExecution),
    listExecutionHeads: async (filter) => {
      const q = headsQuery(d, filter);
      const heads = (await rows(q.text, q.values, EXEC)).map(toHead);
      return filter.newer_than !== undefined ? heads.reverse() : heads;
    },
    countExecutions: async (filter) => {
      const q = countsQuery(d, filter);
      const found = await rows(q.text, q.values, EXEC);
      return Object.fromEntries(found.map((r) => [r.state as ExecutionState, Number(r.n)]));
    },
    listPrincipals: async () => (await rows(sql.listPrincipals, [], EXEC)).map((r) => r.principal as string),
    changedExecutions: async ({ principal, since, limit }) =>
      (await rows(sql.changedExecutions, [principal, since, limit], EXEC)).map(toHead),
    getSteps: async (id) => (await rows(sql.getSteps, [id], STEP)).map(toStep),
    getStep: async (id, seq) => {
      const row = await first(session.locking ? sql.lockStep : sql.getStep, [id, seq], STEP);
      return row ? toStep(row) : undefined;
    },
    getArtifacts: async (id, stepName) =>
      (stepName === undefined
        ? await rows(sql.getArtifacts, [id], ['workflow_artifacts'])
        : await rows(sql.getStepArtifacts, [id, stepName], ['workflow_artifacts'])
      ).map(toArtifact),
    getTelemetry: async (filter) => {
      const q = telemetryQuery(d, filter);
      return (await rows(q.text, q.values, ['telemetry_events', 'workflow_executions'])).map(toTelemetry);
    },
    getSubmission: async (nonce) => {
      const row = await first(sql.getSubmission, [nonce], ['token_submissions']);
      return row ? toSubmission(row) : undefined;
    },
    getSubmissions: async (id) =>
      (await rows(sql.getSubmissions, [id], ['token_submissions'])).map(toSubmission),
    getDefinition: async (hash) =>
      (await first(sql.getDefinition, [hash], ['workflow_definitions']))?.content as string | undefined,
    getPinnedDefinition: async (hash) => {
      const row = await first(sql.getPinnedDefinition, [hash], ['workflow_definitions']);
      return row ? toDefinition(row) : undefined;
    },
    getTask: async (taskId) => {
      const row = await first(session.locking ? sql.lockTask : sql.getTask, [taskId], ['tasks']);
      return row ? toTask(row) : undefined;
    },
    listTasks: async (filter) => {
      const q = taskQuery(d, filter);
      return (await rows(q.text, q.values, ['tasks'])).map(toTask);
    },
    pinDefinition: (hash, workflowId, content) =>
      write(DEFINITIONS, 'insert', { hash, workflow_id: workflowId, content, created_at: now() }),
    importDefinition: (record) => write(DEFINITIONS, 'insert', record),
    insertExecution: (record) => {
      remember(record.execution_id, record.parent_id);
      return write(EXECUTIONS, 'insert', record);
    },
    updateExecution: (record) => write(EXECUTIONS, 'update', record),
    insertStep: (record) => write(STEPS, 'insert', record),
    updateStep: (record) => write(STEPS, 'update', record),
    insertArtifact: (artifact) => insertArtifact({ ...artifact, created_at: now() }),
    importArtifact: (record) => insertArtifact(record),
    insertTelemetry: (event) => write(TELEMETRY, 'insert', { ...event, created_at: now() }),
    importTelemetry: (record) => write(TELEMETRY, 'insert', record),
    recordSubmission: (record) => write(SUBMISSIONS, 'insert', record),
    updateSubmission: (nonce, response) =>
      // An update writes only the response (SUBMISSIONS.updates); the fields it leaves alone are null.
      write(SUBMISSIONS, 'update', { nonce, response } as SubmissionRecord),
    getApproval: async (approvalId) => {
      const row = await first(sql.getApproval, [approvalId], ['approvals']);
      return row ? toApproval(row) : undefined;
    },
    listApprovals: async (filter) => {
      const q = approvalQuery(d, filter);
      return (await rows(q.text, q.values, ['approvals'])).map(toApproval);
    },
    insertApproval: (record) => write(APPROVALS, 'insert', record),
    appendRecordEvent: (event) => write(RECORD_EVENTS, 'insert', event),
    getRecordEvents: async (id) =>
      (await rows(sql.getRecordEvents, [id], ['execution_record'])).map(toRecordEvent),
    lastRecordEvent: async (id) => {
      const row = await first(sql.lastRecordEvent, [id], ['execution_record']);
      return row ? toRecordEvent(row) : undefined;
    },
    updateApproval: (record) => write(APPROVALS, 'update', record),
    insertTask: (record) => write(TASKS, 'insert', record),
    updateTask: (record) => write(TASKS, 'update', record),
    deleteExpiredTasks: async (at) =>
      (await rows(sql.deleteExpiredTasks, [at, d.list(TERMINAL_TASK_STATUSES)], '*')).length,
    purgeHistory: async (filter) => {
      const plan = purgePlan(d, filter);
      const ids = plan.selection
        ? (await rows(plan.selection.text, plan.selection.values, '*')).map((r) => r.execution_id as string)
        : [];
      const { counts, deletes } = plan.rest(ids);
      const count = async (q: Statement) => Number((await rows(q.text, q.values, '*'))[0]?.n ?? 0);
      const result: PurgeCounts = {
        executions: ids.length,
        steps: await count(counts.steps),
        artifacts: await count(counts.artifacts),
        telemetry: await count(counts.telemetry),
        submissions: await count(counts.submissions),
        tasks: await count(counts.tasks),
      };
      if (!filter.dry_run) for (const q of deletes) await rows(q.text, q.values, '*');
      return result;
    },
  };
  return operations;
}
