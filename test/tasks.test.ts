import type { Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RawServer, type Sandbox, SPAWNED_WAIT_MS, sandbox } from './helpers/server.js';
import { apiEnv, envelope, lines, setUpWorkflows, TaskClient } from './helpers/tasks.js';
import { TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

const RELATED = 'io.modelcontextprotocol/related-task';
const STATUS = 'workflowlookup/status';

let sb: Sandbox;
let api: TasksApi;
let env: Record<string, string>;
const clients: TaskClient[] = [];
/** Requests the API saw end before it answered (the client went away: an aborted call). */
const aborted: string[] = [];

const SLOW_REVIEW = lines(
  'id: slow-review',
  'name: Slow call, then a review',
  'description: Calls an API that takes 2 s, then asks the agent to review',
  'version: 1.0.0',
  'final_output: { task: "${{ steps.fetch-slow.output.id }}" }',
  'steps:',
  '  - { id: fetch-slow, title: Fetch a slow task, run: tasks-api get-task, with: { taskId: slow } }',
  '  - id: review',
  '    title: Review',
  '    prompt: Review the task.',
  '    validationCriteria: [{ type: length, min: 10, message: say more }]',
);
const SLOW_ONLY = lines(
  'id: slow-only',
  'name: Two calls',
  'description: A slow call, then a quick one',
  'version: 1.0.0',
  'final_output: { first: "${{ steps.fetch-slow.output.id }}", second: "${{ steps.fetch-t1.output.title }}" }',
  'steps:',
  '  - { id: fetch-slow, title: Fetch a slow task, run: tasks-api get-task, with: { taskId: slow } }',
  '  - { id: fetch-t1, title: Fetch t1, run: tasks-api get-task, with: { taskId: t1 } }',
);
const BROKEN_API = lines(
  'id: broken-api',
  'name: An API that fails',
  'description: The task endpoint answers 500',
  'version: 1.0.0',
  'steps:',
  '  - { id: fetch-boom, title: Fetch, run: tasks-api get-task, with: { taskId: boom } }',
);
const ASK_MODE = lines(
  'id: ask-mode',
  'name: A choice, then a path',
  'description: The first answer sets the mode that decides the next step',
  'version: 1.0.0',
  'steps:',
  '  - { id: choose, title: Choose, prompt: "Choose the mode, fast or slow, and report mode in the context." }',
  '  - { id: slow-path, title: Slowly, prompt: Go slowly., runCondition: { var: mode, equals: slow } }',
  '  - { id: done, title: Done, prompt: Finish. }',
);
const ASK = lines(
  'id: ask-agent',
  'name: One agent step',
  'description: Waits for the agent',
  'version: 1.0.0',
  'steps:',
  '  - { id: answer, title: Answer, prompt: Say something., validationCriteria: [{ type: length, min: 10, message: say more }] }',
);

beforeAll(async () => {
  sb = sandbox();
  api = new TasksApi();
  await api.start();
  // The example API keeps its node:http server in `server` (not in its type declaration).
  (api as unknown as { server: Server }).server.on('request', (req, res) => {
    res.on('close', () => {
      if (!res.writableFinished) aborted.push(req.url ?? '');
    });
  });
  env = apiEnv(sb, api);
  await setUpWorkflows(sb, env, api, [SLOW_REVIEW, SLOW_ONLY, BROKEN_API, ASK, ASK_MODE]);
});
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});
afterAll(async () => {
  await api.stop();
  sb.cleanup();
});

async function client(
  capabilities: Json = {},
  protocolVersion?: string,
  options: { process?: boolean } = {},
) {
  const c = await TaskClient.start(sb, env, capabilities, protocolVersion, options);
  clients.push(c);
  return c;
}

const runArgs = (workflow_id: string, extra: Json = {}) => ({
  name: 'workflow_run',
  arguments: { workflow_id },
  task: { ttl: 600_000 },
  ...extra,
});

describe('MCP tasks (2025-11-25)', () => {
  it('advertises tasks: capabilities.tasks, and execution.taskSupport on the long tools only', async () => {
    const c = await client();
    const init = c.messages.find((m) => m.result?.protocolVersion) as Json;
    expect(init.result.capabilities.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { result } = await c.rpc('tools/list');
    const support = Object.fromEntries(
      (result.tools as Json[]).filter((t) => t.execution).map((t) => [t.name, t.execution.taskSupport]),
    );
    expect(support).toEqual({
      workflow_run: 'required',
      workflow_author_and_run: 'required',
      workflow_execute: 'required',
      workflow_repair_and_rerun: 'required',
    });
  });

  it('runs a workflow as a task: CreateTaskResult at once, status and progress, the agent step by elicitation, tasks/result', async () => {
    const c = await client({ elicitation: { form: {} } });
    c.onRequest = (method, params) =>
      method === 'elicitation/create' && params._meta?.[RELATED]
        ? { action: 'accept', content: { summary: 'Reviewed it: fine' } }
        : undefined;
    const created = await c.rpc('tools/call', {
      ...runArgs('slow-review'),
      _meta: { progressToken: 'run-1' },
    });
    const { task, _meta } = created.result as Json;
    expect(task).toMatchObject({ status: 'working', ttl: 600_000, pollInterval: expect.any(Number) });
    expect(task.taskId).toMatch(/^[0-9a-f-]{36}$/);
    expect(_meta['workflowlookup/run'].run_id).toMatch(/^run_[0-9a-f]{24}$/);
    expect(task.statusMessage).toContain(_meta['workflowlookup/run'].run_id);
    // The call answered before the 2 s API call it started ended: the task is still `working` (above).

    // tasks/result blocks until the end without holding back later requests.
    c.send('result', 'tasks/result', { taskId: task.taskId });
    await c.waitFor(
      (m) =>
        m.method === 'notifications/tasks/status' &&
        /calling tasks-api get-task/.test(m.params.statusMessage),
    );
    // Answered while tasks/result still blocks (checked below): nothing waits behind it.
    const [ping, list] = await Promise.all([c.rpc('ping'), c.rpc('workflow_list')]);
    expect(ping.result).toEqual({});
    expect(list.result.workflows.length).toBeGreaterThan(0);
    expect(c.messages.some((m) => m.id === 'result')).toBe(false);

    const final = await c.answer('result');
    expect(final.result.isError).toBeFalsy();
    expect(final.result._meta[RELATED]).toEqual({ taskId: task.taskId });
    expect(final.result.structuredContent).toMatchObject({
      run_id: _meta['workflowlookup/run'].run_id,
      task_id: task.taskId,
      workflow_id: 'slow-review',
      state: 'succeeded',
      execution_state: 'completed',
      outputs: { task: 'slow' },
    });
    expect(final.result.structuredContent.steps.map((s: Json) => [s.step_id, s.kind])).toEqual([
      ['fetch-slow', 'command'],
      ['review', 'agent'],
    ]);

    // Status went out as notifications (seed 003 §10.4 in _meta) and as progress for the token.
    const statuses = c.notifications('notifications/tasks/status').map((n) => n.params);
    expect(statuses.map((s) => s.status)).toEqual(
      expect.arrayContaining(['working', 'input_required', 'completed']),
    );
    const waiting = statuses.find((s) => s.status === 'input_required');
    expect(waiting._meta[STATUS]).toMatchObject({
      run_id: _meta['workflowlookup/run'].run_id,
      step_id: 'review',
      state: 'running',
      continuation_token: expect.any(String),
    });
    expect(statuses.at(-1)._meta[STATUS]).toMatchObject({ state: 'succeeded' });
    const progress = c.notifications('notifications/progress').map((n) => n.params);
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.every((p) => p.progressToken === 'run-1')).toBe(true);
    expect(progress.map((p) => p.progress)).toEqual(
      [...progress.map((p) => p.progress)].sort((a, b) => a - b),
    );
    // The elicitation carried the step's guidance and the related-task _meta.
    const [elicit] = c.requests('elicitation/create');
    expect(elicit?.params._meta[RELATED]).toEqual({ taskId: task.taskId });
    expect(elicit?.params.message).toContain('Review the task.');

    // tasks/get after the end: completed, with the snapshot; tasks/result again: the same result.
    const done = await c.rpc('tasks/get', { taskId: task.taskId });
    expect(done.result).toMatchObject({ taskId: task.taskId, status: 'completed', ttl: 600_000 });
    expect(done.result._meta[STATUS]).toMatchObject({ state: 'succeeded' });
    const again = await c.rpc('tasks/result', { taskId: task.taskId });
    expect(again.result.structuredContent).toEqual(final.result.structuredContent);
  });

  it('lets an agent without elicitation answer the step with workflow_next_step and the token', async () => {
    const c = await client();
    const created = await c.rpc('tools/call', runArgs('ask-agent'));
    const taskId = created.result.task.taskId;
    const waiting = await c.poll(taskId, (t) => t.status === 'input_required');
    const snapshot = waiting._meta[STATUS];
    expect(snapshot).toMatchObject({ step_id: 'answer', state: 'running' });
    expect(waiting.statusMessage).toContain('workflow_next_step');
    // The status carries the step's text and the call to send, as the durable answers do.
    expect(snapshot.agent_content).toContain('Say something.');
    expect(snapshot.next).toEqual([
      {
        tool: 'workflow_next_step',
        arguments: { token: snapshot.continuation_token },
        fill: { 'output.summary': expect.stringContaining('"answer"') },
      },
    ]);
    expect(c.requests('elicitation/create')).toEqual([]);
    const rejected = await c.rpc('workflow_next_step', {
      token: snapshot.continuation_token,
      output: { summary: 'short' },
    });
    expect(rejected.result.success).toBe(false);
    const retry = await c.poll(
      taskId,
      (t) => t._meta[STATUS].continuation_token !== snapshot.continuation_token,
    );
    const accepted = await c.rpc('workflow_next_step', {
      token: retry._meta[STATUS].continuation_token,
      output: { summary: 'a long enough answer' },
    });
    expect(accepted.result.workflow_state).toBe('completed');
    const result = await c.rpc('tasks/result', { taskId });
    expect(result.result.structuredContent).toMatchObject({
      state: 'succeeded',
      steps: [{ step_id: 'answer' }],
    });
  });

  it('asks through elicitation for the context variables a step must set, and takes the path they imply', async () => {
    const c = await client({ elicitation: { form: {} } });
    c.onRequest = (method, params) =>
      method === 'elicitation/create' && params._meta?.[RELATED]
        ? {
            action: 'accept',
            content: params.requestedSchema.properties.mode
              ? { summary: 'Slow it is.', mode: 'slow' }
              : { summary: 'Done.' },
          }
        : undefined;
    const created = await c.rpc('tools/call', runArgs('ask-mode'));
    const result = await c.rpc('tasks/result', { taskId: created.result.task.taskId });
    expect(result.result.structuredContent.steps.map((s: Json) => s.step_id)).toEqual([
      'choose',
      'slow-path',
      'done',
    ]);
    const [first] = c.requests('elicitation/create');
    expect(first?.params.requestedSchema).toMatchObject({
      properties: { mode: { type: 'string', enum: ['fast', 'slow'] } },
      required: ['summary'],
    });
  });

  it('cancels a run mid-call: the HTTP request is aborted, the task cancelled, the execution abandoned, telemetry records it', async () => {
    const c = await client();
    const before = api.requests.length;
    const abortedBefore = aborted.length;
    const created = await c.rpc('tools/call', runArgs('slow-only'));
    const { taskId } = created.result.task;
    const runId = created.result._meta['workflowlookup/run'].run_id;
    // Wait until the slow request is on the wire, then cancel.
    const deadline = Date.now() + 30_000;
    while (!api.requests.slice(before).some((r) => r.url.endsWith('/tasks/slow'))) {
      if (Date.now() > deadline) throw new Error('the API never got the call');
      await new Promise((r) => setTimeout(r, 20));
    }
    const cancelled = await c.rpc('tasks/cancel', { taskId });
    expect(cancelled.result).toMatchObject({ taskId, status: 'cancelled' });
    // The call in flight was aborted (its connection closed before the API answered).
    const until = Date.now() + 30_000;
    while (aborted.length === abortedBefore && Date.now() < until)
      await new Promise((r) => setTimeout(r, 20));
    expect(aborted.slice(abortedBefore)).toEqual(['/api/tasks/slow']);
    await new Promise((r) => setTimeout(r, 2500)); // long enough for the slow call to have ended
    expect(api.requests.slice(before).some((r) => r.url.endsWith('/tasks/t1'))).toBe(false);

    const status = await c.rpc('resources/read', {
      uri: `workflowlookup://workflow/workflow_status/${runId}`,
    });
    expect(JSON.parse(status.result.contents[0].text).state).toBe('abandoned');
    const telemetry = await c.rpc('resources/read', { uri: `workflowlookup://workflow/telemetry/${runId}` });
    const events = JSON.parse(telemetry.result.contents[0].text) as Json[];
    expect(events.find((e) => e.event_type === 'run_cancelled')?.metadata).toEqual({
      reason: 'The task was cancelled by request.',
      task_id: taskId,
    });
    expect(
      events.some((e) => e.event_type === 'workflow_state_transition' && e.metadata.to === 'abandoned'),
    ).toBe(true);
    expect((await c.rpc('tasks/get', { taskId })).result.status).toBe('cancelled');
    // Cancelling again is an error (2025-11-25); the result of a cancelled task is TASK_CANCELLED.
    const twice = await c.rpc('tasks/cancel', { taskId });
    expect(twice.error).toMatchObject({ code: -32602, data: { error_code: 'TASK_ALREADY_TERMINAL' } });
    const result = await c.rpc('tasks/result', { taskId });
    expect(result.error).toMatchObject({ code: -32602, data: { error_code: 'TASK_CANCELLED' } });
  });

  it('workflow_cancel cancels by run id after confirmation, and reports an already finished run', async () => {
    const c = await client();
    const created = await c.rpc('tools/call', runArgs('ask-agent'));
    const runId = created.result._meta['workflowlookup/run'].run_id;
    await c.poll(created.result.task.taskId, (t) => t.status === 'input_required');
    const unconfirmed = await c.rpc('workflow_cancel', { operation_id: runId });
    expect(unconfirmed.error.data).toMatchObject({
      error_code: 'CONFIRMATION_REQUIRED',
      suggested_action: expect.stringContaining('"confirm":true'),
    });
    const cancelled = await c.rpc('workflow_cancel', {
      operation_id: runId,
      confirm: true,
      reason: 'not needed',
    });
    expect(cancelled.result).toMatchObject({
      status: 'cancelled',
      run_id: runId,
      task_id: created.result.task.taskId,
      task_status: 'cancelled',
      execution_state: 'abandoned',
    });
    const again = await c.rpc('workflow_cancel', { operation_id: created.result.task.taskId, confirm: true });
    expect(again.result.status).toBe('already_terminal');
    const ghost = await c.rpc('workflow_cancel', { operation_id: 'run_nothing', confirm: true });
    expect(ghost.error.data.error_code).toBe('TASK_NOT_FOUND');
  });

  it('fails a run whose API call fails for good, with the structured error; the execution fails too', async () => {
    const c = await client();
    const created = await c.rpc('tools/call', runArgs('broken-api'));
    const runId = created.result._meta['workflowlookup/run'].run_id;
    const result = await c.rpc('tasks/result', { taskId: created.result.task.taskId });
    expect(result.result.isError).toBe(true);
    expect(result.result.structuredContent.error.data).toMatchObject({
      error_code: 'COMMAND_FAILED',
      category: 'execution',
      retryable: false,
      context: { run_id: runId, step_id: 'fetch-boom' },
      status: 500,
    });
    expect((await c.rpc('tasks/get', { taskId: created.result.task.taskId })).result.status).toBe('failed');
    const status = await c.rpc('resources/read', {
      uri: `workflowlookup://workflow/workflow_status/${runId}`,
    });
    expect(JSON.parse(status.result.contents[0].text).state).toBe('failed');
  });

  it("lists only the caller's tasks, newest first; a bad cursor is invalid params", async () => {
    const c = await client();
    const a = await c.rpc('tools/call', runArgs('ask-agent'));
    const b = await c.rpc('tools/call', runArgs('ask-agent'));
    const { result } = await c.rpc('tasks/list', {});
    const ids = (result.tasks as Json[]).map((t) => t.taskId);
    expect(ids.indexOf(b.result.task.taskId)).toBeLessThan(ids.indexOf(a.result.task.taskId));
    expect(result.tasks[0]).toEqual(
      expect.objectContaining({
        taskId: expect.any(String),
        status: expect.any(String),
        createdAt: expect.any(String),
      }),
    );
    const bad = await c.rpc('tasks/list', { cursor: 'bm90IGEgY3Vyc29y' });
    expect(bad.error).toMatchObject({ code: -32602 });
    const unknown = await c.rpc('tasks/get', { taskId: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.error).toMatchObject({ code: -32602, data: { error_code: 'TASK_NOT_FOUND' } });
    for (const t of [a, b]) await c.rpc('tasks/cancel', { taskId: t.result.task.taskId });
  });
});

describe('end of input', () => {
  it('exits at end of input even while tasks/result waits; the next server picks the task up', async () => {
    // End of input and exit: a process, and the next one that picks the task up.
    const c = await client({}, undefined, { process: true });
    const server = c.server as RawServer;
    const created = await c.rpc('tools/call', runArgs('ask-agent'));
    const { taskId } = created.result.task;
    await c.poll(taskId, (t) => t.status === 'input_required');
    c.send('waiting', 'tasks/result', { taskId });
    expect((await c.rpc('ping')).result).toEqual({});
    server.child.stdin.end();
    // A generous bound: what matters is that it does not wait for the task (which waits for an agent).
    const exited = await Promise.race([
      server.exited,
      new Promise((r) => setTimeout(() => r('still running'), 5000)),
    ]);
    expect(exited).toEqual({ code: 0, signal: null });
    expect(c.messages.some((m) => m.id === 'waiting')).toBe(false);
    const next = await client({}, undefined, { process: true });
    const deadline = Date.now() + SPAWNED_WAIT_MS;
    while (!next.server.stderr.includes(`task ${taskId} (workflow_run): its process died; resuming it`)) {
      if (Date.now() > deadline) throw new Error(`not resumed: ${next.server.stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const resumed = await next.poll(taskId, (t) => t.status === 'input_required');
    expect(resumed._meta['workflowlookup/status']).toMatchObject({ step_id: 'answer' });
    await next.rpc('tasks/cancel', { taskId });
  });
});

describe('malformed task requests', () => {
  it('answers each with -32602 and keeps serving', async () => {
    const c = await client();
    const bad: [string, Json][] = [
      ['tasks/get', {}],
      ['tasks/get', { taskId: 5 }],
      ['tasks/get', { taskId: 'x'.repeat(10_000) }],
      ['tasks/result', { taskId: null }],
      ['tasks/cancel', { taskId: ['a'] }],
      ['tasks/list', { cursor: 'x'.repeat(2000) }],
      ['tasks/list', { cursor: Buffer.from('["a"]').toString('base64url') }],
      ['tasks/update', { taskId: 'ghost', inputResponses: { k: { action: 'accept' } } }],
      ['tools/call', { ...runArgs('ask-agent'), task: { ttl: -1 } }],
      ['tools/call', { ...runArgs('ask-agent'), task: { ttl: 'soon' } }],
      [
        'tools/call',
        { name: 'workflow_run', arguments: { workflow_id: 'ask-agent', manifest: 'x' }, task: {} },
      ],
      ['tools/call', { name: 'workflow_run', arguments: { workflow_id: 'NOT VALID' }, task: {} }],
    ];
    for (const [method, params] of bad) {
      const res = await c.rpc(method, params);
      expect(res.error?.code, `${method} ${JSON.stringify(params).slice(0, 80)}`).toBe(-32602);
    }
    // Nothing was created by the refused calls, and the server still answers.
    expect((await c.rpc('tasks/list', {})).result.tasks.filter((t: Json) => t.status === 'working')).toEqual(
      [],
    );
    expect((await c.rpc('ping')).result).toEqual({});
    const unknown = await c.rpc('tools/call', { ...runArgs('no-such-workflow') });
    expect(unknown.error).toMatchObject({ code: -32001, data: { error_code: 'WORKFLOW_NOT_FOUND' } });
  });
});

describe('TASK_CAPABILITY_REQUIRED (seed 003 §13.2)', () => {
  it('fails fast for a client without tasks, and never runs the workflow synchronously', async () => {
    const c = await client();
    const plain = await c.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'slow-only' },
    });
    expect(plain.error).toMatchObject({
      code: -32601,
      data: {
        error_code: 'TASK_CAPABILITY_REQUIRED',
        category: 'execution',
        retryable: false,
        message: expect.stringContaining('requires MCP tasks support'),
        suggested_action: expect.stringContaining('tasks-capable MCP client'),
        correlation_id: expect.any(String),
      },
    });
    const direct = await c.rpc('workflow_execute', { workflow_id: 'slow-only' });
    expect(direct.error.data.error_code).toBe('TASK_CAPABILITY_REQUIRED');
    const modern = await c.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'slow-only' },
      _meta: envelope({}, false),
    });
    expect(modern.error).toMatchObject({
      code: -32021,
      data: {
        requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        error_code: 'TASK_CAPABILITY_REQUIRED',
      },
    });
    // A tool that needs what the client did not declare names it, with the seed 003 §10 fields.
    const noSampling = await c.rpc('tools/call', {
      name: 'workflow_author_and_run',
      arguments: { request: 'x' },
      task: {},
    });
    expect(noSampling.error).toMatchObject({
      code: -32021,
      data: {
        requiredCapabilities: { sampling: {}, elicitation: {} },
        missing: ['sampling', 'elicitation'],
        error_code: 'CLIENT_CAPABILITY_REQUIRED',
        category: 'execution',
        retryable: false,
        message: expect.stringContaining('sampling and elicitation'),
      },
    });
    // A tool that never runs as a task refuses task augmentation.
    const forbidden = await c.rpc('tools/call', { name: 'workflow_list', arguments: {}, task: {} });
    expect(forbidden.error.code).toBe(-32601);
    const executions = await c.rpc('workflow_executions', {
      workflow_name: 'slow-only',
      states: ['running'],
    });
    expect(executions.result.executions).toEqual([]);
  });
});

describe('MCP tasks (2026-07-28, io.modelcontextprotocol/tasks)', () => {
  it('returns a flat CreateTaskResult, lists input requests in tasks/get, takes answers by tasks/update', async () => {
    const c = await client({}, '2026-07-28');
    const meta = envelope({ elicitation: {} });
    const created = await c.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'ask-agent' },
      _meta: meta,
    });
    expect(created.result).toMatchObject({
      resultType: 'task',
      status: 'working',
      ttlMs: expect.any(Number),
    });
    expect(created.result.task).toBeUndefined();
    const { taskId } = created.result;
    const waiting = await c.poll(taskId, (t) => t.status === 'input_required', meta);
    const [key, request] = Object.entries(waiting.inputRequests as Json)[0] as [string, Json];
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { requestedSchema: { required: ['summary'] } },
    });
    // Unknown keys are ignored; a rejected answer brings a new request under a new key.
    await c.rpc('tasks/update', {
      taskId,
      inputResponses: { nope: { action: 'accept', content: {} } },
      _meta: meta,
    });
    const ack = await c.rpc('tasks/update', {
      taskId,
      inputResponses: { [key]: { action: 'accept', content: { summary: 'short' } } },
      _meta: meta,
    });
    expect(ack.result.resultType).toBe('complete');
    const retry = await c.poll(taskId, (t) => t.inputRequests && !(key in t.inputRequests), meta);
    const [key2] = Object.keys(retry.inputRequests);
    expect(key2).not.toBe(key);
    await c.rpc('tasks/update', {
      taskId,
      inputResponses: {
        [key2 as string]: { action: 'accept', content: { summary: 'a long enough answer' } },
      },
      _meta: meta,
    });
    const done = await c.poll(taskId, (t) => t.status === 'completed', meta);
    expect(done.result).toMatchObject({ resultType: 'complete', structuredContent: { state: 'succeeded' } });
    // tasks/cancel acknowledges, even on a finished task; tasks/result and tasks/list do not exist here.
    expect((await c.rpc('tasks/cancel', { taskId, _meta: meta })).result.resultType).toBe('complete');
    expect((await c.rpc('tasks/result', { taskId, _meta: meta })).error.code).toBe(-32601);
    const noExtension = await c.rpc('tasks/get', { taskId, _meta: envelope({}, false) });
    expect(noExtension.error.code).toBe(-32021);
  });

  it('reports a failed run as completed with an isError result (failed is for JSON-RPC errors only)', async () => {
    const c = await client({}, '2026-07-28');
    const meta = envelope();
    const created = await c.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'broken-api' },
      _meta: meta,
    });
    const done = await c.poll(created.result.taskId, (t) => t.status !== 'working', meta);
    expect(done.status).toBe('completed');
    expect(done.result).toMatchObject({
      isError: true,
      structuredContent: { error: { data: { error_code: 'COMMAND_FAILED' } } },
    });
  });
});

describe('workflow_purge_history', () => {
  it('removes finished history with counts after confirmation; running executions and their tasks stay', async () => {
    const c = await client();
    // One finished run (completed), one waiting on its agent step (running).
    const finished = await c.rpc('tools/call', runArgs('slow-only'));
    await c.rpc('tasks/result', { taskId: finished.result.task.taskId });
    const running = await c.rpc('tools/call', runArgs('slow-review'));
    await c.poll(running.result.task.taskId, (t) => t.status === 'input_required');

    const none = await c.rpc('workflow_purge_history', {});
    expect(none.error.data.error_code).toBe('INVALID_PARAMS');
    const dry = await c.rpc('workflow_purge_history', { workflow_id: 'slow-only', dry_run: true });
    expect(dry.result.dry_run).toBe(true);
    expect(dry.result.removed.executions).toBeGreaterThanOrEqual(1);
    expect(dry.result.removed.tasks).toBeGreaterThanOrEqual(1);
    const unconfirmed = await c.rpc('workflow_purge_history', { workflow_id: 'slow-only' });
    expect(unconfirmed.error.data.error_code).toBe('CONFIRMATION_REQUIRED');
    const purged = await c.rpc('workflow_purge_history', { workflow_id: 'slow-only', confirm: true });
    expect(purged.result).toMatchObject({ dry_run: false, removed: dry.result.removed });
    expect(purged.result.removed.steps).toBeGreaterThanOrEqual(2);
    expect(purged.result.removed.telemetry).toBeGreaterThan(0);
    const gone = await c.rpc('tasks/get', { taskId: finished.result.task.taskId });
    expect(gone.error.data.error_code).toBe('TASK_NOT_FOUND');
    const runId = finished.result._meta['workflowlookup/run'].run_id;
    const status = await c.rpc('resources/read', {
      uri: `workflowlookup://workflow/workflow_status/${runId}`,
    });
    expect(status.error).toBeDefined();

    // Purging by state and age never touches the running execution or its task.
    const all = await c.rpc('workflow_purge_history', { older_than: '0s', confirm: true });
    expect(all.error).toBeUndefined();
    expect((await c.rpc('tasks/get', { taskId: running.result.task.taskId })).result.status).toBe(
      'input_required',
    );
    await c.rpc('tasks/cancel', { taskId: running.result.task.taskId });
    const canceled = await c.rpc('workflow_purge_history', { state: 'canceled', dry_run: true });
    expect(canceled.result.removed.executions).toBeGreaterThanOrEqual(1);
  });

  it('asks the user through elicitation when the client offers it (2025-11-25)', async () => {
    const c = await client({ elicitation: { form: {} } });
    const questions: string[] = [];
    c.onRequest = (method, params) => {
      if (method !== 'elicitation/create') return undefined;
      questions.push(params.message);
      return { action: 'accept', content: { confirm: true } };
    };
    const run = await c.rpc('tools/call', runArgs('broken-api'));
    await c.rpc('tasks/result', { taskId: run.result.task.taskId });
    const purged = await c.rpc('tools/call', {
      name: 'workflow_purge_history',
      arguments: { workflow_id: 'broken-api', state: 'failed' },
    });
    expect(purged.result.structuredContent.removed.executions).toBeGreaterThanOrEqual(1);
    expect(questions[0]).toMatch(/Permanently remove \d+ finished execution/);
  });

  it('asks through an input_required round trip on 2026-07-28', async () => {
    const c = await client({}, '2026-07-28');
    const meta = envelope({ elicitation: {} });
    const run = await c.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'broken-api' },
      _meta: meta,
    });
    await c.poll(run.result.taskId, (t) => t.status !== 'working', meta);
    const first = await c.rpc('tools/call', {
      name: 'workflow_purge_history',
      arguments: { workflow_id: 'broken-api' },
      _meta: meta,
    });
    expect(first.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { confirm: { method: 'elicitation/create' } },
    });
    const second = await c.rpc('tools/call', {
      name: 'workflow_purge_history',
      arguments: { workflow_id: 'broken-api' },
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      _meta: meta,
    });
    expect(second.result.structuredContent.dry_run).toBe(false);
    expect(second.result.structuredContent.removed.executions).toBeGreaterThanOrEqual(1);
  });
});
