import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trustedKeysFrom } from '../src/record/keys.js';
import { verifyRecord } from '../src/record/verify.js';
import { delegationFacts, delegationProblems, type Query, sqliteQuery } from './helpers/delegation-checks.js';
import { recordReliability } from './helpers/reliability.js';
import { CLI, FIXTURES, RawServer, type Sandbox, tokenOf } from './helpers/server.js';
import { apiSandbox, type TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

/** Kills per run: a few in `npm test`, 100 in `npm run soak` (which .ci/run calls). */
const KILLS = Number(process.env.WORKFLOWLOOKUP_SOAK_KILLS ?? 12);
const EXECUTIONS = 3;
/** Delegating parents kept going at once (each with three children and their workers). */
const PARENTS = 2;

const SOAK_WORKFLOW = `id: soak-loop
name: Soak loop
description: A command step, then a long loop of agent steps, for the kill soak
version: 1.0.0
steps:
  - id: fetch
    title: Fetch a task
    run: tasks-api get-task
    with: { taskId: "\${{ inputs.task }}" }
  - id: grind
    type: loop
    title: Grind
    loop: { type: while, condition: { var: more, equals: true }, maxIterations: 10000 }
    body:
      - { id: tick, title: Tick, prompt: Do one unit of work. }
  - { id: wrap-up, title: Wrap up, prompt: Summarize. }
inputs:
  task: { type: string, description: Task to fetch, required: true }
`;

const CHILD_WORKFLOW = `id: soak-child
name: Soak child
description: Three steps a worker walks, for the kill soak's delegations
version: 1.0.0
steps:
  - { id: read, title: Read, prompt: Read your part of the work. }
  - { id: change, title: Change, prompt: Change it. }
  - { id: report, title: Report, prompt: Report what you did. }
`;

const JOINS = ['all', 'any'] as const;
type Join = (typeof JOINS)[number];
const FAN_WORKFLOW = (join: Join) => `id: soak-fan-${join}
name: Soak fan-out (${join})
description: A plan, three children each walked by a worker, the join (${join}), then one more step
version: 1.0.0
steps:
  - { id: plan, title: Plan, prompt: Plan the work. }
  - id: fan
    title: Fan out
    prompt: Three workers take a part each.
    delegate: { workflow: soak-child, count: 3, join: ${join} }
  - { id: after, title: After, prompt: Combine the results in context.fan. }
`;
const SHAPE = { step: 'fan', after: 'after', count: 3 };

/**
 * One execution of a delegation as its client knows it: the steps it saw acknowledged, the token to go on
 * with, and the output of a submission sent but not answered (a kill came first): sent again as it was
 * after the restart, it is either replayed or done now, never done twice.
 */
interface Walker {
  id: string;
  acknowledged: number;
  token: string | null;
  pending: Json | null;
  ended: boolean;
  /** A worker (or the orchestrator) is on it in this round. */
  busy: boolean;
}

/** A delegating parent: its orchestrator knows its children once an answer named them. */
interface Parent extends Walker {
  join: Join;
  children: Map<string, Walker> | undefined;
  /** Found completed with all its children ended: nothing can change it any more, so no round checks it again. */
  settled: boolean;
}

let sb: Sandbox;
let api: TasksApi;
let ids = 0;

async function rpc(s: RawServer, method: string, params: Json): Promise<Json> {
  const res = await s.request(`r${ids++}`, method, params);
  return res.error ? { error: res.error } : (res.result as Json);
}

/** The CLI on the soak's data dir (the server is stopped first: nothing else writes meanwhile). */
function cli(args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { env: sb.env, cwd: sb.project, encoding: 'utf8' });
}

async function server(): Promise<RawServer> {
  const s = new RawServer({ env: sb.env, cwd: sb.project });
  await s.initialize();
  return s;
}

async function history(s: RawServer, executionId: string): Promise<Json[]> {
  const res = (await s.request(`h${ids++}`, 'resources/read', {
    uri: `workflowlookup://workflow/step_history/${executionId}`,
  })) as Json;
  return JSON.parse(res.result.contents[0].text);
}

/**
 * A stream, worker or orchestrator of a round: the kill makes its call fail (the server exited before
 * answering), which is expected; anything else is a failure of the test, kept to be reported.
 */
const failures: unknown[] = [];
function survive(run: Promise<unknown>): Promise<unknown> {
  return run.catch((error: unknown) => {
    if (!/server exited before answering/.test(String((error as Error)?.message))) failures.push(error);
  });
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const walker = (id: string): Walker => ({
  id,
  acknowledged: 0,
  token: null,
  pending: null,
  ended: false,
  busy: false,
});

/** A worker: walks its child with next_step (a pause before each, as an agent works) until the child ends. */
async function work(s: RawServer, w: Walker): Promise<void> {
  if (w.ended || w.busy) return;
  w.busy = true;
  try {
    if (w.token === null) {
      const resumed = await rpc(s, 'workflow_resume', { execution_id: w.id });
      expect(resumed.error, JSON.stringify(resumed.error)).toBeUndefined();
      if (resumed.workflow_state !== 'running') {
        w.ended = true;
        return;
      }
      w.token = tokenOf(resumed);
    }
    for (let n = 0; n < 10 && !w.ended; n++) {
      await pause(Math.floor(Math.random() * 10));
      const output = w.pending ?? { summary: `part ${w.acknowledged + 1} done` };
      w.pending = output;
      const res = await rpc(s, 'workflow_next_step', { token: w.token, output });
      w.pending = null;
      if (res.error !== undefined) {
        // Its parent joined on another child (any) and abandoned this one.
        expect(res.error.data?.error_code, JSON.stringify(res.error)).toBe('EXECUTION_STATE_CONFLICT');
        w.ended = true;
        return;
      }
      expect(res.success, JSON.stringify(res)).toBe(true);
      w.acknowledged++;
      if (res.workflow_state !== 'running') w.ended = true;
      else w.token = tokenOf(res);
    }
  } finally {
    w.busy = false;
  }
}

/**
 * An orchestrator: submits the plan (the step before the delegating one), hands each child it is told of
 * to a worker, polls the join with the wait call, then does the step after it.
 */
async function orchestrate(s: RawServer, p: Parent, workers: Promise<unknown>[], polls = 400): Promise<void> {
  if (p.ended || p.busy || p.token === null) return;
  p.busy = true;
  try {
    for (let n = 0; n < polls && !p.ended; n++) {
      const stage = p.acknowledged;
      const output =
        p.pending ??
        (stage === 0
          ? { summary: 'planned' }
          : stage === 1
            ? { summary: 'waiting for the children' }
            : { summary: 'combined' });
      p.pending = output;
      const res = await rpc(s, 'workflow_next_step', { token: p.token, output });
      p.pending = null;
      expect(res.error, JSON.stringify(res.error)).toBeUndefined();
      if (stage === 0) {
        expect(res.step_status, JSON.stringify(res)).toBe('delegated');
        const named = (res.delegation.children as Json[]).map((c) => c.execution_id as string);
        // A replayed answer names the same children: the step created them once.
        if (p.children !== undefined) expect(named.sort()).toEqual([...p.children.keys()].sort());
        p.children ??= new Map(named.map((id) => [id, walker(id)]));
        for (const handed of res.next as Json[]) {
          const child = p.children.get(handed.arguments.execution_id);
          if (handed.tool === 'workflow_resume' && child !== undefined) workers.push(survive(work(s, child)));
        }
        p.acknowledged = 1;
        p.token = tokenOf(res);
      } else if (stage === 1) {
        if (res.step_name === 'after') {
          expect(res.success, JSON.stringify(res)).toBe(true);
          p.acknowledged = 2;
          p.token = tokenOf(res);
        } else {
          expect(res.step_status, JSON.stringify(res)).toBe('delegated');
          if (tokenOf(res)) p.token = tokenOf(res);
          await pause(10);
        }
      } else {
        expect(res.workflow_state, JSON.stringify(res)).toBe('completed');
        p.acknowledged = 3;
        p.ended = true;
      }
    }
  } finally {
    p.busy = false;
  }
}

/**
 * After a restart: what the store holds of every parent and child agrees with itself (delegationProblems)
 * and with what their clients were told (nothing acknowledged lost, the children an answer named are the
 * children there are); a parent whose start never committed is started again with its id.
 */
async function checkParents(s: RawServer, query: Query, parents: Parent[]): Promise<number> {
  let checked = 0;
  for (const p of parents) {
    if (p.settled) continue;
    if (!p.ended) {
      let resumed = await rpc(s, 'workflow_resume', { execution_id: p.id });
      if (resumed.error?.data?.error_code === 'EXECUTION_NOT_FOUND') {
        expect(p.acknowledged).toBe(0);
        resumed = await rpc(s, 'workflow_start', { workflow_name: `soak-fan-${p.join}`, execution_id: p.id });
      }
      expect(resumed.error, JSON.stringify(resumed.error)).toBeUndefined();
      expect(['running', 'completed']).toContain(resumed.workflow_state);
      // The start was not answered: its token is the plan's.
      p.token ??= tokenOf(resumed);
    }
    const facts = await delegationFacts(query, p.id);
    expect(delegationProblems(facts, { ...SHAPE, join: p.join }), p.id).toEqual([]);
    const parent = facts.parent;
    expect(parent, p.id).toBeDefined();
    expect(parent?.steps.filter((x) => x.status === 'completed').length).toBeGreaterThanOrEqual(
      p.acknowledged,
    );
    if (p.ended) expect(parent?.state).toBe('completed');
    if (p.children !== undefined) {
      expect(facts.children.map((c) => c.id).sort()).toEqual([...p.children.keys()].sort());
      for (const c of facts.children) {
        const w = p.children.get(c.id) as Walker;
        expect(c.steps.filter((x) => x.status === 'completed').length).toBeGreaterThanOrEqual(w.acknowledged);
        if (w.ended) expect(['completed', 'abandoned']).toContain(c.state);
      }
    }
    p.settled = parent?.state === 'completed' && facts.children.every((c) => c.state !== 'running');
    checked++;
  }
  return checked;
}

beforeAll(async () => {
  ({ api, sb } = await apiSandbox());
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  writeFileSync(join(sb.runtime, 'soak-loop.yaml'), SOAK_WORKFLOW);
  writeFileSync(join(sb.runtime, 'soak-child.yaml'), CHILD_WORKFLOW);
  for (const j of JOINS) writeFileSync(join(sb.runtime, `soak-fan-${j}.yaml`), FAN_WORKFLOW(j));
  const setup = await server();
  const imported = await rpc(setup, 'catalog_import_openapi', {
    source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
    catalog_title: 'Tasks API',
    base_url: api.baseUrl,
  });
  expect(imported.error).toBeUndefined();
  setup.kill();
});

afterAll(async () => {
  await api.stop();
  sb.cleanup();
});

describe('kill soak', () => {
  it(`${KILLS} SIGKILLs at random moments during streams of next_step calls, command steps and delegations lose nothing acknowledged`, {
    // A hang detector, not a speed check: 12 kills take about 25 s on an idle 2-core machine, and more than
    // 66 s (the old 30 s + 3 s a kill) with a second suite running beside this one.
    timeout: 120_000 + KILLS * 10_000,
  }, async ({ task }) => {
    /**
     * What the client knows for sure about each execution: steps acknowledged, the token to continue with.
     * Executions get client-chosen ids, so a start killed before it answered can be retried safely.
     */
    const known = new Map<string, { acknowledged: number; token: string | null; task: string }>();
    const parents: Parent[] = [];
    const database = join(sb.env.WORKFLOWLOOKUP_DATA_DIR as string, 'workflowlookup.db');
    let checks = 0;
    let next = 0;
    /** Where the kills landed in the delegations: parents waiting on children, child steps and plans in flight. */
    const landed = { kills: 0, waiting: 0, childSteps: 0, creating: 0, lastSteps: 0 };
    for (let kill = 0; kill < KILLS; kill++) {
      const s = await server();
      // Bring every known execution back, checking that nothing acknowledged was lost.
      for (const [id, k] of known) {
        let resumed = await rpc(s, 'workflow_resume', { execution_id: id });
        if (resumed.error?.data?.error_code === 'EXECUTION_NOT_FOUND') {
          // Killed before the start committed: nothing was acknowledged, so start it again.
          expect(k.acknowledged).toBe(0);
          resumed = await rpc(s, 'workflow_start', {
            workflow_name: 'soak-loop',
            execution_id: id,
            inputs: { task: k.task },
            context: { more: true },
          });
        }
        expect(resumed.error, JSON.stringify(resumed.error)).toBeUndefined();
        expect(resumed.workflow_state).toBe('running');
        const steps = await history(s, id);
        expect(steps.map((x) => x.seq)).toEqual(steps.map((_, i) => i + 1));
        const completed = steps.filter((x) => x.status === 'completed').length;
        expect(completed).toBeGreaterThanOrEqual(k.acknowledged);
        expect(steps.filter((x) => x.status === 'running')).toHaveLength(1);
        k.acknowledged = completed;
        k.token = tokenOf(resumed);
        checks++;
      }
      // The store opens on first use: there is none until an execution started.
      if (existsSync(database)) {
        const db = sqliteQuery(database);
        try {
          checks += await checkParents(s, db.query, parents);
        } finally {
          db.close();
        }
      }
      // New executions start with a command step (some are killed mid-call); the rest stream next_step calls.
      const streams: Promise<unknown>[] = [];
      if (kill % 3 === 0 && known.size < EXECUTIONS * 4) {
        for (let i = 0; i < EXECUTIONS; i++) {
          const id = `soak-${next++}`;
          const k = { acknowledged: 0, token: null as string | null, task: i === 0 ? 'slow' : `t${i}` };
          known.set(id, k);
          streams.push(
            rpc(s, 'workflow_start', {
              workflow_name: 'soak-loop',
              execution_id: id,
              inputs: { task: k.task },
              context: { more: true },
            }).then((started) => {
              if (tokenOf(started)) k.token = tokenOf(started);
            }),
          );
        }
      }
      for (const [, k] of known) {
        streams.push(
          (async () => {
            for (let n = 0; n < 10_000 && k.token; n++) {
              const res = await rpc(s, 'workflow_next_step', {
                token: k.token,
                output: { summary: `tick ${n}` },
              });
              if (!tokenOf(res)) return;
              k.token = tokenOf(res);
              k.acknowledged++;
            }
          })(),
        );
      }
      // Delegations: parents already known go on (their workers with them), and new ones start until
      // PARENTS are under way; the orchestrators and workers share the server's pipe with the streams.
      const workers: Promise<unknown>[] = [];
      for (const p of parents) {
        for (const w of p.children?.values() ?? []) workers.push(survive(work(s, w)));
        streams.push(survive(orchestrate(s, p, workers)));
      }
      for (let open = parents.filter((p) => !p.ended).length; open < PARENTS; open++) {
        const p: Parent = {
          ...walker(`soak-fan-${parents.length}`),
          join: JOINS[parents.length % 2] as Join,
          settled: false,
          children: undefined,
        };
        parents.push(p);
        streams.push(
          survive(
            rpc(s, 'workflow_start', { workflow_name: `soak-fan-${p.join}`, execution_id: p.id }).then(
              (started) => {
                p.token = tokenOf(started);
                return orchestrate(s, p, workers);
              },
            ),
          ),
        );
      }
      await pause(20 + Math.floor(Math.random() * 200));
      s.child.kill('SIGKILL');
      for (const p of parents.filter((x) => !x.ended)) {
        const children = [...(p.children?.values() ?? [])];
        if (p.acknowledged === 1) landed.waiting++;
        if (p.acknowledged === 0 && p.pending !== null) landed.creating++;
        landed.childSteps += children.filter((c) => c.pending !== null).length;
        // A child's last step tells its parent, and joins it when it is the last (all) or the first (any).
        landed.lastSteps += children.filter((c) => c.pending !== null && c.acknowledged === 2).length;
      }
      if (parents.some((p) => !p.ended && (p.acknowledged === 1 || (p.acknowledged === 0 && p.pending))))
        landed.kills++;
      await s.exited;
      await Promise.allSettled(streams);
      await Promise.allSettled(workers);
      expect(failures).toEqual([]);
    }
    // Finally every execution can run to completion.
    const s = await server();
    for (const [id, k] of known) {
      let resumed = await rpc(s, 'workflow_resume', { execution_id: id });
      if (resumed.error?.data?.error_code === 'EXECUTION_NOT_FOUND') {
        const started = await rpc(s, 'workflow_start', {
          workflow_name: 'soak-loop',
          execution_id: id,
          inputs: { task: k.task },
          context: { more: true },
        });
        resumed = started;
      }
      const last = await rpc(s, 'workflow_next_step', {
        token: tokenOf(resumed),
        output: { summary: 'stop', context: { more: false } },
      });
      expect(last.step_name, JSON.stringify(last)).toBe('wrap-up');
      const done = await rpc(s, 'workflow_next_step', { token: tokenOf(last), output: { summary: 'done' } });
      expect(done.workflow_state).toBe('completed');
    }
    // Every parent completes once its children do: the workers finish them, the orchestrators their parents.
    const db = sqliteQuery(database);
    try {
      await checkParents(s, db.query, parents);
      const workers: Promise<unknown>[] = [];
      for (const p of parents) for (const w of p.children?.values() ?? []) workers.push(work(s, w));
      await Promise.all(parents.map((p) => orchestrate(s, p, workers, 3_000)));
      await Promise.all(workers);
      expect(failures).toEqual([]);
      for (const p of parents) p.settled = false;
      await checkParents(s, db.query, parents);
      for (const p of parents) {
        expect(p.ended, p.id).toBe(true);
        const facts = await delegationFacts(db.query, p.id);
        expect(facts.joined, p.id).toBe(1);
        expect(facts.children.map((c) => c.state).sort(), p.id).toEqual(
          p.join === 'all'
            ? ['completed', 'completed', 'completed']
            : ['abandoned', 'abandoned', 'completed'],
        );
      }
    } finally {
      db.close();
    }
    s.kill();
    // Each parent's record, chained in the same transactions the kills cut short, is one unbroken chain:
    // what a killed transaction appended went with it, what committed stayed.
    const trusted = trustedKeysFrom(cli(['keys']).stdout, 'keys');
    for (const p of parents.slice(0, 6)) {
      const exported = cli(['record', p.id]);
      expect(exported.status, exported.stderr).toBe(0);
      expect(
        verifyRecord(exported.stdout, { keys: trusted, execution: p.id, require: ['completed'] }),
      ).toMatchObject({
        ok: true,
      });
    }
    // A command step killed in flight was re-sent with the same Idempotency-Key: one key per logical call.
    const keys = new Map<string, Set<string>>();
    for (const r of api.requests.filter((q) => q.url.startsWith('/api/tasks/'))) {
      const key = String(r.headers['idempotency-key']);
      const [exec, seq] = key.split(':');
      const call = `${exec}:${seq}`;
      keys.set(call, (keys.get(call) ?? new Set()).add(key));
    }
    for (const [call, set] of keys) expect(set.size, call).toBe(1);
    expect(known.size).toBeGreaterThan(0);
    // The kills land among delegations under way (parents starting, creating their children, waiting on
    // children their workers advance, joining; `landed` counts the kills that found one creating or
    // waiting), and each restart found every parent and child consistent (delegationProblems).
    const run = process.env.WORKFLOWLOOKUP_SOAK_KILLS ? 'npm run soak' : 'npm test';
    recordReliability(
      task,
      `SIGKILL during next_step streams, command steps and delegations (${run})`,
      KILLS,
      KILLS,
    );
    process.stderr.write(
      `kill soak: ${KILLS} kills, ${parents.length} delegating parents (${parents.length * 3} children); kills during a delegation ${landed.kills}: parents waiting ${landed.waiting}, plans (creating children) in flight ${landed.creating}, child steps in flight ${landed.childSteps}, children's last steps in flight ${landed.lastSteps}\n`,
    );
    expect(checks).toBeGreaterThan(0);
    // Most kills land while a parent creates its children or waits on them.
    if (KILLS >= 10) expect(landed.kills).toBeGreaterThan(KILLS / 3);
  });
});
