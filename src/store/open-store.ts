import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { ExecutionStore } from './execution-store.js';

/** `postgres://…` or `postgresql://…`: a PostgreSQL connection string rather than a SQLite data dir. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

export interface OpenOptions {
  /** Where pool problems between calls are reported (PostgreSQL). */
  log?: Logger;
  /**
   * SQLite only: a read-only connection to a store that already exists and is migrated (the standalone
   * dashboard's pages read through one, so they never take the write lock the servers need).
   */
  readOnly?: boolean;
  /** The app's instruments (transactions run again). */
  metrics?: Metrics;
}

/**
 * Opens a store and brings its schema up to date: PostgreSQL for a `postgres://` URL, otherwise SQLite
 * in the data directory `target`. Adapters are loaded on demand, so a server on one never loads the
 * other's driver. Fails with a message that names the problem and never the password.
 */
export async function openExecutionStore(target: string, options: OpenOptions = {}): Promise<ExecutionStore> {
  if (isPostgresUrl(target)) {
    const { openPostgresStore } = await import('./postgres/postgres-store.js');
    return openPostgresStore(target, {
      ...(options.log ? { log: options.log } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
    });
  }
  const { SqliteExecutionStore } = await import('./sqlite/sqlite-store.js');
  return new SqliteExecutionStore(target, {
    ...(options.readOnly ? { readOnly: true } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
}

/**
 * Applies the migrations `target` lacks (see `openExecutionStore`) and returns its schema version;
 * refuses a store written by a newer version. What a `migrate` command runs.
 */
export async function migrate(target: string): Promise<number> {
  const store = await openExecutionStore(target);
  try {
    return await store.schemaVersion();
  } finally {
    await store.close();
  }
}
