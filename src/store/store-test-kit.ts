import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { ExecutionRecord, ExecutionStore, StepRecord } from './execution-store.js';
import { openPostgresStore } from './postgres/postgres-store.js';
import {
  createTestDatabase,
  findTestServer,
  skipNotice,
  type TestDatabase,
} from './postgres/test-database.js';
import { DATABASE_FILE } from './sqlite/sqlite-file.js';
import { SqliteExecutionStore } from './sqlite/sqlite-store.js';

// Test support (not bundled): the adapters the store suites run against, and record builders.

/** An empty store namespace; every `open` is another instance (connection, pool) on the same data. */
export interface Namespace {
  open(): Promise<ExecutionStore>;
  /** Records a migration newer than this version knows, as a later release would. */
  addFutureMigration(): Promise<void>;
}

export interface Adapter {
  name: 'sqlite' | 'postgres';
  fresh(): Promise<Namespace>;
  /** Closes the stores opened so far (their connections), keeping the data. */
  closeStores(): Promise<void>;
  /** Closes what the adapter opened (stores, the test database). */
  cleanup(): Promise<void>;
}

export function sqliteAdapter(): Adapter {
  const dirs: string[] = [];
  const stores: ExecutionStore[] = [];
  return {
    name: 'sqlite',
    async fresh() {
      const dir = mkdtempSync(join(tmpdir(), 'wl-store-'));
      dirs.push(dir);
      return {
        async open() {
          const store = new SqliteExecutionStore(dir);
          stores.push(store);
          return store;
        },
        async addFutureMigration() {
          const db = new Database(join(dir, DATABASE_FILE));
          db.prepare("INSERT INTO schema_migrations VALUES (99, 'future', '2030-01-01T00:00:00.000Z')").run();
          db.close();
        },
      };
    },
    async closeStores() {
      await Promise.allSettled(stores.splice(0).map((s) => s.close()));
    },
    async cleanup() {
      await Promise.allSettled(stores.splice(0).map((s) => s.close()));
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The PostgreSQL adapter on a database of this run's own, or why it cannot run here. */
export async function postgresAdapter(): Promise<Adapter | { skipped: string }> {
  const server = await findTestServer();
  if (server.url === undefined) return { skipped: server.why };
  let database: TestDatabase | undefined;
  const stores: ExecutionStore[] = [];
  return {
    name: 'postgres',
    async fresh() {
      database ??= await createTestDatabase(server.url);
      const db = database;
      const schema = await db.schema();
      return {
        async open() {
          const store = await openPostgresStore(schema.url, { poolSize: 4 });
          stores.push(store);
          return store;
        },
        async addFutureMigration() {
          await db.admin(
            `INSERT INTO ${schema.name}.schema_migrations VALUES (99, 'future', '2030-01-01T00:00:00.000Z')`,
          );
        },
      };
    },
    async closeStores() {
      await Promise.allSettled(stores.splice(0).map((s) => s.close()));
    },
    async cleanup() {
      await Promise.allSettled(stores.splice(0).map((s) => s.close()));
      await database?.drop();
      database = undefined;
    },
  };
}

/**
 * Both adapters. Without a PostgreSQL server its cases are registered as skipped (so the test summary
 * counts them) and a notice says why and how to run them.
 */
export async function adapters(suite: string): Promise<{ adapter: Adapter; skip: string | false }[]> {
  const postgres = await postgresAdapter();
  if ('skipped' in postgres) {
    process.stderr.write(skipNotice(`${suite} on PostgreSQL`, postgres.skipped));
    const missing = async () => {
      throw new Error(postgres.skipped);
    };
    return [
      { adapter: sqliteAdapter(), skip: false },
      {
        adapter: {
          name: 'postgres',
          fresh: missing,
          closeStores: async () => undefined,
          cleanup: async () => undefined,
        },
        skip: postgres.skipped,
      },
    ];
  }
  return [
    { adapter: sqliteAdapter(), skip: false },
    { adapter: postgres, skip: false },
  ];
}

export const HASH = 'a'.repeat(64);
export const T0 = '2026-01-02T03:04:05.678Z';

/** An ISO time `ms` after T0. */
export const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

export function execution(overrides: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    execution_id: 'exec-1',
    principal: 'local',
    workflow_name: 'demo',
    definition_hash: HASH,
    state: 'running',
    current_step: 'design',
    current_seq: 1,
    completed_steps: [],
    context: {},
    token_nonce: 'n-1',
    token_attempt: 0,
    token_issued_at: T0,
    token_expires_at: at(86_400_000),
    started_at: T0,
    updated_at: T0,
    completed_at: null,
    duration_ms: null,
    metadata: {},
    parent_id: null,
    ...overrides,
  };
}

export function step(overrides: Partial<StepRecord> = {}): StepRecord {
  return {
    execution_id: 'exec-1',
    seq: 1,
    step_name: 'design',
    agent_name: 'default',
    iteration: null,
    status: 'running',
    attempts: 0,
    started_at: T0,
    completed_at: null,
    duration_ms: null,
    output: null,
    lease_owner: null,
    lease_expires_at: null,
    ...overrides,
  };
}

/** Pins the test definition and inserts executions (default: one, `exec-1`). */
export async function seed(store: ExecutionStore, ...records: ExecutionRecord[]): Promise<void> {
  await store.transaction(async (tx) => {
    await tx.pinDefinition(HASH, 'demo', '{"id":"demo"}');
    for (const r of records.length > 0 ? records : [execution()]) await tx.insertExecution(r);
  });
}
