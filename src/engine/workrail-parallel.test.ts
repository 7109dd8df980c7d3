import { describe, expect, it } from 'vitest';
import { modelSchemas, type PromptStep, type Workflow } from '../model/workflow.js';
import { stepPromptText } from './workrail.js';
import { childName, mapParallelSteps, parallelPlans } from './workrail-parallel.js';

const flow = (steps: unknown[]) =>
  ({ id: 'wr.checks', name: 'Checks', description: 'd', version: '1.0.0', steps }) as Workflow;

const parallel = (extra: Record<string, unknown> = {}) => ({
  id: 'double-check',
  type: 'parallel',
  title: 'Check side by side',
  runCondition: { var: 'size', not_equals: 'small' },
  parallelDelegations: [
    {
      workflowId: 'wr.routine-design-review',
      modelTier: 'lightweight',
      args: { deliverableName: 'review-a.md', topic: 'static' },
      contextMapping: { reviewFactPacket: 'facts', topicHint: 'topic' },
    },
    {
      workflowId: 'wr.routine-design-review',
      runCondition: { var: 'families', contains: 'style' },
      args: { deliverableName: 'review-b.md' },
    },
  ],
  ...extra,
});

const served = new Set(['wr.routine-design-review']);
const serves = (id: string) => served.has(id);

describe('WorkRail parallel steps as delegations', () => {
  it('names children by the last segment of their workflowId and their position', () => {
    expect(childName('wr.routine-design-review', 1)).toBe('routine-design-review-1');
    expect(childName('review', 12)).toBe('review-12');
    expect(childName(`wr.${'x'.repeat(64)}`, 3)).toMatch(/^x{62}-3$/);
  });

  it('becomes a delegating step when every workflowId is served, with its synthesis step after it', () => {
    const workflow = flow([
      { id: 'plan', title: 'Plan', prompt: 'Plan.' },
      parallel({ synthesis: { outputContract: { contractRef: 'wr.contracts.review_verdict' } } }),
      { id: 'ship', title: 'Ship', prompt: 'Ship.' },
    ]);
    const { workflow: mapped, mapped: changed } = mapParallelSteps(workflow, serves);
    expect(changed).toBe(true);
    expect(mapped.steps.map((s) => s.id)).toEqual(['plan', 'double-check', 'double-check-synthesis', 'ship']);
    const step = mapped.steps[1] as PromptStep;
    expect(step).not.toHaveProperty('type');
    expect(step).not.toHaveProperty('parallelDelegations');
    expect(step).not.toHaveProperty('synthesis');
    expect(step.runCondition).toEqual({ var: 'size', not_equals: 'small' });
    expect(step.delegate).toEqual({
      join: 'all',
      children: [
        {
          name: 'routine-design-review-1',
          workflow: 'wr.routine-design-review',
          // contextMapping copies the parent's values; args win over a mapped key.
          context: { facts: '{{reviewFactPacket}}', topic: 'static', deliverableName: 'review-a.md' },
          modelTier: 'lightweight',
        },
        {
          name: 'routine-design-review-2',
          workflow: 'wr.routine-design-review',
          context: { deliverableName: 'review-b.md' },
          runCondition: { var: 'families', contains: 'style' },
        },
      ],
    });
    // The step id has dashes, which `into` does not take: the default (the step id) applies.
    expect(step.delegate).not.toHaveProperty('into');
    expect(stepPromptText(step)).toContain('routine-design-review-1 (workflow "wr.routine-design-review")');
    expect(stepPromptText(step)).toContain('context.double-check');
    expect(mapped.steps[2]).toEqual({
      id: 'double-check-synthesis',
      title: 'Check side by side: synthesis',
      prompt: expect.stringContaining("Read the children's results in context.double-check"),
      outputContract: { contractRef: 'wr.contracts.review_verdict' },
      runCondition: { var: 'size', not_equals: 'small' },
    });
    // What the model takes: the mapped steps are steps as an author could write them.
    expect(modelSchemas().PromptStepSchema.safeParse(step).success).toBe(true);
    expect(modelSchemas().PromptStepSchema.safeParse(mapped.steps[2]).success).toBe(true);
  });

  it('sets `into` when the step id can name a context key, and keeps a synthesis prompt', () => {
    const workflow = flow([parallel({ id: 'checks', synthesis: { prompt: 'Merge the two reviews.' } })]);
    const { workflow: mapped } = mapParallelSteps(workflow, serves);
    expect((mapped.steps[0] as PromptStep).delegate?.into).toBe('checks');
    expect(mapped.steps[1]).toMatchObject({ id: 'checks-synthesis', prompt: 'Merge the two reviews.' });
  });

  it('maps parallel steps of inline loop bodies too', () => {
    const workflow = flow([
      {
        id: 'rounds',
        type: 'loop',
        title: 'Rounds',
        loop: { type: 'for', count: 2, maxIterations: 2 },
        body: [parallel({ synthesis: {} }), { id: 'fix', title: 'Fix', prompt: 'Fix.' }],
      },
    ]);
    const { workflow: mapped } = mapParallelSteps(workflow, serves);
    const body = (mapped.steps[0] as { body: PromptStep[] }).body;
    expect(body.map((s) => s.id)).toEqual(['double-check', 'double-check-synthesis', 'fix']);
    expect(body[0]?.delegate?.children).toHaveLength(2);
  });

  it('stays text when a workflowId is not served, naming each missing one once', () => {
    const workflow = flow([
      parallel({
        parallelDelegations: [
          { workflowId: 'wr.routine-load-check' },
          { workflowId: 'wr.routine-design-review' },
          { workflowId: 'wr.routine-load-check' },
        ],
      }),
    ]);
    const { workflow: same, mapped } = mapParallelSteps(workflow, serves);
    expect(mapped).toBe(false);
    expect(same).toBe(workflow);
    expect(parallelPlans(workflow, serves).get('double-check')).toEqual({
      kind: 'text',
      missing: ['wr.routine-load-check'],
      reasons: [],
    });
    expect(stepPromptText(same.steps[0] as PromptStep)).toContain(
      'follow the workflow "wr.routine-load-check"',
    );
  });

  it('stays text for what a delegating step cannot be, saying why', () => {
    const plan = (extra: Record<string, unknown>, steps: unknown[] = []) =>
      parallelPlans(flow([parallel(extra), ...steps]), serves).get('double-check');
    expect(plan({ validationCriteria: [{ type: 'length', min: 1, message: 'm' }] })).toMatchObject({
      kind: 'text',
      reasons: ['it has validationCriteria, which a delegating step cannot have'],
    });
    expect(
      plan({ synthesis: {} }, [{ id: 'double-check-synthesis', title: 'Taken', prompt: 'p' }]),
    ).toMatchObject({ kind: 'text', reasons: [expect.stringContaining('is taken by another step')] });
    expect(
      plan({
        parallelDelegations: [{ workflowId: 'wr.routine-design-review', contextMapping: { 'a-b': 'c' } }],
      }),
    ).toMatchObject({ kind: 'text', reasons: [expect.stringContaining('contextMapping "a-b"')] });
    // A step that is not `type: parallel` keeps its delegations as text beside its own prompt.
    const own = flow([
      { id: 'own', title: 'Own', prompt: 'Do it.', parallelDelegations: [{ workflowId: 'x' }] },
    ]);
    expect(parallelPlans(own, () => true).size).toBe(0);
  });
});
