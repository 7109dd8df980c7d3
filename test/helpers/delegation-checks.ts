import Database from 'better-sqlite3';
import type pg from 'pg';

/**
 * What the store holds of one delegating parent and its children, read straight from its tables (SQLite
 * or PostgreSQL, the same SQL), and the invariants a delegation keeps whatever was killed or raced: the
 * kill soak and the replica races check every parent with `delegationProblems`.
 */

type Row = Record<string, unknown>;
/** Runs one statement with `?` placeholders and answers its rows. */
export type Query = (sql: string, params: unknown[]) => Promise<Row[]>;

/** A read-only connection to a data dir's SQLite file (beside a server that writes it: WAL). */
export function sqliteQuery(file: string): { query: Query; close(): void } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  return {
    query: async (sql, params) => db.prepare(sql).all(...params) as Row[],
    close: () => db.close(),
  };
}

/** A query over a PostgreSQL client whose search_path is the store's schema. */
export function pgQuery(client: pg.Client | pg.Pool): Query {
  return async (sql, params) => {
    let n = 0;
    const res = await client.query(
      sql.replace(/\?/g, () => `$${++n}`),
      params,
    );
    return res.rows as Row[];
  };
}

const json = (v: unknown): Record<string, any> =>
  typeof v === 'string' ? JSON.parse(v) : ((v ?? {}) as Record<string, any>);

export interface StepRow {
  seq: number;
  step_name: string;
  status: string;
}

export interface ExecutionFacts {
  id: string;
  state: string;
  current_step: string | null;
  context: Record<string, any>;
  metadata: Record<string, any>;
  steps: StepRow[];
  /** The states its `workflow_state_transition` events moved it to, in order. */
  moves: string[];
}

export interface DelegationFacts {
  parent: ExecutionFacts | undefined;
  /** The parent's children, by the name their parent gave them. */
  children: (ExecutionFacts & { name: string })[];
  /** The parent's `delegation_joined` events. */
  joined: number;
  /** The parent's `child_ended` events, per child execution id. */
  ended: Map<string, number>;
}

async function execution(query: Query, id: string): Promise<ExecutionFacts | undefined> {
  const [row] = await query(
    'SELECT execution_id, state, current_step, context, metadata FROM workflow_executions WHERE execution_id = ?',
    [id],
  );
  if (row === undefined) return undefined;
  const steps = (
    await query('SELECT seq, step_name, status FROM workflow_steps WHERE execution_id = ? ORDER BY seq', [id])
  ).map((s) => ({ seq: Number(s.seq), step_name: String(s.step_name), status: String(s.status) }));
  const moves = (
    await query(
      `SELECT metadata FROM telemetry_events WHERE execution_id = ? AND event_type = 'workflow_state_transition' ORDER BY id`,
      [id],
    )
  ).map((e) => String(json(e.metadata).to));
  return {
    id,
    moves,
    state: String(row.state),
    current_step: (row.current_step as string | null) ?? null,
    context: json(row.context),
    metadata: json(row.metadata),
    steps,
  };
}

export async function delegationFacts(query: Query, parentId: string): Promise<DelegationFacts> {
  const parent = await execution(query, parentId);
  const ids = (
    await query('SELECT execution_id FROM workflow_executions WHERE parent_id = ? ORDER BY execution_id', [
      parentId,
    ])
  ).map((r) => String(r.execution_id));
  const children: DelegationFacts['children'] = [];
  for (const id of ids) {
    const child = (await execution(query, id)) as ExecutionFacts;
    children.push({ ...child, name: String(child.metadata.parent?.name) });
  }
  const events = await query(
    `SELECT event_type, metadata FROM telemetry_events WHERE execution_id = ? AND event_type IN ('delegation_joined', 'child_ended')`,
    [parentId],
  );
  const ended = new Map<string, number>();
  for (const e of events.filter((x) => x.event_type === 'child_ended')) {
    const id = String(json(e.metadata).execution_id);
    ended.set(id, (ended.get(id) ?? 0) + 1);
  }
  return {
    parent,
    children,
    joined: events.filter((e) => e.event_type === 'delegation_joined').length,
    ended,
  };
}

/** What must hold of any execution's step rows: seq 1..n, no step entered twice, one running step while it runs. */
function stepProblems(e: ExecutionFacts, label: string): string[] {
  const problems: string[] = [];
  const seqs = e.steps.map((s) => s.seq);
  if (seqs.some((s, i) => s !== i + 1)) problems.push(`${label}: step seqs ${seqs.join(',')}`);
  const names = e.steps.map((s) => s.step_name);
  if (new Set(names).size !== names.length)
    problems.push(`${label}: a step entered twice (${names.join(',')})`);
  const running = e.steps.filter((s) => s.status === 'running').length;
  const ends = e.moves.filter((m) => ['completed', 'failed', 'abandoned'].includes(m));
  if (ends.length > 1 || (ends.length === 1) !== ['completed', 'failed', 'abandoned'].includes(e.state))
    problems.push(`${label}: ${e.state}, ended by ${ends.join(', ') || 'nothing'}`);
  if (e.state === 'running' && running !== 1)
    problems.push(`${label}: running with ${running} running steps`);
  if (e.state === 'completed' && running !== 0)
    problems.push(`${label}: completed with ${running} running steps`);
  return problems;
}

export interface DelegationShape {
  /** The delegating step's id (and where its results go). */
  step: string;
  /** The step after it. */
  after: string;
  join: 'all' | 'any';
  /** How many children the step creates. */
  count: number;
}

/**
 * Every way a parent and its children can disagree, as sentences (none: consistent): children created
 * exactly once and only when the step was entered, each child's end told to its parent at most once, the
 * join recorded once and exactly when the step completed, the join's rule kept (all: every child
 * completed; any: one completed and the others abandoned), the parent's record of its children matching
 * the children, and the step after the join entered once.
 */
export function delegationProblems(f: DelegationFacts, shape: DelegationShape): string[] {
  const p = f.parent;
  if (p === undefined) return f.children.length > 0 ? ['children without their parent'] : [];
  const problems = stepProblems(p, `parent ${p.id}`);
  const fan = p.steps.filter((s) => s.step_name === shape.step);
  const entered = fan.length === 1;
  const joined = fan[0]?.status === 'completed';
  if (!entered && f.children.length > 0) problems.push(`${f.children.length} children before the step`);
  if (entered && f.children.length !== shape.count)
    problems.push(`${f.children.length} children, not ${shape.count}`);
  const names = f.children.map((c) => c.name).sort();
  if (entered && names.join(',') !== Array.from({ length: shape.count }, (_, i) => String(i + 1)).join(','))
    problems.push(`children named ${names.join(',')}`);
  for (const c of f.children) problems.push(...stepProblems(c, `child ${c.name}`));
  if (f.joined !== (joined ? 1 : 0))
    problems.push(`${f.joined} delegation_joined events, step ${fan[0]?.status ?? 'not entered'}`);
  for (const c of f.children) {
    const told = f.ended.get(c.id) ?? 0;
    if (told > 1) problems.push(`child ${c.name} told its parent ${told} times`);
    // Abandoned by the join (any) in the parent's own transaction: nothing to tell.
    if (c.state === 'completed' && told !== 1)
      problems.push(`child ${c.name} completed, told its parent ${told} times`);
  }
  const completed = f.children.filter((c) => c.state === 'completed').length;
  const abandoned = f.children.filter((c) => c.state === 'abandoned').length;
  const running = f.children.filter((c) => c.state === 'running').length;
  if (shape.join === 'all') {
    if (joined !== (entered && completed === shape.count))
      problems.push(`join all: step ${fan[0]?.status}, ${completed} of ${shape.count} children completed`);
    if (abandoned > 0) problems.push(`join all: ${abandoned} children abandoned`);
  } else {
    if (joined !== completed > 0)
      problems.push(`join any: step ${fan[0]?.status}, ${completed} children completed`);
    if (joined && (completed !== 1 || abandoned !== shape.count - 1))
      problems.push(`join any, joined: ${completed} completed, ${abandoned} abandoned, ${running} running`);
    if (!joined && abandoned > 0) problems.push(`join any, not joined: ${abandoned} children abandoned`);
  }
  // The parent's record of its children: while it waits, each entry's state is its child's; once joined,
  // the results in its context say how each child ended.
  if (entered && !joined && p.state === 'running') {
    const entries = (p.metadata.delegation?.children ?? []) as { execution_id: string; state: string }[];
    for (const c of f.children) {
      const entry = entries.find((e) => e.execution_id === c.id);
      if (entry?.state !== c.state)
        problems.push(`waiting: the parent records child ${c.name} ${entry?.state}, it is ${c.state}`);
    }
  }
  if (joined) {
    if (p.metadata.delegation !== undefined) problems.push('joined, the delegation still open');
    const results = (p.context[shape.step] ?? {}) as Record<string, { state?: string }>;
    for (const c of f.children) {
      if (results[c.name]?.state !== c.state)
        problems.push(
          `joined: the parent's result for child ${c.name} says ${results[c.name]?.state}, it is ${c.state}`,
        );
    }
    if (p.steps.filter((s) => s.step_name === shape.after).length !== 1)
      problems.push(`joined, step ${shape.after} not entered once`);
  }
  return problems;
}
