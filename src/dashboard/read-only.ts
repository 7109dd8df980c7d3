import type { ExecutionQueries } from '../executions/execution-queries.js';

/**
 * The dashboard's read side on its own read-only SQLite connection: it never takes a write lock, so
 * it cannot slow down or block the servers agents use on the same data dir (WAL readers run beside
 * writers). The file must exist and be migrated (open the app's store once first). The modules load
 * here, on use, from the same chunks the app loads them from.
 */
export async function openReadOnlyQueries(
  dataDir: string,
): Promise<{ queries: ExecutionQueries; close: () => Promise<void> }> {
  const [{ ExecutionQueries }, { SqliteExecutionStore }] = await Promise.all([
    import('../executions/execution-service.js'),
    import('../store/sqlite/sqlite-store.js'),
  ]);
  const store = new SqliteExecutionStore(dataDir, { readOnly: true });
  return { queries: new ExecutionQueries(store), close: () => store.close() };
}
