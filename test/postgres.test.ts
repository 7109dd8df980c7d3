import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresFor } from './helpers/postgres.js';
import { FIXTURES, RawServer, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

// Durable executions on PostgreSQL through the built server: the cases test/durability.test.ts runs on
// SQLite, with every server process given WORKFLOWLOOKUP_DATABASE_URL and a data dir of its own (so
// nothing can be shared through a SQLite file), plus what a bad URL tells the agent.

type Json = Record<string, any>;

const server = await postgresFor('PostgreSQL end-to-end suite');

const SECRET = 'an-hmac-secret-shared-by-every-replica-0123456789';

let sb: Sandbox;
const servers: RawServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
  sb?.cleanup();
});

/** A sandbox whose servers share one fresh schema (and the token secret), each with its own data dir. */
async function setup(): Promise<{ url: string; schema: string }> {
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SECRET });
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  const { url, name } = await server.database().schema();
  sb.env.WORKFLOWLOOKUP_DATABASE_URL = url;
  return { url, schema: name };
}

let dataDirs = 0;
async function start(env: Record<string, string> = {}): Promise<RawServer> {
  const dataDir = join(sb.root, `data-${++dataDirs}`);
  mkdirSync(dataDir);
  const s = new RawServer({ env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: dataDir, ...env }, cwd: sb.project });
  servers.push(s);
  await s.initialize();
  return s;
}

let ids = 0;
async function rpc(s: RawServer, method: string, params: Json): Promise<Json> {
  const res = await s.request(`r${ids++}`, method, params);
  return res.error ? { error: res.error } : (res.result as Json);
}

async function read(s: RawServer, uri: string): Promise<any> {
  const res = (await s.request(`r${ids++}`, 'resources/read', { uri })) as Json;
  return JSON.parse(res.result.contents[0].text);
}

describe.skipIf(server.url === undefined)('durable executions on PostgreSQL', () => {
  it('runs a workflow from start to completion, with status, history, artifacts and telemetry', async () => {
    const { schema } = await setup();
    const s = await start();
    const started = await rpc(s, 'workflow_start', {
      workflow_name: 'durable-demo',
      context: { team: 'core' },
    });
    expect(started).toMatchObject({ success: true, workflow_state: 'running', step_name: 'design' });
    const design = await rpc(s, 'workflow_next_step', {
      token: tokenOf(started),
      output: {
        summary: 'The design uses a queue.',
        artifacts: [
          { type: 'report', name: 'design.md', content: '# Design\n\u0000queue', metadata: { v: 1 } },
        ],
        context: { exposure: 'public' },
      },
    });
    expect(design.step_name).toBe('implement');
    // The same call again (a client retry) replays the recorded answer.
    let token = tokenOf(design);
    for (const step of ['harden', 'review']) {
      const next = await rpc(s, 'workflow_next_step', {
        token,
        output: { summary: `did ${step}'s predecessor` },
      });
      expect(next.step_name).toBe(step);
      expect(
        await rpc(s, 'workflow_next_step', { token, output: { summary: `did ${step}'s predecessor` } }),
      ).toEqual(next);
      token = tokenOf(next);
    }
    const done = await rpc(s, 'workflow_next_step', { token, output: { summary: 'Looks good.' } });
    expect(done).toMatchObject({ success: true, workflow_state: 'completed' });

    const id = started.execution_id;
    expect(await read(s, `workflowlookup://workflow/workflow_status/${id}`)).toMatchObject({
      state: 'completed',
      steps: { total: 4, completed: 4, failed: 0, running: 0, pending: 0 },
    });
    const history = await read(s, `workflowlookup://workflow/step_history/${id}`);
    expect(history.map((h: Json) => `${h.step_name}:${h.status}`)).toEqual([
      'design:completed',
      'implement:completed',
      'harden:completed',
      'review:completed',
    ]);
    const artifacts = await read(s, `workflowlookup://workflow/workflow_artifacts/${id}`);
    expect(artifacts).toEqual([
      expect.objectContaining({ name: 'design.md', content: '# Design\n\u0000queue', metadata: { v: 1 } }),
    ]);
    const events = (await read(s, `workflowlookup://workflow/telemetry/${id}?limit=1000`)).map(
      (e: Json) => e.event_type,
    );
    expect(events).toContain('artifact_stored');
    expect(events.at(-1)).toBe('workflow_completed');
    const listed = await rpc(s, 'workflow_executions', { states: ['completed'] });
    expect(JSON.stringify(listed)).toContain(id);

    // It all lives in PostgreSQL: no SQLite file appeared, and the rows are in the schema.
    expect(existsSync(join(sb.root, `data-${dataDirs}`, 'workflowlookup.db'))).toBe(false);
    const rows = await server.db?.admin(
      `SELECT state FROM ${schema}.workflow_executions WHERE execution_id = $1`,
      [id],
    );
    expect(rows).toEqual([{ state: 'completed' }]);
  });

  it('many concurrent submissions of one token from two processes: exactly one advances', async () => {
    await setup();
    const [a, b] = await Promise.all([start(), start()]);
    const started = await rpc(a as RawServer, 'workflow_start', { workflow_name: 'durable-demo' });
    const submissions = Array.from({ length: 24 }, (_, i) => {
      const target = (i % 2 === 0 ? a : b) as RawServer;
      // Half send the same output (safe retries), half a different one each (conflicts).
      const summary = i % 4 < 2 ? 'the design' : `design variant ${i}`;
      return rpc(target, 'workflow_next_step', { token: tokenOf(started), output: { summary } });
    });
    const results = await Promise.all(submissions);
    const successes = results.filter((r) => r.success === true);
    const conflicts = results.filter((r) => r.error?.code === -32005);
    expect(successes.length + conflicts.length).toBe(results.length);
    expect(successes.length).toBeGreaterThanOrEqual(1);
    // Every success is the same advance (one winner, the rest replays of its recorded answer).
    expect(new Set(successes.map((r) => tokenOf(r))).size).toBe(1);
    const steps = await read(
      a as RawServer,
      `workflowlookup://workflow/step_history/${started.execution_id}`,
    );
    expect(steps.map((s: Json) => `${s.step_name}:${s.status}`)).toEqual([
      'design:completed',
      'implement:running',
    ]);
  });

  it('two servers on one database see each other’s executions', async () => {
    await setup();
    const [a, b] = await Promise.all([start(), start()]);
    const started = await rpc(a as RawServer, 'workflow_start', {
      workflow_name: 'durable-demo',
      execution_id: 'shared-1',
    });
    const resumed = await rpc(b as RawServer, 'workflow_resume', { execution_id: 'shared-1' });
    expect(tokenOf(resumed)).toBe(tokenOf(started));
    const next = await rpc(b as RawServer, 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'design' },
    });
    const seenByA = await rpc(a as RawServer, 'workflow_resume', { execution_id: 'shared-1' });
    expect(tokenOf(seenByA)).toBe(tokenOf(next));
    expect(seenByA.current_step).toBe('implement');
  });

  it('SIGKILL in the middle of a stream of next_step calls loses no acknowledged step', async () => {
    await setup();
    const first = await start();
    const started = await rpc(first, 'workflow_start', {
      workflow_name: 'long-loop',
      context: { more: true },
    });
    let token = tokenOf(started) as string;
    let acknowledged = 0;
    const stream = (async () => {
      for (let i = 0; i < 100_000; i++) {
        const res = await rpc(first, 'workflow_next_step', { token, output: { summary: `tick ${i}` } });
        token = tokenOf(res);
        acknowledged++;
      }
    })().catch(() => undefined);
    while (acknowledged < 30) await new Promise((r) => setTimeout(r, 5));
    first.child.kill('SIGKILL');
    await first.exited;
    await stream;

    const second = await start();
    const resumed = await rpc(second, 'workflow_resume', { execution_id: started.execution_id });
    expect(resumed.workflow_state).toBe('running');
    const history = await read(second, `workflowlookup://workflow/step_history/${started.execution_id}`);
    // Every acknowledged advance is there, plus at most the one in flight at the kill; never half of one.
    const completed = history.filter((s: Json) => s.status === 'completed');
    const running = history.filter((s: Json) => s.status === 'running');
    expect(completed.length).toBeGreaterThanOrEqual(acknowledged);
    expect(completed.length).toBeLessThanOrEqual(acknowledged + 1);
    expect(running).toHaveLength(1);
    expect(history).toHaveLength(completed.length + 1);
    expect(history.map((s: Json) => s.seq)).toEqual(history.map((_: Json, i: number) => i + 1));
    const next = await rpc(second, 'workflow_next_step', {
      token: tokenOf(resumed),
      output: { summary: 'after restart', context: { more: false } },
    });
    expect(next.step_name).toBe('wrap-up');
    const done = await rpc(second, 'workflow_next_step', {
      token: tokenOf(next),
      output: { summary: 'done' },
    });
    expect(done.workflow_state).toBe('completed');
  });

  it('a wrong database or user is a storage error that names it, and never shows the password', async () => {
    const { url } = await setup();
    const password = 'pa55-W0rd/with:symbols';
    const withPassword = (change: (u: URL) => void) => {
      const u = new URL(url);
      u.password = encodeURIComponent(password);
      change(u);
      return u.toString();
    };
    const cases = [
      {
        url: withPassword((u) => {
          u.pathname = '/no_such_database';
        }),
        says: /database "no_such_database" does not exist on PostgreSQL at/,
      },
      {
        url: withPassword((u) => {
          u.username = 'no_such_role';
        }),
        says: /PostgreSQL at [^ ]+ refused user "no_such_role": role "no_such_role" does not exist/,
      },
    ];
    for (const c of cases) {
      const s = await start({ WORKFLOWLOOKUP_DATABASE_URL: c.url });
      const res = await rpc(s, 'tools/call', {
        name: 'workflow_start',
        arguments: { workflow_name: 'durable-demo' },
      });
      expect(res.isError).toBe(true);
      const error = res.structuredContent.error;
      expect(error.data.error_code).toBe('STORAGE_ERROR');
      expect(error.data.message).toMatch(c.says);
      s.child.stdin.end();
      await s.exited;
      for (const text of [JSON.stringify(res), s.stderr]) {
        expect(text).not.toContain(password);
        expect(text).not.toContain(encodeURIComponent(password));
      }
    }
  });
});

describe('a PostgreSQL URL that cannot work', () => {
  it('a refused port is a storage error naming host and port, without the password; the server keeps serving', async () => {
    sb = sandbox({
      WORKFLOWLOOKUP_DATABASE_URL: 'postgresql://someone:S3cret-Pass@127.0.0.1:1/workflows',
      WORKFLOWLOOKUP_TOKEN_SECRET: SECRET,
    });
    cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
    const s = await start();
    const direct = await rpc(s, 'workflow_start', { workflow_name: 'durable-demo' });
    expect(direct.error).toMatchObject({
      code: -32006,
      data: { error_code: 'STORAGE_ERROR', retryable: true },
    });
    expect(direct.error.data.message).toMatch(
      /cannot connect to PostgreSQL at 127\.0\.0\.1:1: connection refused/,
    );
    // Guidance does not need the store.
    expect((await rpc(s, 'workflow_list', {})).workflows.length).toBeGreaterThan(0);
    s.child.stdin.end();
    await s.exited;
    expect(JSON.stringify(direct)).not.toContain('S3cret-Pass');
    expect(s.stderr).not.toContain('S3cret-Pass');
  });

  it('a URL that is not postgres:// stops the server at start (exit 2), without repeating the URL', async () => {
    sb = sandbox({ WORKFLOWLOOKUP_DATABASE_URL: 'mysql://admin:Hunter2-Secret@db.internal/app' });
    const s = new RawServer({ env: sb.env, cwd: sb.project });
    servers.push(s);
    const { code } = await s.exited;
    expect(code).toBe(2);
    expect(s.stderr).toMatch(/WORKFLOWLOOKUP_DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(s.stderr).not.toContain('Hunter2-Secret');
  });
});
