import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, connectClient, FIXTURES, type Sandbox, sandbox, tokenOf } from './helpers/server.js';
import { TasksApi, TOKEN } from './helpers/tasks-api.js';

type Json = Record<string, any>;

const OPENAPI = join(FIXTURES, 'openapi', 'tasks-api.yaml');
let sb: Sandbox;
let api: TasksApi;
let client: Client;
let closeClient: () => Promise<void>;

const call = (name: string, args: Json, c: Client = client) => callTool(c, name, args);

const commandWorkflow = (id: string, taskId: string, extra = '') => `id: ${id}
name: ${id}
description: Fetches one task
version: 1.0.0
steps:
  - id: fetch-task
    title: Fetch the task
    run: tasks-api get-task
    with: { taskId: ${taskId} }
${extra}`;

beforeAll(async () => {
  api = new TasksApi();
  await api.start();
  sb = sandbox({
    // The example API listens on loopback, which catalog calls refuse unless it is allowed.
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
    WORKFLOWLOOKUP_ALLOWED_ENV: 'RELEASE_NAME,UNSET_THING',
    RELEASE_NAME: 'r42',
  });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  ({ client, close: closeClient } = await connectClient(sb));
});

afterAll(async () => {
  await closeClient();
  await api.stop();
  sb.cleanup();
});

describe('OpenAPI catalogs', () => {
  it('validates, previews and imports a document; its operations become commands and providers', async () => {
    const valid = await call('catalog_validate_openapi', { source: OPENAPI });
    expect(valid).toMatchObject({ valid: true, document_kind: 'openapi_3', operation_count: 8 });
    const broken = await call('catalog_validate_openapi', {
      source: join(FIXTURES, 'openapi', 'broken.yaml'),
    });
    expect(broken.valid).toBe(false);
    expect(broken.violations.length).toBeGreaterThan(0);
    const v2 = await call('catalog_validate_openapi', {
      source: join(FIXTURES, 'openapi', 'petstore-v2.json'),
    });
    expect(v2.document_kind).toBe('openapi_2');
    const url = await call('catalog_validate_openapi', { source: `${api.baseUrl}/openapi.yaml` });
    expect(url.error.data.details).toMatch(/URL sources are disabled/);
    const missing = await call('catalog_validate_openapi', { source: join(sb.root, 'nope.yaml') });
    expect(missing.error.code).toBe(-32602);

    const preview = await call('catalog_preview_import', {
      source: OPENAPI,
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
      include_command_preview: true,
    });
    expect(preview).toMatchObject({
      catalog: { id: 'tasks-api', title: 'Tasks API', base_url: api.baseUrl },
      projected_command_count: 8,
      projected_group_prefixes: ['exports', 'projects', 'tasks'],
      provider_contract_count: 2,
    });
    expect(existsSync(join(sb.root, 'home', '.config', 'workflowlookup', 'catalogs'))).toBe(false);

    const imported = await call('catalog_import_openapi', {
      source: OPENAPI,
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(imported).toMatchObject({
      catalog_id: 'tasks-api',
      command_count: 8,
      provider_contract_count: 2,
      auth: { type: 'bearer', token_env: 'WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN' },
    });
    expect(JSON.parse(readFileSync(imported.catalog_path, 'utf8'))).toMatchObject({
      id: 'tasks-api',
      enabled: true,
    });
    expect(JSON.parse(readFileSync(imported.manifest_path, 'utf8')).commands).toHaveLength(8);
    const again = await call('catalog_import_openapi', {
      source: OPENAPI,
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(again.error.data.error_code).toBe('CATALOG_CONFLICT');

    const commands = await call('command_list', { catalog_id: 'tasks-api', group: 'tasks' });
    expect(commands.commands.map((c: Json) => c.run).sort()).toEqual([
      'tasks-api create-task',
      'tasks-api delete-task',
      'tasks-api get-task',
      'tasks-api list-tasks',
      'tasks-api update-task',
    ]);
    const providers = await call('provider_list', {});
    expect(providers.providers.map((p: Json) => p.provider).sort()).toEqual([
      'tasks-api list-projects',
      'tasks-api list-tasks',
    ]);
    const resource = await client.readResource({ uri: 'workflowlookup://catalogs/commands' });
    expect(JSON.parse((resource.contents[0] as { text: string }).text)).toHaveLength(8);
    const providerResource = await client.readResource({ uri: 'workflowlookup://catalogs/providers' });
    expect(JSON.parse((providerResource.contents[0] as { text: string }).text)).toHaveLength(2);
  });
});

describe('inputs, templates and plans', () => {
  it('previews and resolves inputs, asking the provider for choices', async () => {
    const preview = await call('workflow_preview_inputs', { workflow_id: 'export-project-tasks' });
    expect(preview.inputs).toEqual([
      expect.objectContaining({
        name: 'project',
        type: 'string',
        required: true,
        provider: expect.any(Object),
      }),
      expect.objectContaining({
        name: 'title_prefix',
        required: false,
        default: 'Follow-up',
        rules: { maxLength: 40 },
      }),
    ]);
    const unresolved = await call('workflow_resolve_inputs', {
      workflow_id: 'export-project-tasks',
      inputs: {},
    });
    expect(unresolved.ready).toBe(false);
    expect(unresolved.inputs[0]).toMatchObject({
      name: 'project',
      status: 'prompt',
      choices: [
        { value: 'p1', label: 'Alpha' },
        { value: 'p2', label: 'Beta' },
      ],
    });
    // A value that is fine is said once, in values; the per-input list says where it came from.
    expect(unresolved.inputs[1]).toEqual({ name: 'title_prefix', status: 'default' });
    expect(unresolved.values).toEqual({ title_prefix: 'Follow-up' });
    // Not ready: the answer names the call to make, with what to fill in.
    expect(unresolved.next).toEqual([
      {
        tool: 'workflow_resolve_inputs',
        arguments: { workflow_id: 'export-project-tasks', inputs: {} },
        fill: { 'inputs.project': 'choose one of the listed values' },
      },
    ]);
    const ready = await call('workflow_resolve_inputs', {
      workflow_id: 'export-project-tasks',
      inputs: { project: 'p1' },
    });
    expect(ready).toMatchObject({ ready: true, values: { project: 'p1', title_prefix: 'Follow-up' } });
    expect(ready.next).toEqual([
      {
        tool: 'workflow_start',
        arguments: {
          workflow_id: 'export-project-tasks',
          inputs: { project: 'p1', title_prefix: 'Follow-up' },
        },
      },
    ]);
    const wrong = await call('workflow_resolve_inputs', {
      workflow_id: 'export-project-tasks',
      inputs: { project: 'zzz', title_prefix: 7 },
    });
    expect(wrong.ready).toBe(false);
    expect(wrong.inputs.map((i: Json) => i.status)).toEqual(['invalid', 'invalid']);
  });

  it('resolves env defaults only from allowed variables and reports unknown references as validation errors', async () => {
    const content = `id: env-flow
name: Env flow
description: Uses env and input templates
version: 1.0.0
inputs:
  release: { type: string, description: Release name, default: { env: RELEASE_NAME } }
  secret: { type: string, description: Not allowed, default: { env: HOME } }
steps:
  - id: announce
    title: Announce
    prompt: "Announce \${{ inputs.release }} built by \${{ env.RELEASE_NAME }}"
`;
    const resolvable = content.replace('{ env: HOME }', '{ env: UNSET_THING }');
    const resolved = await call('workflow_resolve_inputs', { content: resolvable, inputs: {} });
    expect(resolved.inputs).toEqual([
      { name: 'release', status: 'default' },
      expect.objectContaining({
        name: 'secret',
        status: 'invalid',
        message: expect.stringMatching(/not allowed .* or not set/),
      }),
    ]);
    expect((await call('workflow_resolve_inputs', { content, inputs: {} })).error.data.error_code).toBe(
      'WORKFLOW_VALIDATION_FAILED',
    );
    const rendered = await call('workflow_preview_rendered', {
      content: resolvable,
      inputs: { secret: 'x' },
    });
    // Input values are data; the operator's allowed environment is configuration, shown as is.
    expect(rendered.steps[0].rendered.prompt).toBe('Announce [inputs.release: `r42`] built by r42');
    const badRefs = await call('workflow_validate_manifest', {
      content: content.replace(
        '${{ env.RELEASE_NAME }}',
        '${{ inputs.nope }} ${{ steps.later.output }} ${{ bogus }}',
      ),
    });
    expect(badRefs.valid).toBe(false);
    // In one pass: the three references, and the default that reads HOME (not allowed).
    expect(badRefs.violations.map((v: Json) => `${v.rule} ${v.path}`)).toEqual([
      'templateReference /steps/0/prompt',
      'templateReference /steps/0/prompt',
      'templateReference /steps/0/prompt',
      'templateReference /inputs/secret/default',
    ]);
    const hidden = await call('workflow_validate_manifest', {
      content: content.replace('${{ env.RELEASE_NAME }}', '${{ env.PATH }}'),
    });
    expect(hidden.violations.map((v: Json) => v.message)).toEqual([
      expect.stringContaining('PATH is not in WORKFLOWLOOKUP_ALLOWED_ENV'),
      expect.stringContaining('HOME, which is not in WORKFLOWLOOKUP_ALLOWED_ENV'),
    ]);
    const unset = await call('workflow_preview_rendered', {
      content: content
        .replace('${{ env.RELEASE_NAME }}', '${{ env.UNSET_THING }}')
        .replace('{ env: HOME }', '"x"'),
      inputs: {},
    });
    expect(unset.steps[0].errors[0]).toMatch(/UNSET_THING is not allowed in templates \(or not set\)/);
    // WorkRail-style {{var}} from the context, and inputs passed in the context, in workflow_next.
    await call('workflow_save', {
      content: resolvable.replace('Announce ', 'For {{audience}}: announce '),
    });
    const next = await call('workflow_next', {
      workflowId: 'env-flow',
      completedSteps: [],
      context: { audience: 'ops', inputs: { release: 'r7' } },
    });
    // Substituted values are shown as labelled data (docs/automation.md, "Templates").
    expect(next.guidance.prompt).toContain(
      'For [context.audience: `ops`]: announce [inputs.release: `r7`] built by',
    );
  });

  it('renders templates with types kept and defers step outputs; plans the run', async () => {
    const rendered = await call('workflow_preview_rendered', {
      workflow_id: 'export-project-tasks',
      inputs: { project: 'p1' },
    });
    const fetch = rendered.steps.find((s: Json) => s.step_id === 'fetch-tasks');
    expect(fetch.rendered.with).toEqual({ projectId: 'p1', status: 'open' });
    const review = rendered.steps.find((s: Json) => s.step_id === 'review');
    // Text an agent reads shows values as data, as the run will show them.
    expect(review.rendered.title).toBe('Review the tasks of [inputs.project: `p1`]');
    expect(review.deferred).toEqual(['steps.fetch-tasks.output.items']);
    const plan = await call('workflow_step_plan', {
      workflow_id: 'conditional-workflow-example',
      inputs: {},
      context: { taskScope: 'small', userExpertise: 'novice' },
    });
    expect(plan.steps.map((s: Json) => s.decision)).toContain('skip');
    const exportPlan = await call('workflow_step_plan', {
      workflow_id: 'export-project-tasks',
      inputs: { project: 'p1' },
    });
    expect(exportPlan.steps.map((s: Json) => [s.step_id, s.kind, s.decision, s.depends_on])).toEqual([
      ['fetch-tasks', 'command', 'run', []],
      ['review', 'agent', 'run', ['fetch-tasks']],
      ['create-follow-up', 'command', 'run', ['review']],
      ['export', 'command', 'run', []],
      ['wait-export', 'command', 'run', ['export']],
    ]);
  });
});

describe('command steps in the stateless face', () => {
  it('workflow_next describes a command step; workflow_validate checks its output_contract', async () => {
    const next = await call('workflow_next', {
      workflowId: 'export-project-tasks',
      completedSteps: [],
      context: {},
    });
    expect(next.step).toMatchObject({ id: 'fetch-tasks', run: 'tasks-api list-tasks' });
    expect(next.guidance.prompt).toContain('the server runs "tasks-api list-tasks"');
    const check = (output: string) =>
      call('workflow_validate', { workflowId: 'export-project-tasks', stepId: 'fetch-tasks', output });
    expect((await check('{"items": [], "total": 0}')).valid).toBe(true);
    expect((await check('{"total": 0}')).issues).toEqual([
      "output_contract: (root) must have required property 'items'",
    ]);
    expect((await check('not json')).issues[0]).toMatch(/not valid JSON/);
    expect(
      (await call('workflow_validate', { workflowId: 'export-project-tasks', stepId: 'export', output: 'x' }))
        .valid,
    ).toBe(true);
  });
});

describe('command steps', () => {
  it('runs command steps around agent steps, polls with repeat, and records outputs that survive a restart', async () => {
    const notReady = await call('workflow_start', { workflow_name: 'export-project-tasks' });
    expect(notReady.error.data.error_code).toBe('INPUTS_NOT_READY');
    const before = api.requests.length;
    const started = await call('workflow_start', {
      workflow_name: 'export-project-tasks',
      inputs: { project: 'p1' },
    });
    expect(started).toMatchObject({ success: true, workflow_state: 'running', step_name: 'review' });
    expect(started.commands).toEqual([
      expect.objectContaining({
        step_id: 'fetch-tasks',
        command: 'tasks-api list-tasks',
        status: 200,
        output: expect.objectContaining({ total: 2 }),
      }),
    ]);
    expect(started.agent_content).toContain('Fix login');
    expect(started.agent_content).toContain('Review the tasks of [inputs.project: `p1`]');
    const done = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'Triage login bugs' },
    });
    expect(done.workflow_state).toBe('completed');
    expect(done.commands.map((c: Json) => [c.step_id, c.status, c.polls])).toEqual([
      ['create-follow-up', 201, 1],
      ['export', 202, 1],
      ['wait-export', 200, 3],
    ]);
    expect(done.final_output).toEqual({
      task: expect.objectContaining({ title: 'Follow-up: Triage login bugs', project: 'p1' }),
      export_url: `${api.baseUrl}/downloads/job-1.csv`,
    });
    // Retrying the same submission returns the recorded answer without calling the API again.
    const calls = api.requests.length;
    expect(
      await call('workflow_next_step', {
        token: tokenOf(started),
        output: { summary: 'Triage login bugs' },
      }),
    ).toEqual(done);
    expect(api.requests.length).toBe(calls);

    const made = api.requests.slice(before);
    expect(made.map((r) => `${r.method} ${r.url}`)).toEqual([
      // workflow_start checks the input against its provider, as workflow_resolve_inputs does.
      'GET /api/projects',
      'GET /api/projects/p1/tasks?status=open',
      'POST /api/projects/p1/tasks',
      'POST /api/exports',
      'GET /api/exports/job-1',
      'GET /api/exports/job-1',
      'GET /api/exports/job-1',
    ]);
    for (const r of made) expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
    for (const r of made.slice(1)) {
      expect(r.headers['idempotency-key']).toMatch(new RegExp(`^${started.execution_id}:`));
    }
    expect(JSON.parse(made[2]?.body ?? '{}')).toEqual({ title: 'Follow-up: Triage login bugs' });

    const { client: restarted, close } = await connectClient(sb);
    try {
      const history = JSON.parse(
        (
          (
            await restarted.readResource({
              uri: `workflowlookup://workflow/step_history/${started.execution_id}`,
            })
          ).contents[0] as { text: string }
        ).text,
      );
      expect(history.map((h: Json) => [h.step_name, h.agent_name, h.status])).toEqual([
        ['fetch-tasks', 'server', 'completed'],
        ['review', 'default', 'completed'],
        ['create-follow-up', 'server', 'completed'],
        ['export', 'server', 'completed'],
        ['wait-export', 'server', 'completed'],
      ]);
      expect(history[0].output.output.total).toBe(2);
      const status = await call('workflow_executions', { states: ['completed'], limit: 200 }, restarted);
      expect(status.executions.map((e: Json) => e.execution_id)).toContain(started.execution_id);
    } finally {
      await close();
    }
  });

  it('fails clearly: 5xx after retries, timeouts, invalid JSON, redirects to another host, leaked credentials', async () => {
    const run = async (id: string, taskId: string, extra = '') => {
      const saved = await call('workflow_save', { content: commandWorkflow(id, taskId, extra) });
      expect(saved.workflow_id).toBe(id);
      return call('workflow_start', { workflow_name: id });
    };
    const before = api.requests.length;
    const boom = await run('cmd-boom', 'boom');
    expect(boom.error).toMatchObject({
      code: -32000,
      data: {
        error_code: 'COMMAND_FAILED',
        category: 'execution',
        step_id: 'fetch-task',
        command: 'tasks-api get-task',
        reason: 'http_status',
        status: 500,
        response_payload: { error: 'internal' },
        retryable: true,
      },
    });
    expect(api.requests.slice(before).filter((r) => r.url === '/api/tasks/boom')).toHaveLength(3);
    const runId = boom.error.data.context.run_id;
    const failedStatus = JSON.parse(
      (
        (await client.readResource({ uri: `workflowlookup://workflow/workflow_status/${runId}` }))
          .contents[0] as { text: string }
      ).text,
    );
    // A 5xx may pass: the execution waits on the step, and workflow_resume says why and retries it.
    expect(failedStatus).toMatchObject({ state: 'running', current_step: 'fetch-task' });
    const waiting = await call('workflow_resume', { execution_id: runId });
    expect(waiting.error.data).toMatchObject({ reason: 'http_status', retryable: true });
    expect(waiting.error.data.suggested_action).toContain(`workflow_resume {"execution_id": "${runId}"}`);

    const flaky = await run('cmd-flaky', 'flaky');
    expect(flaky).toMatchObject({
      workflow_state: 'completed',
      commands: [expect.objectContaining({ status: 200, attempts: 2 })],
    });

    const slow = await run('cmd-slow', 'slow', '    timeout: 200ms\n');
    expect(slow.error.data).toMatchObject({ reason: 'timeout', retryable: true });

    const garbage = await run('cmd-garbage', 'garbage');
    expect(garbage.error.data).toMatchObject({
      reason: 'invalid_json',
      response_payload: '{"id": "garbage", ',
      retryable: false,
    });
    const garbageStatus = JSON.parse(
      (
        (
          await client.readResource({
            uri: `workflowlookup://workflow/workflow_status/${garbage.error.data.context.run_id}`,
          })
        ).contents[0] as { text: string }
      ).text,
    );
    expect(garbageStatus).toMatchObject({ state: 'failed', steps: { failed: 1 } });

    const hop = await run('cmd-hop', 'hop');
    expect(hop.error.data).toMatchObject({ reason: 'redirect' });
    expect(hop.error.data.message).toContain('another host');

    const leak = await run('cmd-leak', 'leak');
    expect(leak.error.data.reason).toBe('http_status');
    expect(JSON.stringify(leak.error)).not.toContain(TOKEN);
    expect(JSON.stringify(leak.error.data.response_payload)).toContain('***');

    const contract = await run(
      'cmd-contract',
      't1',
      '    output_contract: { type: object, required: [assignee] }\n',
    );
    expect(contract.error.data).toMatchObject({ reason: 'output_contract' });
  });

  it('needs the credential and an enabled catalog; a missing credential waits for a resume', async () => {
    let missing = '';
    const { client: noToken, close } = await connectClient(sb, {
      env: { WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: '' },
    });
    try {
      const res = await call('workflow_start', { workflow_name: 'cmd-flaky' }, noToken);
      expect(res.error.data).toMatchObject({
        reason: 'missing_credential',
        error_code: 'COMMAND_FAILED',
        retryable: true,
      });
      expect(res.error.data.message).toContain('WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN');
      missing = res.error.data.context.run_id;
    } finally {
      await close();
    }
    // The credential is set where the execution is resumed: it carries on instead of staying failed.
    const resumed = await call('workflow_resume', { execution_id: missing });
    expect(resumed).toMatchObject({
      workflow_state: 'completed',
      commands: [expect.objectContaining({ step_id: 'fetch-task', status: 200 })],
    });
    expect(await call('catalog_set_enabled', { catalog_title: 'Tasks API', enabled: false })).toEqual({
      catalog_id: 'tasks-api',
      enabled: false,
      command_count_after_toggle: 0,
      next: [],
    });
    const disabled = await call('workflow_start', {
      workflow_name: 'export-project-tasks',
      inputs: { project: 'p1' },
    });
    expect(disabled.error.data.error_code).toBe('CATALOG_NOT_FOUND');
    await call('catalog_set_enabled', { catalog_id: 'tasks-api', enabled: true });
    const removed = await call('catalog_remove', { catalog_id: 'tasks-api', remove_manifest: true });
    expect(removed).toEqual({
      removed_catalog_id: 'tasks-api',
      manifest_removed: true,
      remaining_catalog_count: 0,
      next: [],
    });
    expect((await call('catalog_remove', { catalog_id: 'tasks-api' })).error.data.error_code).toBe(
      'CATALOG_NOT_FOUND',
    );
  });
});
