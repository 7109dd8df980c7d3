import { describe, expect, it } from 'vitest';
import { assembledKits, LOCAL, twoStepWorkflow } from '../../test/helpers/execution-parts.js';
import type { Decider } from './execution-deps.js';
import type { Outcome } from './execution-model.js';

// The approvals part alone: holding an output, who decides it (the operator's approvers, never the
// workflow's word alone), decisions made on what was shown, timeouts by the injected clock.

const assembled = assembledKits();

const OPERATOR: Decider = { principal: null, name: 'cli:op', via: 'cli', operator: true };

async function waiting(approval: Record<string, unknown>, team: string[] = []) {
  const { kit, parts } = await assembled({ approvers: new Set(team) });
  const workflow = twoStepWorkflow({ approval: { prompt: 'Ship it?', ...approval } });
  const started = await parts.starting.start(
    { workflow_id: 'two', definition: kit.definition(workflow) },
    LOCAL,
  );
  const token = (started as Extract<Outcome, { kind: 'step' }>).token as string;
  const held = await parts.submission.submit(token, { summary: 'done' }, LOCAL);
  if (held.kind !== 'awaiting_approval') throw new Error(`not held: ${held.kind}`);
  return { kit, parts, held };
}

describe('Approvals', () => {
  it("ignores a workflow's approvers the operator did not name: the owner decides", async () => {
    const { parts, held } = await waiting({ approvers: ['mallory'] });
    const [record] = (await parts.approvals.approvalsOf(held.execution_id, null)) ?? [];
    expect(record && parts.approvals.decidersOf(record)).toEqual(['local']);
    await expect(
      parts.approvals.decide(
        held.execution_id,
        'approve',
        { principal: 'mallory', name: 'm', via: 'dashboard' },
        undefined,
        {
          approval_id: held.approval.approval_id,
        },
      ),
    ).rejects.toMatchObject({ error: { code: 'execution_not_found' } });
    expect(await parts.approvals.pendingApprovals('mallory')).toEqual([]);
  });

  it('lets the approvers the operator named decide the steps that name them, and only them', async () => {
    const { parts, held } = await waiting({ approvers: ['lead'] }, ['lead']);
    const on = { approval_id: held.approval.approval_id };
    // The owner sees it waits for the lead, and cannot decide it.
    await expect(
      parts.approvals.decide(
        held.execution_id,
        'approve',
        { principal: 'local', name: 'local', via: 'dashboard' },
        undefined,
        on,
      ),
    ).rejects.toMatchObject({ error: { code: 'state_conflict' } });
    const decided = await parts.approvals.decide(
      held.execution_id,
      'approve',
      { principal: 'lead', name: 'lead', via: 'dashboard' },
      'fine',
      on,
    );
    expect(decided.approval).toMatchObject({ status: 'approved', decided_by: 'lead' });
  });

  it('refuses a decision on an approval that no longer waits, or on an output that was not shown', async () => {
    const { parts, held } = await waiting({});
    await expect(
      parts.approvals.decide(held.execution_id, 'approve', OPERATOR, undefined, { approval_id: 'appr_old' }),
    ).rejects.toMatchObject({
      error: { code: 'state_conflict', stale: { approval_id: held.approval.approval_id } },
    });
    await expect(
      parts.approvals.decide(held.execution_id, 'approve', OPERATOR, undefined, {
        approval_id: held.approval.approval_id,
        output_sha256: '0'.repeat(64),
      }),
    ).rejects.toMatchObject({ error: { code: 'state_conflict' } });
    expect((await parts.approvals.pendingApprovals(null)).map((a) => a.status)).toEqual(['pending']);
  });

  it('rejects by timeout when it is looked at past its time (the injected clock)', async () => {
    const { kit, parts, held } = await waiting({ timeout: '10m' });
    kit.advance(9 * 60_000);
    expect(await parts.approvals.pendingApprovals(null)).toHaveLength(1);
    kit.advance(2 * 60_000);
    expect(await parts.approvals.pendingApprovals(null)).toEqual([]);
    const [record] = (await parts.approvals.approvalsOf(held.execution_id, null)) ?? [];
    expect(record).toMatchObject({ status: 'rejected', decided_by: 'timeout' });
  });

  it("asks the client's user only when the owner decides, and records the answer", async () => {
    const asked: string[] = [];
    const caller = {
      ...LOCAL,
      askApproval: async (q: { prompt: string }) => {
        asked.push(q.prompt);
        return { decision: 'approve' as const, reason: 'ok' };
      },
    };
    const mine = await waiting({});
    expect(
      await mine.parts.approvals.ask({ ...mine.held, requested: true }, { summary: 'done' }, caller),
    ).toBe(true);
    expect(asked).toEqual(['Ship it?']);
    const theirs = await waiting({ approvers: ['lead'] }, ['lead']);
    expect(
      await theirs.parts.approvals.ask({ ...theirs.held, requested: true }, { summary: 'done' }, caller),
    ).toBe(false);
    expect(asked).toHaveLength(1);
  });
});
