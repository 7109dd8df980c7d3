import type Database from 'better-sqlite3';

/**
 * Statements kept for their connection's life instead of left to the garbage collector. With
 * better-sqlite3 12 on Node 24, a Statement collected while no Node context is current aborts the
 * process (`Assertion failed: (env) != nullptr` in node::RemoveEnvironmentCleanupHook; better-sqlite3
 * 13 fixes it but needs Node 22, and Node 20 is still served). `db.pragma()` and a bare `db.prepare()`
 * each leave one such statement behind per call, so every statement of these connections goes through
 * here: one per SQL text, which are few (fixed texts, and one per combination of filters).
 */
const kept = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** Past this many texts on one connection, statements are prepared afresh (and collected) again. */
const MAX_KEPT = 256;

export function statement(db: Database.Database, sql: string): Database.Statement {
  let byText = kept.get(db);
  if (byText === undefined) {
    byText = new Map();
    kept.set(db, byText);
  }
  let found = byText.get(sql);
  if (found === undefined) {
    found = db.prepare(sql);
    if (byText.size < MAX_KEPT) byText.set(sql, found);
  }
  return found;
}

/** `PRAGMA <text>` through a kept statement: its first row when it answers one. */
export function pragma(db: Database.Database, text: string): unknown {
  const s = statement(db, `PRAGMA ${text}`);
  return s.reader ? s.get() : s.run();
}
