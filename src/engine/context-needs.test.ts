import { describe, expect, it } from 'vitest';
import type { Workflow } from '../model/workflow.js';
import {
  checkContextValues,
  contextFill,
  contextNeeds,
  expectedValue,
  valueProblem,
} from './context-needs.js';
import { schemaShape, stepFill } from './fill.js';

const flow = (steps: unknown[], extra: Record<string, unknown> = {}) =>
  ({
    id: 'unit-flow',
    name: 'Unit',
    description: 'Unit flow',
    version: '1.0.0',
    ...extra,
    steps,
  }) as Workflow;

describe('contextNeeds', () => {
  it('finds who sets a variable: the first step that asks for it by name, else the last one before the read', () => {
    const needs = contextNeeds(
      flow([
        { id: 'intro', title: 'Intro', prompt: 'Read the task.' },
        { id: 'triage', title: 'Triage', prompt: 'Set size (small, medium or large) in the context.' },
        { id: 'plan', title: 'Plan', prompt: 'Plan.' },
        { id: 'big', title: 'Big', prompt: 'Go big.', runCondition: { var: 'size', equals: 'large' } },
        { id: 'flag', title: 'Flag', prompt: 'Flag.', runCondition: { var: 'hurry' } },
      ]),
    );
    const size = needs.byPath.get('size');
    expect(size).toMatchObject({
      kind: 'string',
      compared: ['large'],
      allowed: ['small', 'medium', 'large'],
      setBy: ['triage'],
      asked: true,
      atStart: false,
    });
    expect(needs.byStep.get('triage')).toEqual([
      { path: 'size', asked: true, fresh: false, whileUnset: false },
    ]);
    // Steps between the setter and the read name it while it is unset (the setter may have been skipped).
    expect(needs.byStep.get('plan')).toContainEqual({
      path: 'size',
      asked: false,
      fresh: false,
      whileUnset: true,
    });
    // Nobody asks for hurry: the last step before its read offers it, optional.
    expect(needs.byPath.get('hurry')).toMatchObject({ kind: 'flag', setBy: ['big'], asked: false });
    expect(needs.byStep.get('big')).toContainEqual({
      path: 'hurry',
      asked: false,
      fresh: false,
      whileUnset: false,
    });
  });

  it('a loop condition is reported again every round by the body; a list or count before the loop', () => {
    const needs = contextNeeds(
      flow([
        { id: 'plan', title: 'Plan', prompt: 'List the slices.' },
        {
          id: 'each',
          type: 'loop',
          title: 'Each slice',
          loop: { type: 'forEach', items: 'slices', maxIterations: 9 },
          body: [{ id: 'build', title: 'Build', prompt: 'Build the slice.' }],
        },
        {
          id: 'check',
          type: 'loop',
          title: 'Check',
          loop: { type: 'until', condition: { var: 'green', equals: true }, maxIterations: 3 },
          body: [
            { id: 'run', title: 'Run', prompt: 'Run the tests and set green.' },
            { id: 'fix', title: 'Fix', prompt: 'Fix.', runCondition: { var: 'green', not_equals: true } },
          ],
        },
      ]),
    );
    expect(needs.byPath.get('slices')).toMatchObject({
      kind: 'array',
      setBy: ['plan'],
      asked: true,
      source: { id: 'each', title: 'Each slice' },
    });
    expect(needs.byPath.get('green')).toMatchObject({
      kind: 'boolean',
      setBy: ['run'],
      loop: { id: 'check', type: 'until', rule: 'green == true', maxIterations: 3 },
    });
    expect(needs.byStep.get('run')).toEqual([{ path: 'green', asked: true, fresh: true, whileUnset: false }]);
  });

  it('a fan-out reads its list as a forEach loop does: the step before sets it, an array', () => {
    const workflow = flow([
      { id: 'plan', title: 'Plan', prompt: 'List the slices.' },
      {
        id: 'build',
        title: 'Build each slice',
        prompt: 'Build the slices.',
        delegate: {
          workflow: 'build-slice',
          forEach: 'slices',
          context: { owner: '{{team}}' },
        },
      },
      {
        id: 'review',
        title: 'Review',
        prompt: 'Review.',
        delegate: {
          children: [{ name: 'strict', workflow: 'review', runCondition: { var: 'careful', equals: true } }],
        },
      },
      // The children's results are the server's to set (into, default the step id): nobody is asked for them.
      {
        id: 'ship',
        title: 'Ship',
        prompt: 'Ship.',
        runCondition: { var: 'review.strict.state', equals: 'completed' },
      },
    ]);
    const needs = contextNeeds(workflow);
    expect(needs.byPath.get('slices')).toMatchObject({
      kind: 'array',
      strict: true,
      setBy: ['plan'],
      asked: true,
      fanOut: { id: 'build', title: 'Build each slice' },
      reads: [{ step: 'build', what: 'children' }],
    });
    expect(needs.byPath.get('slices')?.source).toBeUndefined();
    expect(expectedValue(needs.byPath.get('slices') as never)).toBe(
      'an array (step "Build each slice" starts one child execution per item)',
    );
    const plan = workflow.steps[0] as Parameters<typeof stepFill>[1];
    expect(stepFill(workflow, plan, {}, 'durable')['output.context.slices']).toBe(
      'an array (step "Build each slice" starts one child execution per item)',
    );
    expect(valueProblem(needs.byPath.get('slices') as never, 'a, b')).toContain('must be an array');
    // A child's condition and a {{var}} in the children's context are reads too.
    expect(needs.byPath.get('careful')).toMatchObject({ reads: [{ step: 'review', what: 'runCondition' }] });
    expect(needs.byPath.get('team')).toMatchObject({ reads: [{ step: 'build', what: 'template' }] });
    expect(needs.byPath.has('review.strict.state')).toBe(false);
    expect(needs.byStep.get('review')).toBeUndefined();
  });

  it('marks variables read before any step can set them', () => {
    const needs = contextNeeds(
      flow([
        { id: 'first', title: 'First', prompt: 'Set mode.', runCondition: { var: 'mode', equals: 'on' } },
        { id: 'second', title: 'Second', prompt: 'Go.', runCondition: { var: 'mode', equals: 'off' } },
      ]),
    );
    expect(needs.byPath.get('mode')).toMatchObject({ atStart: true, setBy: ['first'], asked: true });
  });

  it('reads prompt fragments, confirmations, rule conditions and {{var}} templates; not server-owned keys', () => {
    const needs = contextNeeds(
      flow(
        [
          {
            id: 'only',
            title: 'Only',
            prompt: 'Write for {{reader}}.',
            promptFragments: [{ id: 'f', when: { var: 'depth', gte: 2 }, text: 'Go deeper.' }],
            requireConfirmation: { var: 'risky', equals: true },
            validationCriteria: [
              { type: 'length', min: 5, message: 'm', condition: { var: 'inputs.strict', equals: true } },
            ],
          },
        ],
        { inputs: { strict: { type: 'boolean', description: 'strict' } } },
      ),
    );
    expect(needs.variables.map((v) => [v.path, v.kind, v.reads.map((r) => r.what)])).toEqual([
      ['depth', 'number', ['fragment']],
      ['reader', 'any', ['template']],
      ['risky', 'boolean', ['confirmation']],
    ]);
    expect(needs.dangling).toEqual([]);
  });

  it('reports reads of inputs and step outputs that nothing provides', () => {
    const needs = contextNeeds(
      flow([{ id: 'one', title: 'One', prompt: 'p', runCondition: { var: 'inputs.ghost' } }]),
    );
    expect(needs.dangling).toEqual([{ path: 'inputs.ghost', step: 'one' }]);
  });

  it('is computed once per definition object', () => {
    const workflow = flow([{ id: 'one', title: 'One', prompt: 'p' }]);
    expect(contextNeeds(workflow)).toBe(contextNeeds(workflow));
  });
});

describe('values enumerated in the prose', () => {
  const allowedOf = (text: string, compared: string[]) => {
    const workflow = flow(
      [
        { id: 'ask', title: 'Ask', prompt: text },
        ...compared.map((c, i) => ({
          id: `s${i}x`,
          title: 'S',
          prompt: 'p',
          runCondition: { var: 'level', equals: c },
        })),
      ],
      { metaGuidance: ['Other variables: speed (fast | slow).'] },
    );
    return contextNeeds(workflow).byPath.get('level')?.allowed;
  };

  it('reads comma, slash and bar lists, skipping glosses in parentheses', () => {
    expect(allowedOf('Set level: low (a little), mid (some) or high (a lot).', ['high'])).toEqual([
      'low',
      'mid',
      'high',
    ]);
    expect(allowedOf('Classify `level` (Low/Mid/High), `speed` (Fast/Slow).', ['High'])).toEqual([
      'Low',
      'Mid',
      'High',
    ]);
    expect(allowedOf('level ("low" | "mid" | "high"), then speed.', ['low'])).toEqual(['low', 'mid', 'high']);
  });

  it('stops at a word that is no list item, and keeps compared values the prose leaves out', () => {
    expect(
      allowedOf('Set level to low, mid or high, as the user asked (default mid).', ['high', 'max']),
    ).toEqual(['low', 'mid', 'high', 'max']);
  });

  it('finds nothing without a list that names a compared value: the set stays open', () => {
    expect(allowedOf('Set level as you see fit.', ['high'])).toBeUndefined();
    expect(allowedOf('Set level: red, green or blue.', ['high'])).toBeUndefined();
  });
});

describe('what a value must be', () => {
  const variable = (steps: unknown[], path: string) => {
    const v = contextNeeds(flow(steps)).byPath.get(path);
    if (v === undefined) throw new Error(`no ${path}`);
    return v;
  };

  it('refuses the wrong type and values outside an enumerated set, comparing as conditions do', () => {
    const size = variable(
      [
        { id: 'ask', title: 'Ask', prompt: 'Set size: small or large.' },
        { id: 'big', title: 'Big', prompt: 'p', runCondition: { var: 'size', equals: 'large' } },
      ],
      'size',
    );
    expect(expectedValue(size)).toBe('one of "small", "large" (case-insensitive)');
    expect(valueProblem(size, ' LARGE ')).toBeUndefined();
    expect(valueProblem(size, 'huge')).toBe(
      'must be one of "small", "large" (case-insensitive); got string "huge"',
    );
    expect(valueProblem(size, ['large'])).toMatch(/got an array of 1/);

    const score = variable(
      [{ id: 'hi', title: 'Hi', prompt: 'p', runCondition: { var: 'score', gt: 3 } }],
      'score',
    );
    expect(valueProblem(score, 4)).toBeUndefined();
    expect(valueProblem(score, '4')).toMatch(/must be a number/);

    const count = variable(
      [{ id: 'n', title: 'N', prompt: 'p', runCondition: { var: 'n', equals: 10 } }],
      'n',
    );
    expect(valueProblem(count, '10')).toBeUndefined();

    const flag = variable(
      [{ id: 'f', title: 'F', prompt: 'p', runCondition: { var: 'ok', equals: true } }],
      'ok',
    );
    for (const yes of [true, false, 'true', 'No', ' yes ', '1'])
      expect(valueProblem(flag, yes)).toBeUndefined();
    expect(valueProblem(flag, 1)).toMatch(/must be true or false; got number 1/);
    expect(valueProblem(flag, 'maybe')).toMatch(/got string "maybe"/);
  });

  it('an open set takes any text and says so', () => {
    const mode = variable(
      [{ id: 'm', title: 'M', prompt: 'p', runCondition: { var: 'mode', equals: 'x' } }],
      'mode',
    );
    expect(expectedValue(mode)).toBe(
      'text; compared with "x" (case-insensitive; anything else matches none)',
    );
    expect(valueProblem(mode, 'y')).toBeUndefined();
  });

  it('checks the values a context gives; a variable left out is unset, not an issue', () => {
    const workflow = flow([
      { id: 'ask', title: 'Ask', prompt: 'Set size: small or large.' },
      { id: 'big', title: 'Big', prompt: 'p', runCondition: { var: 'size', equals: 'large' } },
    ]);
    expect(checkContextValues(workflow, undefined, 'output.context.')).toEqual({ issues: [], variables: [] });
    expect(checkContextValues(workflow, { other: 1 }, 'output.context.').issues).toEqual([]);
    expect(checkContextValues(workflow, { size: 'huge' }, 'output.context.')).toEqual({
      issues: ['output.context.size must be one of "small", "large" (case-insensitive); got string "huge"'],
      variables: ['size'],
    });
  });
});

describe('fill', () => {
  const workflow = flow([
    { id: 'ask', title: 'Ask', prompt: 'Set size: small or large.' },
    { id: 'mid', title: 'Mid', prompt: 'p' },
    { id: 'big', title: 'Big', prompt: 'p', runCondition: { var: 'size', equals: 'large' } },
  ]);

  it('words the same needs for both faces', () => {
    const ask = workflow.steps[0] as Parameters<typeof stepFill>[1];
    expect(stepFill(workflow, ask, {}, 'durable')).toEqual({
      'output.summary': 'what you did for step "ask" (its validation criteria check this text)',
      'output.context.size': 'one of "small", "large" (case-insensitive)',
    });
    expect(stepFill(workflow, ask, {}, 'stateless')).toEqual({
      'context.size': 'one of "small", "large" (case-insensitive)',
    });
  });

  it('names optional variables only while they are unset, and what a refusal named', () => {
    expect(contextFill(workflow, 'mid', {}).map((f) => [f.path, f.required])).toEqual([['size', false]]);
    expect(contextFill(workflow, 'mid', { size: 'small' })).toEqual([]);
    expect(contextFill(workflow, 'mid', { size: 'small' }, ['size']).map((f) => f.required)).toEqual([true]);
  });

  it('shows a JSON Schema as a shape to copy', () => {
    expect(
      schemaShape({
        type: 'object',
        required: ['a'],
        properties: {
          a: { type: 'array', items: { enum: ['x', 'y'] } },
          b: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          c: { const: 1 },
        },
      }),
    ).toBe('{"a": ["x" | "y"], "b"?: string | null, "c"?: 1}');
  });
});
