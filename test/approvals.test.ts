import { spawnSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Decider, DecisionTarget, ExecutionService } from '../src/executions/execution-service.js';
import { poster2026 } from './helpers/http-server.js';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { postgresFor } from './helpers/postgres.js';
import { CLI, callTool, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

// Approval gates through the real protocol (SDK client, in-process): the agent's token cannot move a
// step that waits on a person; only a decision (operator, approver, the client's user) does. Timeouts
// are measured by an injected clock.

type Json = Record<string, any>;

const EXAMPLE = join(import.meta.dirname, '..', 'examples', 'approvals', 'release-approval.yaml');
const OPERATOR: Decider = { principal: null, name: 'cli:tester', via: 'cli', operator: true };

const pgServer = await postgresFor('approvals on PostgreSQL');

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

async function setup(
  env: Record<string, string> = {},
  options: { client?: Client; clock?: () => number } = {},
) {
  const sb = sandbox();
  boxes.push(sb);
  copyFileSync(EXAMPLE, join(sb.runtime, 'release-approval.yaml'));
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  const conn = await inProcessClient(sb, env, {
    ...(options.client ? { client: options.client } : {}),
    app: options.clock ? { clock: options.clock } : {},
  });
  open.push(conn);
  const call = (name: string, args: Json) => callTool(conn.client, name, args);
  const service = () => conn.app.services.executions();
  return { ...conn, call, service, sb: boxes.at(-1) as Sandbox };
}

const NOTES = { summary: 'release notes: fixed the parser, added --json' };

/** The approval an execution waits on now, as a person would name it after reading it. */
async function pendingOf(svc: ExecutionService, executionId: string): Promise<DecisionTarget> {
  const pending = (await svc.approvalsOf(executionId, null))?.find((a) => a.status === 'pending');
  if (pending === undefined) throw new Error(`nothing pending on ${executionId}`);
  return { approval_id: pending.approval_id };
}

describe('approval gates', () => {
  it('waits for a person: polls (even concurrent ones) and the old token move nothing; an approval moves on', async () => {
    const { call, service } = await setup();
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    // The step says up front that a person decides after it.
    expect(started.agent_content).toContain(
      'a person must approve it ("Ship these release notes?"); you cannot',
    );
    const first = tokenOf(started);
    const waiting = await call('workflow_next_step', { token: first, output: NOTES });
    expect(waiting).toMatchObject({
      success: true,
      workflow_state: 'running',
      step_name: 'prepare',
      approval: { status: 'pending', prompt: 'Ship these release notes?', expires_at: expect.any(String) },
    });
    expect(waiting.message).toContain('you cannot');
    const poll = tokenOf(waiting);
    expect(poll).not.toBe(first);
    expect(waiting.next[0].arguments.output).toEqual({ summary: 'waiting for approval' });

    // The agent tries to advance: twice at once, then with a made-up "approved" output.
    const [a, b] = await Promise.all([
      call('workflow_next_step', { token: poll, output: { summary: 'approved, go on' } }),
      call('workflow_next_step', {
        token: poll,
        output: { summary: 'approved', context: { approved: true } },
      }),
    ]);
    for (const answer of [a, b]) {
      expect(answer).toMatchObject({ success: true, step_name: 'prepare', approval: { status: 'pending' } });
    }
    // The spent token with another output is a conflict; with the same output it replays.
    const stale = await call('workflow_next_step', { token: first, output: { summary: 'release: other' } });
    expect(stale.error.data.error_code).toBe('EXECUTION_STATE_CONFLICT');
    const resumed = await call('workflow_resume', { execution_id: started.execution_id });
    expect(resumed).toMatchObject({ step_status: 'awaiting_approval', approval: { status: 'pending' } });

    const svc = await service();
    expect((await svc.pendingApprovals(null)).map((p) => p.execution_id)).toEqual([started.execution_id]);
    const shown = await pendingOf(svc, started.execution_id);
    await svc.decide(started.execution_id, 'approve', OPERATOR, 'looks right', shown);
    const moved = await call('workflow_next_step', { token: poll, output: { summary: 'poll' } });
    expect(moved).toMatchObject({ success: true, step_name: 'publish' });
    // Deciding again: nothing is pending.
    await expect(
      svc.decide(started.execution_id, 'reject', OPERATOR, undefined, shown),
    ).rejects.toMatchObject({
      error: { code: 'state_conflict' },
    });
    const events = await call('workflow_executions', {});
    expect(events).toBeDefined();
    const telemetry = await svc.queries.telemetry(
      { execution_id: started.execution_id, limit: 100 },
      {
        principal: 'local',
      },
    );
    const decided = telemetry.find((e: Json) => e.event_type === 'approval_decided');
    expect(decided?.metadata).toMatchObject({
      decision: 'approved',
      decided_by: 'cli:tester',
      decided_via: 'cli',
      reason: 'looks right',
    });
  });

  it('a rejection sends the step back with the reason and a fresh token; it needs approval again', async () => {
    const { call, service } = await setup();
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    const waiting = await call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    const svc = await service();
    await svc.decide(
      started.execution_id,
      'reject',
      OPERATOR,
      'mention the breaking change',
      await pendingOf(svc, started.execution_id),
    );
    const back = await call('workflow_next_step', { token: tokenOf(waiting), output: { summary: 'poll' } });
    expect(back).toMatchObject({
      success: false,
      step_name: 'prepare',
      approval: { status: 'rejected', decided_by: 'cli:tester', reason: 'mention the breaking change' },
    });
    expect(back.validation.issues[0]).toContain('APPROVAL_REJECTED');
    expect(back.validation.issues[0]).toContain('mention the breaking change');
    const again = await call('workflow_next_step', {
      token: tokenOf(back),
      output: { summary: 'release notes: BREAKING: --json output changed' },
    });
    expect(again).toMatchObject({ approval: { status: 'pending' } });
  });

  it('two people deciding at once: exactly one decision counts, the other is told nothing is pending', async () => {
    const { call, service } = await setup();
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    const waiting = await call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    const svc = await service();
    const shown = await pendingOf(svc, started.execution_id);
    const results = await Promise.allSettled([
      svc.decide(started.execution_id, 'approve', OPERATOR, 'first', shown),
      svc.decide(started.execution_id, 'reject', OPERATOR, 'second', shown),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason.error.code).toBe('state_conflict');
    const history = await svc.approvalsOf(started.execution_id, null);
    expect(history).toHaveLength(1);
    const poll = await call('workflow_next_step', { token: tokenOf(waiting), output: { summary: 'poll' } });
    expect(poll.step_name).toBe(history?.[0]?.status === 'approved' ? 'publish' : 'prepare');
  });

  it('a timeout rejects (injected clock)', async () => {
    let now = Date.parse('2026-11-26T10:00:00.000Z');
    const { call } = await setup({}, { clock: () => now });
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    const waiting = await call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    expect(waiting.approval.expires_at).toBe('2026-11-26T11:00:00.000Z');
    now += 59 * 60_000;
    const still = await call('workflow_next_step', { token: tokenOf(waiting), output: { summary: 'poll' } });
    expect(still.approval.status).toBe('pending');
    now += 2 * 60_000;
    const timedOut = await call('workflow_next_step', {
      token: tokenOf(waiting),
      output: { summary: 'poll' },
    });
    expect(timedOut).toMatchObject({
      success: false,
      approval: { status: 'rejected', decided_by: 'timeout', decided_via: 'timeout' },
    });
    expect(timedOut.validation.issues[0]).toContain('nobody decided in time');
    // No reason to revise by: the hint says to ask again, and to reach a person.
    expect(timedOut.validation.suggestions).toEqual([
      expect.stringContaining('Nobody judged the work, so there is nothing in it to revise'),
    ]);
  });

  it('only the owner (or the named approvers) may decide; another principal learns nothing', async () => {
    const { call, service } = await setup();
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    await call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    const svc = await service();
    const stranger: Decider = { principal: 'mallory', name: 'mallory', via: 'dashboard' };
    const shown = await pendingOf(svc, started.execution_id);
    await expect(
      svc.decide(started.execution_id, 'approve', stranger, undefined, shown),
    ).rejects.toMatchObject({
      error: { code: 'execution_not_found' },
    });
    expect(await svc.pendingApprovals('mallory')).toEqual([]);
    expect(await svc.pendingApprovals('local')).toHaveLength(1);
    const owner: Decider = { principal: 'local', name: 'local', via: 'dashboard' };
    await svc.decide(started.execution_id, 'approve', owner, undefined, shown);
  });

  it("asks the client's user through form elicitation over stdio, and records who decided", async () => {
    const asked: Json[] = [];
    const client = new Client(
      { name: 'approver', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params as Json);
      return { action: 'accept', content: { decision: 'approve', reason: 'ship it' } };
    });
    const { call, service } = await setup({}, { client });
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    const answer = await call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    expect(answer).toMatchObject({ success: true, step_name: 'publish' });
    expect(asked).toHaveLength(1);
    expect(asked[0]?.mode).toBe('form');
    expect(asked[0]?.message).toContain('Ship these release notes?');
    expect(asked[0]?.requestedSchema.properties.decision.enum).toEqual(['approve', 'reject']);
    const svc = await service();
    const history = await svc.approvalsOf(started.execution_id, null);
    expect(history?.[0]).toMatchObject({
      status: 'approved',
      decided_via: 'elicitation',
      decided_by: 'local (client user)',
      reason: 'ship it',
    });
  });

  it('asks nobody when WORKFLOWLOOKUP_APPROVAL_ELICITATION is off, or the user declines', async () => {
    let asked = 0;
    const client = new Client(
      { name: 'approver', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', async () => {
      asked++;
      return { action: 'decline' };
    });
    const off = await setup({ WORKFLOWLOOKUP_APPROVAL_ELICITATION: 'false' }, { client });
    const started = await off.call('workflow_start', { workflow_id: 'release-approval' });
    const answer = await off.call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    expect(answer.approval.status).toBe('pending');
    expect(asked).toBe(0);

    const declining = new Client(
      { name: 'decliner', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    declining.setRequestHandler('elicitation/create', async () => {
      asked++;
      return { action: 'decline' };
    });
    const on = await setup({}, { client: declining });
    const again = await on.call('workflow_start', { workflow_id: 'release-approval' });
    const pending = await on.call('workflow_next_step', { token: tokenOf(again), output: NOTES });
    expect(pending.approval.status).toBe('pending');
    expect(asked).toBe(1);
    // Polls look; they do not ask the user again.
    await on.call('workflow_next_step', { token: tokenOf(pending), output: { summary: 'poll' } });
    expect(asked).toBe(1);
  });
});

/** tools/call as a plain 2026-07-28 request (one per call, the envelope in `_meta`), and its retries. */
function poster2026Tools(url: string, capabilities: Json) {
  const post = poster2026(url, capabilities);
  return (name: string, args: Json, inputResponses?: Json) =>
    post('tools/call', { name, arguments: args, ...(inputResponses ? { inputResponses } : {}) }, name);
}

describe('approval elicitation on 2026-07-28 (input_required, then the retry with the answer)', () => {
  it('asks through input_required when enabled; the retry decides; a declined retry leaves it pending', async () => {
    const sb = sandbox();
    boxes.push(sb);
    copyFileSync(EXAMPLE, join(sb.runtime, 'release-approval.yaml'));
    const server = await inProcessHttp(sb, {
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'),
      WORKFLOWLOOKUP_APPROVAL_ELICITATION: 'true',
    });
    open.push(server);
    const call = poster2026Tools(server.url, { elicitation: { form: {} } });
    for (const decision of ['decline', 'approve'] as const) {
      const started = (await call('workflow_start', { workflow_id: 'release-approval' })).result
        .structuredContent;
      const submit = { token: tokenOf(started), output: NOTES };
      const asked = (await call('workflow_next_step', submit)).result;
      expect(asked).toMatchObject({
        resultType: 'input_required',
        inputRequests: { approval: { method: 'elicitation/create' } },
      });
      expect(asked.inputRequests.approval.params.message).toContain('Ship these release notes?');
      const answer =
        decision === 'decline'
          ? { action: 'decline' }
          : { action: 'accept', content: { decision: 'approve', reason: 'fine by me' } };
      const retried = (await call('workflow_next_step', submit, { approval: answer })).result
        .structuredContent;
      if (decision === 'decline') {
        expect(retried).toMatchObject({
          success: true,
          step_name: 'prepare',
          approval: { status: 'pending' },
        });
      } else {
        expect(retried).toMatchObject({ success: true, step_name: 'publish' });
      }
    }
  });

  it('over HTTP asks nobody by default', async () => {
    const sb = sandbox();
    boxes.push(sb);
    copyFileSync(EXAMPLE, join(sb.runtime, 'release-approval.yaml'));
    const server = await inProcessHttp(sb, { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data') });
    open.push(server);
    const call = poster2026Tools(server.url, { elicitation: { form: {} } });
    const started = (await call('workflow_start', { workflow_id: 'release-approval' })).result
      .structuredContent;
    const answer = (await call('workflow_next_step', { token: tokenOf(started), output: NOTES })).result;
    expect(answer.structuredContent).toMatchObject({ approval: { status: 'pending' } });
  });
});

describe('workflow tests answer approvals and checks', () => {
  it("the examples' tests pass: approvals decided, check results canned", async () => {
    const { app } = await setup();
    const root = join(import.meta.dirname, '..', 'examples');
    const run = await (await app.services.tests()).runPaths([join(root, 'approvals'), join(root, 'checks')]);
    expect({ passed: run.passed, failed: run.failed, errors: run.errors }).toEqual({
      passed: 4,
      failed: 0,
      errors: 0,
    });
  });
});

describe('workflowlookup approvals | approve | reject (dist/cli.js on the server host)', () => {
  it('lists what waits, decides it with a reason, and refuses what cannot be decided', async () => {
    const { call, sb } = await setup();
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [CLI, ...args], { env: sb.env, cwd: sb.project, encoding: 'utf8' });
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    const waiting = await call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    const listed = cli('approvals');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(started.execution_id);
    expect(listed.stdout).toContain('Ship these release notes?');
    expect(listed.stdout).toContain('1 pending');
    const json = JSON.parse(cli('approvals', '--json').stdout);
    expect(json.pending[0]).toMatchObject({ execution_id: started.execution_id, status: 'pending' });

    const approvalId = json.pending[0].approval_id as string;
    // Each line leads with the approval id: what `approve` names, so it decides what was read.
    expect(listed.stdout).toContain(`${approvalId}  ${started.execution_id}`);

    // An execution id does not say which output: the answer names the approval to decide (exit 2).
    const byExecution = cli('approve', started.execution_id);
    expect(byExecution.status).toBe(2);
    expect(byExecution.stderr).toContain(`workflowlookup approve ${approvalId}`);
    expect(byExecution.stderr).toContain('Ship these release notes?');

    const approved = cli('approve', approvalId, '--reason', 'checked the notes');
    expect(approved.status).toBe(0);
    expect(approved.stdout).toMatch(/approved by cli:/);
    const moved = await call('workflow_next_step', { token: tokenOf(waiting), output: { summary: 'poll' } });
    expect(moved.step_name).toBe('publish');

    const again = cli('reject', approvalId);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('has no approval pending');
    const unknown = cli('approve', 'exec_nope');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('Execution not found');
    const unknownApproval = cli('approve', 'appr_nope');
    expect(unknownApproval.status).toBe(1);
    expect(unknownApproval.stderr).toContain('no such approval');
    const none = cli('approve');
    expect(none.status).toBe(2);
    expect(cli('approvals').stdout).toContain('No approvals pending');
  });
});

describe.skipIf(pgServer.url === undefined)('approvals on PostgreSQL', () => {
  it('persist and decide the same way', async () => {
    const schema = await pgServer.database().schema();
    const { call, service } = await setup({
      WORKFLOWLOOKUP_DATABASE_URL: schema.url,
      WORKFLOWLOOKUP_TOKEN_SECRET: 'an-hmac-secret-shared-by-every-replica-0123456789',
    });
    const started = await call('workflow_start', { workflow_id: 'release-approval' });
    const waiting = await call('workflow_next_step', { token: tokenOf(started), output: NOTES });
    expect(waiting.approval.status).toBe('pending');
    const svc = await service();
    const [pending] = await svc.pendingApprovals(null);
    expect(pending).toMatchObject({ execution_id: started.execution_id, output: NOTES, approvers: null });
    await svc.decide(started.execution_id, 'reject', OPERATOR, 'not yet', {
      approval_id: pending?.approval_id ?? '',
    });
    const back = await call('workflow_next_step', { token: tokenOf(waiting), output: { summary: 'poll' } });
    expect(back.approval).toMatchObject({ status: 'rejected', reason: 'not yet' });
    const rows = await pgServer.database().admin(`SELECT status, decided_via FROM ${schema.name}.approvals`);
    expect(rows).toEqual([{ status: 'rejected', decided_via: 'cli' }]);
  });
});
