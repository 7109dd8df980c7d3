/**
 * A WHERE clause assembled from optional filters, for both adapters: SQLite binds `?` placeholders in
 * order, PostgreSQL numbered `$n` ones. `key` names the combination of clauses used (the text is fully
 * determined by it; the PostgreSQL adapter prepares each distinct text once per connection).
 */
export class SqlFilter {
  private readonly clauses: string[] = [];
  private readonly keys: string[] = [];
  /** The values bound so far, in placeholder order. */
  readonly values: unknown[] = [];

  constructor(private readonly placeholders: 'positional' | 'numbered') {}

  /** A placeholder bound to `value`. */
  param(value: unknown): string {
    this.values.push(value);
    return this.placeholders === 'positional' ? '?' : `$${this.values.length}`;
  }

  /** Adds a clause, named `key` in the combination. */
  add(key: string, clause: string): this {
    this.clauses.push(clause);
    this.keys.push(key);
    return this;
  }

  /** Adds `column = value` when the value is given. */
  equals(key: string, column: string, value: unknown): this {
    return value === undefined ? this : this.add(key, `${column} = ${this.param(value)}`);
  }

  /** Adds `column` equal to one of `values` (nothing when there are none). */
  oneOf(key: string, column: string, values: readonly string[] | undefined): this {
    const distinct = [...new Set(values ?? [])];
    if (distinct.length === 1) return this.add(key, `${column} = ${this.param(distinct[0])}`);
    if (distinct.length === 0) return this;
    const many =
      this.placeholders === 'positional'
        ? `IN (${distinct.map((v) => this.param(v)).join(',')})`
        : `= ANY(${this.param(distinct)}::text[])`;
    return this.add(key.toUpperCase(), `${column} ${many}`);
  }

  /** The clauses joined, with the WHERE keyword, or nothing. */
  get where(): string {
    return this.clauses.length > 0 ? `WHERE ${this.clauses.join(' AND ')}` : '';
  }

  /** Names the combination of clauses used. */
  get key(): string {
    return this.keys.join('');
  }
}
