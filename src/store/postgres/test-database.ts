import { randomBytes } from 'node:crypto';
import pg from 'pg';

// Test support (not bundled): finds a PostgreSQL server for the suites and gives each run a database
// of its own.

/** The local servers tried when WORKFLOWLOOKUP_TEST_DATABASE_URL is unset. */
const LOCAL = ['postgres://postgres@127.0.0.1:5432/postgres', 'postgres://root@127.0.0.1:5432/postgres'];

export const HOW_TO_RUN =
  'Start PostgreSQL on 127.0.0.1:5432 (trust auth for user postgres or root), or set ' +
  'WORKFLOWLOOKUP_TEST_DATABASE_URL=postgres://user:password@host:port/postgres (a role that may create ' +
  'databases); each run creates its own database there and drops it afterwards.';

export type TestServer = { url: string } | { url: undefined; why: string };

async function answers(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return (error as Error).message || String((error as { code?: unknown }).code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The server the PostgreSQL suites use: WORKFLOWLOOKUP_TEST_DATABASE_URL, else a local server on
 * 127.0.0.1:5432. Under CI (`CI=true`) a missing server is an error, not a reason to skip.
 */
export async function findTestServer(env: NodeJS.ProcessEnv = process.env): Promise<TestServer> {
  const candidates = env.WORKFLOWLOOKUP_TEST_DATABASE_URL ? [env.WORKFLOWLOOKUP_TEST_DATABASE_URL] : LOCAL;
  const problems: string[] = [];
  for (const url of candidates) {
    const problem = await answers(url);
    if (problem === undefined) return { url };
    problems.push(problem);
  }
  const why = env.WORKFLOWLOOKUP_TEST_DATABASE_URL
    ? `WORKFLOWLOOKUP_TEST_DATABASE_URL does not answer (${problems.join('; ')})`
    : `no PostgreSQL answers on 127.0.0.1:5432 (${[...new Set(problems)].join('; ')})`;
  if (env.CI === 'true') throw new Error(`CI requires PostgreSQL: ${why}. ${HOW_TO_RUN}`);
  return { url: undefined, why };
}

/** The skip notice a suite prints, so `npm test` says plainly what did not run and how to run it. */
export function skipNotice(suite: string, why: string): string {
  return `\n*** ${suite} SKIPPED: ${why}.\n*** ${HOW_TO_RUN}\n`;
}

export interface TestDatabase {
  /** URL of the fresh database. */
  url: string;
  /** A fresh schema in it, and a URL whose connections use it (one namespace per test). */
  schema(): Promise<{ name: string; url: string }>;
  /** Runs SQL as the admin of the database (to tamper with what a store wrote). */
  admin(sql: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Appends `options=-c search_path=<schema>` so every connection of the URL works in that schema. */
export function withSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

/** Creates a database named `wl_test_<random>` on the server; `drop` removes it. */
export async function createTestDatabase(serverUrl: string): Promise<TestDatabase> {
  const name = `wl_test_${randomBytes(6).toString('hex')}`;
  const server = new pg.Client({ connectionString: serverUrl });
  await server.connect();
  try {
    await server.query(`CREATE DATABASE ${name}`);
  } finally {
    await server.end();
  }
  const url = withDatabase(serverUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // pool.end() resolves once its clients are asked to end, before their sockets close, so DROP ... WITH
  // (FORCE) below can end one of them first: the server's "terminating connection" (57P01) then reaches
  // the pool as an idle client's error. Without a listener that is an uncaught exception in whichever
  // test file the worker runs next.
  let dropping = false;
  pool.on('error', (error) => {
    if (!(dropping && (error as { code?: string }).code === '57P01')) throw error;
  });
  let schemas = 0;
  return {
    url,
    async schema() {
      const schema = `t${++schemas}_${randomBytes(3).toString('hex')}`;
      await pool.query(`CREATE SCHEMA ${schema}`);
      return { name: schema, url: withSchema(url, schema) };
    },
    async admin(sql, values = []) {
      return (await pool.query(sql, values)).rows;
    },
    async drop() {
      dropping = true;
      await pool.end();
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
