import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type HttpServer,
  type Json,
  post,
  STATELESS_ENVELOPE,
  startHttpServer,
  statelessCall,
} from './helpers/http-server.js';
import { postgresFor } from './helpers/postgres.js';
import { CLI, FIXTURES, RawServer, type Sandbox, sandbox, tokenOf } from './helpers/server.js';
import { TasksApi, TOKEN } from './helpers/tasks-api.js';

// Several `serve --http` replicas on one PostgreSQL: exactly-once advances, one claimant per command
// step, failover without loss, and moving executions between SQLite and PostgreSQL with the CLI.

const pgServer = await postgresFor('PostgreSQL replica suite');

const SECRET = 'one-secret-shared-by-every-replica-0123456789';

let sb: Sandbox;
let api: TasksApi;
const replicas: HttpServer[] = [];

beforeAll(async () => {
  api = new TasksApi();
  await api.start();
});
afterAll(async () => {
  await api.stop();
});
afterEach(() => {
  for (const r of replicas.splice(0)) r.kill();
  sb?.cleanup();
});

const call = statelessCall;

async function cluster(count: number): Promise<{ env: Record<string, string>; urls: string[] }> {
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SECRET, WORKFLOWLOOKUP_RATE_LIMIT: '0' });
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  const { url } = await pgServer.database().schema();
  const env = {
    WORKFLOWLOOKUP_DATABASE_URL: url,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
  };
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const dataDir = join(sb.root, `replica-${i}`);
    mkdirSync(dataDir);
    const r = await startHttpServer(sb, { ...env, WORKFLOWLOOKUP_DATA_DIR: dataDir });
    replicas.push(r);
    urls.push(r.url);
  }
  return { env, urls };
}

describe.skipIf(pgServer.url === undefined)('replicas on one PostgreSQL', () => {
  it('50 concurrent submissions of one token over 3 replicas: exactly one advances, the rest replay or conflict', async () => {
    const { urls } = await cluster(3);
    const started = await call(urls[0] as string, 'workflow_start', { workflow_name: 'durable-demo' });
    expect(started.success).toBe(true);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(urls[i % 3] as string, 'workflow_next_step', {
          token: tokenOf(started),
          output: { summary: i % 2 === 0 ? 'the design' : `another design ${i}` },
        }),
      ),
    );
    const successes = results.filter((r) => r.success === true);
    const conflicts = results.filter((r) => r.error?.code === -32005);
    expect(successes.length + conflicts.length).toBe(50);
    expect(new Set(successes.map((r) => tokenOf(r))).size).toBe(1);
    // A token issued by one replica is accepted by another.
    const next = await call(urls[2] as string, 'workflow_next_step', {
      token: tokenOf(successes[0]),
      output: { summary: 'implemented' },
    });
    expect(next.error).toBeUndefined();
  });

  it('a command step resumed on 3 replicas at once calls the API once, with one Idempotency-Key', async () => {
    const { urls } = await cluster(3);
    const imported = await call(urls[0] as string, 'catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(imported.error).toBeUndefined();
    const workflow = [
      'id: replica-slow',
      'name: Replica slow',
      'description: A slow command step',
      'version: 1.0.0',
      'steps:',
      '  - { id: design, title: Design, prompt: Design it. }',
      '  - { id: fetch-slow, title: Fetch, run: tasks-api get-task, with: { taskId: slow } }',
      '  - { id: review, title: Review, prompt: Review it. }',
    ].join('\n');
    // Saved once: saved workflows live in the database, and every replica hears of the save.
    expect((await call(urls[2] as string, 'workflow_save', { content: workflow })).error).toBeUndefined();
    for (const url of urls) {
      for (let i = 0; ; i++) {
        const ids = ((await call(url, 'workflow_list', {})).workflows as Json[]).map((w) => w.id);
        if (ids.includes('replica-slow')) break;
        if (i > 200) throw new Error(`replica-slow never reached ${url}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    const started = await call(urls[0] as string, 'workflow_start', { workflow_name: 'replica-slow' });
    const before = api.requests.length;
    const advance = call(urls[1] as string, 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'designed' },
    });
    await new Promise((r) => setTimeout(r, 200));
    const resumes = await Promise.all(
      urls.map((url) => call(url, 'workflow_resume', { execution_id: started.execution_id })),
    );
    const advanced = await advance;
    expect(advanced.error).toBeUndefined();
    const calls = api.requests.slice(before).filter((r) => r.url === '/api/tasks/slow');
    expect(
      calls.map((c) => c.headers['idempotency-key']),
      JSON.stringify(resumes),
    ).toHaveLength(1);
    for (const r of resumes) expect(r.error).toBeUndefined();
    const final = await call(urls[2] as string, 'workflow_resume', { execution_id: started.execution_id });
    expect(final.current_step).toBe('review');
  });

  it('failover: a replica SIGKILLed mid-stream loses no acknowledged step and every run completes', async () => {
    const { env, urls } = await cluster(3);
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(urls[i % 3] as string, 'workflow_start', {
          workflow_name: 'long-loop',
          context: { more: true },
        }),
      ),
    );
    const state = runs.map((r) => ({
      id: r.execution_id as string,
      token: tokenOf(r) as string,
      acknowledged: 1,
    }));
    let turn = 0;
    /** Round robin; a replica that does not answer is skipped, and the same call is retried elsewhere. */
    const send = async (method: string, params: Json): Promise<Json> => {
      for (let attempt = 0; attempt < 6; attempt++) {
        const url = urls[turn++ % urls.length] as string;
        try {
          return await call(url, method, params);
        } catch {
          // connection refused: the replica is down
        }
      }
      throw new Error('no replica answered');
    };
    const killAt = 40;
    let sent = 0;
    let restarted: Promise<void> | undefined;
    for (let round = 0; round < 25; round++) {
      await Promise.all(
        state.map(async (run) => {
          const res = await send('workflow_next_step', {
            token: run.token,
            output: { summary: `tick ${round}` },
          });
          expect(res.error, JSON.stringify(res.error)).toBeUndefined();
          run.token = tokenOf(res);
          run.acknowledged++;
          sent++;
        }),
      );
      if (sent >= killAt && restarted === undefined) {
        const victim = replicas[1] as HttpServer;
        victim.kill('SIGKILL');
        await victim.exited;
        restarted = (async () => {
          const dataDir = join(sb.root, 'replica-1b');
          mkdirSync(dataDir);
          const back = await startHttpServer(sb, { ...env, WORKFLOWLOOKUP_DATA_DIR: dataDir });
          replicas.push(back);
          urls[1] = back.url;
        })();
      }
    }
    await restarted;
    for (const run of state) {
      const status = await send('workflow_resume', { execution_id: run.id });
      expect(status.workflow_state).toBe('running');
      const history = await post(
        urls[0] as string,
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'resources/read',
          params: { uri: `workflowlookup://workflow/step_history/${run.id}`, _meta: STATELESS_ENVELOPE },
        },
        {
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'resources/read',
          'mcp-name': `workflowlookup://workflow/step_history/${run.id}`,
        },
      );
      const steps = JSON.parse(history.json?.result.contents[0].text) as Json[];
      expect(steps.filter((s) => s.status === 'completed').length).toBeGreaterThanOrEqual(
        run.acknowledged - 1,
      );
      const wrap = await send('workflow_next_step', {
        token: tokenOf(status),
        output: { summary: 'stop', context: { more: false } },
      });
      expect(wrap.step_name).toBe('wrap-up');
      const done = await send('workflow_next_step', { token: tokenOf(wrap), output: { summary: 'done' } });
      expect(done.workflow_state).toBe('completed');
    }
  });

  it('24 clients on 3 replicas, each advancing its own execution: no step fails, none runs again', async () => {
    const { urls } = await cluster(3);
    const clients = 24;
    const rounds = 10;
    const runs = await Promise.all(
      Array.from({ length: clients }, (_, i) =>
        call(urls[i % 3] as string, 'workflow_start', {
          workflow_name: 'long-loop',
          context: { more: true },
        }),
      ),
    );
    const failures: Json[] = [];
    await Promise.all(
      runs.map(async (run, i) => {
        let token = tokenOf(run);
        for (let round = 0; round < rounds; round++) {
          // Every replica takes its turn with every execution: they meet on the same tables and indexes.
          const res = await call(urls[(i + round) % 3] as string, 'workflow_next_step', {
            token,
            output: { summary: `tick ${round}` },
          });
          if (res.error !== undefined) failures.push(res.error);
          else token = tokenOf(res);
        }
      }),
    );
    expect(failures).toEqual([]);
    // A transaction PostgreSQL made run again (a deadlock, a duplicate key) is logged: there was none.
    for (const replica of replicas) expect(replica.stderr()).not.toMatch(/runs again/);
    for (const run of runs) {
      const status = await call(urls[0] as string, 'workflow_resume', { execution_id: run.execution_id });
      expect(status.current_step, JSON.stringify(status)).toBe('tick');
      const history = await post(
        urls[1] as string,
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'resources/read',
          params: {
            uri: `workflowlookup://workflow/step_history/${run.execution_id}`,
            _meta: STATELESS_ENVELOPE,
          },
        },
        {
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'resources/read',
          'mcp-name': `workflowlookup://workflow/step_history/${run.execution_id}`,
        },
      );
      const steps = JSON.parse(history.json?.result.contents[0].text) as Json[];
      // Each accepted output completed exactly one step; the step after the last is running.
      expect(steps.filter((s) => s.status === 'completed')).toHaveLength(rounds);
      expect(steps.map((s) => s.seq)).toEqual(Array.from({ length: rounds + 1 }, (_, i) => i + 1));
    }
  });

  it('moves executions from SQLite to PostgreSQL and back with migrate, export and import', async () => {
    sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SECRET });
    cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
    const sqliteDir = join(sb.root, 'sqlite');
    const s = new RawServer({ env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: sqliteDir }, cwd: sb.project });
    await s.initialize();
    const started = (await s.request(1, 'workflow_start', { workflow_name: 'durable-demo' })).result as Json;
    await s.request(2, 'workflow_next_step', { token: tokenOf(started), output: { summary: 'a design' } });
    s.kill();
    const { url } = await pgServer.database().schema();
    const run = (args: string[], input?: string) =>
      spawnSync(process.execPath, [CLI, ...args], {
        env: sb.env,
        encoding: 'utf8',
        ...(input ? { input } : {}),
      });
    expect(run(['migrate', '--store', url]).stdout).toMatch(/^schema version \d+/);
    const file = join(sb.root, 'executions.jsonl');
    const exported = run(['export', '--store', sqliteDir, '--out', file]);
    expect(exported.status).toBe(0);
    expect(exported.stderr).toContain('exported 1 execution(s)');
    const imported = run(['import', file, '--store', url]);
    expect(imported.stdout).toContain('imported 1 execution(s), 2 step(s)');
    expect(run(['import', file, '--store', url]).stdout).toContain('1 already present');
    const back = join(sb.root, 'back');
    const roundTrip = run(['import', '-', '--store', back], run(['export', '--store', url]).stdout);
    expect(roundTrip.stdout).toContain('imported 1 execution(s), 2 step(s)');
    const resumed = new RawServer({ env: { ...sb.env, WORKFLOWLOOKUP_DATABASE_URL: url }, cwd: sb.project });
    await resumed.initialize();
    const current = (await resumed.request(3, 'workflow_resume', { execution_id: started.execution_id }))
      .result as Json;
    expect(current.current_step).toBe('implement');
    resumed.kill();
    writeFileSync(join(sb.root, 'bad.jsonl'), '{"not":"a bundle"}\n');
    const bad = run(['import', join(sb.root, 'bad.jsonl'), '--store', back]);
    expect(bad.status).toBe(1);
  });
});
