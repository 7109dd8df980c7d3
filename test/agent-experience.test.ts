// Issue 14: answers that lead and say each thing once, one name per concept, one inputs check,
// templates rendered where people and agents read them, and command steps that wait for a fix.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { callTool, connectClient, FIXTURES, ROOT, type Sandbox, tokenOf } from './helpers/server.js';
import { apiSandbox, TasksApi, TOKEN } from './helpers/tasks-api.js';

type Json = Record<string, any>;

const OPENAPI = join(FIXTURES, 'openapi', 'tasks-api.yaml');

const INPUTS_FLOW = `id: inputs-flow
name: Inputs flow
description: A pattern-checked input
version: 1.0.0
inputs:
  ticket: { type: string, required: true, pattern: "^T-[0-9]+$", description: Ticket id }
steps:
  - { id: work, title: "Work on \${{ inputs.ticket }}", prompt: "Fix \${{ inputs.ticket }}." }
`;

const FETCH_FLOW = `id: fetch-flow
name: Fetch flow
description: One command step, then an agent step
version: 1.0.0
steps:
  - { id: fetch, title: Fetch the task, run: tasks-api get-task, with: { taskId: t1 } }
  - { id: read, title: Read it, prompt: "Read \${{ steps.fetch.output.title }}." }
`;

let sb: Sandbox;
let api: TasksApi;
let client: Client;
let close: () => Promise<void>;
const call = (name: string, args: Json, c: Client = client) => callTool(c, name, args);

async function read(uri: string, c: Client = client): Promise<Json> {
  const res = await c.readResource({ uri });
  return JSON.parse((res.contents[0] as { text: string }).text);
}

beforeAll(async () => {
  ({ api, sb } = await apiSandbox());
  writeFileSync(join(sb.runtime, 'inputs-flow.yaml'), INPUTS_FLOW);
  writeFileSync(join(sb.runtime, 'fetch-flow.yaml'), FETCH_FLOW);
  ({ client, close } = await connectClient(sb));
  const imported = await call('catalog_import_openapi', {
    source: OPENAPI,
    catalog_title: 'Tasks API',
    base_url: api.baseUrl,
  });
  expect(imported.error).toBeUndefined();
});

afterAll(async () => {
  await close();
  await api.stop();
  sb.cleanup();
});

describe('answers say each thing once', () => {
  it('the text copy is a one-line summary and the compact JSON, without the message again', async () => {
    const res = await client.callTool({
      name: 'workflow_start',
      arguments: { workflow_id: 'ai-task-implementation' },
    });
    const structured = res.structuredContent as Json;
    const text = (res.content as { text: string }[])[0]?.text ?? '';
    const [line, json] = [text.slice(0, text.indexOf('\n')), text.slice(text.indexOf('\n') + 1)];
    expect(line).toBe(structured.message);
    const { message: _message, ...rest } = structured;
    expect(json).toBe(JSON.stringify(rest));
    expect(text).not.toContain('\n  '); // never pretty-printed
    // The step prompt once (in agent_content); the token where seed 004 shows it (new_token,
    // continuation_token) and in the ready-to-send call of next.
    expect(JSON.stringify(structured).split(tokenOf(structured))).toHaveLength(3);
    expect(structured.new_token).toBe(tokenOf(structured));
    expect(structured).not.toHaveProperty('guidance.prompt');
    const resumed = await call('workflow_resume', { execution_id: structured.execution_id });
    expect(JSON.stringify(resumed).split(tokenOf(structured))).toHaveLength(3);
    expect(resumed.continuation_token).toBe(tokenOf(structured));
    const resource = await read(`workflowlookup://workflow/current_step/${structured.execution_id}`);
    expect(resource).toMatchObject({ workflow_id: 'ai-task-implementation' });
    expect(tokenOf(resource)).toBe(tokenOf(structured));
  });
});

describe('answers that lead (item 3)', () => {
  it('every successful answer of the execution, authoring and automation tools carries next', async () => {
    const groups = (await call('workflow_tools', {})).groups as { group: string; tools: string[] }[];
    const leading = groups
      .filter((g) => ['executions', 'authoring', 'automation'].includes(g.group))
      .flatMap((g) => g.tools);
    const saved = INPUTS_FLOW.replace('id: inputs-flow', 'id: saved-flow');
    const started = await call('workflow_start', { workflow_id: 'ai-task-implementation' });
    const calls: [string, Json][] = [
      ['workflow_start', { workflow_id: 'ai-task-implementation' }],
      ['workflow_next_step', { token: tokenOf(started), output: { summary: 'x' } }],
      ['workflow_set_state', { execution_id: started.execution_id, state: 'paused' }],
      ['workflow_resume', { execution_id: started.execution_id }],
      ['workflow_executions', {}],
      ['workflow_validate_manifest', { content: saved }],
      ['workflow_save', { content: saved }],
      ['workflow_rename', { workflow_id: 'saved-flow', new_id: 'saved-flow-2' }],
      ['workflow_delete', { workflow_id: 'saved-flow-2', confirm: true }],
      ['workflow_test', { workflow_id: 'coding-task-workflow' }],
      ['workflow_preview_inputs', { workflow_id: 'inputs-flow' }],
      ['workflow_resolve_inputs', { workflow_id: 'inputs-flow', inputs: {} }],
      ['workflow_preview_rendered', { workflow_id: 'inputs-flow', inputs: { ticket: 'T-1' } }],
      ['workflow_step_plan', { workflow_id: 'inputs-flow', inputs: {} }],
      ['catalog_validate_openapi', { source: OPENAPI }],
      ['catalog_preview_import', { source: OPENAPI, catalog_title: 'Spare API' }],
      ['catalog_import_openapi', { source: OPENAPI, catalog_title: 'Spare API' }],
      ['catalog_set_enabled', { catalog_id: 'spare-api', enabled: true }],
      ['command_list', { catalog_id: 'spare-api' }],
      ['provider_list', {}],
      ['catalog_remove', { catalog_id: 'spare-api' }],
      ['workflow_purge_history', { state: 'abandoned', dry_run: true }],
    ];
    expect(new Set(calls.map(([tool]) => tool))).toEqual(new Set(leading));
    const known = new Set(groups.flatMap((g) => g.tools));
    for (const [tool, args] of calls) {
      const res = await call(tool, args);
      expect(res.error, `${tool}: ${JSON.stringify(res.error)}`).toBeUndefined();
      expect(Array.isArray(res.next), `${tool} answers without next`).toBe(true);
      for (const n of res.next as Json[]) {
        expect(known.has(n.tool), `${tool} names ${n.tool}`).toBe(true);
        expect(typeof n.arguments).toBe('object');
      }
    }
    // A validated manifest leads to its save, a saved one to its start (through its inputs).
    const checked = await call('workflow_validate_manifest', { content: saved });
    expect(checked.next).toEqual([
      { tool: 'workflow_save', arguments: {}, fill: { content: 'the manifest text you just checked' } },
    ]);
    const stored = await call('workflow_save', { content: saved });
    expect(stored.next).toEqual([
      {
        tool: 'workflow_resolve_inputs',
        arguments: { workflow_id: 'saved-flow', inputs: {} },
        fill: { 'inputs.ticket': 'Ticket id' },
      },
    ]);
  });

  it('no bundled workflow tells the agent which tool to report with (the mode decides)', () => {
    for (const file of readdirSync(join(ROOT, 'workflows'))) {
      const text = readFileSync(join(ROOT, 'workflows', file), 'utf8');
      expect(text, file).not.toMatch(/\bworkflow_next(_step)?\b/);
    }
  });
});

describe('one name per concept, seed names as aliases', () => {
  it('accepts workflow_id everywhere and the seed names as aliases; conflicting values are refused', async () => {
    const viaAlias = await call('workflow_start', { workflowId: 'ai-task-implementation' });
    const viaSeed = await call('workflow_start', { workflow_name: 'ai-task-implementation' });
    expect(viaAlias.error).toBeUndefined();
    expect(viaSeed.error).toBeUndefined();
    const both = await call('workflow_start', {
      workflow_id: 'ai-task-implementation',
      workflow_name: 'coding-task-workflow',
    });
    expect(both.error).toMatchObject({ code: -32602 });
    expect(both.error.data.details).toMatch(/workflow_id and its alias workflow_name differ/);
    // The guidance tools publish seed 001's names and take workflow_id as well.
    expect((await call('workflow_get', { workflow_id: 'ai-task-implementation' })).id).toBe(
      'ai-task-implementation',
    );
    const step = await call('workflow.next', { workflow_id: 'ai-task-implementation', completedSteps: [] });
    expect(step.isComplete).toBe(false);
    // The token under the names seed 004 answered with.
    const advanced = await call('workflow_next_step', {
      continuation_token: tokenOf(viaSeed),
      output: { summary: 'too short' },
    });
    expect(advanced.execution_id).toBe(viaSeed.execution_id);
    const listed = await call('workflow_executions', { workflow_name: 'ai-task-implementation' });
    expect(listed.executions[0]).toHaveProperty('workflow_id', 'ai-task-implementation');
    expect(listed.executions[0]).not.toHaveProperty('workflow_name');
  });

  it("says plainly which validate is which, and keeps the default tools/list under WorkRail's", async () => {
    const raw = new InProcessRaw({ env: { ...sb.env, WORKFLOWLOOKUP_TOOLS: 'all' }, cwd: sb.project });
    try {
      await raw.initialize();
      const all = ((await raw.request(2, 'tools/list', {})).result as { tools: Json[] }).tools;
      const by = Object.fromEntries(all.map((t) => [t.name, t.description as string]));
      expect(by.workflow_validate).toContain('workflow_validate_manifest');
      expect(by.workflow_validate_manifest).toMatch(/workflow\.validate/);
      expect(by.workflow_validate_manifest).toContain('workflow_validate');
      // Only canonical argument names are published.
      const start = all.find((t) => t.name === 'workflow_start');
      expect(Object.keys(start?.inputSchema.properties)).toEqual([
        'workflow_id',
        'execution_id',
        'context',
        'inputs',
      ]);
      // The dotted seed 003 name keeps its meaning: a manifest check.
      const manifest = await raw.request(3, 'workflow.validate', { content: 'id: x' });
      expect(manifest.result).toMatchObject({ valid: false });
    } finally {
      raw.kill();
    }
    const core = new InProcessRaw({ env: sb.env, cwd: sb.project });
    try {
      await core.initialize();
      const listed = (await core.request(2, 'tools/list', {})).result;
      // Aimed at 8 KB; the seeds' tools with complete schemas need more (docs/tools.md): at most
      // WorkRail 3.121's 11,815 bytes.
      expect(Buffer.byteLength(JSON.stringify(listed))).toBeLessThanOrEqual(11_815);
    } finally {
      core.kill();
    }
  });

  it('server instructions name only the tools the profile lists', async () => {
    const names = /\b(?:workflow|catalog|command|provider)_[a-z_]+\b/g;
    const everyTool = new Set((await client.listTools()).tools.map((t) => t.name));
    const all = new InProcessRaw({ env: { ...sb.env, WORKFLOWLOOKUP_TOOLS: 'all' }, cwd: sb.project });
    await all.initialize();
    for (const t of ((await all.request(2, 'tools/list', {})).result as { tools: Json[] }).tools)
      everyTool.add(t.name);
    all.kill();
    for (const profile of ['core', 'guidance', 'executions', 'authoring', 'automation', 'tasks', 'all']) {
      const raw = new InProcessRaw({ env: { ...sb.env, WORKFLOWLOOKUP_TOOLS: profile }, cwd: sb.project });
      try {
        const init = await raw.initialize();
        const instructions = (init.result as { instructions: string }).instructions;
        const listed = new Set(
          ((await raw.request(2, 'tools/list', {})).result as { tools: Json[] }).tools.map((t) => t.name),
        );
        for (const name of (instructions.match(names) ?? []).filter((n) => everyTool.has(n))) {
          expect(listed.has(name), `${profile}: instructions name ${name}`).toBe(true);
        }
      } finally {
        raw.kill();
      }
    }
  });
});

describe('one inputs check (item 8)', () => {
  it('workflow_start refuses exactly what workflow_resolve_inputs calls invalid, with per-input reasons', async () => {
    const before = (await call('workflow_executions', { states: ['running'], limit: 200 })).executions.length;
    for (const [workflow, inputs] of [
      ['export-project-tasks', { project: 'zz' }],
      ['inputs-flow', { ticket: 'zz' }],
      ['inputs-flow', {}],
    ] as const) {
      const resolved = await call('workflow_resolve_inputs', { workflow_id: workflow, inputs });
      expect(resolved.ready).toBe(false);
      const started = await call('workflow_start', { workflow_id: workflow, inputs });
      expect(started.error.data.error_code).toBe('INPUTS_NOT_READY');
      const reasons = (list: Json[]) => list.map((i) => [i.name, i.status, i.message]);
      expect(reasons(started.error.data.inputs)).toEqual(reasons(resolved.inputs));
      // The fix is the inputs call, with the values that were fine and what to fill in.
      expect(started.error.data.next).toEqual(resolved.next);
      expect(started.error.data.suggested_action).toContain('workflow_resolve_inputs');
      expect(started.error.data.message).not.toMatch(/^inputs are not ready/i);
    }
    const after = (await call('workflow_executions', { states: ['running'], limit: 200 })).executions.length;
    expect(after).toBe(before);
    const ok = await call('workflow_start', { workflow_id: 'inputs-flow', inputs: { ticket: 'T-7' } });
    expect(ok.step_name).toBe('work');
  });
});

describe('templates rendered where they are read (item 9)', () => {
  it('agent_content, workflow_step_plan titles and the execution_progress resource show values as data', async () => {
    const started = await call('workflow_start', { workflow_id: 'inputs-flow', inputs: { ticket: 'T-42' } });
    expect(started.agent_content).toContain('Work on [inputs.ticket: `T-42`]');
    expect(started.agent_content).not.toContain('${{');
    expect(started.agent_content.split('Work on')).toHaveLength(2); // the title once
    const plan = await call('workflow_step_plan', { workflow_id: 'inputs-flow', inputs: { ticket: 'T-42' } });
    expect(plan.steps[0].title).toBe('Work on [inputs.ticket: `T-42`]');
    expect(plan.next).toEqual([
      { tool: 'workflow_start', arguments: { workflow_id: 'inputs-flow', inputs: { ticket: 'T-42' } } },
    ]);
    const progress = await read(`workflowlookup://workflow/execution_progress/${started.execution_id}`);
    expect(progress.steps[0].title).toBe('Work on [inputs.ticket: `T-42`]');
    const rendered = await call('workflow_preview_rendered', {
      workflow_id: 'inputs-flow',
      inputs: { ticket: 'T-42' },
    });
    expect(rendered.steps[0].rendered.prompt).toBe('Fix [inputs.ticket: `T-42`].');
  });

  it('workflow_run_with_inputs uses the inputs the workflow declares', async () => {
    const prompt = await client.getPrompt({
      name: 'workflow_run_with_inputs',
      arguments: { workflow_id: 'export-project-tasks', inputs: '{"title_prefix": "Later"}' },
    });
    const text = (prompt.messages[0]?.content as { text: string } | undefined)?.text ?? '';
    expect(text).toContain('Inputs it declares:');
    expect(text).toMatch(
      /- project \(string, required\): Project to work on\. Choices come from tasks-api list-projects\. Missing\./,
    );
    expect(text).toContain('title_prefix (string): Prefix for the follow-up task title. Given: "Later".');
    expect(text).toContain(
      'workflow_start {"workflow_id":"export-project-tasks","inputs":{"title_prefix":"Later"}}',
    );
    expect(text).not.toContain('workflow_name');
  });
});

describe('a command step waits for the fix and names the call that retries it (items 3, 12)', () => {
  it('an API that is down: the execution waits; the next call, sent as is once it is up, carries on', async () => {
    const down = new TasksApi();
    await down.start();
    const port = down.port;
    await down.stop();
    const env = {
      ...sb.env,
      WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port},127.0.0.1:${port}`,
      WORKFLOWLOOKUP_CATALOG_DOWN_API_TOKEN: TOKEN,
    };
    writeFileSync(
      join(sb.runtime, 'down-flow.yaml'),
      FETCH_FLOW.replace('fetch-flow', 'down-flow').replace('tasks-api', 'down-api'),
    );
    const { client: c, close: closeC } = await connectClient(sb, { env });
    try {
      const imported = await call(
        'catalog_import_openapi',
        { source: OPENAPI, catalog_title: 'Down API', base_url: `http://127.0.0.1:${port}/api` },
        c,
      );
      expect(imported.error).toBeUndefined();
      const failed = await call('workflow_start', { workflow_id: 'down-flow' }, c);
      const id = failed.error.data.context.run_id as string;
      const resume = { tool: 'workflow_resume', arguments: { execution_id: id } };
      expect(failed.error.data).toMatchObject({
        error_code: 'COMMAND_FAILED',
        reason: 'network',
        retryable: true,
        next: [resume],
      });
      expect(failed.error.data.suggested_action).toContain(`workflow_resume {"execution_id": "${id}"}`);
      // Still down: a retry fails the same way and names the same call; the current_step resource (which
      // runs nothing) says what the execution waits on.
      const again = await call(resume.tool, resume.arguments, c);
      expect(again.error.data).toMatchObject({ error_code: 'COMMAND_FAILED', next: [resume] });
      const waiting = await read(`workflowlookup://workflow/current_step/${id}`, c);
      expect(waiting).toMatchObject({
        workflow_state: 'running',
        step_status: 'server',
        waiting: { step_id: 'fetch', reason: 'network' },
        next: [resume],
      });
      const up = new TasksApi();
      await up.start(port);
      try {
        const next = waiting.next[0];
        const resumed = await call(next.tool, next.arguments, c);
        expect(resumed).toMatchObject({ current_step: 'read', workflow_state: 'running' });
        expect(resumed.commands[0]).toMatchObject({ step_id: 'fetch', status: 200 });
        expect(tokenOf(resumed)).toEqual(expect.any(String));
      } finally {
        await up.stop();
      }
    } finally {
      await call('catalog_remove', { catalog_id: 'down-api' }, c);
      await closeC();
    }
  });

  it('a missing credential: the execution waits; after a restart with it set, the next call carries on', async () => {
    const env = { ...sb.env, WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: '' };
    const { client: bare, close: closeBare } = await connectClient(sb, { env });
    let next: Json;
    try {
      const failed = await call('workflow_start', { workflow_id: 'fetch-flow' }, bare);
      expect(failed.error.data).toMatchObject({
        error_code: 'COMMAND_FAILED',
        reason: 'missing_credential',
        retryable: true,
      });
      expect(failed.error.data.suggested_action).toMatch(
        /credential .* restart the server, then call workflow_resume/,
      );
      next = failed.error.data.next[0];
      expect(next).toEqual({
        tool: 'workflow_resume',
        arguments: { execution_id: failed.error.data.context.run_id },
      });
    } finally {
      await closeBare();
    }
    // The client restarts the server with the credential set, then sends the call it was given.
    const resumed = await call(next.tool, next.arguments);
    expect(resumed).toMatchObject({ current_step: 'read', workflow_state: 'running' });
    expect(resumed.agent_content).toContain('Read [steps.fetch.output.title:');
  });
});
