/**
 * The migrations a store has applied (its `schema_migrations` rows), checked against the ones this
 * version knows: a store written by a newer workflowlookup is refused, in the same words by both
 * adapters. Returns the applied versions and the newest of them.
 */
export function appliedMigrations(rows: readonly { version: number }[], known: number) {
  const applied = new Set(rows.map((r) => r.version));
  const newest = Math.max(0, ...applied);
  if (newest > known) {
    throw new Error(
      `the database was written by a newer workflowlookup (schema version ${newest}, this one knows ${known}); upgrade workflowlookup`,
    );
  }
  return { applied, newest };
}
