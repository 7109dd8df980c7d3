// The composition root's store builders: the app's one store, the database's shared documents (with
// PostgreSQL), and openStoreAt, the one way a store is opened (the app's, and the CLI's store commands').
import type { Config } from '../config.js';
import type { ExecutionStore } from '../store/execution-store.js';
import {
  describeDatabaseUrl,
  lazyDocumentStore,
  type RuntimeDocumentStore,
} from '../store/runtime-documents.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { WorkflowSource } from '../workflows/sources.js';
import { onFirstUse } from './first-use.js';

/**
 * Opens the store a target names (a SQLite data dir or a postgres:// URL) and brings its schema up to
 * date; `readOnly` opens an existing SQLite store for reading only. For the CLI's store commands
 * (migrate, export, import: `--store` may name another store than the configured one) and the app's
 * own store.
 */
export async function openStoreAt(
  target: string,
  options: { log?: Logger; readOnly?: boolean; metrics?: Metrics } = {},
): Promise<ExecutionStore> {
  const { openExecutionStore } = await import('../store/open-store.js');
  return openExecutionStore(target, options);
}

/** The app's one store (executions and, with PostgreSQL, what agents save), opened on first use. */
export interface SharedStore {
  /** Opens the store once; a failed open is tried again on the next call. */
  open(): Promise<ExecutionStore>;
  /** The store, once opened. */
  opened(): ExecutionStore | undefined;
}

export function buildStore(
  config: Config,
  options: {
    /** Opens the store (AppOptions.openStore; default: the configured one). */
    openStore?: ((config: Config) => Promise<ExecutionStore>) | undefined;
    log: Logger;
    metrics?: Metrics;
  },
): SharedStore {
  const openStore =
    options.openStore ??
    ((c: Config) =>
      openStoreAt(c.databaseUrl ?? c.dataDir, {
        log: options.log,
        ...(options.metrics ? { metrics: options.metrics } : {}),
      }));
  let store: ExecutionStore | undefined;
  const opening = onFirstUse(() => openStore(config).then((opened) => (store = opened)));
  return { open: opening.get, opened: () => store };
}

/**
 * With PostgreSQL, saved workflows and imported catalogs live in the database replicas share: its
 * document store (opened with the shared store, on first use) and the workflow source that reads it.
 * Undefined with SQLite (they are files in the runtime and catalogs dirs).
 */
export function buildDocuments(
  config: Config,
  store: SharedStore,
  log: Logger,
): { documents: RuntimeDocumentStore; source: WorkflowSource } | undefined {
  if (config.databaseUrl === undefined) return undefined;
  const documents = lazyDocumentStore(
    async () => {
      const opened = await store.open();
      if (opened.documents === undefined) throw new Error(`${opened.location} keeps no shared workflows`);
      return opened.documents;
    },
    describeDatabaseUrl(config.databaseUrl),
    log,
  );
  return { documents, source: { kind: 'database', dir: `${documents.location}#workflows`, documents } };
}
