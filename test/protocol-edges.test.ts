import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
  specTypeSchemas,
} from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { AppOptions } from '../src/app.js';
import { conformanceFixtures } from '../src/protocol/conformance/fixtures.js';
import { poster2026 } from './helpers/http-server.js';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { CLI, type Sandbox, SPAWNED_WAIT_MS, sandbox, twoSteps } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
const closers: (() => Promise<unknown>)[] = [];

const TWO_STEPS = twoSteps('two-steps', 'Two steps');

/** A workflow of someone's that no repair of another workflow may touch. */
const PRECIOUS = TWO_STEPS.replace('id: two-steps', 'id: precious').replace('Two steps', 'Precious');
/** A manifest that does not validate (its version), to be repaired. */
const BROKEN = TWO_STEPS.replace('id: two-steps', 'id: broken-thing').replace('1.0.0', 'one');

beforeAll(() => {
  sb = sandbox();
  writeFileSync(join(sb.runtime, 'two-steps.yaml'), TWO_STEPS);
  writeFileSync(join(sb.runtime, 'doomed.yaml'), TWO_STEPS.replace('two-steps', 'doomed'));
  writeFileSync(join(sb.runtime, 'precious.yaml'), PRECIOUS);
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close().catch(() => undefined);
});
afterAll(() => sb.cleanup());

let dataDirs = 0;
/** A data dir of its own: no test sees another's executions. */
const freshData = () => ({ WORKFLOWLOOKUP_DATA_DIR: join(sb.root, `data-${dataDirs++}`) });

type ElicitHandler = (params: Json) => Json | Promise<Json>;

/** An SDK client in this process; `elicit` declares elicitation and answers every elicitation/create. */
async function connect(
  options: { elicit?: ElicitHandler; sample?: (params: Json) => Json; tools?: string; app?: AppOptions } = {},
) {
  const capabilities: Json = {};
  if (options.elicit) capabilities.elicitation = { form: {} };
  if (options.sample) capabilities.sampling = {};
  const client = new Client({ name: 'edges', version: '1.0.0' }, { capabilities });
  const seen: Json[] = [];
  const { elicit, sample } = options;
  if (elicit) {
    client.setRequestHandler('elicitation/create', async (request) => {
      seen.push(request.params as Json);
      return (await elicit(request.params as Json)) as never;
    });
  }
  if (sample) {
    client.setRequestHandler('sampling/createMessage', async (request) => {
      seen.push(request.params as Json);
      return sample(request.params as Json) as never;
    });
  }
  const host = await inProcessClient(
    sb,
    { WORKFLOWLOOKUP_TOOLS: options.tools ?? 'all', ...freshData() },
    { client, ...(options.app ? { app: options.app } : {}) },
  );
  closers.push(host.close);
  const call = async (name: string, args: Json): Promise<Json> => {
    const res = await client.callTool({ name, arguments: args });
    return res.isError ? { error: (res.structuredContent as Json).error } : (res.structuredContent as Json);
  };
  /** A seed 001 direct method call: a plain result, or the JSON-RPC error. */
  const direct = async (method: string, params: Json): Promise<Json> => {
    try {
      return await client.request({ method, params } as never, z.looseObject({}));
    } catch (error) {
      if (error instanceof ProtocolError) return { error: { code: error.code, data: error.data } };
      throw error;
    }
  };
  return { client, call, direct, seen };
}

/** Starts a task-only tool as an MCP task and waits for its result. */
async function runTask(client: Client, name: string, args: Json) {
  const created = await client.request(
    { method: 'tools/call', params: { name, arguments: args, task: { ttl: 600_000 } } },
    specTypeSchemas.CreateTaskResult,
  );
  return runTaskResult(client, created.task.taskId);
}

async function runTaskResult(client: Client, taskId: string) {
  return client.request({ method: 'tasks/result', params: { taskId } }, specTypeSchemas.CallToolResult, {
    timeout: 60_000,
  });
}

/** A sampling reply (the model's text). */
const reply = (text: string) => ({
  role: 'assistant',
  content: { type: 'text', text },
  model: 'canned-model',
  stopReason: 'endTurn',
});

/** Agent steps of a rerun are answered through elicitation. */
const answerSteps: ElicitHandler = () => ({ action: 'accept', content: { summary: 'done as asked' } });

/** An abandoned execution of two-steps, something workflow_purge_history can remove. */
async function finishedExecution(call: (name: string, args: Json) => Promise<Json>): Promise<string> {
  const started = await call('workflow_start', { workflow_id: 'two-steps' });
  await call('workflow_set_state', { execution_id: started.execution_id, state: 'abandoned' });
  return started.execution_id as string;
}

async function exists(call: (name: string, args: Json) => Promise<Json>, id: string): Promise<boolean> {
  const res = await call('workflow_resume', { execution_id: id });
  return res.error === undefined;
}

describe('confirmation: one path for every destructive tool, on every entry', () => {
  const purge = { state: 'abandoned' };

  it('a JSON-RPC error answering the elicitation is CONFIRMATION_REQUIRED, not an internal error', async () => {
    const { call, seen } = await connect({
      elicit: () => {
        throw new Error('the user closed the dialog');
      },
    });
    const id = await finishedExecution(call);
    const refused = await call('workflow_purge_history', purge);
    expect(seen).toHaveLength(1);
    expect(refused.error).toMatchObject({
      code: -32602,
      data: {
        error_code: 'CONFIRMATION_REQUIRED',
        retryable: false,
        message: expect.stringContaining('the client failed the confirmation request'),
      },
    });
    expect(await exists(call, id)).toBe(true);
  });

  it('an accept with empty or malformed content is no confirmation', async () => {
    for (const answer of [
      { action: 'accept', content: {} },
      { action: 'accept', content: { confirm: 'yes' } },
      { action: 'accept' },
    ]) {
      const { call } = await connect({ elicit: () => answer });
      const id = await finishedExecution(call);
      const refused = await call('workflow_purge_history', purge);
      expect(refused.error?.data?.error_code, JSON.stringify(answer)).toBe('CONFIRMATION_REQUIRED');
      expect(refused.error.data.message).toMatch(/not confirmed/);
      expect(await exists(call, id)).toBe(true);
      for (const close of closers.splice(0)) await close();
    }
  });

  it('a direct JSON-RPC method asks by elicitation when the client declared it, as tools/call does', async () => {
    let answer: Json = { action: 'decline' };
    const { call, direct, seen } = await connect({ elicit: () => answer });
    const id = await finishedExecution(call);
    const declined = await direct('workflow_purge_history', purge);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.message).toMatch(/Permanently remove 1 finished execution/);
    expect(declined.error).toMatchObject({
      code: -32602,
      data: { error_code: 'CONFIRMATION_REQUIRED', message: expect.stringContaining('the user declined') },
    });
    expect(await exists(call, id)).toBe(true);
    answer = { action: 'accept', content: { confirm: true } };
    const removed = await direct('workflow_purge_history', purge);
    expect(seen).toHaveLength(2);
    expect(removed).toMatchObject({ dry_run: false, removed: { executions: 1 } });
    expect(await exists(call, id)).toBe(false);
    // The same for every destructive tool called directly: deleting a workflow asks too.
    answer = { action: 'decline' };
    const kept = await direct('workflow_delete', { workflow_id: 'doomed' });
    expect(kept.error?.data?.error_code).toBe('CONFIRMATION_REQUIRED');
    expect(seen.at(-1)?.message).toMatch(/Delete workflow "doomed"/);
  });

  it('without elicitation, a destructive call needs confirm: true, on both entries', async () => {
    const { call, direct } = await connect();
    await finishedExecution(call);
    for (const refused of [
      await call('workflow_purge_history', purge),
      await direct('workflow_purge_history', purge),
    ]) {
      expect(refused.error).toMatchObject({
        code: -32602,
        data: {
          error_code: 'CONFIRMATION_REQUIRED',
          message: expect.stringContaining('needs confirm: true'),
        },
      });
    }
    expect(await direct('workflow_purge_history', { ...purge, confirm: true })).toMatchObject({
      removed: { executions: 1 },
    });
  });

  it('over HTTP too: a direct method in a 2025-11-25 session asks the client', async () => {
    const server = await inProcessHttp(sb, { WORKFLOWLOOKUP_TOOLS: 'all', ...freshData() });
    closers.push(server.close);
    const client = new Client(
      { name: 'edges-http', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push((request.params as Json).message);
      return { action: 'accept', content: { confirm: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    closers.push(() => client.close());
    const started = await client.request(
      { method: 'workflow_start', params: { workflow_id: 'two-steps' } } as never,
      z.looseObject({}),
    );
    await client.request(
      {
        method: 'workflow_set_state',
        params: { execution_id: started.execution_id, state: 'abandoned' },
      } as never,
      z.looseObject({}),
    );
    const removed = await client.request(
      { method: 'workflow_purge_history', params: { state: 'abandoned' } } as never,
      z.looseObject({}),
    );
    // A bare `elicitation: {}` (form support before modes existed) is asked as well.
    expect(asked).toHaveLength(1);
    expect(removed).toMatchObject({ removed: { executions: 1 } });
  });

  it('on 2026-07-28 a direct method answers input_required, and the retry with the answer is served', async () => {
    const server = await inProcessHttp(sb, { WORKFLOWLOOKUP_TOOLS: 'all', ...freshData() });
    closers.push(server.close);
    const post = poster2026(server.url, { elicitation: { form: {} } });
    const started = (await post('workflow_start', { workflow_id: 'two-steps' })).result;
    await post('workflow_set_state', { execution_id: started.execution_id, state: 'abandoned' });
    const asked = await post('workflow_purge_history', { state: 'abandoned' });
    expect(asked.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { confirm: { method: 'elicitation/create' } },
    });
    const declined = await post('workflow_purge_history', {
      state: 'abandoned',
      inputResponses: { confirm: { action: 'accept', content: {} } },
    });
    expect(declined.error?.data?.error_code).toBe('CONFIRMATION_REQUIRED');
    const removed = await post('workflow_purge_history', {
      state: 'abandoned',
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    });
    expect(removed.result).toMatchObject({ removed: { executions: 1 } });
  });
});

describe('workflow_set_state: an agent cannot declare its run finished', () => {
  it('refuses completed and failed with why, and the execution keeps running', async () => {
    const { client, call } = await connect();
    const started = await call('workflow_start', { workflow_id: 'two-steps' });
    const id = started.execution_id as string;
    for (const state of ['completed', 'failed']) {
      const refused = await call('workflow_set_state', { execution_id: id, state });
      expect(refused.error, state).toMatchObject({ code: -32602, data: { error_code: 'INVALID_PARAMS' } });
      expect(refused.error.data.message).toContain("is the server's to set");
    }
    const status = await client.readResource({ uri: `workflowlookup://workflow/workflow_status/${id}` });
    expect(JSON.parse((status.contents[0] as { text: string }).text)).toMatchObject({
      state: 'running',
      current_step: 'first',
    });
    // Pause, resume and abandon stay the agent's; what it may set next never includes completed.
    const paused = await call('workflow_set_state', { execution_id: id, state: 'paused' });
    expect(paused).toMatchObject({ workflow_state: 'paused', allowed_next: ['running', 'abandoned'] });
    const running = await call('workflow_set_state', { execution_id: id, state: 'running' });
    expect(running.allowed_next).toEqual(['paused', 'abandoned', 'diverged']);
    expect(await call('workflow_set_state', { execution_id: id, state: 'abandoned' })).toMatchObject({
      workflow_state: 'abandoned',
      allowed_next: [],
    });
    // The published schema offers only what an agent may set.
    const listed = (await client.listTools()).tools.find((t) => t.name === 'workflow_set_state');
    expect((listed?.inputSchema.properties as Json | undefined)?.state.enum).toEqual([
      'running',
      'paused',
      'abandoned',
      'diverged',
    ]);
  });

  it('only the last step accepted completes an execution', async () => {
    const { call } = await connect();
    const started = await call('workflow_start', { workflow_id: 'two-steps' });
    const submit = (answer: Json) => answer.next.find((n: Json) => n.tool === 'workflow_next_step').arguments;
    const first = await call('workflow_next_step', {
      ...submit(started),
      output: { summary: 'did the first thing' },
    });
    expect(first.workflow_state).toBe('running');
    const done = await call('workflow_next_step', {
      ...submit(first),
      output: { summary: 'did the second thing' },
    });
    expect(done.workflow_state).toBe('completed');
  });
});

describe('tool annotations tell what each tool can do', () => {
  it('the whole table: read-only, destructive, idempotent, open world', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const table = Object.fromEntries(
      tools.map((t) => {
        const a = t.annotations ?? {};
        const flags = [
          a.readOnlyHint && 'read-only',
          a.destructiveHint && 'destructive',
          a.idempotentHint && 'idempotent',
          a.openWorldHint && 'open-world',
        ];
        return [t.name, flags.filter(Boolean).join(' ')];
      }),
    );
    const readOnly = 'read-only idempotent';
    // Command steps call whatever operations of the imported APIs a workflow names: destructive, open.
    const drivesCommands = 'destructive open-world';
    expect(table).toEqual({
      workflow_list: readOnly,
      workflow_get: readOnly,
      workflow_next: readOnly,
      workflow_validate: readOnly,
      workflow_start: drivesCommands,
      workflow_next_step: `destructive idempotent open-world`,
      workflow_set_state: 'destructive idempotent',
      workflow_resume: 'destructive idempotent open-world',
      workflow_executions: readOnly,
      workflow_validate_manifest: readOnly,
      // a scratch store of its own; command steps answer from the test file, never the network
      workflow_test: readOnly,
      // overwrite (or expected_version) replaces a workflow's content
      workflow_save: 'destructive idempotent',
      // never over another workflow, and renaming back restores it
      workflow_rename: 'idempotent',
      workflow_delete: 'destructive idempotent',
      workflow_preview_inputs: readOnly,
      workflow_resolve_inputs: `${readOnly} open-world`,
      workflow_preview_rendered: readOnly,
      workflow_step_plan: readOnly,
      catalog_validate_openapi: `${readOnly} open-world`,
      catalog_preview_import: `${readOnly} open-world`,
      // overwrite replaces a catalog
      catalog_import_openapi: 'destructive idempotent open-world',
      catalog_set_enabled: 'idempotent',
      catalog_remove: 'destructive idempotent',
      command_list: readOnly,
      provider_list: readOnly,
      // enable changes this session's tools/list: not read-only, nothing lost
      workflow_tools: 'idempotent',
      workflow_run: drivesCommands,
      workflow_cancel: 'destructive idempotent',
      workflow_purge_history: 'destructive',
      // overwrite replaces a workflow, and the run drives command steps
      workflow_author_and_run: drivesCommands,
      workflow_execute: drivesCommands,
      // replaces the workflow it repairs, then reruns it
      workflow_repair_and_rerun: drivesCommands,
    });
    // workflow_tools does change what a session lists, as its annotation now says.
    const session = await connect({ tools: 'core' });
    const before = (await session.client.listTools()).tools.length;
    const listed = new Promise<void>((resolve) =>
      session.client.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
    );
    await session.call('workflow_tools', { enable: ['tasks'] });
    await listed;
    expect((await session.client.listTools()).tools.length).toBeGreaterThan(before);
  });
});

describe('workflow_repair_and_rerun repairs only the workflow it was asked to', () => {
  it('refuses a reply with another id (asking again), and writes nothing', async () => {
    const replies = [PRECIOUS, PRECIOUS.replace('id: precious', 'id: yet-another')];
    const { client, seen } = await connect({
      sample: () => reply(replies.shift() ?? 'nothing'),
      elicit: answerSteps,
    });
    const result = await runTask(client, 'workflow_repair_and_rerun', { manifest: BROKEN, max_repairs: 2 });
    expect(result.isError).toBe(true);
    const error = (result.structuredContent as Json).error;
    expect(error.data).toMatchObject({
      error_code: 'WORKFLOW_VALIDATION_FAILED',
      message: expect.stringContaining('nothing was saved'),
    });
    expect(error.data.violations).toEqual([
      expect.objectContaining({
        path: '/id',
        rule: 'required_id',
        expected: 'broken-thing',
        actual: 'yet-another',
      }),
    ]);
    // The first reply went back to the model with why it was refused.
    expect(
      seen
        .filter((p) => p.messages)
        .map((p) => p.messages[0].content.text)
        .join('\n'),
    ).toContain('id must be "broken-thing"');
    expect(readFileSync(join(sb.runtime, 'precious.yaml'), 'utf8')).toBe(PRECIOUS);
    expect(existsSync(join(sb.runtime, 'yet-another.yaml'))).toBe(false);
    expect(existsSync(join(sb.runtime, 'broken-thing.yaml'))).toBe(false);
  });

  it('saves the repair over the workflow it repaired only, at the version it read', async () => {
    writeFileSync(join(sb.runtime, 'half-done.yaml'), BROKEN.replace('broken-thing', 'half-done'));
    const fixed = TWO_STEPS.replace('two-steps', 'half-done');
    const replies = [PRECIOUS, fixed];
    const { client } = await connect({
      sample: () => reply(replies.shift() ?? 'nothing'),
      elicit: answerSteps,
    });
    const result = await runTask(client, 'workflow_repair_and_rerun', { workflow_id: 'half-done' });
    expect(result.isError, JSON.stringify(result.structuredContent)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      workflow_id: 'half-done',
      created: false,
      repairs: 2,
      run: { state: 'succeeded' },
    });
    expect(readFileSync(join(sb.runtime, 'half-done.yaml'), 'utf8')).toBe(fixed.trim());
    expect(readFileSync(join(sb.runtime, 'precious.yaml'), 'utf8')).toBe(PRECIOUS);
  });

  it('a repaired manifest replaces an existing workflow of its id only with overwrite', async () => {
    const edited = PRECIOUS.replace('Precious', 'Precious, edited');
    const { client, seen } = await connect({ sample: () => reply('unused'), elicit: answerSteps });
    const refused = await client
      .request(
        {
          method: 'tools/call',
          params: {
            name: 'workflow_repair_and_rerun',
            arguments: { manifest: edited },
            task: { ttl: 60_000 },
          },
        },
        specTypeSchemas.CreateTaskResult,
      )
      .then((created) => runTaskResult(client, created.task.taskId));
    expect((refused.structuredContent as Json).error.data).toMatchObject({
      error_code: 'WORKFLOW_CONFLICT',
      message: expect.stringContaining('pass overwrite: true'),
    });
    expect(seen).toEqual([]);
    expect(readFileSync(join(sb.runtime, 'precious.yaml'), 'utf8')).toBe(PRECIOUS);
    const replaced = await runTask(client, 'workflow_repair_and_rerun', {
      manifest: edited,
      overwrite: true,
    });
    expect(replaced.structuredContent).toMatchObject({ workflow_id: 'precious', created: false });
    expect(readFileSync(join(sb.runtime, 'precious.yaml'), 'utf8')).toBe(edited);
    writeFileSync(join(sb.runtime, 'precious.yaml'), PRECIOUS);
  });
});

describe('a sampling request the client refuses is reported as such', () => {
  it("names the refusal and the client's error, not a missing capability", async () => {
    const { client } = await connect({
      sample: () => {
        throw new Error('the user rejected the sampling request');
      },
      elicit: answerSteps,
    });
    const result = await runTask(client, 'workflow_repair_and_rerun', { manifest: BROKEN });
    expect(result.isError).toBe(true);
    const error = (result.structuredContent as Json).error;
    expect(error.code).toBe(-32000);
    expect(error.data).toMatchObject({
      error_code: 'CLIENT_REQUEST_FAILED',
      message: expect.stringContaining('refused or failed the sampling request'),
      method: 'sampling/createMessage',
      details: expect.stringContaining('the user rejected the sampling request'),
      retryable: true,
    });
    expect(JSON.stringify(error)).not.toContain('CLIENT_CAPABILITY_REQUIRED');
    expect(error.data.missing).toBeUndefined();
  });
});

describe('small edges', () => {
  it('workflow_fix_validation says a valid workflow passes, and a broken one does not', async () => {
    const { client } = await connect();
    const text = async (args: Json) =>
      JSON.stringify((await client.getPrompt({ name: 'workflow_fix_validation', arguments: args })).messages);
    const valid = await text({ workflow_id: 'two-steps' });
    expect(valid).not.toContain('does not pass validation');
    expect(valid).toContain('passes validation: there is nothing to fix');
    expect(valid).not.toContain('Return the corrected manifest');
    const broken = await text({ content: BROKEN });
    expect(broken).toContain('does not pass validation');
    expect(broken).toContain('/version');
    expect(broken).toContain('Return the corrected manifest');
  });

  it('an unknown input is left out of the next call, never a value to fill', async () => {
    writeFileSync(
      join(sb.runtime, 'takes-input.yaml'),
      TWO_STEPS.replace('id: two-steps', 'id: takes-input').replace(
        'steps:',
        'inputs:\n  who: {type: string, description: Who asks, required: true}\nsteps:',
      ),
    );
    const { call } = await connect();
    const resolved = await call('workflow_resolve_inputs', {
      workflow_id: 'takes-input',
      inputs: { who: 'me', bogus: 1 },
    });
    expect(resolved.ready).toBe(false);
    expect(resolved.inputs).toContainEqual(expect.objectContaining({ name: 'bogus', status: 'undeclared' }));
    const [nextCall] = resolved.next;
    expect(nextCall).toEqual({
      tool: 'workflow_resolve_inputs',
      arguments: { workflow_id: 'takes-input', inputs: { who: 'me' } },
    });
    // Sent as is, it is ready and names the start.
    const again = await call(nextCall.tool, nextCall.arguments);
    expect(again.ready).toBe(true);
    expect(again.next[0].tool).toBe('workflow_start');
    // workflow_start refuses the unknown input the same way: its fix leaves it out too.
    const refused = await call('workflow_start', {
      workflow_id: 'takes-input',
      inputs: { who: 'me', bogus: 1 },
    });
    expect(refused.error.data.error_code).toBe('INPUTS_NOT_READY');
    expect(JSON.stringify(refused.error.data.next)).not.toContain('bogus');
  });
});

describe('the conformance fixtures profile', () => {
  const FIXTURE_TOOLS = ['test_simple_text', 'greet', 'slow_compute', 'json_schema_2020_12_tool'];

  it("is off by default: none of the suite's tools, prompts or resources are served", async () => {
    const { client } = await connect();
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const name of FIXTURE_TOOLS) expect(names).not.toContain(name);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).not.toContain('test_simple_prompt');
    await expect(client.callTool({ name: 'test_simple_text', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      data: { details: expect.stringContaining('unknown tool') },
    });
    await expect(client.readResource({ uri: 'test://static-text' })).rejects.toThrow();
    // And the CLI takes the flag only with --http.
    const refused = spawnSync(process.execPath, [CLI, 'serve', '--conformance-fixtures'], {
      env: sb.env,
      encoding: 'utf8',
      timeout: SPAWNED_WAIT_MS,
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('--conformance-fixtures needs --http');
  });

  it("serves the suite's fixtures beside ours when asked to", async () => {
    const { client } = await connect({ tools: 'core', app: { conformanceFixtures: conformanceFixtures() } });
    const tools = (await client.listTools()).tools;
    const names = tools.map((t) => t.name);
    for (const name of [...FIXTURE_TOOLS, 'workflow_list', 'workflow_start']) expect(names).toContain(name);
    // Published as written, $schema and all (the json-schema-2020-12 scenario reads it back).
    const schema = tools.find((t) => t.name === 'json_schema_2020_12_tool')?.inputSchema as Json;
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(schema)).toEqual(expect.arrayContaining(['$defs', 'allOf', 'if', 'then', 'else']));
    const image = await client.callTool({ name: 'test_image_content', arguments: {} });
    expect(image.content).toEqual([{ type: 'image', data: expect.any(String), mimeType: 'image/png' }]);
    expect((await client.callTool({ name: 'greet', arguments: { name: 'World' } })).content).toEqual([
      { type: 'text', text: 'Hello, World!' },
    ]);
    const prompt = await client.getPrompt({
      name: 'test_prompt_with_arguments',
      arguments: { arg1: 'hello', arg2: 'world' },
    });
    expect(prompt.messages[0]?.content).toEqual({
      type: 'text',
      text: "Prompt with arguments: arg1='hello', arg2='world'",
    });
    // The resources-subscribe scenarios subscribe to a fixture; our own resources keep their checks.
    await expect(client.subscribeResource({ uri: 'test://watched-resource' })).resolves.toBeDefined();
    await expect(client.subscribeResource({ uri: 'workflowlookup://nothing/here' })).rejects.toThrow();
    const read = await client.readResource({ uri: 'test://template/123/data' });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual({
      id: '123',
      templateTest: true,
      data: 'Data for ID: 123',
    });
  });

  it('a task whose tool fails inside the server ends failed with the error, not completed (SEP-2663)', async () => {
    const server = await inProcessHttp(sb, freshData(), { conformanceFixtures: conformanceFixtures() });
    closers.push(server.close);
    const post = poster2026(server.url, { extensions: { 'io.modelcontextprotocol/tasks': {} } });
    const created = await post(
      'tools/call',
      { name: 'protocol_error_job', arguments: {} },
      'protocol_error_job',
    );
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    let task: Json = {};
    for (let i = 0; i < 100 && task.status !== 'failed' && task.status !== 'completed'; i++) {
      task = (await post('tasks/get', { taskId: created.result.taskId }, created.result.taskId)).result;
      if (task.status === 'working') await new Promise((r) => setTimeout(r, 20));
    }
    expect(task).toMatchObject({ status: 'failed', error: { code: -32603 } });
    expect(task.result).toBeUndefined();
  });
});
