import { afterAll, beforeAll } from 'vitest';
import {
  createTestDatabase,
  findTestServer,
  skipNotice,
  type TestDatabase,
} from '../../src/store/postgres/test-database.js';

/** A test file's PostgreSQL: see `postgresFor`. */
export interface FilePostgres {
  /** The server's URL, undefined when there is none (the file's PostgreSQL suites then skip). */
  readonly url: string | undefined;
  /** The file's database, once its beforeAll has run (undefined without a server). */
  readonly db: TestDatabase | undefined;
  /** The file's database, for a test that runs only with a server. */
  database(): TestDatabase;
}

/**
 * The PostgreSQL a test file uses: the server the suites find (without one, a line on stderr saying how
 * to run `suite`; under CI=true `findTestServer` fails instead), and a database of the file's own,
 * created before its tests and dropped after them. Called at the top of a file, before its own hooks:
 * Vitest runs afterAll hooks in the reverse order of registration, so the drop comes last.
 */
export async function postgresFor(suite: string): Promise<FilePostgres> {
  const server = await findTestServer();
  if (server.url === undefined) process.stderr.write(skipNotice(suite, server.why));
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    if (server.url !== undefined) db = await createTestDatabase(server.url);
  });
  afterAll(async () => {
    await db?.drop();
  });
  return {
    url: server.url,
    get db() {
      return db;
    },
    database() {
      if (db === undefined) throw new Error(`no PostgreSQL database for the ${suite}`);
      return db;
    },
  };
}
