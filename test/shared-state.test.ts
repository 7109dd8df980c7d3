import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PG_MIGRATIONS } from '../src/store/postgres/migrations.js';
import {
  type HttpServer,
  httpClient,
  type Json,
  post,
  STATELESS_ENVELOPE,
  startHttpServer,
  statelessCall,
} from './helpers/http-server.js';
import { postgresFor } from './helpers/postgres.js';
import { CLI, FIXTURES, type Sandbox, sandbox, tokenOf } from './helpers/server.js';
import { TasksApi, TOKEN } from './helpers/tasks-api.js';

// What replicas on one PostgreSQL share besides executions: the workflows agents save and the
// catalogs they import live in the database, so a save on one replica is served by all of them at
// once (LISTEN/NOTIFY), under the same rules as saving files. Each replica here has a runtime dir and
// data dir of its own, so nothing can pass through the file system.

const pgServer = await postgresFor('PostgreSQL shared state suite');

const SECRET = 'one-secret-shared-by-every-replica-0123456789';

let sb: Sandbox;
let api: TasksApi;
const replicas: HttpServer[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  api = new TasksApi();
  await api.start();
});
afterAll(async () => {
  await api.stop();
});
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  for (const r of replicas.splice(0)) r.kill();
  sb?.cleanup();
});

const call = statelessCall;

/** A resource read on any replica. */
async function read(url: string, uri: string): Promise<string> {
  const res = await post(
    url,
    { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri, _meta: STATELESS_ENVELOPE } },
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/read', 'mcp-name': uri },
  );
  return res.json?.result.contents[0].text as string;
}

const listed = async (url: string) =>
  ((await call(url, 'workflow_list', {})).workflows as Json[]).map((w) => w.id as string);

async function until<T>(probe: () => Promise<T>, ok: (value: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > end) throw new Error(`timed out; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Cluster {
  env: Record<string, string>;
  urls: string[];
  /** Each replica's own runtime workflow dir. */
  runtimeDirs: string[];
}

async function cluster(count: number): Promise<Cluster> {
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SECRET, WORKFLOWLOOKUP_RATE_LIMIT: '0' });
  const { url } = await pgServer.database().schema();
  const env = {
    WORKFLOWLOOKUP_DATABASE_URL: url,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
    WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false',
  };
  const urls: string[] = [];
  const runtimeDirs: string[] = [];
  for (let i = 0; i < count; i++) {
    const dataDir = join(sb.root, `replica-${i}`, 'data');
    const runtimeDir = join(sb.root, `replica-${i}`, 'config', 'workflows');
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(runtimeDir, { recursive: true });
    const r = await startHttpServer(sb, {
      ...env,
      WORKFLOWLOOKUP_DATA_DIR: dataDir,
      WORKFLOWLOOKUP_WORKFLOWS_PATH: runtimeDir,
    });
    replicas.push(r);
    urls.push(r.url);
    runtimeDirs.push(runtimeDir);
  }
  return { env, urls, runtimeDirs };
}

const manifest = (id: string, note = 'first') =>
  [
    `id: ${id}`,
    `name: ${id}`,
    `description: A shared workflow (${note})`,
    'version: 1.0.0',
    'steps:',
    '  - { id: design, title: Design, prompt: Design it. }',
    '  - { id: review, title: Review, prompt: Review it. }',
    '',
  ].join('\n');

describe.skipIf(pgServer.url === undefined)('replicas share saved workflows and catalogs', () => {
  it('a workflow saved on A is listed and startable on B at once, and B’s client hears list_changed', async () => {
    const { urls, runtimeDirs } = await cluster(2);
    const [a, b] = urls as [string, string];
    const watching = await httpClient(b);
    clients.push(watching);
    let changes = 0;
    watching.setNotificationHandler('notifications/resources/list_changed', () => {
      changes++;
    });
    // B has read the (empty) shared workflows before A saves.
    expect(await listed(b)).not.toContain('shared-flow');
    const saved = await call(a, 'workflow_save', { content: manifest('shared-flow') });
    expect(saved.error).toBeUndefined();
    expect(saved).toMatchObject({ workflow_id: 'shared-flow', created: true });
    expect(saved.path).toMatch(/^postgres:\/\/.*#workflows\/shared-flow\.yaml$/);
    // B sees it at all only because the save was announced (LISTEN/NOTIFY): nothing polls the store.
    // How soon is a latency goal for the bench, not a wall-clock assertion here.
    await until(
      () => listed(b),
      (ids) => ids.includes('shared-flow'),
    );
    await until(
      async () => changes,
      (n) => n > 0,
    );
    const started = await call(b, 'workflow_start', { workflow_name: 'shared-flow' });
    expect(started.error).toBeUndefined();
    expect(started.step_name).toBe('design');
    // Nothing went through the file system.
    for (const dir of runtimeDirs) {
      expect(readdirSync(dir)).toEqual([]);
      expect(existsSync(join(dir, '..', 'catalogs'))).toBe(false);
    }
    // The source view and the manifests resource read the database too, with the same version.
    const source = await call(b, 'workflow_get', { id: 'shared-flow', view: 'source' });
    expect(source).toMatchObject({
      content: manifest('shared-flow'),
      version: saved.version,
      format: 'yaml',
    });
  });

  it('a catalog imported on A runs a command step started on B', async () => {
    const { urls } = await cluster(2);
    const [a, b] = urls as [string, string];
    const imported = await call(a, 'catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(imported.error).toBeUndefined();
    expect(imported.catalog_path).toMatch(/#catalogs\/tasks-api\.json$/);
    const commands = await until(
      () => call(b, 'command_list', { catalog_id: 'tasks-api' }),
      (r) => Array.isArray(r.commands) && r.commands.length > 0,
    );
    expect((commands.commands as Json[]).map((c) => c.run)).toContain('tasks-api get-task');
    const workflow = [
      'id: shared-fetch',
      'name: Shared fetch',
      'description: A command step on a catalog another replica imported',
      'version: 1.0.0',
      'steps:',
      '  - { id: fetch, title: Fetch, run: tasks-api list-projects }',
      '  - { id: review, title: Review, prompt: Review it. }',
    ].join('\n');
    expect((await call(a, 'workflow_save', { content: workflow })).error).toBeUndefined();
    await until(
      () => listed(b),
      (ids) => ids.includes('shared-fetch'),
    );
    const before = api.requests.length;
    const started = await call(b, 'workflow_start', { workflow_name: 'shared-fetch' });
    expect(started.error, JSON.stringify(started.error)).toBeUndefined();
    expect(started.step_name).toBe('review');
    const sent = api.requests.slice(before);
    expect(sent.map((r) => r.url)).toContain('/api/projects');
    expect(sent[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // Disabling on B is seen by A before its next use.
    expect(
      (await call(b, 'catalog_set_enabled', { catalog_id: 'tasks-api', enabled: false })).error,
    ).toBeUndefined();
    const off = await until(
      () => call(a, 'command_list', {}),
      (r) => Array.isArray(r.commands) && r.commands.length === 0,
    );
    expect(off.commands).toEqual([]);
    // Importing again without overwrite is a conflict on any replica.
    const again = await call(b, 'catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(again.error.data.error_code).toBe('CATALOG_CONFLICT');
    // Removed on A: B no longer starts a workflow that needs it.
    expect((await call(a, 'catalog_remove', { catalog_id: 'tasks-api' })).error).toBeUndefined();
    await until(
      () => call(b, 'catalog_set_enabled', { catalog_id: 'tasks-api', enabled: true }),
      (r) => r.error?.data?.error_code === 'CATALOG_NOT_FOUND',
    );
    const gone = await call(b, 'workflow_start', { workflow_name: 'shared-fetch' });
    expect(gone.error.data).toMatchObject({ error_code: 'CATALOG_NOT_FOUND', catalog: 'tasks-api' });
  });

  it('two replicas importing one catalog at once: one imports it, the other gets the conflict', async () => {
    const { urls } = await cluster(2);
    const imports = await Promise.all(
      urls.map((url) =>
        call(url, 'catalog_import_openapi', {
          source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
          catalog_title: 'Tasks API',
          base_url: api.baseUrl,
        }),
      ),
    );
    expect(imports.filter((r) => r.error === undefined)).toHaveLength(1);
    expect(imports.find((r) => r.error !== undefined)?.error.data.error_code).toBe('CATALOG_CONFLICT');
  });

  it('two replicas saving one workflow at once: one wins, the other gets the conflict', async () => {
    const { urls } = await cluster(3);
    // New workflow, no overwrite: exactly one creates it.
    const creates = await Promise.all(
      urls.flatMap((url, i) =>
        [0, 1].map((j) => call(url, 'workflow_save', { content: manifest('raced', `replica ${i}.${j}`) })),
      ),
    );
    const created = creates.filter((r) => r.error === undefined);
    expect(created).toHaveLength(1);
    for (const r of creates.filter((x) => x.error !== undefined)) {
      expect(r.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    }
    const version = created[0]?.version as string;
    // Both read that version and save over it at once: one replaces it, the other is told it changed.
    const [x, y] = await Promise.all([
      call(urls[0] as string, 'workflow_save', {
        content: manifest('raced', 'edit from A'),
        expected_version: version,
      }),
      call(urls[1] as string, 'workflow_save', {
        content: manifest('raced', 'edit from B'),
        expected_version: version,
      }),
    ]);
    const outcomes = [x, y];
    expect(outcomes.filter((r) => r.error === undefined)).toHaveLength(1);
    const loser = outcomes.find((r) => r.error !== undefined) as Json;
    expect(loser.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    expect(loser.error.data.message ?? loser.error.message).toBeDefined();
    const winner = outcomes.find((r) => r.error === undefined) as Json;
    // Every replica converges on the winner's text.
    for (const url of urls) {
      await until(
        () => call(url, 'workflow_get', { id: 'raced', view: 'source' }),
        (s) => s.version === winner.version,
      );
    }
  });

  it('overwrite, file names, rename and delete follow the file rules on every replica', async () => {
    const { urls, runtimeDirs } = await cluster(2);
    const [a, b] = urls as [string, string];
    const first = await call(a, 'workflow_save', { content: manifest('alpha') });
    expect(first.error).toBeUndefined();
    await until(
      () => listed(b),
      (ids) => ids.includes('alpha'),
    );
    // An existing workflow needs overwrite (or its version), wherever the save comes from.
    const plain = await call(b, 'workflow_save', { content: manifest('alpha', 'second') });
    expect(plain.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    const replaced = await call(b, 'workflow_save', {
      content: manifest('alpha', 'second'),
      overwrite: true,
    });
    expect(replaced).toMatchObject({ created: false, workflow_id: 'alpha' });
    const stale = await call(a, 'workflow_save', {
      content: manifest('alpha', 'third'),
      expected_version: first.version,
    });
    expect(stale.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    // A name holding another workflow is never replaced, even with overwrite (names ignore case).
    const squat = await call(b, 'workflow_save', {
      content: manifest('beta'),
      file_name: 'ALPHA.yaml',
      overwrite: true,
    });
    expect(squat.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    // File names are checked as for files.
    const outside = await call(b, 'workflow_save', { content: manifest('beta'), file_name: '../beta.yaml' });
    expect(outside.error.data.error_code).toBe('PATH_OUTSIDE_RUNTIME_DIR');
    // Saving under another name moves the workflow (one document per id).
    const moved = await call(b, 'workflow_save', {
      content: manifest('alpha', 'json-less'),
      file_name: 'alpha-renamed.yml',
      overwrite: true,
    });
    expect(moved.path).toMatch(/alpha-renamed\.yml$/);
    const files = JSON.parse(await read(a, 'workflowlookup://authoring/manifests')) as Json[];
    expect(files.filter((f) => f.id === 'alpha')).toHaveLength(1);
    await until(
      () => call(a, 'workflow_get', { id: 'alpha', view: 'source' }),
      (s) => String(s.path).endsWith('alpha-renamed.yml'),
    );
    // Rename on A is seen on B; the old id is gone everywhere.
    const renamed = await call(a, 'workflow_rename', { workflow_id: 'alpha', new_id: 'gamma' });
    expect(renamed.error).toBeUndefined();
    await until(
      () => listed(b),
      (ids) => ids.includes('gamma') && !ids.includes('alpha'),
    );
    const missing = await call(b, 'workflow_rename', { workflow_id: 'alpha', new_id: 'delta' });
    expect(missing.error.data.error_code).toBe('WORKFLOW_NOT_FOUND');
    // A replica's own runtime dir is one of its (read-only) sources: the database overrides it.
    cpSync(join(FIXTURES, 'valid', 'durable-demo.yaml'), join(runtimeDirs[1] as string, 'durable-demo.yaml'));
    await until(
      () => listed(b),
      (ids) => ids.includes('durable-demo'),
    );
    const readOnly = await call(b, 'workflow_delete', { workflow_id: 'durable-demo', confirm: true });
    expect(readOnly.error.data.error_code).toBe('WORKFLOW_READ_ONLY');
    const override = await call(b, 'workflow_save', { content: manifest('durable-demo') });
    expect(override).toMatchObject({ created: true, overrides: 'runtime' });
    // Delete on B removes it for A; deleting it again anywhere is not found.
    const deleted = await call(b, 'workflow_delete', { workflow_id: 'gamma', confirm: true });
    expect(deleted).toMatchObject({ deleted: true });
    await until(
      () => listed(a),
      (ids) => !ids.includes('gamma'),
    );
    const again = await call(a, 'workflow_delete', { workflow_id: 'gamma', confirm: true });
    expect(again.error.data.error_code).toBe('WORKFLOW_NOT_FOUND');
  });

  it('a replica whose listening connection is ended reconnects, catches up and hears later saves', async () => {
    const { urls } = await cluster(2);
    const [a, b] = urls as [string, string];
    const victim = replicas[1] as HttpServer;
    expect((await call(a, 'workflow_save', { content: manifest('before-cut') })).error).toBeUndefined();
    await until(
      () => listed(b),
      (ids) => ids.includes('before-cut'),
    );
    const application = `workflowlookup-listen-${victim.child.pid}`;
    const active = () =>
      pgServer
        .database()
        .admin('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [application]);
    // Cut it once it is listening (idle after its LISTEN, or after a ping).
    await until(
      () =>
        pgServer.database().admin(
          `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle'
             AND query IN ('LISTEN workflowlookup_runtime', 'SELECT 1')`,
          [application],
        ),
      (rows) => rows.length === 1,
    );
    // Cut B's listening connection, and save on A before B is back: that notification is lost to B.
    await pgServer
      .database()
      .admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
        application,
      ]);
    expect((await call(a, 'workflow_save', { content: manifest('during-cut') })).error).toBeUndefined();
    // B reconnects by itself and reads everything again.
    await until(active, (rows) => rows.length === 1);
    await until(
      () => listed(b),
      (ids) => ids.includes('during-cut'),
    );
    expect((await call(a, 'workflow_save', { content: manifest('after-cut') })).error).toBeUndefined();
    await until(
      () => listed(b),
      (ids) => ids.includes('after-cut'),
    );
    expect(victim.stderr()).toMatch(/listening connection lost: .*administrator command; reconnecting/);
  });
});

describe('the token secret with a shared database', () => {
  it('serve refuses to start without WORKFLOWLOOKUP_TOKEN_SECRET (exit 2); migrate does not need it', async () => {
    sb = sandbox({ WORKFLOWLOOKUP_DATABASE_URL: 'postgres://someone:Hunter2-Secret@127.0.0.1:1/workflows' });
    for (const args of [['serve'], ['serve', '--http', '--port', '0'], ['dashboard', '--port', '0']]) {
      const run = spawnSync(process.execPath, [CLI, ...args], { env: sb.env, encoding: 'utf8', input: '' });
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toContain('WORKFLOWLOOKUP_TOKEN_SECRET');
      expect(run.stderr).toContain('same value on every replica');
      expect(run.stderr).not.toContain('Hunter2-Secret');
    }
    if (pgServer.db !== undefined) {
      const { url } = await pgServer.db.schema();
      const migrated = spawnSync(process.execPath, [CLI, 'migrate', '--store', url], {
        env: { ...sb.env, WORKFLOWLOOKUP_DATABASE_URL: url },
        encoding: 'utf8',
      });
      expect(migrated.status, migrated.stderr).toBe(0);
      expect(migrated.stdout).toContain(`schema version ${PG_MIGRATIONS.length}`);
    }
  });

  it('with the secret shared, a token issued by one replica is accepted by another', async () => {
    if (pgServer.db === undefined) return;
    const { urls } = await cluster(2);
    expect(
      (await call(urls[0] as string, 'workflow_save', { content: manifest('tokens') })).error,
    ).toBeUndefined();
    const started = await call(urls[0] as string, 'workflow_start', { workflow_name: 'tokens' });
    await until(
      () => listed(urls[1] as string),
      (ids) => ids.includes('tokens'),
    );
    const next = await call(urls[1] as string, 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'designed' },
    });
    expect(next.error).toBeUndefined();
    expect(next.step_name).toBe('review');
  });
});
