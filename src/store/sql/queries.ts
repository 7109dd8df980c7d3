import { type ExecutionState, TERMINAL_STATES } from '../../engine/state-machine.js';
import type {
  ApprovalFilter,
  ExecutionCountFilter,
  ExecutionFilter,
  ExecutionPageFilter,
  PurgeFilter,
  TaskFilter,
  TaskStatus,
  TelemetryFilter,
} from '../execution-store.js';
import { TERMINAL_TASK_STATUSES } from '../execution-store.js';
import { SqlFilter } from './filter.js';
import {
  APPROVALS,
  ARTIFACTS,
  DEFINITIONS,
  EXECUTIONS,
  HEAD_COLUMNS,
  RECORD_EVENTS,
  type Row,
  STEPS,
  SUBMISSIONS,
  TASKS,
  type TableSpec,
  TELEMETRY,
} from './tables.js';

/** What differs between the SQL the two adapters speak; everything else in src/store/sql is shared. */
export interface DialectOptions {
  readonly placeholders: 'positional' | 'numbered';
  /**
   * Appended to a parameter compared with a timestamp where the database cannot infer its type (row
   * comparisons in PostgreSQL); SQLite compares the ISO text as it is.
   */
  readonly timestamp: string;
  /** Appended to a read by key inside a transaction: the row is the transaction's until it ends. */
  readonly lockRead: string;
  /** Appended to the selection of the rows a transaction is about to delete. */
  readonly lockDelete: string;
  /** `column` is one of the texts bound to `param`, however many. */
  among(column: string, param: string): string;
  /** What to bind for `among`. */
  list(values: readonly string[]): unknown;
  /** What to bind for a `bytes` column. */
  bytes(text: string): unknown;
  /**
   * List one principal's executions in several states by reading each state's index and merging
   * (PostgreSQL), rather than filtering the principal's index by state.
   */
  readonly mergeStates: boolean;
}

export interface Statement {
  text: string;
  values: unknown[];
}

/** A dialect with the fixed statements written in it once. */
export interface SqlDialect extends DialectOptions {
  readonly fixed: ReturnType<typeof fixedStatements>;
  readonly writes: ReadonlyMap<TableSpec<never>, { insert: string; update: string }>;
}

export function sqlDialect(options: DialectOptions): SqlDialect {
  const dialect = { ...options } as SqlDialect;
  const writes = new Map<TableSpec<never>, { insert: string; update: string }>();
  for (const spec of [
    DEFINITIONS,
    EXECUTIONS,
    STEPS,
    ARTIFACTS,
    TELEMETRY,
    SUBMISSIONS,
    TASKS,
    APPROVALS,
    RECORD_EVENTS,
  ]) {
    writes.set(spec as TableSpec<never>, writeStatements(dialect, spec as TableSpec<never>));
  }
  return Object.assign(dialect, { fixed: fixedStatements(dialect), writes });
}

/** Placeholders numbered from `from` (PostgreSQL) or `?` (SQLite). */
function marks(d: DialectOptions, count: number, from = 1): string[] {
  return Array.from({ length: count }, (_, i) => (d.placeholders === 'numbered' ? `$${from + i}` : '?'));
}

function writeStatements(d: DialectOptions, spec: TableSpec<never>) {
  const names = spec.columns.map(([name]) => name);
  const onConflict = spec === (DEFINITIONS as TableSpec<never>) ? ' ON CONFLICT (hash) DO NOTHING' : '';
  const returning = spec === (ARTIFACTS as TableSpec<never>) ? ' RETURNING id' : '';
  const insert = `INSERT INTO ${spec.table} (${names.join(', ')}) VALUES (${marks(d, names.length).join(', ')})${onConflict}${returning}`;
  const set = marks(d, spec.updates.length).map((m, i) => `${spec.updates[i]} = ${m}`);
  const where = marks(d, spec.key.length, spec.updates.length + 1).map((m, i) => `${spec.key[i]} = ${m}`);
  const update = `UPDATE ${spec.table} SET ${set.join(', ')} WHERE ${where.join(' AND ')}`;
  return { insert, update };
}

/** The values of a row write, in the order of its statement's placeholders. */
export function writeValues(d: DialectOptions, spec: TableSpec<never>, op: 'insert' | 'update', row: Row) {
  const bind = (name: string) => {
    const value = row[name] ?? null;
    const kind = spec.columns.find(([n]) => n === name)?.[1];
    return kind === 'bytes' && typeof value === 'string' ? d.bytes(value) : value;
  };
  return op === 'insert'
    ? spec.columns.map(([name]) => bind(name))
    : [...spec.updates.map(bind), ...spec.key.map(bind)];
}

function fixedStatements(d: DialectOptions) {
  const [p1, p2, p3] = marks(d, 3);
  const byKey = (table: string, where: string) => `SELECT * FROM ${table} WHERE ${where}`;
  const execution = byKey('workflow_executions', `execution_id = ${p1}`);
  const step = byKey('workflow_steps', `execution_id = ${p1} AND seq = ${p2}`);
  const task = byKey('tasks', `task_id = ${p1}`);
  return {
    getExecution: execution,
    lockExecution: `${execution}${d.lockRead}`,
    parentOf: `SELECT parent_id FROM workflow_executions WHERE execution_id = ${p1}`,
    lockExecutionKey: `SELECT 1 FROM workflow_executions WHERE execution_id = ${p1}${d.lockRead}`,
    pageExecutions: `SELECT * FROM workflow_executions WHERE execution_id > ${p1} ORDER BY execution_id LIMIT ${p2}`,
    getSteps: `SELECT * FROM workflow_steps WHERE execution_id = ${p1} ORDER BY seq`,
    getStep: step,
    lockStep: `${step}${d.lockRead}`,
    getArtifacts: `SELECT * FROM workflow_artifacts WHERE execution_id = ${p1} ORDER BY id`,
    getStepArtifacts: `SELECT * FROM workflow_artifacts WHERE execution_id = ${p1} AND step_name = ${p2} ORDER BY id`,
    getSubmission: byKey('token_submissions', `nonce = ${p1}`),
    getSubmissions: `SELECT * FROM token_submissions WHERE execution_id = ${p1} ORDER BY created_at, nonce`,
    getDefinition: `SELECT content FROM workflow_definitions WHERE hash = ${p1}`,
    getPinnedDefinition: byKey('workflow_definitions', `hash = ${p1}`),
    // A skip scan of the principal index (one probe per principal), where DISTINCT reads every row.
    listPrincipals: `WITH RECURSIVE p(principal) AS (
        SELECT MIN(principal) FROM workflow_executions
        UNION ALL
        SELECT (SELECT MIN(principal) FROM workflow_executions WHERE principal > p.principal) FROM p
        WHERE p.principal IS NOT NULL)
      SELECT principal FROM p WHERE principal IS NOT NULL`,
    // The fan-out cap: a partial index holds only child executions (migration 8).
    countOpenChildren: `SELECT COUNT(*) AS n FROM workflow_executions
      WHERE principal = ${p1} AND parent_id IS NOT NULL AND state IN ('idle', 'running', 'paused')`,
    // Children per state for /metrics: the same partial index, read whole.
    countChildren: `SELECT state, COUNT(*) AS n FROM workflow_executions WHERE parent_id IS NOT NULL
      GROUP BY state`,
    changedExecutions: `SELECT ${HEAD_COLUMNS} FROM workflow_executions WHERE principal = ${p1} AND updated_at >= ${p2}
      ORDER BY updated_at, execution_id LIMIT ${p3}`,
    getTask: task,
    getApproval: byKey('approvals', `approval_id = ${p1}`),
    getRecordEvents: `SELECT * FROM execution_record WHERE execution_id = ${p1} ORDER BY n`,
    lastRecordEvent: `SELECT * FROM execution_record WHERE execution_id = ${p1} ORDER BY n DESC LIMIT 1`,
    lockTask: `${task}${d.lockRead}`,
    deleteExpiredTasks: `DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at < ${p1}
      AND ${d.among('status', p2 as string)} RETURNING task_id`,
  };
}

/** The list query (`listExecutions`) for one combination of filters. */
export function listQuery(d: SqlDialect, filter: ExecutionFilter): Statement {
  const f = new SqlFilter(d.placeholders)
    .equals('p', 'principal', filter.principal)
    .equals('w', 'workflow_name', filter.workflow_name)
    .equals('c', 'parent_id', filter.parent_id);
  const states = [...new Set(filter.states ?? [])];
  if (d.mergeStates && filter.principal !== undefined && states.length > 1) {
    // Several states (the default listing: the unfinished ones): the newest of each state from the
    // (principal, state, updated_at) index, merged. Filtering one principal's index by state instead
    // would read every finished execution of the principal to find the few unfinished ones.
    const statesParam = f.param(d.list(states));
    const limit = f.param(filter.limit);
    const text = `SELECT e.* FROM unnest(${statesParam}::text[]) AS wanted(state)
      CROSS JOIN LATERAL (SELECT * FROM workflow_executions
        ${f.where} AND state = wanted.state
        ORDER BY updated_at DESC, execution_id DESC LIMIT ${limit}) AS e
      ORDER BY e.updated_at DESC, e.execution_id DESC LIMIT ${limit}`;
    return { text, values: f.values };
  }
  f.oneOf('s', 'state', states);
  const text = `SELECT * FROM workflow_executions ${f.where}
    ORDER BY updated_at DESC, execution_id DESC LIMIT ${f.param(filter.limit)}`;
  return { text, values: f.values };
}

/** WHERE clauses shared by pages and counts. */
function executionFilter(
  d: SqlDialect,
  filter: ExecutionCountFilter & { states?: readonly ExecutionState[] | undefined },
): SqlFilter {
  const f = new SqlFilter(d.placeholders)
    .equals('p', 'principal', filter.principal)
    .equals('w', 'workflow_name', filter.workflow_name)
    .oneOf('s', 'state', filter.states);
  if (filter.updated_since !== undefined)
    f.add('a', `updated_at >= ${f.param(filter.updated_since)}${d.timestamp}`);
  if (filter.updated_before !== undefined)
    f.add('b', `updated_at < ${f.param(filter.updated_before)}${d.timestamp}`);
  return f;
}

/**
 * A keyset page of execution heads on (updated_at, execution_id): every page costs the same, however
 * deep. Rows come newest first, except for `newer_than`, where they come oldest first (reverse them).
 */
export function headsQuery(d: SqlDialect, filter: ExecutionPageFilter): Statement {
  const f = executionFilter(d, filter);
  const { older_than: older, newer_than: newer } = filter;
  if (older !== undefined) {
    const at = f.param(older.updated_at);
    f.add('o', `(updated_at, execution_id) < (${at}${d.timestamp}, ${f.param(older.execution_id)})`);
  }
  if (newer !== undefined) {
    const at = f.param(newer.updated_at);
    f.add('n', `(updated_at, execution_id) > (${at}${d.timestamp}, ${f.param(newer.execution_id)})`);
  }
  const order = newer !== undefined ? 'ASC' : 'DESC';
  const text = `SELECT ${HEAD_COLUMNS} FROM workflow_executions ${f.where}
    ORDER BY updated_at ${order}, execution_id ${order} LIMIT ${f.param(filter.limit)}`;
  return { text, values: f.values };
}

const DAY_MS = 86_400_000;
/** The UTC day of an instant, as the counters' triggers write it ('YYYY-MM-DD'). */
const dayOf = (at: string) => new Date(at).toISOString().slice(0, 10);
const startOf = (day: string) => `${day}T00:00:00.000Z`;
const dayAfter = (day: string) => new Date(Date.parse(startOf(day)) + DAY_MS).toISOString();

/**
 * Executions per state for the same filters as a page, from the counters (migration 6) rather than
 * the executions themselves, so the cost does not grow with the history: the all-time rows, or the
 * day rows wholly inside the time window, plus the executions of the window's partial first and last
 * days counted exactly (one day's changes at most). Rows come as state and n (a state at zero left out).
 */
export function countsQuery(d: SqlDialect, filter: ExecutionCountFilter): Statement {
  const f = new SqlFilter(d.placeholders);
  const scope = () => {
    const clauses: string[] = [];
    if (filter.principal !== undefined) clauses.push(`principal = ${f.param(filter.principal)}`);
    if (filter.workflow_name !== undefined) clauses.push(`workflow_name = ${f.param(filter.workflow_name)}`);
    return clauses;
  };
  const parts: string[] = [];
  /** Counter rows for the days `day` matches ('*': all time), added or (sign '-') taken away. */
  const rows = (sign: '' | '-', day: (p: (v: unknown) => string) => string) => {
    const where = [...scope(), day((v) => f.param(v))];
    parts.push(`SELECT state, ${sign}n AS n FROM execution_counts WHERE ${where.join(' AND ')}`);
  };
  /** Executions last changed in [from, to), counted one by one. */
  const exact = (sign: '' | '-', from: string, to: string) => {
    const where = [
      ...scope(),
      `updated_at >= ${f.param(from)}${d.timestamp}`,
      `updated_at < ${f.param(to)}${d.timestamp}`,
    ];
    parts.push(
      `SELECT state, ${sign}COUNT(*) AS n FROM workflow_executions WHERE ${where.join(' AND ')} GROUP BY state`,
    );
  };
  const iso = (at: string | undefined) => (at === undefined ? undefined : new Date(at).toISOString());
  const since = iso(filter.updated_since);
  const before = iso(filter.updated_before);
  // '*' sorts before every day, so `day > x` never takes the all-time rows.
  if (since === undefined && before === undefined) rows('', (p) => `day = ${p('*')}`);
  else if (before === undefined && since !== undefined) {
    exact('', since, dayAfter(dayOf(since)));
    rows('', (p) => `day > ${p(dayOf(since))}`);
  } else if (since === undefined && before !== undefined) {
    // All time, less what changed at or after `before`.
    rows('', (p) => `day = ${p('*')}`);
    rows('-', (p) => `day > ${p(dayOf(before))}`);
    exact('-', before, dayAfter(dayOf(before)));
  } else if (since !== undefined && before !== undefined && since < before) {
    if (dayOf(since) === dayOf(before)) exact('', since, before);
    else {
      exact('', since, dayAfter(dayOf(since)));
      rows('', (p) => `day > ${p(dayOf(since))} AND day < ${p(dayOf(before))}`);
      exact('', startOf(dayOf(before)), before);
    }
  }
  if (parts.length === 0) return { text: 'SELECT state, n FROM execution_counts WHERE 1 = 0', values: [] };
  return {
    text: `SELECT state, SUM(n) AS n FROM (${parts.join('\n  UNION ALL ')}) AS parts GROUP BY state HAVING SUM(n) <> 0`,
    values: f.values,
  };
}

export function telemetryQuery(d: SqlDialect, filter: TelemetryFilter): Statement {
  const f = new SqlFilter(d.placeholders);
  if (filter.principal !== undefined) {
    // A lookup by primary key per event: an IN (...) list would read every execution of the principal.
    f.add(
      'p',
      `EXISTS (SELECT 1 FROM workflow_executions e WHERE e.execution_id = telemetry_events.execution_id AND e.principal = ${f.param(filter.principal)})`,
    );
  }
  f.equals('e', 'execution_id', filter.execution_id).equals('t', 'event_type', filter.event_type);
  const text = `SELECT * FROM (SELECT * FROM telemetry_events ${f.where}
    ORDER BY id DESC LIMIT ${f.param(filter.limit)}) AS recent ORDER BY id`;
  return { text, values: f.values };
}

/** Approvals, oldest request first, for one combination of filters. */
export function approvalQuery(d: SqlDialect, filter: ApprovalFilter): Statement {
  const f = new SqlFilter(d.placeholders)
    .equals('s', 'status', filter.status)
    .equals('e', 'execution_id', filter.execution_id);
  if (filter.principal !== undefined)
    f.add('p', `(principal = ${f.param(filter.principal)} OR approvers IS NOT NULL)`);
  const text = `SELECT * FROM approvals ${f.where}
    ORDER BY requested_at, approval_id LIMIT ${f.param(filter.limit)}`;
  return { text, values: f.values };
}

/** Tasks newest first (created_at, then task_id, descending) for one combination of filters. */
export function taskQuery(d: SqlDialect, filter: TaskFilter): Statement {
  const f = new SqlFilter(d.placeholders)
    .equals('p', 'principal', filter.principal)
    .equals('r', 'run_id', filter.run_id)
    .oneOf('s', 'status', filter.statuses);
  if (filter.before !== undefined) {
    const at = f.param(filter.before.created_at);
    f.add('b', `(created_at, task_id) < (${at}${d.timestamp}, ${f.param(filter.before.task_id)})`);
  }
  const text = `SELECT * FROM tasks ${f.where}
    ORDER BY created_at DESC, task_id DESC LIMIT ${f.param(filter.limit)}`;
  return { text, values: f.values };
}

/**
 * The tasks that go with a purge: finished ones whose run is purged, and finished ones without a run
 * (or whose run is gone) that match the filter on their own. An execution's terminal state maps to
 * the task status of the same outcome (abandoned: cancelled; diverged has none).
 */
const TASK_STATUS_OF: Partial<Record<ExecutionState, TaskStatus>> = {
  completed: 'completed',
  failed: 'failed',
  abandoned: 'cancelled',
};

/**
 * The statements of a purge (see `purgeHistory` in operations.ts): the selection of the doomed
 * executions (locked where the dialect can), then, once their ids are known, the counts and deletes.
 */
export function purgePlan(d: SqlDialect, filter: PurgeFilter) {
  const states = filter.states.filter((s) => TERMINAL_STATES.includes(s));
  let selection: Statement | undefined;
  if (states.length > 0) {
    const f = new SqlFilter(d.placeholders).equals('p', 'principal', filter.principal);
    f.add('s', d.among('state', f.param(d.list(states)))).equals('w', 'workflow_name', filter.workflow_name);
    if (filter.finished_before !== undefined)
      f.add('f', `COALESCE(completed_at, updated_at) < ${f.param(filter.finished_before)}${d.timestamp}`);
    selection = {
      text: `SELECT execution_id FROM workflow_executions ${f.where}${d.lockDelete}`,
      values: f.values,
    };
  }
  const taskStatuses = states.flatMap((s) => TASK_STATUS_OF[s] ?? []);
  const rest = (ids: readonly string[]) => {
    const byId = new SqlFilter(d.placeholders);
    const inPurge = d.among('execution_id', byId.param(d.list(ids)));
    const t = new SqlFilter(d.placeholders);
    const withRun = `principal = ${t.param(filter.principal)} AND ${d.among('status', t.param(d.list(TERMINAL_TASK_STATUSES)))} AND ${d.among('run_id', t.param(d.list(ids)))}`;
    const runless = [
      `principal = ${t.param(filter.principal)}`,
      d.among('status', t.param(d.list(taskStatuses))),
      `(run_id IS NULL OR run_id NOT IN (SELECT execution_id FROM workflow_executions WHERE principal = ${t.param(filter.principal)}))`,
    ];
    if (filter.workflow_name !== undefined) runless.push(`workflow_id = ${t.param(filter.workflow_name)}`);
    if (filter.finished_before !== undefined)
      runless.push(`last_updated_at < ${t.param(filter.finished_before)}${d.timestamp}`);
    const tasks = `(${withRun}) OR (${runless.join(' AND ')})`;
    const count = (table: string): Statement => ({
      text: `SELECT COUNT(*) AS n FROM ${table} WHERE ${inPurge}`,
      values: byId.values,
    });
    return {
      counts: {
        steps: count('workflow_steps'),
        artifacts: count('workflow_artifacts'),
        telemetry: count('telemetry_events'),
        submissions: count('token_submissions'),
        tasks: { text: `SELECT COUNT(*) AS n FROM tasks WHERE ${tasks}`, values: t.values },
      },
      deletes: [
        { text: `DELETE FROM tasks WHERE ${tasks}`, values: t.values },
        { text: `DELETE FROM telemetry_events WHERE ${inPurge}`, values: byId.values },
        // Steps, artifacts and submissions go with their execution (ON DELETE CASCADE).
        { text: `DELETE FROM workflow_executions WHERE ${inPurge}`, values: byId.values },
      ] satisfies Statement[],
    };
  };
  return { selection, rest };
}
