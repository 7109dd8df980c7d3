import { describe, expect, it } from 'vitest';
import { assembledKits, LOCAL, twoStepWorkflow } from '../../test/helpers/execution-parts.js';
import type { Context } from '../engine/conditions.js';
import { findPromptStep } from '../engine/next-step.js';
import type { Workflow } from '../model/workflow.js';

// The kernel alone: the walk after an accepted output takes the output's one submission check (never
// checks it again), and a loop ahead that cannot start is a refusal to send back, not an error.

const assembled = assembledKits();

const LOOPING = {
  id: 'looping',
  name: 'Looping',
  description: 'a forEach after a step',
  version: '1.0.0',
  steps: [
    { id: 'plan', title: 'Plan', prompt: 'List the files.' },
    {
      id: 'each',
      type: 'loop',
      title: 'Each file',
      loop: { type: 'forEach', items: 'files', itemVar: 'file' },
      body: [{ id: 'edit', title: 'Edit', prompt: 'Edit {{file}}.' }],
    },
  ],
} as unknown as Workflow;

const parts = () => assembled();

describe('StepOutcomes', () => {
  it("records what the output's one submission check found, without checking the output again", async () => {
    const { kit, parts: p } = await parts();
    const workflow = twoStepWorkflow();
    const started = await p.starting.start(
      { workflow_id: 'two', definition: kit.definition(workflow) },
      LOCAL,
    );
    const exec = await kit.scratch.store.getExecution(started.kind === 'step' ? started.execution_id : '');
    const step = findPromptStep(workflow, 'first');
    if (exec === undefined || step === undefined) throw new Error('no execution');
    const context: Context = {};
    // The report says what the check found; the output itself carries none of it.
    const reported = { issues: [], suggestions: [], followups: [], assessments: { risk: 'low' } };
    const walked = p.outcomes.walkAfter(
      workflow,
      exec,
      step,
      { summary: 'done' },
      context,
      reported as never,
    );
    expect('next' in walked).toBe(true);
    expect((context.steps as Record<string, { assessments?: unknown }>).first?.assessments).toEqual({
      risk: 'low',
    });
  });

  it('answers a loop ahead whose list is missing with a refusal naming what to set', async () => {
    const { kit, parts: p } = await parts();
    const started = await p.starting.start(
      { workflow_id: 'looping', definition: kit.definition(LOOPING) },
      LOCAL,
    );
    const exec = await kit.scratch.store.getExecution(started.kind === 'step' ? started.execution_id : '');
    const step = findPromptStep(LOOPING, 'plan');
    if (exec === undefined || step === undefined) throw new Error('no execution');
    const none = { issues: [], suggestions: [], followups: [], assessments: {} };
    const walked = p.outcomes.walkAfter(LOOPING, exec, step, { summary: 'planned' }, {}, none);
    expect(walked).toMatchObject({
      validation: { valid: false, issues: [expect.stringMatching(/^PRECONDITION_FAILED/)] },
      named: ['files'],
    });
  });
});
