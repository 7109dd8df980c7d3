import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordReliability } from './helpers/reliability.js';
import { FIXTURES, RawServer, type Sandbox, tokenOf } from './helpers/server.js';
import { apiSandbox, type TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

/** Kills per run: a few in `npm test`, 100 in `npm run soak` (which .ci/run calls). */
const KILLS = Number(process.env.WORKFLOWLOOKUP_SOAK_KILLS ?? 12);
const EXECUTIONS = 3;

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

let sb: Sandbox;
let api: TasksApi;
let ids = 0;

async function rpc(s: RawServer, method: string, params: Json): Promise<Json> {
  const res = await s.request(`r${ids++}`, method, params);
  return res.error ? { error: res.error } : (res.result as Json);
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

beforeAll(async () => {
  ({ api, sb } = await apiSandbox());
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  writeFileSync(join(sb.runtime, 'soak-loop.yaml'), SOAK_WORKFLOW);
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
  it(`${KILLS} SIGKILLs at random moments during streams of next_step calls and command steps lose nothing acknowledged`, {
    timeout: 30_000 + KILLS * 3_000,
  }, async ({ task }) => {
    /**
     * What the client knows for sure about each execution: steps acknowledged, the token to continue with.
     * Executions get client-chosen ids, so a start killed before it answered can be retried safely.
     */
    const known = new Map<string, { acknowledged: number; token: string | null; task: string }>();
    let checks = 0;
    let next = 0;
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
      await new Promise((r) => setTimeout(r, 20 + Math.floor(Math.random() * 200)));
      s.child.kill('SIGKILL');
      await s.exited;
      await Promise.allSettled(streams);
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
    s.kill();
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
    recordReliability(
      task,
      `SIGKILL during next_step streams and command steps (${process.env.WORKFLOWLOOKUP_SOAK_KILLS ? 'npm run soak' : 'npm test'})`,
      KILLS,
      KILLS,
    );
    expect(checks).toBeGreaterThan(0);
  });
});
