import { describe, expect, it } from 'vitest';
import { modelSchemas, type Workflow } from '../model/workflow.js';
import { CoverageTally, coverageSites } from './coverage.js';
import { nextStep, type WalkEvent } from './next-step.js';

const workflow = (data: unknown): Workflow => modelSchemas().WorkflowSchema.parse(data);

const LOOPS = workflow({
  id: 'loops',
  name: 'Loops',
  description: 'Loops and conditions',
  version: '1.0.0',
  steps: [
    { id: 'start', title: 'Start', prompt: 'Set done and items.' },
    {
      id: 'maybe',
      title: 'Maybe',
      prompt: 'Only when wanted.',
      runCondition: { var: 'wanted', equals: true },
    },
    {
      id: 'retry',
      type: 'loop',
      title: 'Retry',
      loop: { type: 'while', condition: { var: 'done', not_equals: true }, maxIterations: 2 },
      body: [{ id: 'attempt', title: 'Attempt', prompt: 'Try; set done.' }],
    },
    {
      id: 'each',
      type: 'loop',
      title: 'Each',
      loop: { type: 'forEach', items: 'items', maxIterations: 5 },
      body: [{ id: 'item', title: 'Item', prompt: 'Handle it.' }],
    },
    {
      id: 'three',
      type: 'loop',
      title: 'Three',
      loop: { type: 'for', count: 3, maxIterations: 5 },
      body: [{ id: 'round', title: 'Round', prompt: 'Once more.' }],
    },
  ],
});

/** Walks the workflow to the end, answering every step with `answer`, and returns what the walk told. */
function walk(
  context: Record<string, unknown>,
  answer: (step: string) => Record<string, unknown> = () => ({}),
) {
  const events: WalkEvent[] = [];
  let state = nextStep(LOOPS, [], context, (e) => events.push(e));
  const path: string[] = [];
  while (state.step !== null) {
    path.push(state.step.id);
    state = nextStep(
      LOOPS,
      [...state.completedSteps, state.step.id],
      { ...state.context, ...answer(state.step.id) },
      (e) => events.push(e),
    );
  }
  return { events, path };
}

describe('the walk observer', () => {
  it('tells each runCondition and loop condition that decided something, and how each loop ended', () => {
    const { events, path } = walk({ done: true, items: [], wanted: false });
    expect(path).toEqual(['start', 'round', 'round', 'round']);
    expect(events).toContainEqual({ kind: 'runCondition', step: 'maybe', value: false });
    expect(events).toContainEqual({ kind: 'loopCondition', loop: 'retry', value: false });
    expect(events).toContainEqual({ kind: 'loopExit', loop: 'retry', exit: 'none', iterations: 0 });
    expect(events).toContainEqual({ kind: 'loopExit', loop: 'each', exit: 'none', iterations: 0 });
    expect(events).toContainEqual({ kind: 'loopExit', loop: 'three', exit: 'condition', iterations: 3 });
  });

  it('tells a loop stopped by its maxIterations apart from one its condition ended', () => {
    const capped = walk({ done: false, items: ['a', 'b'], wanted: true });
    expect(capped.events).toContainEqual({
      kind: 'loopExit',
      loop: 'retry',
      exit: 'max_iterations',
      iterations: 2,
    });
    expect(capped.events).toContainEqual({
      kind: 'loopExit',
      loop: 'each',
      exit: 'condition',
      iterations: 2,
    });
    const ended = walk({ done: false, items: [] }, (step) => (step === 'attempt' ? { done: true } : {}));
    expect(ended.events).toContainEqual({
      kind: 'loopExit',
      loop: 'retry',
      exit: 'condition',
      iterations: 1,
    });
  });

  it('leaves the walk as it is without an observer', () => {
    const context = { done: false, items: ['a'], wanted: true };
    const plain = nextStep(LOOPS, ['start', 'maybe'], context);
    const observed = nextStep(LOOPS, ['start', 'maybe'], context, () => undefined);
    expect(observed).toEqual(plain);
  });
});

describe('coverage', () => {
  it('lists the steps, the conditions and the exits each loop can take', () => {
    const sites = coverageSites(LOOPS);
    expect(sites.steps).toEqual(['start', 'maybe', 'attempt', 'item', 'round']);
    expect(sites.branches.map((b) => b.id)).toEqual(['maybe/runCondition', 'retry/loop']);
    expect(sites.loops.map((l) => [l.id, l.exits])).toEqual([
      ['retry', ['none', 'condition', 'max_iterations']],
      ['each', ['none', 'condition', 'max_iterations']],
      // A literal count within maxIterations can only end one way.
      ['three', ['condition']],
    ]);
  });

  it('reports the paths no walk took, in words', () => {
    const tally = new CoverageTally(LOOPS);
    const { events, path } = walk({ done: true, items: [], wanted: false });
    for (const e of events) tally.observe(e);
    for (const id of path) tally.entered(id);
    const report = tally.report();
    expect(report.steps).toMatchObject({ covered: 2, total: 5 });
    expect(report.branches).toMatchObject({ covered: 2, total: 4 });
    expect(report.loops).toMatchObject({ covered: 3, total: 7 });
    expect(report.untested).toContain('step "maybe" is never entered');
    expect(report.untested).toContain('runCondition of "maybe" (wanted == true) is never true');
    expect(report.untested).toContain('loop "retry" never stops at its maxIterations (2)');
    expect(report.untested).not.toContain('loop "three" never runs zero rounds');
  });
});

describe('coverage of delegating steps', () => {
  const DELEGATING = workflow({
    id: 'fan',
    name: 'Fan',
    description: 'Delegating steps, one in a loop',
    version: '1.0.0',
    steps: [
      {
        id: 'strict',
        title: 'Strict',
        prompt: 'All of them, or fail.',
        delegate: { workflow: 'routine-a', count: 2 },
      },
      {
        id: 'rounds',
        type: 'loop',
        title: 'Rounds',
        loop: { type: 'for', count: 2, maxIterations: 3 },
        body: [
          {
            id: 'lenient',
            title: 'Lenient',
            prompt: 'Go on without the ones that fail; wait an hour at most.',
            delegate: {
              children: [{ name: 'a', workflow: 'routine-a' }],
              onChildFailure: 'continue',
              timeout: '60m',
            },
          },
        ],
      },
    ],
  });

  it('each join can hold, and fail or go on without a child (as onChildFailure says), and time out with a timeout', () => {
    expect(coverageSites(DELEGATING).joins).toEqual([
      { id: 'strict', title: 'Strict', outcomes: ['held', 'failed'] },
      { id: 'lenient', title: 'Lenient', outcomes: ['held', 'continued', 'timed_out'], timeout: '60m' },
    ]);
  });

  it('counts the join outcomes the runner saw, and words the ones never seen', () => {
    const tally = new CoverageTally(DELEGATING);
    tally.joined('strict', 'held');
    tally.joined('lenient', 'held');
    tally.joined('lenient', 'timed_out');
    tally.joined('lenient', 'held');
    const report = tally.report();
    expect(report.joins).toMatchObject({ covered: 3, total: 5 });
    expect(report.joins.items[1]?.outcomes).toEqual({ held: 2, continued: 0, failed: 0, timed_out: 1 });
    expect(report.untested.filter((u) => u.includes('join'))).toEqual([
      'the join of "strict" never fails (a child that does not complete fails the execution)',
      'the join of "lenient" never goes on without a child that did not complete (onChildFailure: continue)',
    ]);
  });
});
