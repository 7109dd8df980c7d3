import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RawServer, type Sandbox, sandbox } from './helpers/server.js';
import { apiEnv, lines, setUpWorkflows, TaskClient } from './helpers/tasks.js';
import { TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

let sb: Sandbox;
let api: TasksApi;
let env: Record<string, string>;
const clients: TaskClient[] = [];

const TWO_CALLS = lines(
  'id: two-calls',
  'name: Two calls',
  'description: A slow call, then a quick one',
  'version: 1.0.0',
  'final_output: { first: "${{ steps.fetch-slow.output.id }}", second: "${{ steps.fetch-t1.output.id }}" }',
  'steps:',
  '  - { id: fetch-slow, title: Fetch a slow task, run: tasks-api get-task, with: { taskId: slow } }',
  '  - { id: fetch-t1, title: Fetch t1, run: tasks-api get-task, with: { taskId: t1 } }',
);

beforeAll(async () => {
  sb = sandbox();
  api = new TasksApi();
  await api.start();
  env = apiEnv(sb, api);
  await setUpWorkflows(sb, env, api, [TWO_CALLS]);
});
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});
afterAll(async () => {
  await api.stop();
  sb.cleanup();
});

async function client(capabilities: Json = {}) {
  // Killed and restarted: a process.
  const c = await TaskClient.start(sb, env, capabilities, undefined, { process: true });
  clients.push(c);
  return c;
}

async function until(condition: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('restart safety: tasks and runs live in the store', () => {
  it('resumes a run whose server was SIGKILLed mid-call; tasks/get answers throughout; nothing vanishes', async () => {
    const first = await client();
    const earlier = await first.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'two-calls' },
      task: { ttl: 600_000 },
    });
    await first.rpc('tasks/result', { taskId: earlier.result.task.taskId });
    const before = api.requests.length;
    const created = await first.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'two-calls' },
      task: { ttl: 600_000 },
    });
    const { taskId } = created.result.task;
    const runId = created.result._meta['workflowlookup/run'].run_id;
    await until(() => api.requests.slice(before).some((r) => r.url.endsWith('/tasks/slow')), 'the slow call');
    first.server.kill();
    await (first.server as RawServer).exited;

    const second = await client();
    // The task is still there: the restarted server answers for it at once, then resumes the run.
    const seen = await second.rpc('tasks/get', { taskId });
    expect(seen.result).toMatchObject({ taskId, status: expect.stringMatching(/working|completed/) });
    const done = await second.poll(taskId, (t) => t.status === 'completed');
    expect(done._meta['workflowlookup/status']).toMatchObject({ run_id: runId, state: 'succeeded' });
    const result = await second.rpc('tasks/result', { taskId });
    expect(result.result.structuredContent).toMatchObject({
      run_id: runId,
      state: 'succeeded',
      outputs: { first: 'slow', second: 't1' },
      commands_run: 2,
    });
    // The interrupted call was made again with the same idempotency key; the next one once.
    const calls = api.requests.slice(before);
    const slow = calls.filter((r) => r.url.endsWith('/tasks/slow'));
    expect(slow.length).toBe(2);
    expect(slow[1]?.headers['idempotency-key']).toBe(slow[0]?.headers['idempotency-key']);
    expect(calls.filter((r) => r.url.endsWith('/tasks/t1'))).toHaveLength(1);
    expect(second.server.stderr).toContain(`task ${taskId} (workflow_run): its process died; resuming it`);
    // Nothing vanished: the task finished before the kill is listed beside the resumed one.
    const listed = (await second.rpc('tasks/list', {})).result.tasks.map((t: Json) => t.taskId);
    expect(listed).toEqual(expect.arrayContaining([taskId, earlier.result.task.taskId]));
  });

  it('marks a task that cannot be resumed failed, with the reason', async () => {
    const first = await client({ sampling: {}, elicitation: { form: {} } });
    const created = await first.rpc('tools/call', {
      name: 'workflow_author_and_run',
      arguments: { request: 'anything' },
      task: {},
    });
    const { taskId } = created.result.task;
    // The client never answers the sampling request; the server dies waiting for it.
    await first.waitFor((m) => m.method === 'sampling/createMessage');
    first.server.kill();
    await (first.server as RawServer).exited;

    const second = await client();
    const failed = await second.poll(taskId, (t) => t.status === 'failed');
    expect(failed.statusMessage).toContain('the server stopped while workflow_author_and_run was running');
    const result = await second.rpc('tasks/result', { taskId });
    expect(result.result).toMatchObject({
      isError: true,
      structuredContent: { error: { data: { error_code: 'INTERNAL_ERROR', retryable: true } } },
    });
  });
});
