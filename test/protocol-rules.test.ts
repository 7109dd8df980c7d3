import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, RawServer, type Sandbox, sandbox } from './helpers/server.js';
import { TasksApi, TOKEN } from './helpers/tasks-api.js';

type Json = Record<string, any>;

let sb: Sandbox;
const servers: RawServer[] = [];

beforeAll(() => {
  sb = sandbox();
});
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
});
afterAll(() => sb.cleanup());

async function started(env: Record<string, string> = {}): Promise<RawServer> {
  const s = new RawServer({ env: { ...sb.env, ...env }, cwd: sb.project });
  servers.push(s);
  await s.initialize();
  return s;
}

/** Every line the server wrote after `from`, parsed. */
function answersSince(s: RawServer, from: number): Json[] {
  return s.lines.slice(from).map((l) => JSON.parse(l) as Json);
}

async function waitFor(s: RawServer, predicate: (answers: Json[]) => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate(answersSince(s, 0))) {
    if (Date.now() > deadline) throw new Error(`timed out; got:\n${s.lines.join('\n')}\n${s.stderr}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('every request gets exactly one answer (issue: one odd frame wedged the connection)', () => {
  it('answers ids the SDK cannot use with -32600, echoing them, and keeps serving', async () => {
    const s = await started();
    const from = s.lines.length;
    for (const id of [1.5, 1e308, 9007199254740992, -9007199254740992]) {
      s.send(`{"jsonrpc":"2.0","id":${id},"method":"ping","params":{}}`);
    }
    s.send({ jsonrpc: '2.0', id: true, method: 'ping' });
    s.send({ jsonrpc: '2.0', id: { x: 1 }, method: 'ping' });
    s.send({ jsonrpc: '2.0', id: 7, method: 'ping' });
    const answers = (await s.read(from + 7)).slice(from) as Json[];
    expect(answers.map((a) => a.id)).toEqual([
      1.5,
      1e308,
      9007199254740992,
      -9007199254740992,
      null,
      null,
      7,
    ]);
    for (const a of answers.slice(0, 6)) expect(a.error.code).toBe(-32600);
    expect(answers[6]).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
  });

  it('answers params that are not an object, or carry a bad _meta, with -32602 on every method', async () => {
    const s = await started();
    const methods = ['ping', 'tools/list', 'resources/list', 'prompts/list', 'tools/call', 'resources/read'];
    const bad = [
      '[]',
      '5',
      '"x"',
      '{"_meta":5}',
      '{"_meta":null}',
      '{"_meta":[]}',
      '{"_meta":{"progressToken":{}}}',
    ];
    const from = s.lines.length;
    let n = 0;
    for (const method of methods) {
      for (const params of bad)
        s.send(`{"jsonrpc":"2.0","id":${1000 + n++},"method":"${method}","params":${params}}`);
    }
    s.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    const answers = (await s.read(from + n + 1)).slice(from) as Json[];
    expect(answers.map((a) => a.id)).toEqual([...Array.from({ length: n }, (_, i) => 1000 + i), 'after']);
    for (const a of answers.slice(0, n)) {
      expect(a.error.code, JSON.stringify(a)).toBe(-32602);
      expect(a.error.data.details).toMatch(/params must be an object|_meta/);
    }
  });

  it('treats "params": null as absent, and refuses a request that carries "result" or "error"', async () => {
    const s = await started();
    expect(await s.request(1, 'ping', null)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(((await s.request(2, 'tools/list', null)).result as Json).tools.length).toBeGreaterThan(0);
    const from = s.lines.length;
    s.send({ jsonrpc: '2.0', id: 3, method: 'ping', result: {} });
    s.send({ jsonrpc: '2.0', id: 4, method: 'ping', error: { code: 1, message: 'x' } });
    s.send({ jsonrpc: '2.0', id: 5, method: 'ping' });
    const answers = (await s.read(from + 3)).slice(from) as Json[];
    expect(answers.map((a) => [a.id, a.error?.code ?? 'ok'])).toEqual([
      [3, -32600],
      [4, -32600],
      [5, 'ok'],
    ]);
  });

  it('refuses a second request with an id that is still in flight', async () => {
    const s = await started();
    const from = s.lines.length;
    s.send({ jsonrpc: '2.0', id: 'dup', method: 'workflow_list' });
    s.send({ jsonrpc: '2.0', id: 'dup', method: 'ping' });
    const answers = (await s.read(from + 2)).slice(from) as Json[];
    expect(answers.map((a) => a.id)).toEqual(['dup', 'dup']);
    expect(answers.filter((a) => a.error?.code === -32600)).toHaveLength(1);
    expect(answers.filter((a) => a.result?.workflows)).toHaveLength(1);
  });
});

describe('deep nesting cannot crash the server', () => {
  it('refuses a 10,000-deep context with -32602 and keeps serving', async () => {
    const s = await started();
    let context = '1';
    for (let i = 0; i < 10_000; i++) context = `{"a":${context}}`;
    const from = s.lines.length;
    s.send(
      `{"jsonrpc":"2.0","id":1,"method":"workflow_next","params":{"workflowId":"ai-task-implementation","completedSteps":[],"context":${context}}}`,
    );
    s.send(
      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workflow_resolve_inputs","arguments":{"workflow_id":"export-project-tasks","inputs":${context}}}}`,
    );
    s.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
    const answers = (await s.read(from + 3)).slice(from) as Json[];
    expect(answers.map((a) => [a.id, a.error?.code ?? 'ok'])).toEqual([
      [1, -32602],
      [2, -32602],
      [3, 'ok'],
    ]);
    expect(answers[0]?.error.data.details).toContain('nested deeper');
    expect(s.child.exitCode).toBeNull();
  });
});

describe('a request waiting on the network does not hold back later ones', () => {
  let api: TasksApi;
  let env: Record<string, string>;

  beforeAll(async () => {
    api = new TasksApi();
    await api.start();
    env = {
      WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'),
      WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
    };
    const setup = await started(env);
    const imported = await setup.request('import', 'catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(imported.error).toBeUndefined();
    const saved = await setup.request('save', 'workflow_save', {
      content: [
        'id: slow-call',
        'name: Slow call',
        'description: Calls an API that takes 2 s',
        'version: 1.0.0',
        'steps:',
        '  - id: fetch-slow',
        '    title: Fetch a slow task',
        '    run: tasks-api get-task',
        '    with: { taskId: slow }',
        '  - { id: review, title: Review, prompt: Review the task. }',
      ].join('\n'),
    });
    expect(saved.error).toBeUndefined();
    setup.kill();
  });

  afterAll(async () => {
    await api.stop();
  });

  it('answers ping and workflow_list while a command step waits 2 s; ordering holds for the rest', async () => {
    const s = await started(env);
    const from = s.lines.length;
    const sentAt = Date.now();
    s.send({ jsonrpc: '2.0', id: 'slow', method: 'workflow_start', params: { workflow_name: 'slow-call' } });
    // Give the start time to reach the API, then ask quick questions behind it.
    await new Promise((r) => setTimeout(r, 300));
    s.send({ jsonrpc: '2.0', id: 'p1', method: 'ping' });
    s.send({ jsonrpc: '2.0', id: 'l1', method: 'workflow_list' });
    s.send({ jsonrpc: '2.0', id: 'p2', method: 'ping' });
    await waitFor(s, (all) => all.some((a) => a.id === 'slow'));
    const answers = answersSince(s, from);
    // The quick ones were answered before the slow one, sent first: they did not wait behind it.
    expect(answers.map((a) => a.id)).toEqual(['p1', 'l1', 'p2', 'slow']);
    // A lower bound (the fixture's API really made the start wait 2 s), which a loaded machine cannot break.
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(2000);
    expect(answers[3]?.result).toMatchObject({ workflow_state: 'running', step_name: 'review' });
  });

  it('a cancelled request is never answered and releases the queue once: later answers keep their order', async () => {
    const s = await started(env);
    const from = s.lines.length;
    s.send({ jsonrpc: '2.0', id: 'A', method: 'workflow_start', params: { workflow_name: 'slow-call' } });
    await new Promise((r) => setTimeout(r, 300));
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'A', reason: 'test' } });
    for (const id of ['B', 'C', 'D'])
      s.send({ jsonrpc: '2.0', id, method: 'workflow_get', params: { id: 'slow-call' } });
    await waitFor(s, (all) => all.some((a) => a.id === 'D'));
    await new Promise((r) => setTimeout(r, 2500)); // long enough for A's API call to have finished
    expect(answersSince(s, from).map((a) => a.id)).toEqual(['B', 'C', 'D']);
  });
});
