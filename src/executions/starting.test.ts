import { describe, expect, it } from 'vitest';
import { assembledKits, LOCAL, twoStepWorkflow } from '../../test/helpers/execution-parts.js';

// The starting part alone: a new execution enters its first step; an id that exists is that execution
// (the caller's) or unavailable (another principal's, revealing nothing); a step naming a check this
// server cannot run is refused before anything starts.

const assembled = assembledKits();

async function kit() {
  const { kit: k, parts } = await assembled();
  return { k, parts };
}

describe('Starting', () => {
  it('enters the first step, and returns an existing execution of the caller unchanged', async () => {
    const { k, parts } = await kit();
    const definition = k.definition(twoStepWorkflow());
    const first = await parts.starting.start(
      { workflow_id: 'two', execution_id: 'exec_mine', definition },
      LOCAL,
    );
    expect(first).toMatchObject({ kind: 'step', origin: 'started', view: { step_name: 'first' } });
    const again = await parts.starting.start(
      { workflow_id: 'two', execution_id: 'exec_mine', definition },
      LOCAL,
    );
    expect(again).toMatchObject({ kind: 'step', origin: 'existing', execution_id: 'exec_mine' });
  });

  it("refuses another principal's id as a plain invalid argument, naming nothing", async () => {
    const { k, parts } = await kit();
    const definition = k.definition(twoStepWorkflow());
    await parts.starting.start({ workflow_id: 'two', execution_id: 'exec_taken', definition }, LOCAL);
    await expect(
      parts.starting.start(
        { workflow_id: 'two', execution_id: 'exec_taken', definition },
        { principal: 'mallory' },
      ),
    ).rejects.toMatchObject({ error: { code: 'invalid_params' } });
  });

  it('refuses a step naming a check when this server has none, before anything starts', async () => {
    const { k, parts } = await kit();
    const definition = k.definition(twoStepWorkflow({ verify: { check: 'tests' } }));
    await expect(
      parts.starting.start({ workflow_id: 'two', execution_id: 'exec_c', definition }, LOCAL),
    ).rejects.toMatchObject({
      error: { code: 'check_unavailable', reason: 'not_configured' },
    });
    expect(await k.scratch.store.getExecution('exec_c')).toBeUndefined();
  });
});
