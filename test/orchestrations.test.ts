import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, ProtocolError, specTypeSchemas } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI, type Sandbox, sandbox } from './helpers/server.js';
import { apiEnv, lines, setUpWorkflows } from './helpers/tasks.js';
import { TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

const RELATED = 'io.modelcontextprotocol/related-task';

let sb: Sandbox;
let api: TasksApi;
let env: Record<string, string>;
const closers: (() => Promise<void>)[] = [];

/** A draft the server must refuse: a bad version, an undeclared input. */
const INVALID_DRAFT = [
  'Here is a first try:',
  '```yaml',
  'id: triage-project',
  'name: Triage a project',
  'description: Lists the tasks of a project and files a follow-up',
  'version: one',
  'steps:',
  '  - { id: list, title: List tasks, run: tasks-api list-tasks, with: { projectId: "${{ inputs.project }}" } }',
  '```',
].join('\n');

const VALID_DRAFT = lines(
  'id: triage-project',
  'name: Triage a project',
  'description: Lists the tasks of a project and files a follow-up',
  'version: 1.0.0',
  'inputs:',
  '  project: { type: string, description: Project id, required: true }',
  'final_output: { open: "${{ steps.list.output.total }}", follow_up: "${{ steps.follow-up.output.id }}" }',
  'steps:',
  '  - { id: list, title: List tasks, run: tasks-api list-tasks, with: { projectId: "${{ inputs.project }}" } }',
  '  - id: follow-up',
  '    title: File a follow-up',
  '    run: tasks-api create-task',
  '    with: { projectId: "${{ inputs.project }}" }',
  '    body: { title: "Follow-up for ${{ inputs.project }}" }',
);

const BOOM = lines(
  'id: flaky-fetch',
  'name: Fetch a task',
  'description: Fetches one task, with a wrong id (the API answers 500)',
  'version: 1.0.0',
  'final_output: { title: "${{ steps.fetch.output.title }}" }',
  'steps:',
  '  - { id: fetch, title: Fetch, run: tasks-api get-task, with: { taskId: boom } }',
);

const ASKING = lines(
  'id: ask-and-fetch',
  'name: Ask, then fetch',
  'description: Needs an input and an agent answer',
  'version: 1.0.0',
  'inputs:',
  '  task: { type: string, description: Task to fetch, required: true }',
  'final_output: { title: "${{ steps.fetch.output.title }}", note: "${{ steps.note.output.summary }}" }',
  'steps:',
  '  - { id: fetch, title: Fetch, run: tasks-api get-task, with: { taskId: "${{ inputs.task }}" } }',
  '  - { id: note, title: Note, prompt: Write a note about the task. }',
);

beforeAll(async () => {
  sb = sandbox();
  api = new TasksApi();
  await api.start();
  env = apiEnv(sb, api);
  await setUpWorkflows(sb, env, api, [BOOM, ASKING]);
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close().catch(() => undefined);
});
afterAll(async () => {
  await api.stop();
  sb.cleanup();
});

interface Canned {
  sampling?: string[];
  elicit?: (params: Json) => Json;
}

/** An SDK client over stdio that answers sampling and elicitation with canned replies, and records them. */
async function connect(capabilities: Json, canned: Canned = {}) {
  const client = new Client({ name: 'orchestration-tests', version: '1.0.0' }, { capabilities });
  const seen = { sampling: [] as Json[], elicitation: [] as Json[] };
  const replies = [...(canned.sampling ?? [])];
  if (capabilities.sampling) {
    client.setRequestHandler('sampling/createMessage', async (request) => {
      seen.sampling.push(request.params as Json);
      const text = replies.shift() ?? 'no more canned replies';
      return {
        role: 'assistant',
        content: { type: 'text', text },
        model: 'canned-model',
        stopReason: 'endTurn',
      };
    });
  }
  if (capabilities.elicitation) {
    client.setRequestHandler('elicitation/create', async (request) => {
      seen.elicitation.push(request.params as Json);
      return (canned.elicit?.(request.params as Json) ?? { action: 'decline' }) as never;
    });
  }
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI],
    env: { ...sb.env, ...env },
    cwd: sb.project,
    stderr: 'pipe',
  });
  await client.connect(transport);
  closers.push(() => client.close());
  const startTask = async (name: string, args: Json) =>
    (
      await client.request(
        { method: 'tools/call', params: { name, arguments: args, task: { ttl: 600_000 } } },
        specTypeSchemas.CreateTaskResult,
      )
    ).task;
  const result = (taskId: string) =>
    client.request({ method: 'tasks/result', params: { taskId } }, specTypeSchemas.CallToolResult, {
      timeout: 60_000,
    });
  const get = (taskId: string) =>
    client.request({ method: 'tasks/get', params: { taskId } }, specTypeSchemas.GetTaskResult);
  return { client, seen, startTask, result, get };
}

async function refusal(promise: Promise<unknown>): Promise<ProtocolError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error('expected a protocol error');
}

describe('workflow_author_and_run (seed 003 §6.1)', () => {
  it('drafts by sampling, repairs the invalid draft, saves, asks for the missing input, runs and summarizes', async () => {
    const posted = api.requests.length;
    const { seen, startTask, result, get } = await connect(
      { sampling: {}, elicitation: { form: {} } },
      {
        sampling: [INVALID_DRAFT, `\`\`\`yaml\n${VALID_DRAFT}\`\`\``],
        elicit: (params) =>
          params.requestedSchema?.properties?.project
            ? { action: 'accept', content: { project: 'p1' } }
            : { action: 'decline' },
      },
    );
    const task = await startTask('workflow_author_and_run', {
      request: 'List the tasks of a project and file a follow-up task for them',
      workflow_id: 'triage-project',
    });
    expect(task.status).toBe('working');
    const final = await result(task.taskId);
    expect(final.isError, JSON.stringify(final)).toBeFalsy();
    expect((final._meta as Json)[RELATED]).toEqual({ taskId: task.taskId });
    const out = final.structuredContent as Json;
    expect(out).toMatchObject({
      task_id: task.taskId,
      workflow_id: 'triage-project',
      created: true,
      drafts: 2,
      repairs: 1,
      inputs: { project: 'p1' },
      run: {
        state: 'succeeded',
        workflow_id: 'triage-project',
        outputs: { open: 2, follow_up: expect.any(String) },
      },
    });
    // The first draft was refused with its violations, and they went back to the model.
    expect(out.rejected[0].map((v: Json) => v.path)).toContain('/version');
    expect(seen.sampling).toHaveLength(2);
    expect(seen.sampling[0]?._meta?.[RELATED]).toEqual({ taskId: task.taskId });
    expect(seen.sampling[0]?.messages[0].content.text).toContain('tasks-api create-task');
    expect(seen.sampling[1]?.messages[0].content.text).toContain('/version');
    // Only the validated draft was saved; the run called the real API with the elicited input.
    expect(out.path).toBe(join(sb.runtime, 'triage-project.yaml'));
    expect(readFileSync(out.path, 'utf8')).toBe(VALID_DRAFT.trim());
    expect(seen.elicitation).toHaveLength(1);
    expect(seen.elicitation[0]?.message).toContain('project');
    const calls = api.requests.slice(posted).map((r) => `${r.method} ${r.url}`);
    expect(calls).toEqual(['GET /api/projects/p1/tasks', 'POST /api/projects/p1/tasks']);
    expect((await get(task.taskId)).status).toBe('completed');
  });

  it('gives up after max_repairs with the violations, and saves nothing', async () => {
    const { startTask, result } = await connect(
      { sampling: {}, elicitation: { form: {} } },
      { sampling: [INVALID_DRAFT, INVALID_DRAFT.replace('triage-project', 'never-saved')] },
    );
    const task = await startTask('workflow_author_and_run', { request: 'anything', max_repairs: 1 });
    const final = await result(task.taskId);
    expect(final.isError).toBe(true);
    expect((final.structuredContent as Json).error.data).toMatchObject({
      error_code: 'WORKFLOW_VALIDATION_FAILED',
      message: expect.stringContaining('after 1 repair(s); nothing was saved'),
    });
    expect(existsSync(join(sb.runtime, 'never-saved.yaml'))).toBe(false);
  });

  it('fails fast, naming the missing capability, when the client cannot sample or elicit', async () => {
    const noSampling = await connect({ elicitation: { form: {} } });
    const refused = await refusal(noSampling.startTask('workflow_author_and_run', { request: 'x' }));
    // The SDK client keeps only requiredCapabilities of a -32021 error (the seed 003 fields are on the wire too).
    expect(refused.code).toBe(-32021);
    expect(refused.data).toEqual({ requiredCapabilities: { sampling: {} } });
    const noElicitation = await connect({ sampling: {} });
    const refusedToo = await refusal(noElicitation.startTask('workflow_author_and_run', { request: 'x' }));
    expect(refusedToo.data).toEqual({ requiredCapabilities: { elicitation: {} } });
    const tasks = await noElicitation.client.request(
      { method: 'tasks/list', params: {} },
      specTypeSchemas.ListTasksResult,
    );
    expect(tasks.tasks.filter((t) => t.statusMessage?.includes('drafting'))).toEqual([]);
  });
});

describe('workflow_repair_and_rerun (seed 003 §6.3)', () => {
  it('repairs a failed run by sampling, saves the repair and reruns it with the same inputs', async () => {
    const { seen, startTask, result } = await connect(
      { sampling: {} },
      {
        sampling: [
          BOOM.replace('taskId: boom', 'taskId: t1').replace(', with a wrong id (the API answers 500)', ''),
        ],
      },
    );
    const failedTask = await startTask('workflow_run', { workflow_id: 'flaky-fetch' });
    const failed = await result(failedTask.taskId);
    expect(failed.isError).toBe(true);
    const runId = ((failed.structuredContent as Json).error.data as Json).context.run_id as string;

    const task = await startTask('workflow_repair_and_rerun', { run_id: runId });
    const final = await result(task.taskId);
    expect(final.isError, JSON.stringify(final)).toBeFalsy();
    expect(final.structuredContent).toMatchObject({
      workflow_id: 'flaky-fetch',
      repaired_from: { run_id: runId },
      repairs: 1,
      created: false,
      run: { state: 'succeeded', outputs: { title: 'A task' } },
    });
    const problems = (final.structuredContent as Json).problems as string[];
    expect(problems.join('\n')).toMatch(/step "fetch" failed: .*500/);
    expect(seen.sampling[0]?.messages[0].content.text).toContain('500');
    expect(readFileSync(join(sb.runtime, 'flaky-fetch.yaml'), 'utf8')).toContain('taskId: t1');
  });

  it('refuses a client without sampling, and a run that does not exist, before any task exists', async () => {
    const { startTask } = await connect({ sampling: {} });
    const ghost = await refusal(startTask('workflow_repair_and_rerun', { run_id: 'run_ghost' }));
    expect((ghost.data as Json).error_code).toBe('EXECUTION_NOT_FOUND');
    const plain = await connect({});
    const refused = await refusal(
      plain.startTask('workflow_repair_and_rerun', { workflow_id: 'flaky-fetch' }),
    );
    expect(refused.data).toEqual({ requiredCapabilities: { sampling: {} } });
  });
});

describe('workflow_execute (seed 003 §6.2)', () => {
  it('asks for the missing input and the agent step, streams status, returns the summary and outputs', async () => {
    const { seen, startTask, result, get } = await connect(
      { elicitation: { form: {} } },
      {
        elicit: (params) =>
          params.requestedSchema?.properties?.task
            ? { action: 'accept', content: { task: 't2' } }
            : { action: 'accept', content: { summary: 'It is a task about docs' } },
      },
    );
    const task = await startTask('workflow_execute', { workflow_id: 'ask-and-fetch' });
    const snapshots: Json[] = [];
    for (let i = 0; i < 100; i++) {
      const t = await get(task.taskId);
      snapshots.push((t._meta as Json)['workflowlookup/status']);
      if (t.status === 'completed' || t.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const final = await result(task.taskId);
    expect(final.isError, JSON.stringify(final)).toBeFalsy();
    expect(final.structuredContent).toMatchObject({
      state: 'succeeded',
      outputs: { title: 'A task', note: 'It is a task about docs' },
      steps: [
        { step_id: 'fetch', kind: 'command', status: 'completed' },
        { step_id: 'note', kind: 'agent', status: 'completed', output: 'It is a task about docs' },
      ],
    });
    expect(seen.elicitation.map((e) => Object.keys(e.requestedSchema.properties))).toEqual([
      ['task'],
      ['summary'],
    ]);
    expect(snapshots.every((s) => s.run_id === (final.structuredContent as Json).run_id)).toBe(true);
    expect(snapshots.at(-1)).toMatchObject({ state: 'succeeded' });
  });

  it('needs elicitation for a workflow with agent steps', async () => {
    const { startTask } = await connect({});
    const refused = await refusal(
      startTask('workflow_execute', { workflow_id: 'ask-and-fetch', inputs: { task: 't1' } }),
    );
    expect(refused.data).toEqual({ requiredCapabilities: { elicitation: {} } });
  });
});
