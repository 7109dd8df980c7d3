import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { delegationFacts, delegationProblems, pgQuery } from './helpers/delegation-checks.js';
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

/** `workflows`: more definitions (file name to YAML) in the runtime dir every replica reads. */
async function cluster(
  count: number,
  workflows: Record<string, string> = {},
): Promise<{ env: Record<string, string>; urls: string[]; database: string }> {
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SECRET, WORKFLOWLOOKUP_RATE_LIMIT: '0' });
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  for (const [file, yaml] of Object.entries(workflows)) writeFileSync(join(sb.runtime, file), yaml);
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
  return { env, urls, database: url };
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

// Children that end at the same moment on different replicas: each child's ending transaction takes its
// parent's row lock (src/executions/delegation.ts), so the join completes the parent's step exactly once.

/** How many times each race runs (more with WORKFLOWLOOKUP_REPLICA_RACES). */
const RACES = Number(process.env.WORKFLOWLOOKUP_REPLICA_RACES ?? 3);

const RACE_CHILD = `id: race-child
name: Race child
description: Two steps; the second ends the child
version: 1.0.0
steps:
  - { id: first, title: First, prompt: Do your part. }
  - { id: last, title: Last, prompt: Report it. }
`;

const RACE_PARENT = (join: 'all' | 'any', count: number) => `id: race-${join}
name: Race (${join})
description: ${count} children at once, joined with ${join}
version: 1.0.0
steps:
  - id: fan
    title: Fan out
    prompt: One worker per child.
    delegate: { workflow: race-child, count: ${count}, join: ${join} }
  - { id: after, title: After, prompt: Combine the results in context.fan. }
`;

/**
 * Holds a row lock (as a server's transaction does) from a connection of its own until `release`: calls
 * that need the row queue behind it, so they go on at the same moment. The execution's row by default;
 * `seq`: its step's row instead (a submission then holds its execution and waits for its step).
 */
async function barrier(database: string, executionId: string, seq?: number) {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  await client.query('BEGIN');
  if (seq === undefined)
    await client.query('SELECT 1 FROM workflow_executions WHERE execution_id = $1 FOR NO KEY UPDATE', [
      executionId,
    ]);
  else
    await client.query(
      'SELECT 1 FROM workflow_steps WHERE execution_id = $1 AND seq = $2 FOR NO KEY UPDATE',
      [executionId, seq],
    );
  return {
    /** Waits until `count` transactions of the servers wait on a row lock. */
    async queued(count: number) {
      for (let i = 0; ; i++) {
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        );
        if ((rows[0] as { n: number }).n >= count) return;
        if (i > 1000) throw new Error(`only ${(rows[0] as { n: number }).n} of ${count} calls queued`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async release() {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/**
 * One race: a parent delegates to its children, child i on replica i % 3; each child is walked to its last
 * step on its replica; the last steps are sent together while the parent's row is held, so all of them
 * wait on it, and go on when it is released. Answers each child's last answer, the parent's id and its
 * wait call.
 */
async function race(urls: string[], database: string, join: 'all' | 'any') {
  const started = await call(urls[0] as string, 'workflow_start', { workflow_name: `race-${join}` });
  expect(started.step_status, JSON.stringify(started)).toBe('delegated');
  const handed = (started.next as Json[]).slice(0, -1);
  const wait = (started.next as Json[]).at(-1) as Json;
  const tokens = await Promise.all(
    handed.map(async (h, i) => {
      const url = urls[i % urls.length] as string;
      const resumed = await call(url, h.tool, h.arguments);
      const first = await call(url, 'workflow_next_step', {
        token: tokenOf(resumed),
        output: { summary: `child ${i}: part done` },
      });
      expect(first.step_name, JSON.stringify(first)).toBe('last');
      return tokenOf(first);
    }),
  );
  const held = await barrier(database, started.execution_id);
  const last = tokens.map((token, i) =>
    call(urls[i % urls.length] as string, 'workflow_next_step', {
      token,
      output: { summary: `child ${i}: reported` },
    }),
  );
  try {
    // Every child's transaction has ended its child and waits on the parent's row.
    await held.queued(tokens.length);
  } finally {
    await held.release();
  }
  return { answers: await Promise.all(last), parentId: started.execution_id as string, wait };
}

/** What the store holds of a parent and its children, read from the database. */
async function factsOf(database: string, parentId: string) {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    return await delegationFacts(pgQuery(client), parentId);
  } finally {
    await client.end();
  }
}

/** What is inconsistent about a parent and its children (delegationProblems). */
async function problemsOf(database: string, parentId: string, join: 'all' | 'any', count: number) {
  return delegationProblems(await factsOf(database, parentId), { step: 'fan', after: 'after', join, count });
}

/** The race's parent joined once: consistent, one join, its step completed once, the next entered once. */
async function joinedOnce(database: string, parentId: string, join: 'all' | 'any', count: number) {
  const facts = await factsOf(database, parentId);
  expect(delegationProblems(facts, { step: 'fan', after: 'after', join, count })).toEqual([]);
  expect(facts.joined).toBe(1);
  const steps = facts.parent?.steps ?? [];
  expect(steps.filter((s) => s.step_name === 'fan').map((s) => s.status)).toEqual(['completed']);
  expect(steps.filter((s) => s.step_name === 'after').map((s) => s.status)).toEqual(['running']);
  return facts;
}

/** The wait call sent to every replica at once: one answer, the join's, from each. */
async function sameWaitAnswer(urls: string[], wait: Json): Promise<Json> {
  const answers = await Promise.all(urls.map((url) => call(url, wait.tool, wait.arguments)));
  expect(answers[0]).toMatchObject({ success: true, step_name: 'after' });
  for (const a of answers.slice(1)) expect(a).toEqual(answers[0]);
  return answers[0] as Json;
}

describe.skipIf(pgServer.url === undefined)('delegation across replicas on one PostgreSQL', () => {
  const runsAgain = () => replicas.map((r) => r.stderr().match(/runs again/g)?.length ?? 0);

  it(`join all: 6 children ending at the same moment on 3 replicas join their parent once (${RACES} races)`, {
    timeout: 30_000 + RACES * 5_000,
  }, async () => {
    const { urls, database, env } = await cluster(3, {
      'race-child.yaml': RACE_CHILD,
      'race-all.yaml': RACE_PARENT('all', 6),
    });
    let lastParent = '';
    for (let n = 0; n < RACES; n++) {
      const { answers, parentId, wait } = await race(urls, database, 'all');
      for (const a of answers)
        expect(a, JSON.stringify(a)).toMatchObject({ success: true, workflow_state: 'completed' });
      const facts = await joinedOnce(database, parentId, 'all', 6);
      // Each child told its parent once, one after another under the parent's lock.
      expect([...facts.ended.values()]).toEqual([1, 1, 1, 1, 1, 1]);
      await sameWaitAnswer(urls, wait);
      lastParent = parentId;
    }
    // The parent's record, chained by three replicas at once (each child's end appended under the
    // parent's lock), is one unbroken chain: exported from PostgreSQL and verified.
    const operator = { ...sb.env, ...env, WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'operator') };
    const exported = spawnSync(process.execPath, [CLI, 'record', lastParent], {
      env: operator,
      encoding: 'utf8',
    });
    expect(exported.status, exported.stderr).toBe(0);
    const verified = spawnSync(process.execPath, [CLI, 'verify', '-', '--execution', lastParent], {
      env: operator,
      input: exported.stdout,
      encoding: 'utf8',
    });
    expect(verified.status, verified.stderr).toBe(0);
    const events = JSON.parse(
      Buffer.from(JSON.parse(exported.stdout).dsseEnvelope.payload, 'base64').toString('utf8'),
    ).predicate.events as { type: string }[];
    expect(events.filter((e) => e.type === 'child_ended')).toHaveLength(6);
    process.stderr.write(
      `join all: ${RACES} races; transactions run again per replica: ${runsAgain().join(', ')}\n`,
    );
  });

  it(`join any: of 3 children ending at the same moment on 3 replicas the first joins, the others are abandoned once (${RACES} races)`, {
    timeout: 30_000 + RACES * 10_000,
  }, async () => {
    const { urls, database } = await cluster(3, {
      'race-child.yaml': RACE_CHILD,
      'race-any.yaml': RACE_PARENT('any', 3),
    });
    for (let n = 0; n < RACES; n++) {
      const { answers, parentId, wait } = await race(urls, database, 'any');
      const won = answers.filter((a) => a.success === true);
      expect(won, JSON.stringify(answers)).toHaveLength(1);
      expect(won[0]).toMatchObject({ workflow_state: 'completed' });
      // The others were abandoned by the join before their last step could complete them.
      for (const a of answers.filter((x) => x.success !== true))
        expect(a.error?.data, JSON.stringify(a)).toMatchObject({
          error_code: 'EXECUTION_STATE_CONFLICT',
          state: 'abandoned',
        });
      const facts = await joinedOnce(database, parentId, 'any', 3);
      for (const c of facts.children.filter((x) => x.state === 'abandoned'))
        expect(
          c.moves.filter((m) => m === 'abandoned'),
          c.id,
        ).toHaveLength(1);
      await sameWaitAnswer(urls, wait);
    }
    process.stderr.write(
      `join any: ${RACES} races; transactions run again per replica: ${runsAgain().join(', ')}\n`,
    );
  });
});

// Races a replica meets when a child ends while its parent's join, pause or end moves its children: each
// was a bug once (a busy mark shared by the process; child-then-parent row locks against parent-then-child).

/** A parent with two children on one replica; `b` is walked to its last step, `a` as far as `aSteps`. */
async function twoChildren(url: string, join: 'all' | 'any', aSteps: 1 | 2) {
  const started = await call(url, 'workflow_start', { workflow_name: `race-${join}` });
  const [a, b, wait] = started.next as Json[];
  const walk = async (handed: Json, steps: number, label: string) => {
    let answer = await call(url, handed.tool, handed.arguments);
    for (let i = 0; i < steps; i++)
      answer = await call(url, 'workflow_next_step', {
        token: tokenOf(answer),
        output: { summary: `${label}: step ${i + 1}` },
      });
    return answer;
  };
  const aAt = await walk(a as Json, aSteps === 2 ? 2 : 1, 'a');
  const bAt = await walk(b as Json, 1, 'b');
  expect(bAt.step_name).toBe('last');
  return {
    parentId: started.execution_id as string,
    wait: wait as Json,
    a: { id: (a as Json).arguments.execution_id as string, answer: aAt },
    b: { id: (b as Json).arguments.execution_id as string, token: tokenOf(bAt) },
  };
}

describe.skipIf(pgServer.url === undefined)('delegation: a child ending while its parent moves', () => {
  it('a parent paused while its last child ends on the same replica learns of the end and joins', async () => {
    const { urls, database } = await cluster(1, {
      'race-child.yaml': RACE_CHILD,
      'race-all.yaml': RACE_PARENT('all', 2),
    });
    const url = urls[0] as string;
    const { parentId, wait, a, b } = await twoChildren(url, 'all', 2);
    expect(a.answer.workflow_state).toBe('completed');
    // b's last step holds the parent's row and b's, and waits for its step's row; the parent's pause (on
    // the same replica) waits for the parent's row.
    const held = await barrier(database, b.id, 2);
    const ending = call(url, 'workflow_next_step', { token: b.token, output: { summary: 'b: done' } });
    await held.queued(1);
    const pausing = call(url, 'workflow_set_state', { execution_id: parentId, state: 'paused' });
    await held.queued(2);
    await held.release();
    // Either order is right: b completed (and told its parent) before the pause, or the pause came first
    // and paused b, whose last step is then refused until the parent runs again.
    const ended = await ending;
    if (ended.error !== undefined) expect(ended.error.data).toMatchObject({ state: 'paused' });
    else expect(ended).toMatchObject({ success: true, workflow_state: 'completed' });
    expect((await pausing).error).toBeUndefined();
    const running = await call(url, 'workflow_set_state', { execution_id: parentId, state: 'running' });
    expect(running.error).toBeUndefined();
    if (ended.error !== undefined)
      expect(
        await call(url, 'workflow_next_step', { token: b.token, output: { summary: 'b: done' } }),
      ).toMatchObject({ workflow_state: 'completed' });
    expect(await problemsOf(database, parentId, 'all', 2)).toEqual([]);
    expect(await call(url, wait.tool, wait.arguments)).toMatchObject({ success: true, step_name: 'after' });
  });

  it('join any on one replica: a child ending while the join abandons it is refused, and its parent records it abandoned', async () => {
    const { urls, database } = await cluster(1, {
      'race-child.yaml': RACE_CHILD,
      'race-any.yaml': RACE_PARENT('any', 2),
    });
    const url = urls[0] as string;
    const { parentId, a, b } = await twoChildren(url, 'any', 1);
    expect(a.answer.step_name).toBe('last');
    // b's last step holds the parent's row and b's, waiting for its step's; a's last step waits for the
    // parent's row, then finds a abandoned by b's join.
    const held = await barrier(database, b.id, 2);
    const bEnding = call(url, 'workflow_next_step', { token: b.token, output: { summary: 'b: done' } });
    await held.queued(1);
    const aEnding = call(url, 'workflow_next_step', {
      token: tokenOf(a.answer),
      output: { summary: 'a: done' },
    });
    await held.queued(2);
    await held.release();
    // One of them joins; the other is abandoned (its last step refused).
    const answers = [await aEnding, await bEnding];
    expect(
      answers.filter((x) => x.success === true),
      JSON.stringify(answers),
    ).toHaveLength(1);
    expect(await problemsOf(database, parentId, 'any', 2)).toEqual([]);
  });

  it('join any across replicas: the children ending at once never deadlock', async () => {
    const { urls, database } = await cluster(3, {
      'race-child.yaml': RACE_CHILD,
      'race-any.yaml': RACE_PARENT('any', 3),
    });
    const { answers, parentId } = await race(urls, database, 'any');
    expect(answers.filter((x) => x.success === true)).toHaveLength(1);
    await joinedOnce(database, parentId, 'any', 3);
    // Every transaction locks the parent's row before a child's, so the join that abandons the siblings
    // never waits on a sibling that waits on the parent: PostgreSQL never has a cycle to break.
    expect(replicas.map((r) => r.stderr().match(/runs again .*deadlock/g)?.length ?? 0)).toEqual([0, 0, 0]);
  });
});
