import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isPostgresUrl, migrate, openExecutionStore } from './open-store.js';
import { PostgresExecutionStore } from './postgres/postgres-store.js';
import { createTestDatabase, findTestServer, type TestDatabase } from './postgres/test-database.js';
import { MIGRATIONS } from './sqlite/migrations.js';
import { DATABASE_FILE } from './sqlite/sqlite-file.js';
import { SqliteExecutionStore } from './sqlite/sqlite-store.js';

const server = await findTestServer();
const dirs: string[] = [];
let db: TestDatabase | undefined;
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await db?.drop();
});

describe('opening a store by its location', () => {
  it('tells a PostgreSQL URL from a data directory', () => {
    expect(isPostgresUrl('postgres://u@h/db')).toBe(true);
    expect(isPostgresUrl('PostgreSQL://u@h/db')).toBe(true);
    expect(isPostgresUrl('/var/lib/workflowlookup')).toBe(false);
    expect(isPostgresUrl('postgres-data')).toBe(false);
    expect(isPostgresUrl('mysql://u@h/db')).toBe(false);
  });

  it('migrate brings a SQLite data dir to the newest schema and returns its version', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wl-migrate-'));
    dirs.push(dir);
    expect(await migrate(dir)).toBe(MIGRATIONS.length);
    expect(existsSync(join(dir, DATABASE_FILE))).toBe(true);
    expect(await migrate(dir)).toBe(MIGRATIONS.length);
    const store = await openExecutionStore(dir);
    expect(store).toBeInstanceOf(SqliteExecutionStore);
    await store.close();
  });

  it('migrate on an unreachable PostgreSQL says where it tried, without the password', async () => {
    await expect(migrate('postgres://u:Hidden-Pw@127.0.0.1:1/db')).rejects.toThrow(
      /^cannot connect to PostgreSQL at 127\.0\.0\.1:1: connection refused/,
    );
    const error = await migrate('postgres://u:Hidden-Pw@127.0.0.1:1/db').catch((e: Error) => e);
    expect(String(error)).not.toContain('Hidden-Pw');
  });

  it.skipIf(server.url === undefined)(
    'migrate brings a PostgreSQL database to the newest schema',
    async () => {
      db = await createTestDatabase(server.url as string);
      expect(await migrate(db.url)).toBe(MIGRATIONS.length);
      expect(await migrate(db.url)).toBe(MIGRATIONS.length);
      const store = await openExecutionStore(db.url);
      expect(store).toBeInstanceOf(PostgresExecutionStore);
      expect(store.location).toMatch(/^postgres:\/\/([^:@/]+@)?[^@/]+:\d+\/wl_test_\w+$/);
      await store.close();
    },
  );
});
