import { describe, expect, it } from 'vitest';
import { assembledKits, LOCAL, twoStepWorkflow } from '../../test/helpers/execution-parts.js';

// The state-changes part alone: who paused an execution is kept while it is paused; a person's pause
// holds against the agent (unless the principal overrides it); where an execution stands.

const assembled = assembledKits();

async function started() {
  const { kit, parts } = await assembled();
  const outcome = await parts.starting.start(
    { workflow_id: 'two', definition: kit.definition(twoStepWorkflow()) },
    LOCAL,
  );
  return { parts, id: outcome.kind === 'step' ? outcome.execution_id : '' };
}

describe('StateChanges', () => {
  it("keeps a person's pause: the agent cannot set it running, the principal's override can", async () => {
    const { parts, id } = await started();
    await parts.states.setState(id, 'paused', 'lunch break', LOCAL, { via: 'dashboard', by: 'alice' });
    const current = await parts.states.current(id, LOCAL);
    expect(current).toMatchObject({
      state: 'paused',
      token: null,
      paused: { by: 'alice', via: 'dashboard', reason: 'lunch break' },
    });
    await expect(parts.states.setState(id, 'running', undefined, LOCAL)).rejects.toMatchObject({
      error: { code: 'state_conflict', pausedBy: { by: 'alice' } },
    });
    const lifted = await parts.states.setState(id, 'running', 'user said go', LOCAL, {
      via: 'agent',
      override: true,
    });
    expect(lifted).toMatchObject({ previous_state: 'paused', state: 'running' });
    expect((await parts.states.current(id, LOCAL)).paused).toBeUndefined();
  });

  it('lets the agent lift its own pause, and refuses what the state table does not allow', async () => {
    const { parts, id } = await started();
    await parts.states.setState(id, 'paused', undefined, LOCAL);
    expect((await parts.states.current(id, LOCAL)).paused).toMatchObject({ via: 'agent', by: 'local' });
    await parts.states.setState(id, 'running', undefined, LOCAL);
    await parts.states.setState(id, 'abandoned', 'gone', LOCAL);
    await expect(parts.states.setState(id, 'running', undefined, LOCAL)).rejects.toMatchObject({
      error: { code: 'state_conflict', allowed: [] },
    });
  });

  it("says another principal's execution is not found", async () => {
    const { parts, id } = await started();
    await expect(parts.states.current(id, { principal: 'mallory' })).rejects.toMatchObject({
      error: { code: 'execution_not_found' },
    });
    await expect(
      parts.states.setState(id, 'paused', undefined, { principal: 'mallory' }),
    ).rejects.toMatchObject({
      error: { code: 'execution_not_found' },
    });
  });
});
