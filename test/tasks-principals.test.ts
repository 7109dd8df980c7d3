import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InMemoryTransport, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { channelOf } from '../src/protocol/transport-channel.js';
import { silentLogger } from '../src/telemetry/log.js';
import { connectProtocol } from '../src/transports/connect.js';
import { type Sandbox, sandbox } from './helpers/server.js';
import { validationWorkerUrl } from './helpers/validation-worker.js';

type Json = Record<string, any>;

let sb: Sandbox;
let app: App;

/** One connection to the shared app, acting for `principal` (what an authenticating transport does). */
async function connection(principal: string) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const { rules, server } = connectProtocol(app, channelOf(serverSide), { kind: 'stream', principal });
  const answers = new Map<string, Json>();
  clientSide.onmessage = (message) => {
    const m = JSON.parse(JSON.stringify(message)) as Json;
    if (m.id !== undefined && m.method === undefined) answers.set(String(m.id), m);
  };
  await clientSide.start();
  await server().connect(rules);
  let n = 0;
  const rpc = async (method: string, params: Json = {}): Promise<Json> => {
    const id = `${principal}-${n++}`;
    await clientSide.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
    const deadline = Date.now() + 30_000;
    while (!answers.has(id)) {
      if (Date.now() > deadline) throw new Error(`no answer to ${method}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return answers.get(id) as Json;
  };
  await rpc('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: principal, version: '1' },
  });
  return { rpc, close: () => rules.close() };
}

beforeAll(async () => {
  sb = sandbox();
  writeFileSync(
    join(sb.runtime, 'wait-here.yaml'),
    'id: wait-here\nname: W\ndescription: D\nversion: 1.0.0\nsteps:\n  - {id: answer, title: Answer, prompt: Say something.}\n',
  );
  app = createApp(
    loadConfig({ env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data') }, cwd: sb.project }),
    { watch: false, log: silentLogger, validationWorker: await validationWorkerUrl() },
  );
});
afterAll(async () => {
  await app.close();
  sb.cleanup();
});

describe('tasks belong to the principal that created them', () => {
  it('another principal cannot get, wait on, cancel, answer, list or workflow_cancel a task', async () => {
    const alice = await connection('alice');
    const bob = await connection('bob');
    const created = await alice.rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'wait-here' },
      task: {},
    });
    const { taskId } = created.result.task;
    const runId = created.result._meta['workflowlookup/run'].run_id;
    expect((await alice.rpc('tasks/get', { taskId })).result.taskId).toBe(taskId);

    for (const [method, params] of [
      ['tasks/get', { taskId }],
      ['tasks/result', { taskId }],
      ['tasks/cancel', { taskId }],
      [
        'tasks/update',
        { taskId, inputResponses: { 'step-1': { action: 'accept', content: { summary: 'x' } } } },
      ],
    ] as const) {
      const res = await bob.rpc(method, params);
      expect(res.error, method).toMatchObject({ code: -32602, data: { error_code: 'TASK_NOT_FOUND' } });
    }
    expect((await bob.rpc('tasks/list')).result.tasks).toEqual([]);
    for (const operation_id of [taskId, runId]) {
      const res = await bob.rpc('workflow_cancel', { operation_id, confirm: true });
      expect(res.error.data.error_code).toBe('TASK_NOT_FOUND');
    }
    const purge = await bob.rpc('workflow_purge_history', { older_than: '0s', confirm: true });
    expect(purge.result.removed.tasks).toBe(0);

    // Alice still owns it, untouched.
    expect((await alice.rpc('tasks/list')).result.tasks.map((t: Json) => t.taskId)).toEqual([taskId]);
    expect((await alice.rpc('tasks/cancel', { taskId })).result.status).toBe('cancelled');
    await alice.close();
    await bob.close();
  });
});
