import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { csrfOf, raw } from './helpers/dashboard.js';
import { inProcessHttp, staticTokens } from './helpers/in-process-http.js';
import { callTool, type Sandbox, sandbox, tokenOf, twoSteps } from './helpers/server.js';

// A person's pause holds against an agent that follows `next`: workflow_resume says who paused it, when
// and why, and offers to look again later, never to set it running; the agent lifts it only by an
// explicit override the answers never offer. The agent's own pause is its to lift, as before.

type Json = Record<string, any>;
const NAVIGATE = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none', accept: 'text/html' };

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

async function setup() {
  const sb = sandbox();
  boxes.push(sb);
  writeFileSync(join(sb.runtime, 'two-steps.yaml'), twoSteps('two-steps', 'Two steps'));
  const { env, token } = await staticTokens(sb, {
    'alice-agent': { scopes: ['read', 'run'], principal: 'alice' },
    'alice-person': { scopes: ['read', 'run', 'approve'], principal: 'alice' },
  });
  const server = await inProcessHttp(sb, env, { dashboard: true });
  open.push(server);
  const agent = new Client({ name: 'agent', version: '1.0.0' });
  await agent.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { authorization: `Bearer ${token['alice-agent']}` } },
    }),
  );
  open.push(agent);
  const headers = (cookie?: string) => ({
    'content-type': 'application/x-www-form-urlencoded',
    origin: `http://127.0.0.1:${server.port}`,
    'sec-fetch-site': 'same-origin',
    ...(cookie ? { cookie } : {}),
  });
  const login = await raw(server.port, '/dashboard/login', {
    method: 'POST',
    headers: headers(),
    body: new URLSearchParams({ token: token['alice-person'] as string, next: '/dashboard/' }).toString(),
  });
  const cookie = String(login.headers['set-cookie']).split(';')[0] as string;
  /** A person's click on the execution page: pause or resume, with a reason. */
  const click = async (execution: string, state: string, reason = '') => {
    const action = state === 'paused' ? 'pause' : 'resume';
    const confirm = await raw(server.port, `/dashboard/executions/${execution}?confirm=${action}`, {
      headers: { ...NAVIGATE, cookie },
    });
    return raw(server.port, `/dashboard/executions/${execution}/state`, {
      method: 'POST',
      headers: headers(cookie),
      body: new URLSearchParams({ state, reason, csrf: csrfOf(confirm.body) }).toString(),
    });
  };
  const call = (name: string, args: Json) => callTool(agent, name, args);
  const page = (path: string) => raw(server.port, path, { headers: { ...NAVIGATE, cookie } });
  return { call, click, page };
}

describe("a person's pause", () => {
  it('holds against next: resume says who, when and why, and offers only to look again', async () => {
    const { call, click, page } = await setup();
    const started = await call('workflow_start', { workflow_id: 'two-steps' });
    const id = started.execution_id as string;
    const paused = await click(id, 'paused', 'lunch break');
    expect(paused.status).toBe(303);

    const resumed = await call('workflow_resume', { execution_id: id });
    expect(resumed).toMatchObject({
      workflow_state: 'paused',
      step_status: 'paused',
      paused_by: { by: 'alice', via: 'dashboard', reason: 'lunch break' },
    });
    expect(resumed.instructions).toContain('lunch break');
    expect(resumed.instructions).toContain('waits for them to resume it, not for you');
    expect(resumed.continuation_token).toBeUndefined();
    // next offers waiting (look again), never workflow_set_state running.
    expect(resumed.next).toEqual([{ tool: 'workflow_resume', arguments: { execution_id: id } }]);

    // The agent that does what next says: the pause holds however often it looks.
    for (let i = 0; i < 3; i++) {
      const again = await call(resumed.next[0].tool, resumed.next[0].arguments);
      expect(again.workflow_state).toBe('paused');
    }
    // Its old step token: refused, naming the pause, and next is to look again.
    const submitted = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'done' },
    });
    expect(submitted.error.data.error_code).toBe('EXECUTION_STATE_CONFLICT');
    expect(submitted.error.data.details).toContain('lunch break');
    expect(submitted.error.data.suggested_action).toContain('A person paused the execution');
    expect(submitted.error.data.next).toEqual([{ tool: 'workflow_resume', arguments: { execution_id: id } }]);
    // workflow_executions' next looks too; workflow_start with the id says who paused it.
    expect((await call('workflow_executions', {})).next[0].tool).toBe('workflow_resume');
    const existing = await call('workflow_start', { workflow_id: 'two-steps', execution_id: id });
    expect(existing.message).toContain('lunch break');
    expect(existing.next[0].tool).toBe('workflow_resume');

    // Setting it running without the explicit override is refused, and says how the person lifts it.
    const lifted = await call('workflow_set_state', { execution_id: id, state: 'running' });
    expect(lifted.error.data.error_code).toBe('EXECUTION_STATE_CONFLICT');
    expect(lifted.error.data.suggested_action).toContain('A person paused the execution');
    expect(lifted.error.data.next[0].tool).toBe('workflow_resume');
    expect((await call('workflow_resume', { execution_id: id })).workflow_state).toBe('paused');

    // The dashboard shows who paused it; the person resumes it there; the agent goes on.
    expect((await page(`/dashboard/executions/${id}`)).body).toContain('alice from the dashboard');
    expect((await click(id, 'running')).status).toBe(303);
    const running = await call('workflow_resume', { execution_id: id });
    expect(running).toMatchObject({ workflow_state: 'running', step_status: 'running' });
    expect(running.paused_by).toBeUndefined();
    const moved = await call('workflow_next_step', { token: tokenOf(running), output: { summary: 'done' } });
    expect(moved.success).toBe(true);
    // The page says what was checked: the output against the step's rules, not the work itself ("last
    // check: first passed" read as a verdict on the work).
    const after = (await page(`/dashboard/executions/${id}`)).body;
    expect(after).toContain('last output: step first met its rules');
    expect(after).not.toContain('last check');
  });

  it("the principal's explicit override lifts it (never offered in next); the agent's own pause is its to lift", async () => {
    const { call, click } = await setup();
    const started = await call('workflow_start', { workflow_id: 'two-steps' });
    const id = started.execution_id as string;
    await click(id, 'paused', 'waiting on the design review');
    const overridden = await call('workflow_set_state', {
      execution_id: id,
      state: 'running',
      override_pause: true,
      reason: 'the user said go on',
    });
    expect(overridden).toMatchObject({ previous_state: 'paused', workflow_state: 'running' });

    // The agent pauses on its own: resume offers to set it running again, as always.
    await call('workflow_set_state', { execution_id: id, state: 'paused', reason: 'need input' });
    const resumed = await call('workflow_resume', { execution_id: id });
    expect(resumed).toMatchObject({ step_status: 'paused', paused_by: { by: 'alice', via: 'agent' } });
    expect(resumed.next).toEqual([
      { tool: 'workflow_set_state', arguments: { execution_id: id, state: 'running' } },
    ]);
    const unpaused = await call(resumed.next[0].tool, resumed.next[0].arguments);
    expect(unpaused.workflow_state).toBe('running');
  });
});
