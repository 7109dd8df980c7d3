import type { Statement } from '../sql/queries.js';
import {
  APPROVALS,
  type ColumnKind,
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
} from '../sql/tables.js';

type Op = 'insert' | 'update';

/**
 * The order of a batch's parts. Within one statement the parts run on one snapshot and foreign keys
 * are checked at its end, so the order does not change the outcome; a fixed one keeps the number of
 * distinct statements (prepared once per connection) small.
 */
const PARTS: readonly (readonly [TableSpec<never>, Op])[] = [
  [DEFINITIONS as TableSpec<never>, 'insert'],
  [EXECUTIONS as TableSpec<never>, 'insert'],
  [EXECUTIONS as TableSpec<never>, 'update'],
  [STEPS as TableSpec<never>, 'insert'],
  [STEPS as TableSpec<never>, 'update'],
  [SUBMISSIONS as TableSpec<never>, 'insert'],
  [SUBMISSIONS as TableSpec<never>, 'update'],
  [TASKS as TableSpec<never>, 'insert'],
  [TASKS as TableSpec<never>, 'update'],
  [APPROVALS as TableSpec<never>, 'insert'],
  [APPROVALS as TableSpec<never>, 'update'],
  [TELEMETRY as TableSpec<never>, 'insert'],
  [RECORD_EVENTS as TableSpec<never>, 'insert'],
];

const RECORD_TYPE: Record<ColumnKind, string> = {
  text: 'text',
  integer: 'integer',
  bigint: 'bigint',
  timestamp: 'timestamptz',
  json: 'text',
  'json?': 'text',
  bytes: 'bytea',
};

/** `x.column` as the table wants it: JSON travels as text inside the batch's JSON, and is cast back. */
const read = (name: string, kind: ColumnKind) =>
  kind === 'json' || kind === 'json?' ? `x.${name}::json` : `x.${name}`;

/** One part of the batch statement: the rows of one table and operation, from one JSON parameter. */
function part(spec: TableSpec<never>, op: Op, param: string): string {
  const recordset = `json_to_recordset(${param}::json) AS x(${spec.columns
    .map(([name, kind]) => `${name} ${RECORD_TYPE[kind]}`)
    .join(', ')})`;
  const kinds = new Map(spec.columns);
  if (op === 'insert') {
    const names = spec.columns.map(([name]) => name);
    const conflict = spec === (DEFINITIONS as TableSpec<never>) ? ' ON CONFLICT (hash) DO NOTHING' : '';
    return `INSERT INTO ${spec.table} (${names.join(', ')})
      SELECT ${spec.columns.map(([name, kind]) => read(name, kind)).join(', ')} FROM ${recordset}${conflict}`;
  }
  const set = spec.updates.map((name) => `${name} = ${read(name, kinds.get(name) as ColumnKind)}`);
  const where = spec.key.map((name) => `t.${name} = x.${name}`);
  return `UPDATE ${spec.table} AS t SET ${set.join(', ')} FROM ${recordset} WHERE ${where.join(' AND ')}`;
}

/**
 * Text as PostgreSQL receives a bound parameter: a lone surrogate (which UTF-8 cannot encode) becomes
 * U+FFFD, where JSON would carry it as an escape PostgreSQL refuses.
 */
const wellFormed = (_key: string, value: unknown) =>
  typeof value === 'string' ? (value as unknown as { toWellFormed(): string }).toWellFormed() : value;

/**
 * The row writes of one PostgreSQL transaction, held back and sent as one statement (a data-modifying
 * CTE per table and operation, each reading its rows from one JSON parameter) when the transaction
 * reads a table they touch, writes a row already pending, or commits: a step's nine writes cost one
 * round trip instead of nine. Nothing is lost by waiting: the writes return nothing, a failure still
 * fails the transaction (at the read or the commit that sends it), and reads see every earlier write.
 */
export class WriteBatch {
  private readonly parts = new Map<string, { spec: TableSpec<never>; op: Op; rows: Row[] }>();
  private readonly keys = new Set<string>();
  private readonly tables = new Set<TableName>();

  constructor(private readonly send: (statement: Statement) => Promise<unknown>) {}

  get empty(): boolean {
    return this.parts.size === 0;
  }

  async add(spec: TableSpec<never>, op: Op, values: Row): Promise<void> {
    if (spec.key.length > 0) {
      // Two writes of one row in one statement would not see each other: the first goes ahead.
      const key = JSON.stringify([spec.table, ...spec.key.map((k) => values[k])]);
      if (this.keys.has(key)) await this.flush();
      this.keys.add(key);
    }
    const id = `${spec.table} ${op}`;
    const entry = this.parts.get(id) ?? { spec, op, rows: [] };
    entry.rows.push(values);
    this.parts.set(id, entry);
    this.tables.add(spec.table);
  }

  /** Sends what is pending if a statement reading `reads` ('*': anything) could see it. */
  async before(reads: readonly TableName[] | '*'): Promise<void> {
    if (this.empty) return;
    if (reads === '*' || reads.some((t) => this.tables.has(t))) await this.flush();
  }

  /** The pending writes as one statement (nothing when none), and the batch empty again. */
  take(): Statement | undefined {
    if (this.empty) return undefined;
    const present = PARTS.filter(([spec, op]) => this.parts.has(`${spec.table} ${op}`));
    // A write of a table this batch does not know would be dropped without a word: never.
    if (present.length < this.parts.size)
      throw new Error(
        `the write batch has no statement for ${[...this.parts.keys()].filter((k) => !present.some(([spec, op]) => `${spec.table} ${op}` === k)).join(', ')}; add it to PARTS`,
      );
    const values: unknown[] = [];
    const ctes = present.map(([spec, op], i) => {
      const rows = this.parts.get(`${spec.table} ${op}`)?.rows ?? [];
      values.push(JSON.stringify(rows, wellFormed));
      return `w${i} AS (${part(spec, op, `$${i + 1}`)})`;
    });
    this.parts.clear();
    this.keys.clear();
    this.tables.clear();
    return { text: `WITH ${ctes.join(',\n')}\nSELECT 1`, values };
  }

  async flush(): Promise<void> {
    const statement = this.take();
    if (statement) await this.send(statement);
  }
}
