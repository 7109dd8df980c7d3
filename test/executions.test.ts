import { cpSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { callTool, connectClient, FIXTURES, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
let client: Client;
let closeClient: () => Promise<void>;

const call = (name: string, args: Json, c: Client = client) => callTool(c, name, args);

async function read(uri: string): Promise<any> {
  const res = await client.readResource({ uri });
  const first = res.contents[0] as { text: string };
  return JSON.parse(first.text);
}

beforeAll(async () => {
  sb = sandbox();
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  ({ client, close: closeClient } = await connectClient(sb));
});

afterAll(async () => {
  await closeClient();
  sb.cleanup();
});

describe('workflow_start / workflow_next_step', () => {
  it('runs a workflow end to end with personas, conditions from output.context, artifacts and telemetry', async () => {
    const started = await call('workflow_start', {
      workflow_name: 'durable-demo',
      context: { team: 'core' },
    });
    expect(started).toMatchObject({
      success: true,
      workflow_state: 'running',
      step_name: 'design',
      agent_name: 'architect',
      progress: '1/4',
    });
    expect(started.execution_id).toMatch(/^exec_[0-9a-f]{24}$/);
    expect(started.agent_content).toContain('# Architect');
    expect(started.agent_content).toContain('Write the design.');
    expect(started.guidance).toEqual({ modelHint: expect.any(String), requiresConfirmation: false });
    // The prompt, its title and criteria once, in agent_content; the token in seed 004's new_token and
    // in the ready-to-send call of next.
    const text = JSON.stringify(started);
    expect(text.split('Write the design.')).toHaveLength(2);
    expect(text.split('The summary must describe the design')).toHaveLength(2);
    expect(text.split(tokenOf(started))).toHaveLength(3);
    expect(started.new_token).toBe(tokenOf(started));
    expect(started).not.toHaveProperty('step');
    expect(started.next).toEqual([
      {
        tool: 'workflow_next_step',
        arguments: { token: tokenOf(started) },
        fill: { 'output.summary': expect.stringContaining('design') },
      },
    ]);
    expect(started.message).toBe("Workflow 'durable-demo' started. Step 'design' ready.");

    const design = await call('workflow_next_step', {
      token: tokenOf(started),
      output: {
        summary: 'The design uses a queue.',
        artifacts: [
          {
            type: 'report',
            name: 'design.md',
            content: '# Design\nqueue',
            content_type: 'text/markdown',
            metadata: { v: 1 },
          },
          'external-ref-1',
        ],
        context: { exposure: 'public' },
      },
    });
    expect(design).toMatchObject({
      success: true,
      step_name: 'implement',
      agent_name: 'implementer',
      workflow_state: 'running',
    });
    const implement = await call('workflow_next_step', {
      token: tokenOf(design),
      output: { summary: 'Implemented.' },
    });
    expect(implement.step_name).toBe('harden'); // runCondition reads the context the design step reported
    const harden = await call('workflow_next_step', {
      token: tokenOf(implement),
      output: { summary: 'Rate limited.' },
    });
    expect(harden.step_name).toBe('review');
    const done = await call('workflow_next_step', {
      token: tokenOf(harden),
      output: { summary: 'Looks good.' },
    });
    expect(done).toEqual({
      success: true,
      execution_id: started.execution_id,
      workflow_state: 'completed',
      message: 'Workflow completed successfully',
      next: [],
    });

    const id = started.execution_id;
    const status = await read(`workflowlookup://workflow/workflow_status/${id}`);
    expect(status).toMatchObject({
      state: 'completed',
      current_step: null,
      steps: { total: 4, completed: 4, failed: 0, running: 0, pending: 0 },
    });
    expect(status.duration_ms).toBeGreaterThanOrEqual(0);
    const history = await read(`workflowlookup://workflow/step_history/${id}`);
    expect(history.map((h: Json) => [h.step_name, h.agent_name, h.status])).toEqual([
      ['design', 'architect', 'completed'],
      ['implement', 'implementer', 'completed'],
      ['harden', 'implementer', 'completed'],
      ['review', 'reviewer', 'completed'],
    ]);
    expect(history[0].output.summary).toBe('The design uses a queue.');
    const artifacts = await read(`workflowlookup://workflow/workflow_artifacts/${id}`);
    expect(artifacts).toEqual([
      expect.objectContaining({
        step_name: 'design',
        artifact_type: 'report',
        name: 'design.md',
        content_type: 'text/markdown',
        size_bytes: 14,
        metadata: { v: 1 },
      }),
    ]);
    expect(await read(`workflowlookup://workflow/workflow_artifacts/${id}/implement`)).toEqual([]);
    const events = (await read(`workflowlookup://workflow/telemetry/${id}?limit=1000`)).map(
      (e: Json) => e.event_type,
    );
    for (const type of [
      'workflow_created',
      'workflow_started',
      'workflow_state_transition',
      'step_started',
      'step_completed',
      'token_generated',
      'token_validated',
      'artifact_stored',
      'workflow_completed',
    ]) {
      expect(events).toContain(type);
    }
    const onlyCompleted = await read(
      `workflowlookup://workflow/telemetry/${id}?event_type=step_completed&limit=2`,
    );
    expect(onlyCompleted.map((e: Json) => e.step_name)).toEqual(['harden', 'review']);
  });

  it('a failed validation advances nothing and mints a fresh token; retries are safe', async () => {
    const started = await call('workflow_start', { workflowId: 'durable-demo' });
    const bad = { summary: 'nothing useful' };
    const failed = await call('workflow_next_step', { token: tokenOf(started), output: bad });
    expect(failed).toMatchObject({
      success: false,
      workflow_state: 'running',
      step_name: 'design',
      validation: { valid: false, issues: ['The summary must describe the design'] },
    });
    expect(tokenOf(failed)).not.toBe(tokenOf(started));
    // The same token with the same output: the recorded answer, unchanged.
    expect(await call('workflow_next_step', { token: tokenOf(started), output: bad })).toEqual(failed);
    // The used token with another output: a conflict.
    const reused = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'a design' },
    });
    expect(reused.error).toMatchObject({
      code: -32005,
      data: { details: expect.stringContaining('different output') },
    });
    const errors = await read(`workflowlookup://workflow/telemetry/${started.execution_id}?event_type=error`);
    expect(errors).toEqual([
      expect.objectContaining({
        event_type: 'error',
        step_name: 'design',
        metadata: expect.objectContaining({ code: 'state_conflict' }),
      }),
    ]);
    const ok = await call('workflow_next_step', { token: tokenOf(failed), output: { summary: 'a design' } });
    expect(ok.step_name).toBe('implement');
    const replay = await call('workflow_next_step', {
      token: tokenOf(failed),
      output: { summary: 'a design' },
    });
    expect(replay).toEqual(ok);
    const history = await read(`workflowlookup://workflow/step_history/${started.execution_id}`);
    expect(history[0]).toMatchObject({ step_name: 'design', status: 'completed', attempts: 2 });
    expect(history).toHaveLength(2);
  });

  it('rejects tampered and forged tokens with -32007', async () => {
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    const [body, sig] = tokenOf(started).split('.') as [string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forgedBody = Buffer.from(JSON.stringify({ ...payload, step_name: 'review' })).toString('base64url');
    for (const token of [`${forgedBody}.${sig}`, `${body}.${'A'.repeat(sig.length)}`, 'garbage', `${body}`]) {
      const res = await call('workflow_next_step', { token, output: { summary: 'design' } });
      expect(res.error.code).toBe(-32007);
    }
  });

  it('returns an existing execution for a client-chosen execution_id instead of starting another', async () => {
    const first = await call('workflow_start', { workflow_name: 'durable-demo', execution_id: 'my-run-1' });
    const again = await call('workflow_start', { workflow_name: 'durable-demo', execution_id: 'my-run-1' });
    expect(again).toMatchObject({ execution_id: 'my-run-1', step_name: 'design' });
    expect(tokenOf(again)).toBe(tokenOf(first));
    expect(again.message).toContain('already exists');
    const other = await call('workflow_start', { workflow_name: 'loops-demo', execution_id: 'my-run-1' });
    expect(other.error.code).toBe(-32005);
    const list = await call('workflow_executions', { workflow_name: 'durable-demo' });
    expect(list.executions.filter((e: Json) => e.execution_id === 'my-run-1')).toHaveLength(1);
  });

  it('validates inputs: unknown workflow, bad ids, oversize artifacts, missing fields', async () => {
    expect((await call('workflow_start', { workflow_name: 'no-such-flow' })).error.code).toBe(-32001);
    expect((await call('workflow_start', {})).error).toMatchObject({ code: -32602 });
    expect(
      (await call('workflow_start', { workflow_name: 'durable-demo', execution_id: '../x' })).error.code,
    ).toBe(-32602);
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    const big = await call('workflow_next_step', {
      token: tokenOf(started),
      output: {
        summary: 'design',
        artifacts: [{ type: 'file', name: 'big.bin', content: 'x'.repeat(1024 * 1024 + 1) }],
      },
    });
    expect(big.error).toMatchObject({
      code: -32602,
      data: { details: expect.stringContaining('limit is 1048576') },
    });
    // Nothing was lost: the token still works.
    expect(
      (await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'design' } })).success,
    ).toBe(true);
    expect((await call('workflow_next_step', { token: tokenOf(started) })).error.code).toBe(-32602);
  });

  it('runs loops with the same engine as workflow_next', async () => {
    const started = await call('workflow_start', { workflow_name: 'long-loop', context: { more: true } });
    let token = tokenOf(started);
    const seen: string[] = [started.step_name];
    for (let i = 0; i < 3; i++) {
      const res = await call('workflow_next_step', {
        token,
        output: { summary: `tick ${i}`, context: { more: i < 1 } },
      });
      seen.push(res.step_name ?? res.workflow_state);
      token = tokenOf(res);
    }
    expect(seen).toEqual(['tick', 'tick', 'wrap-up', 'completed']);
    const history = await read(`workflowlookup://workflow/step_history/${started.execution_id}`);
    expect(history.map((h: Json) => `${h.step_name}#${h.iteration ?? '-'}`)).toEqual([
      'tick#1',
      'tick#2',
      'wrap-up#-',
    ]);
  });
});

describe('state machine', () => {
  it('pauses, refuses to advance while paused, resumes, and refuses invalid transitions', async () => {
    const started = await call('workflow_start', { workflow_name: 'durable-demo' });
    const id = started.execution_id;
    expect(
      await call('workflow_set_state', { execution_id: id, state: 'paused', reason: 'waiting for approval' }),
    ).toEqual({
      success: true,
      execution_id: id,
      previous_state: 'running',
      workflow_state: 'paused',
      allowed_next: ['running', 'abandoned'],
      next: [],
    });
    const blocked = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'design' },
    });
    // The refusal carries the call that fixes it.
    const unpause = { tool: 'workflow_set_state', arguments: { execution_id: id, state: 'running' } };
    expect(blocked.error).toMatchObject({ code: -32005, data: { state: 'paused', next: [unpause] } });
    // Resuming a paused execution names the exact call that brings it back, never a dead end.
    const paused = await call('workflow_resume', { execution_id: id });
    expect(paused).toMatchObject({ workflow_state: 'paused', current_step: 'design' });
    expect(paused.next).toEqual([unpause]);
    // That call, sent as is, answers with the next one: workflow_resume, which hands out the step.
    const unpaused = await call(paused.next[0].tool, paused.next[0].arguments);
    expect(unpaused.next).toEqual([{ tool: 'workflow_resume', arguments: { execution_id: id } }]);
    const back = await call(unpaused.next[0].tool, unpaused.next[0].arguments);
    expect(tokenOf(back)).toBe(tokenOf(started));
    await call('workflow_set_state', { execution_id: id, state: 'paused' });
    // (completed and failed are never the agent's to set: test/protocol-edges.test.ts)
    const invalid = await call('workflow_set_state', { execution_id: id, state: 'diverged' });
    expect(invalid.error).toMatchObject({
      code: -32005,
      data: { state: 'paused', allowed: ['running', 'abandoned'] },
    });
    await call('workflow_set_state', { execution_id: id, state: 'running' });
    expect(
      (await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'design' } })).success,
    ).toBe(true);
    await call('workflow_set_state', { execution_id: id, state: 'abandoned' });
    const terminal = await call('workflow_set_state', { execution_id: id, state: 'running' });
    expect(terminal.error).toMatchObject({ code: -32005, data: { allowed: [] } });
    expect((await call('workflow_set_state', { execution_id: 'nope', state: 'paused' })).error.code).toBe(
      -32005,
    );
    const status = await read(`workflowlookup://workflow/workflow_status/${id}`);
    expect(status.state).toBe('abandoned');
    const transitions = (
      await read(`workflowlookup://workflow/telemetry/${id}?event_type=workflow_state_transition`)
    ).map((e: Json) => `${e.metadata.from}->${e.metadata.to}`);
    expect(transitions).toEqual([
      'idle->running',
      'running->paused',
      'paused->running',
      'running->paused',
      'paused->running',
      'running->abandoned',
    ]);
  });
});

describe('resume after a context reset', () => {
  it('finds unfinished executions and returns the current step with its token', async () => {
    const started = await call('workflow_start', {
      workflow_name: 'durable-demo',
      execution_id: 'resume-me',
    });
    const found = await call('workflow_executions', {
      workflow_name: 'durable-demo',
      states: ['running'],
      limit: 50,
    });
    expect(found.executions.map((e: Json) => e.execution_id)).toContain('resume-me');
    const resumed = await call('workflow_resume', { execution_id: 'resume-me' });
    expect(resumed).toMatchObject({
      execution_id: 'resume-me',
      workflow_state: 'running',
      current_step: 'design',
      agent_name: 'architect',
      workflow_id: 'durable-demo',
    });
    expect(tokenOf(resumed)).toBe(tokenOf(started));
    expect(resumed.continuation_token).toBe(tokenOf(started));
    expect(found.executions[0]).toMatchObject({ workflow_id: 'durable-demo' });
    expect(found.next[0]).toMatchObject({ tool: 'workflow_resume' });
    const resource = await read('workflowlookup://workflow/current_step/resume-me');
    expect(tokenOf(resource)).toBe(tokenOf(started));
    expect(resource.agent_content).toContain('# Architect');
  });
});

describe('resources', () => {
  it('lists templates, completes ids, and answers unknown ids with resource-not-found', async () => {
    const templates = await client.listResourceTemplates();
    const uris = templates.resourceTemplates.map((t) => t.uriTemplate);
    for (const kind of [
      'workflow_details/{workflowId}',
      'current_step/{executionId}',
      'workflow_status/{executionId}',
      'step_history/{executionId}',
      'workflow_artifacts/{executionId}',
    ]) {
      expect(uris).toContain(`workflowlookup://workflow/${kind}`);
    }
    const listed = await client.listResources();
    expect(listed.resources.map((r) => r.uri)).toContain('workflowlookup://workflow/available_workflows');
    const available = await read('workflowlookup://workflow/available_workflows');
    const demo = available.find((w: Json) => w.workflow_id === 'durable-demo');
    expect(demo.phases[0]).toEqual({ phase: 'design', agent: 'architect', description: 'Design' });
    const details = await read('workflowlookup://workflow/workflow_details/durable-demo');
    expect(JSON.parse(details.content).id).toBe('durable-demo');
    const completion = await client.complete({
      ref: { type: 'ref/resource', uri: 'workflowlookup://workflow/workflow_details/{workflowId}' },
      argument: { name: 'workflowId', value: 'durable' },
    });
    expect(completion.completion.values).toEqual(['durable-demo']);
    const ids = await client.complete({
      ref: { type: 'ref/resource', uri: 'workflowlookup://workflow/current_step/{executionId}' },
      argument: { name: 'executionId', value: 'resume' },
    });
    expect(ids.completion.values).toEqual(['resume-me']);
    for (const uri of [
      'workflowlookup://workflow/current_step/ghost',
      'workflowlookup://workflow/workflow_status/ghost',
      'workflowlookup://workflow/workflow_details/ghost-flow',
      'workflowlookup://workflow/telemetry/ghost',
    ]) {
      await expect(client.readResource({ uri })).rejects.toMatchObject({
        message: expect.stringContaining('Resource not found'),
      });
    }
    await expect(
      client.readResource({ uri: 'workflowlookup://workflow/telemetry?limit=0' }),
    ).rejects.toMatchObject({
      code: -32602,
    });
  });

  it('accepts the dotted tool names of seed 004 as aliases', async () => {
    const started = await call('workflow.start', { workflow_name: 'durable-demo' });
    const next = await call('workflow.next_step', {
      token: tokenOf(started),
      output: { summary: 'design' },
    });
    expect(next.step_name).toBe('implement');
  });

  it('keeps the data dir private: the token secret is 0600', () => {
    expect(statSync(join(sb.env.WORKFLOWLOOKUP_DATA_DIR as string, 'token-secret')).mode & 0o777).toBe(0o600);
  });
});

describe('tokens expire', () => {
  it('says a token expired and where to get a fresh one', async () => {
    const local = sandbox({ WORKFLOWLOOKUP_TOKEN_TTL_SECONDS: '60' });
    cpSync(join(FIXTURES, 'valid'), local.runtime, { recursive: true });
    local.env.WORKFLOWLOOKUP_DATA_DIR = join(local.root, 'data');
    // The server's clock, moved by the test: the token expires when it says so, however slow the machine.
    let ahead = 0;
    const raw = new InProcessRaw({
      env: local.env,
      cwd: local.project,
      app: { clock: () => Date.now() + ahead },
    });
    try {
      await raw.initialize();
      const started = (await raw.request(2, 'workflow_start', { workflow_name: 'durable-demo' }))
        .result as Json;
      ahead += 61_000;
      const expired = await raw.request(3, 'workflow_next_step', {
        token: tokenOf(started),
        output: { summary: 'design' },
      });
      expect(expired.error).toMatchObject({
        code: -32007,
        message: 'Token expired',
        data: {
          reason: 'expired',
          freshToken: `workflowlookup://workflow/current_step/${started.execution_id}`,
        },
      });
      expect((expired.error as Json).data.details).toContain('workflow_resume');
      const resumed = (await raw.request(4, 'workflow_resume', { execution_id: started.execution_id }))
        .result as Json;
      expect(tokenOf(resumed)).not.toBe(tokenOf(started));
      const next = (
        await raw.request(5, 'workflow_next_step', {
          token: tokenOf(resumed),
          output: { summary: 'design' },
        })
      ).result as Json;
      expect(next.step_name).toBe('implement');
    } finally {
      raw.kill();
      local.cleanup();
    }
  });
});

describe('progress', () => {
  it('counts the steps that will run as far as the context decides, says so, and ends at N/N', async () => {
    const local = sandbox();
    // `full` is skipped on the start's context; `later` reads a value not set yet (counted, and said).
    writeFileSync(
      join(local.runtime, 'skips.yaml'),
      `id: skips
name: Skips
description: steps a condition leaves out
version: 1.0.0
steps:
  - { id: one, title: One, prompt: Do one. }
  - { id: full, title: Full, prompt: Only in full mode., runCondition: { var: mode, equals: full } }
  - { id: later, title: Later, prompt: Only if asked., runCondition: { var: asked, equals: true } }
  - { id: last, title: Last, prompt: Finish. }
  - { id: extra, title: Extra, prompt: Never in quick mode., runCondition: { var: mode, equals: full } }
`,
    );
    local.env.WORKFLOWLOOKUP_DATA_DIR = join(local.root, 'data');
    const conn = await connectClient(local);
    try {
      const started = await call(
        'workflow_start',
        { workflow_id: 'skips', context: { mode: 'quick' } },
        conn.client,
      );
      expect(started).toMatchObject({ step_name: 'one', progress: '1/3' });
      expect(started.progress_note).toBe(
        'step 1 of 3 as far as the context decides now; 2 skipped by their runCondition; 1 counted whose runCondition reads values not set yet (retries and repeated loop iterations count as steps handed out).',
      );
      const last = await call(
        'workflow_next_step',
        { token: tokenOf(started), output: { summary: 'did one' } },
        conn.client,
      );
      // `later` was never asked for: the last step to run says so.
      expect(last).toMatchObject({ step_name: 'last', progress: '2/2' });
      expect(last.progress_note).toBe(
        'step 2 of 2 as far as the context decides now; 1 skipped by their runCondition (retries and repeated loop iterations count as steps handed out).',
      );
      const done = await call(
        'workflow_next_step',
        { token: tokenOf(last), output: { summary: 'finished' } },
        conn.client,
      );
      expect(done.workflow_state).toBe('completed');
    } finally {
      await conn.close();
      local.cleanup();
    }
  });
});
