import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionStore } from './execution-store.js';

/** A store that lives for one piece of work and is thrown away after it. */
export interface ScratchStore {
  store: ExecutionStore;
  /** Closes the store and removes its files. */
  dispose(): Promise<void>;
}

/**
 * A SQLite store in a new temporary directory (the workflow tests run their executions there, never in
 * the server's store): the same adapter, schema and transactions as the server's own, checkpointed on
 * the event loop (no thread for a store this short-lived).
 */
export async function openScratchStore(): Promise<ScratchStore> {
  const dir = await mkdtemp(join(tmpdir(), 'workflowlookup-test-'));
  try {
    const { SqliteExecutionStore } = await import('./sqlite/sqlite-store.js');
    const store = new SqliteExecutionStore(dir, { checkpointWorker: false });
    return {
      store,
      dispose: async () => {
        try {
          await store.close();
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
