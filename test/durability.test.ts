import { cpSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/store/sqlite/migrations.js';
import { SqliteExecutionStore } from '../src/store/sqlite/sqlite-store.js';
import { FIXTURES, RawServer, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
const servers: RawServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
  sb?.cleanup();
});

function setup(): void {
  sb = sandbox();
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
}

async function server(): Promise<RawServer> {
  const s = new RawServer({ env: sb.env, cwd: sb.project });
  servers.push(s);
  await s.initialize();
  return s;
}

let ids = 0;
async function rpc(s: RawServer, method: string, params: Json): Promise<Json> {
  const res = await s.request(`r${ids++}`, method, params);
  return res.error ? { error: res.error } : (res.result as Json);
}

describe('concurrency', () => {
  it('many concurrent submissions of one token from two processes: exactly one advances', async () => {
    setup();
    const [a, b] = await Promise.all([server(), server()]);
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
    // Every success is the same advance (one winner, the rest replays of its recorded answer).
    expect(new Set(successes.map((r) => tokenOf(r))).size).toBe(1);
    const history = (await (a as RawServer).request('h', 'resources/read', {
      uri: `workflowlookup://workflow/step_history/${started.execution_id}`,
    })) as Json;
    const steps = JSON.parse(history.result.contents[0].text);
    expect(steps.map((s: Json) => `${s.step_name}:${s.status}`)).toEqual([
      'design:completed',
      'implement:running',
    ]);
  });

  it('two servers on one data dir see each other’s executions', async () => {
    setup();
    const [a, b] = await Promise.all([server(), server()]);
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
});

describe('crash safety', () => {
  it('SIGKILL in the middle of a stream of next_step calls loses no acknowledged step', async () => {
    setup();
    const first = await server();
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

    const second = await server();
    const resumed = await rpc(second, 'workflow_resume', { execution_id: started.execution_id });
    expect(resumed.workflow_state).toBe('running');
    const history = JSON.parse(
      (
        (await second.request('h', 'resources/read', {
          uri: `workflowlookup://workflow/step_history/${started.execution_id}`,
        })) as Json
      ).result.contents[0].text,
    );
    // Every acknowledged advance is there, plus at most the one in flight at the kill; never half of one.
    const completed = history.filter((s: Json) => s.status === 'completed');
    const running = history.filter((s: Json) => s.status === 'running');
    expect(completed.length).toBeGreaterThanOrEqual(acknowledged);
    expect(completed.length).toBeLessThanOrEqual(acknowledged + 1);
    expect(running).toHaveLength(1);
    expect(history).toHaveLength(completed.length + 1);
    expect(history.map((s: Json) => s.seq)).toEqual(history.map((_: Json, i: number) => i + 1));
    // The execution continues from where the store says it is.
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
});

describe('sqlite store', () => {
  it('has gapless migrations, enforces transitions in the database, and refuses a newer schema', async () => {
    setup();
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    const dir = join(sb.root, 'store');
    const store = new SqliteExecutionStore(dir);
    await store.close();
    const db = new Database(join(dir, 'workflowlookup.db'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.prepare("INSERT INTO workflow_definitions VALUES ('h', 'w', '{}', 'now')").run();
    db.prepare(
      "INSERT INTO workflow_executions (execution_id, workflow_name, definition_hash, state, started_at, updated_at) VALUES ('e', 'w', 'h', 'completed', 'now', 'now')",
    ).run();
    expect(() =>
      db.prepare("UPDATE workflow_executions SET state = 'running' WHERE execution_id = 'e'").run(),
    ).toThrow(/invalid state transition/);
    expect(() =>
      db.prepare("UPDATE workflow_executions SET state = 'bogus' WHERE execution_id = 'e'").run(),
    ).toThrow();
    db.prepare("INSERT INTO schema_migrations VALUES (99, 'future', 'now')").run();
    db.close();
    expect(() => new SqliteExecutionStore(dir)).toThrow(/newer workflowlookup/);
  });
});
