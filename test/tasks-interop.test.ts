import { Client, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  type JsonRpcResponse,
  resultFromTaskOutcome,
  toolDeclarationFromMcpTool,
} from '@modelcontextprotocol/ext-tasks/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, type Sandbox, sandbox } from './helpers/server.js';
import { apiEnv, lines, setUpWorkflows } from './helpers/tasks.js';
import { TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

let sb: Sandbox;
let api: TasksApi;
let env: Record<string, string>;

const FETCH_AND_REVIEW = lines(
  'id: fetch-and-review',
  'name: Fetch and review',
  'description: Calls the API, then asks the agent',
  'version: 1.0.0',
  'final_output: { title: "${{ steps.fetch.output.title }}", review: "${{ steps.review.output.summary }}" }',
  'steps:',
  '  - { id: fetch, title: Fetch, run: tasks-api get-task, with: { taskId: t1 } }',
  '  - { id: review, title: Review, prompt: Review the task. }',
);

beforeAll(async () => {
  sb = sandbox();
  api = new TasksApi();
  await api.start();
  env = apiEnv(sb, api);
  await setUpWorkflows(sb, env, api, [FETCH_AND_REVIEW]);
});
afterAll(async () => {
  await api.stop();
  sb.cleanup();
});

describe('interoperability with an independent tasks client (@modelcontextprotocol/ext-tasks)', () => {
  it('drives workflow_run to its result on 2025-11-25, answering the agent step it is asked', async () => {
    const client = new Client(
      { name: 'ext-tasks-v1', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} }, tasks: { list: {}, cancel: {} } } },
    );
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI],
        env: { ...sb.env, ...env },
        cwd: sb.project,
        stderr: 'pipe',
      }),
    );
    try {
      const { tools } = await client.listTools();
      const runTool = tools.find((t) => t.name === 'workflow_run');
      expect(runTool?.execution).toEqual({ taskSupport: 'required' });
      const asked: Json[] = [];
      const session = createTaskSessionFromClient(client, {
        endpointId: 'workflowlookup',
        tools: {
          currentTool: (name: string) =>
            name === 'workflow_run' && runTool ? toolDeclarationFromMcpTool(runTool) : undefined,
        },
        onInputRequest: createApplicationInputHandler({
          elicitation: async (request: Json, context: Json) => {
            asked.push({ message: request.params.message, scope: context.scope, taskId: context.taskId });
            return { action: 'accept', content: { summary: 'Looks right to me' } };
          },
          sampling: async () => {
            throw new Error('no sampling here');
          },
          roots: async () => ({ roots: [] }),
        }),
      } as never);
      const execution = await session.callTool('workflow_run', { workflow_id: 'fetch-and-review' }, {
        task: { preference: 'require' },
      } as never);
      const statuses: string[] = [];
      const { outcome } = await execution.settle({
        onEvent: (event: Json) => {
          if (event.type === 'task') statuses.push(event.task.status);
        },
      } as never);
      const result = resultFromTaskOutcome(outcome) as Json;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({
        state: 'succeeded',
        outputs: { title: 'A task', review: 'Looks right to me' },
      });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatchObject({ scope: 'task', message: expect.stringContaining('Review the task.') });
      expect(statuses).toContain('completed');
      await session.close();
    } finally {
      await client.close();
    }
  });

  it('drives workflow_run on 2026-07-28 through tasks/get and tasks/update', async () => {
    const clientInfo = { name: 'ext-tasks-v2', version: '1.0.0' };
    const clientCapabilities = {
      elicitation: { form: {} },
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    };
    const client = new Client(clientInfo, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: clientCapabilities,
    });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: { ...sb.env, ...env },
      cwd: sb.project,
      stderr: 'pipe',
    });
    await client.connect(transport);
    // The SDK client refuses task results on 2026-07-28, so the session sends its own requests on the
    // same transport and takes their answers before the client sees them.
    const pending = new Map<string, (response: JsonRpcResponse) => void>();
    const sdkOnMessage = transport.onmessage;
    transport.onmessage = (message: JSONRPCMessage) => {
      const id = (message as { id?: unknown }).id;
      if (typeof id === 'string' && pending.has(id) && !('method' in message)) {
        pending.get(id)?.(message as unknown as JsonRpcResponse);
        pending.delete(id);
        return;
      }
      sdkOnMessage?.(message);
    };
    let seq = 0;
    const rawDispatch = (request: unknown) =>
      new Promise<JsonRpcResponse>((resolve) => {
        const id = `raw-${++seq}`;
        pending.set(id, resolve);
        void transport.send({ jsonrpc: '2.0', ...(request as object), id } as JSONRPCMessage);
      });
    try {
      const asked: string[] = [];
      const session = createTaskSessionFromClient(client, {
        endpointId: 'workflowlookup-v2',
        rawDispatch,
        v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo, clientCapabilities },
        onInputRequest: createApplicationInputHandler({
          elicitation: async (request: Json) => {
            asked.push(request.params.message);
            return { action: 'accept', content: { summary: 'Fine by me' } };
          },
          sampling: async () => {
            throw new Error('no sampling here');
          },
          roots: async () => ({ roots: [] }),
        }),
      } as never);
      const execution = await session.callTool('workflow_run', { workflow_id: 'fetch-and-review' });
      expect(execution.kind).toBe('task');
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as Json;
      expect(result.structuredContent).toMatchObject({
        state: 'succeeded',
        outputs: { title: 'A task', review: 'Fine by me' },
      });
      expect(asked).toHaveLength(1);
      await session.close();
    } finally {
      await client.close();
    }
  });
});
