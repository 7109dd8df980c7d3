import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { csrfOf, decisionFieldsOf, raw } from './helpers/dashboard.js';
import { poster2026 } from './helpers/http-server.js';
import { inProcessHttp, staticTokens } from './helpers/in-process-http.js';
import { CLI, callTool, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

// The approval gate attacked by teammates holding tokens, not only by the agent: a decision lands only on
// the output the person was shown (dashboard, CLI, elicitation), and a workflow's `approvers` (content an
// author edits) grants nobody rights over another principal's executions unless the operator named them
// (WORKFLOWLOOKUP_APPROVERS). Everything over real HTTP (`serve --http` in-process, static tokens).

type Json = Record<string, any>;

const EXAMPLE = join(import.meta.dirname, '..', 'examples', 'approvals', 'release-approval.yaml');
const NAVIGATE = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none', accept: 'text/html' };

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

/** A team server with alice (agent and person), mallory (an author who also approves) and an operator. */
async function team(env: Record<string, string> = {}) {
  const sb = sandbox();
  boxes.push(sb);
  copyFileSync(EXAMPLE, join(sb.runtime, 'release-approval.yaml'));
  const { env: auth, token } = await staticTokens(sb, {
    'alice-agent': { scopes: ['read', 'run'], principal: 'alice' },
    'alice-person': { scopes: ['read', 'approve'], principal: 'alice' },
    mallory: { scopes: ['read', 'run', 'author', 'approve'], principal: 'mallory' },
  });
  const server = await inProcessHttp(sb, { ...auth, ...env }, { dashboard: true });
  open.push(server);
  const client = async (bearer: string, capabilities: Json = {}) => {
    const c = new Client({ name: 'client', version: '1.0.0' }, { capabilities });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { authorization: `Bearer ${bearer}` } },
      }),
    );
    open.push(c);
    return c;
  };
  const formHeaders = (cookie?: string) => ({
    'content-type': 'application/x-www-form-urlencoded',
    origin: `http://127.0.0.1:${server.port}`,
    'sec-fetch-site': 'same-origin',
    ...(cookie ? { cookie } : {}),
  });
  const signIn = async (bearer: string) => {
    const res = await raw(server.port, '/dashboard/login', {
      method: 'POST',
      headers: formHeaders(),
      body: new URLSearchParams({ token: bearer, next: '/dashboard/' }).toString(),
    });
    expect(res.status).toBe(303);
    const header = res.headers['set-cookie'];
    return ((Array.isArray(header) ? header[0] : header) as string).split(';')[0] as string;
  };
  const page = (path: string, cookie: string) => raw(server.port, path, { headers: { ...NAVIGATE, cookie } });
  const decide = (cookie: string, execution: string, fields: Record<string, string>) =>
    raw(server.port, `/dashboard/approvals/${execution}/decide`, {
      method: 'POST',
      headers: formHeaders(cookie),
      body: new URLSearchParams(fields).toString(),
    });
  return { sb, server, token, client, signIn, page, decide };
}

describe('a decision lands only on the output the person was shown', () => {
  it('a stale or replayed dashboard POST, a CLI command typed before the new output, never approve it', async () => {
    const t = await team();
    const agent = await t.client(t.token['alice-agent'] as string);
    const started = await callTool(agent, 'workflow_start', { workflow_id: 'release-approval' });
    const v1 = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'release notes v1: fixed the parser' },
    });
    const alice = await t.signIn(t.token['alice-person'] as string);
    const first = await t.page('/dashboard/approvals', alice);
    const csrf = csrfOf(first.body);
    const shownV1 = decisionFieldsOf(first.body);
    expect(shownV1.approval).toBe(v1.approval.approval_id);
    // alice rejects v1; the agent revises and sends v2.
    const rejected = await t.decide(alice, started.execution_id, {
      csrf,
      ...shownV1,
      decision: 'reject',
      reason: 'mention the breaking change',
    });
    expect(rejected.headers.location).toBe('/dashboard/approvals?notice=rejected');
    const back = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(v1),
      output: { summary: 'poll' },
    });
    expect(back.approval.status).toBe('rejected');
    const v2 = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(back),
      output: { summary: 'release notes v2: BREAKING --json changed' },
    });
    expect(v2.approval.status).toBe('pending');

    // The v1 form replayed, as an approval: refused as stale, nothing moves.
    const replayed = await t.decide(alice, started.execution_id, { csrf, ...shownV1, decision: 'approve' });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.location).toBe('/dashboard/approvals?notice=stale');
    const notice = await t.page('/dashboard/approvals?notice=stale', alice);
    expect(notice.body).toContain('the output you were shown no longer waits');
    // v2's id with v1's digest (a forged or mixed-up form): refused too.
    const shownV2 = decisionFieldsOf(notice.body);
    expect(shownV2.approval).toBe(v2.approval.approval_id);
    const mixed = await t.decide(alice, started.execution_id, {
      csrf,
      approval: shownV2.approval,
      output: shownV1.output,
      decision: 'approve',
    });
    expect(mixed.headers.location).toBe('/dashboard/approvals?notice=stale');
    let poll = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(v2),
      output: { summary: 'poll' },
    });
    expect(poll).toMatchObject({ success: true, step_name: 'prepare', approval: { status: 'pending' } });

    // The operator's CLI: v1's id no longer decides anything; v2's does.
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [CLI, ...args], {
        env: { ...t.sb.env, WORKFLOWLOOKUP_DATA_DIR: join(t.sb.root, 'data') },
        cwd: t.sb.project,
        encoding: 'utf8',
      });
    const stale = cli('approve', shownV1.approval);
    expect(stale.status).toBe(1);
    expect(stale.stderr).toContain(`approval ${shownV1.approval} no longer waits`);
    poll = await callTool(agent, 'workflow_next_step', { token: tokenOf(v2), output: { summary: 'poll' } });
    expect(poll.approval.status).toBe('pending');

    // The current form decides, and the history records the digest of what was decided on.
    const approved = await t.decide(alice, started.execution_id, { csrf, ...shownV2, decision: 'approve' });
    expect(approved.headers.location).toBe('/dashboard/approvals?notice=approved');
    poll = await callTool(agent, 'workflow_next_step', { token: tokenOf(v2), output: { summary: 'poll' } });
    expect(poll.step_name).toBe('publish');
    const svc = await t.server.app.services.executions();
    const events = await svc.queries.telemetry(
      { execution_id: started.execution_id, event_type: 'approval_decided', limit: 10 },
      { principal: 'alice' },
    );
    expect(events.map((e) => (e.metadata as Json).output_sha256)).toEqual([shownV1.output, shownV2.output]);
  });
});

describe("a workflow's approvers grant nothing the operator did not", () => {
  const gated = (approvers: string[]) =>
    readFileSync(EXAMPLE, 'utf8').replace(
      'prompt: Ship these release notes?',
      `prompt: Ship these release notes?\n      approvers: [${approvers.join(', ')}]`,
    );

  it("an author who names herself approver of the shared workflow sees and decides nothing of alice's", async () => {
    const t = await team();
    const mallory = await t.client(t.token.mallory as string);
    const saved = await callTool(mallory, 'workflow_save', {
      content: gated(['mallory']),
      format: 'yaml',
      overwrite: true,
    });
    expect(saved.error).toBeUndefined();
    const agent = await t.client(t.token['alice-agent'] as string);
    const started = await callTool(agent, 'workflow_start', { workflow_id: 'release-approval' });
    const waiting = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'release notes: secret roadmap' },
    });
    expect(waiting.approval.status).toBe('pending');

    // mallory: no card, no held output, no history, no decision (404: the execution is not hers). Her
    // own pending approval gives her a valid form token to attack with.
    const own = await callTool(mallory, 'workflow_start', { workflow_id: 'release-approval' });
    await callTool(mallory, 'workflow_next_step', {
      token: tokenOf(own),
      output: { summary: 'release notes: mallory' },
    });
    const asMallory = await t.signIn(t.token.mallory as string);
    const list = await t.page('/dashboard/approvals', asMallory);
    expect(list.body).toContain(own.execution_id);
    expect(list.body).not.toContain(started.execution_id);
    expect(list.body).not.toContain('secret roadmap');
    expect((await t.page(`/dashboard/approvals?execution=${started.execution_id}`, asMallory)).status).toBe(
      404,
    );
    expect((await t.page(`/dashboard/executions/${started.execution_id}`, asMallory)).status).toBe(404);
    const forged = await t.decide(asMallory, started.execution_id, {
      csrf: csrfOf(list.body),
      approval: waiting.approval.approval_id,
      output: '0'.repeat(64),
      decision: 'approve',
    });
    expect(forged.status).toBe(404);

    // alice, the owner, still decides her own step.
    const alice = await t.signIn(t.token['alice-person'] as string);
    const mine = await t.page('/dashboard/approvals', alice);
    expect(mine.body).toContain('secret roadmap');
    const decided = await t.decide(alice, started.execution_id, {
      csrf: csrfOf(mine.body),
      ...decisionFieldsOf(mine.body),
      decision: 'approve',
    });
    expect(decided.headers.location).toBe('/dashboard/approvals?notice=approved');
  });

  it('approvers the operator named (WORKFLOWLOOKUP_APPROVERS) decide the steps that name them, and only those', async () => {
    const t = await team({ WORKFLOWLOOKUP_APPROVERS: 'mallory' });
    const mallory = await t.client(t.token.mallory as string);
    await callTool(mallory, 'workflow_save', {
      content: gated(['mallory']),
      format: 'yaml',
      overwrite: true,
    });
    const agent = await t.client(t.token['alice-agent'] as string);
    const started = await callTool(agent, 'workflow_start', { workflow_id: 'release-approval' });
    const waiting = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'release notes: reviewed by a lead' },
    });
    // alice sees it waits for mallory, with no form of her own.
    const alice = await t.signIn(t.token['alice-person'] as string);
    const mine = await t.page('/dashboard/approvals', alice);
    expect(mine.body).toContain('Waits for mallory to decide.');
    expect(mine.body).not.toContain('name="decision"');
    // mallory decides it.
    const asMallory = await t.signIn(t.token.mallory as string);
    const list = await t.page('/dashboard/approvals', asMallory);
    expect(list.body).toContain('reviewed by a lead');
    const approved = await t.decide(asMallory, started.execution_id, {
      csrf: csrfOf(list.body),
      ...decisionFieldsOf(list.body),
      decision: 'approve',
    });
    expect(approved.headers.location).toBe('/dashboard/approvals?notice=approved');
    const poll = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(waiting),
      output: { summary: 'poll' },
    });
    expect(poll.step_name).toBe('publish');
    // A configured approver is still a stranger to a step that does not name it.
    await callTool(mallory, 'workflow_save', {
      content: readFileSync(EXAMPLE, 'utf8'),
      format: 'yaml',
      overwrite: true,
    });
    const other = await callTool(agent, 'workflow_start', { workflow_id: 'release-approval' });
    await callTool(agent, 'workflow_next_step', {
      token: tokenOf(other),
      output: { summary: 'release notes: no approvers named' },
    });
    expect((await t.page('/dashboard/approvals', asMallory)).body).not.toContain(other.execution_id);
  });

  it("elicitation asks the owner's client only when the owner decides the step", async () => {
    const t = await team({
      WORKFLOWLOOKUP_APPROVERS: 'mallory',
      WORKFLOWLOOKUP_APPROVAL_ELICITATION: 'true',
    });
    const mallory = await t.client(t.token.mallory as string);
    await callTool(mallory, 'workflow_save', {
      content: gated(['mallory']),
      format: 'yaml',
      overwrite: true,
    });
    const post = poster2026(t.server.url, { elicitation: { form: {} } }, t.token['alice-agent'] as string);
    const call = (name: string, args: Json) => post('tools/call', { name, arguments: args }, name);
    const started = (await call('workflow_start', { workflow_id: 'release-approval' })).result
      .structuredContent;
    const answer = (
      await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'release notes: x' } })
    ).result;
    // Not input_required: mallory decides this step, so alice's client is not asked.
    expect(answer.resultType).not.toBe('input_required');
    expect(answer.structuredContent).toMatchObject({ approval: { status: 'pending' } });
  });
});
