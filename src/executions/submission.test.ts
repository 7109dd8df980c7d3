import { describe, expect, it } from 'vitest';
import { assembledKits, LOCAL, twoStepWorkflow } from '../../test/helpers/execution-parts.js';
import type { Outcome } from './execution-model.js';

// The submission part alone: one transaction per output that advances or refuses (a fresh token, one more
// attempt), a token used again with the same output replays, with another is a conflict, and a token of
// another principal proves nothing.

const assembled = assembledKits();

const tokenOf = (o: Outcome) => ('token' in o ? (o.token as string) : '');

async function started(first: Record<string, unknown> = {}) {
  const { kit, parts } = await assembled();
  const outcome = await parts.starting.start(
    { workflow_id: 'two', definition: kit.definition(twoStepWorkflow(first)) },
    LOCAL,
  );
  return { kit, parts, token: tokenOf(outcome) };
}

describe('Submission', () => {
  it('advances on a good output; the same token and output replay it, another output conflicts', async () => {
    const { parts, token } = await started();
    const advanced = await parts.submission.submit(token, { summary: 'did it' }, LOCAL);
    expect(advanced).toMatchObject({ kind: 'step', view: { step_name: 'second' } });
    expect(await parts.submission.submit(token, { summary: 'did it' }, LOCAL)).toEqual(advanced);
    await expect(parts.submission.submit(token, { summary: 'something else' }, LOCAL)).rejects.toMatchObject({
      error: { code: 'state_conflict' },
    });
  });

  it('refuses an output that misses the rules: one more attempt and a fresh token, nothing advanced', async () => {
    const { kit, parts, token } = await started({
      validationCriteria: [{ type: 'contains', value: 'tests', message: 'Say how it was tested' }],
    });
    const refused = await parts.submission.submit(token, { summary: 'did it' }, LOCAL);
    expect(refused).toMatchObject({ kind: 'rejected', step_name: 'first', validation: { valid: false } });
    expect(tokenOf(refused)).not.toBe(token);
    const row = await kit.scratch.store.getStep('execution_id' in refused ? refused.execution_id : '', 1);
    expect(row).toMatchObject({ status: 'running', attempts: 1 });
    const accepted = await parts.submission.submit(
      tokenOf(refused),
      { summary: 'did it, tests pass' },
      LOCAL,
    );
    expect(accepted).toMatchObject({ kind: 'step', view: { step_name: 'second' } });
  });

  it("refuses a token of another principal, and one that is not this server's", async () => {
    const { parts, token } = await started();
    await expect(
      parts.submission.submit(token, { summary: 'x' }, { principal: 'mallory' }),
    ).rejects.toMatchObject({
      error: { code: 'token_invalid', details: 'this token is not yours' },
    });
    await expect(parts.submission.submit(`${token}x`, { summary: 'x' }, LOCAL)).rejects.toMatchObject({
      error: { code: 'token_invalid' },
    });
  });
});
