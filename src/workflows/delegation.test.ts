import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import type { PromptStep } from '../model/workflow.js';
import { checkDefinition } from './check.js';
import { WorkflowRegistry } from './registry.js';

const engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });

type Json = Record<string, unknown>;

const definition = (id: string, steps: Json[]) => ({
  id,
  name: id,
  description: `The ${id} workflow`,
  version: '1.0.0',
  steps,
});
const plain = (id: string) => definition(id, [{ id: 'work', title: 'Work', prompt: 'Do the work.' }]);
const delegating = (id: string, delegate: Json) =>
  definition(id, [
    { id: 'list-files', title: 'List the files', prompt: 'List the files to review as files.' },
    { id: 'hand-off', title: 'Hand off', prompt: 'Hand the files off.', delegate },
  ]);
const parallelTo = (id: string, ...workflowIds: string[]) =>
  definition(id, [
    {
      id: 'double-check',
      type: 'parallel',
      title: 'Double check',
      parallelDelegations: workflowIds.map((workflowId) => ({
        workflowId,
        args: { deliverableName: 'x.md' },
      })),
    },
  ]);

let root: string;
let registry: WorkflowRegistry;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wl-delegation-'));
  const dir = join(root, 'workflows');
  mkdirSync(dir);
  const files: Json[] = [
    plain('review'),
    plain('wr.routine-design-review'),
    delegating('fan-out', { workflow: 'review', forEach: 'files', as: 'file' }),
    delegating('typo', { workflow: 'revew', count: 2 }),
    delegating('ping', { workflow: 'pong', count: 1 }),
    delegating('pong', { children: [{ name: 'back', workflow: 'ping' }] }),
    delegating('narcissus', { workflow: 'narcissus', count: 1 }),
    delegating('downstream', { workflow: 'ping', count: 1 }),
    parallelTo('wr.served-checks', 'wr.routine-design-review', 'wr.routine-design-review'),
    parallelTo('wr.missing-checks', 'wr.routine-design-review', 'wr.routine-load-check'),
  ];
  for (const file of files) writeFileSync(join(dir, `${file.id}.json`), JSON.stringify(file));
  registry = new WorkflowRegistry([{ kind: 'storage', dir }], { engine });
  await registry.ready();
});

afterAll(() => {
  registry.close();
  engine.unload();
  rmSync(root, { recursive: true, force: true });
});

const violationsOf = (id: string) => {
  const entry = registry.get(id);
  return entry?.status === 'broken' ? entry.violations : [];
};

describe('the registry judges delegations across its workflows', () => {
  it('serves a workflow whose children it serves', () => {
    expect(registry.get('fan-out')?.status).toBe('valid');
  });

  it('an unknown child workflow breaks the delegating one, with the nearest served id', () => {
    expect(registry.get('typo')?.status).toBe('broken');
    expect(violationsOf('typo')).toEqual([
      {
        path: '/steps/1/delegate/workflow',
        rule: 'unknownChildWorkflow',
        message:
          'step "hand-off" delegates to workflow "revew", which this server does not serve; did you mean "review"?',
        actual: 'revew',
      },
    ]);
  });

  it('a cycle breaks every workflow on it, and those that delegate to them', () => {
    expect(violationsOf('ping')).toEqual([
      expect.objectContaining({
        path: '/steps/1/delegate/workflow',
        rule: 'delegationCycle',
        actual: 'ping → pong → ping',
      }),
    ]);
    expect(violationsOf('pong')).toEqual([
      expect.objectContaining({
        path: '/steps/1/delegate/children/0/workflow',
        rule: 'delegationCycle',
        actual: 'pong → ping → pong',
      }),
    ]);
    expect(violationsOf('narcissus')).toEqual([
      expect.objectContaining({
        rule: 'delegationCycle',
        message: expect.stringContaining('delegates to this workflow itself (narcissus → narcissus)'),
      }),
    ]);
    expect(violationsOf('downstream')).toEqual([
      expect.objectContaining({
        rule: 'unknownChildWorkflow',
        message: expect.stringContaining('"ping", which is broken'),
      }),
    ]);
    expect(registry.list().broken.map((b) => b.id)).toEqual(
      expect.arrayContaining(['ping', 'pong', 'narcissus', 'downstream', 'typo']),
    );
  });

  it('a WorkRail parallel step whose workflows it serves becomes a delegating step; else it stays text', () => {
    const served = registry.get('wr.served-checks');
    expect(served?.status).toBe('valid');
    const step = (served?.status === 'valid' ? served.workflow.steps[0] : undefined) as PromptStep;
    expect(step.delegate?.children?.map((c) => [c.name, c.workflow])).toEqual([
      ['routine-design-review-1', 'wr.routine-design-review'],
      ['routine-design-review-2', 'wr.routine-design-review'],
    ]);
    expect(served).toHaveProperty('definitionHash');
    const missing = registry.get('wr.missing-checks');
    const text = (missing?.status === 'valid' ? missing.workflow.steps[0] : undefined) as PromptStep;
    expect(text.delegate).toBeUndefined();
    expect(text.parallelDelegations).toHaveLength(2);
  });
});

describe('validate judges one definition against the served workflows', () => {
  const yaml = (lines: string[]) => ({ text: `${lines.join('\n')}\n`, format: 'yaml' as const });
  const head = (id: string) => [`id: ${id}`, `name: ${id}`, 'description: d', 'version: 1.0.0', 'steps:'];
  const policy = () => ({ engine, workflows: registry });

  it('an unknown child workflow is an error at its line, with the nearest served id', async () => {
    const report = await checkDefinition(
      yaml([
        ...head('new-fan-out'),
        '  - id: hand-off',
        '    title: Hand off',
        '    prompt: Hand it off.',
        '    delegate:',
        '      count: 2',
        '      workflow: revew',
      ]),
      'strict',
      policy(),
    );
    expect(report.valid).toBe(false);
    expect(report.errors).toEqual([
      {
        path: '/steps/0/delegate/workflow',
        rule: 'unknownChildWorkflow',
        message:
          'step "hand-off" delegates to workflow "revew", which this server does not serve; did you mean "review"?',
        actual: 'revew',
        line: 11,
        column: 7,
      },
    ]);
    // Without the served workflows (a source's own check), it is not looked at.
    const alone = await checkDefinition(
      { data: delegating('x-flow', { workflow: 'revew', count: 1 }) },
      'strict',
      {
        engine,
      },
    );
    expect(alone.valid).toBe(true);
  });

  it('a child that is broken, and a workflow that delegates to itself, are errors', async () => {
    const broken = await checkDefinition(
      { data: delegating('y-flow', { workflow: 'typo', count: 1 }) },
      'strict',
      policy(),
    );
    expect(broken.errors.map((e) => [e.rule, e.message])).toEqual([
      [
        'unknownChildWorkflow',
        'step "hand-off" delegates to workflow "typo", which is broken (workflow_list lists it under broken), so no child can start it',
      ],
    ]);
    const self = await checkDefinition(
      { data: delegating('me-too', { workflow: 'me-too', count: 1 }) },
      'strict',
      policy(),
    );
    expect(self.errors).toEqual([
      expect.objectContaining({
        rule: 'delegationCycle',
        actual: 'me-too → me-too',
        path: '/steps/1/delegate/workflow',
      }),
    ]);
  });

  it('a new version that would close a cycle through served workflows is an error naming the cycle', async () => {
    // fan-out delegates to review; a review that delegates to fan-out closes review → fan-out → review.
    const report = await checkDefinition(
      { data: delegating('review', { children: [{ name: 'again', workflow: 'fan-out' }] }) },
      'authoring',
      policy(),
    );
    expect(report.errors).toEqual([
      expect.objectContaining({
        path: '/steps/1/delegate/children/0/workflow',
        rule: 'delegationCycle',
        actual: 'review → fan-out → review',
        message: expect.stringContaining('delegates to "fan-out", which leads back to this workflow'),
      }),
    ]);
  });

  it('a fan-out over a list nothing sets is warned about as a forEach loop over it is', async () => {
    const loop = definition('loop-flow', [
      { id: 'intro', title: 'Intro', prompt: 'Read the task.' },
      {
        id: 'each',
        type: 'loop',
        title: 'Each',
        loop: { type: 'forEach', items: 'pendingItems', maxIterations: 5 },
        body: [{ id: 'do-one', title: 'Do one', prompt: 'Do it.' }],
      },
    ]);
    const fan = definition('fan-flow', [
      { id: 'intro', title: 'Intro', prompt: 'Read the task.' },
      {
        id: 'each',
        title: 'Each',
        prompt: 'Hand them off.',
        delegate: { workflow: 'review', forEach: 'pendingItems' },
      },
    ]);
    const forLoop = await checkDefinition({ data: loop }, 'authoring', policy());
    const forFan = await checkDefinition({ data: fan }, 'authoring', policy());
    expect(forFan.errors).toEqual(forLoop.errors);
    expect(forLoop.warnings.map((w) => [w.rule, w.actual])).toEqual([
      ['undocumentedVariable', 'pendingItems'],
    ]);
    expect(forFan.warnings.map((w) => [w.path, w.rule, w.actual])).toEqual([
      ['/steps/1/delegate/forEach', 'undocumentedVariable', 'pendingItems'],
    ]);
    expect(forFan.warnings[0]?.message).toContain(
      'step "each" refuses to start its children (PRECONDITION_FAILED)',
    );
    // Mentioned, but only by a later step: the same rule as for the loop's list.
    const later = (w: Json) => ({
      ...w,
      steps: [...(w.steps as Json[]), { id: 'after', title: 'After', prompt: 'Set pendingItems.' }],
    });
    const lateLoop = await checkDefinition({ data: later(loop) }, 'authoring', policy());
    const lateFan = await checkDefinition({ data: later(fan) }, 'authoring', policy());
    expect(lateFan.warnings.map((w) => w.rule)).toEqual(lateLoop.warnings.map((w) => w.rule));
    expect(lateFan.warnings.map((w) => w.rule)).toEqual(['unsetVariable']);
  });

  it("checks the children's context templates like any other", async () => {
    const report = await checkDefinition(
      {
        data: delegating('templated', {
          workflow: 'review',
          count: 1,
          context: { a: '${{ inputs.nope }}', b: '${{ steps.hand-off.output }}', c: '${{ env.SECRET }}' },
        }),
      },
      'strict',
      policy(),
    );
    expect(report.errors.map((e) => [e.path, e.rule, e.message])).toEqual([
      ['/steps/1/delegate/context', 'templateReference', 'the workflow declares no input "nope"'],
      [
        '/steps/1/delegate/context',
        'templateReference',
        'step "hand-off" does not run before this point, so its output is not available',
      ],
      [
        '/steps/1/delegate/context',
        'templateReference',
        'environment variable SECRET is not in WORKFLOWLOOKUP_ALLOWED_ENV, so templates cannot read it',
      ],
    ]);
    const child = await checkDefinition(
      {
        data: delegating('templated', {
          workflow: 'review',
          children: [
            { name: 'one', context: { files: '${{ steps.list-files.output.files }}', bad: '${{ nope }}' } },
          ],
        }),
      },
      'strict',
      policy(),
    );
    expect(child.errors.map((e) => [e.path, e.rule])).toEqual([
      ['/steps/1/delegate/children/0/context', 'templateReference'],
    ]);
  });

  it('a WorkRail parallel step: served workflows draw no warning; missing ones are named', async () => {
    const served = await checkDefinition(
      { data: parallelTo('wr.new-checks', 'wr.routine-design-review') },
      'authoring',
      policy(),
    );
    expect(served.errors).toEqual([]);
    expect(served.warnings).toEqual([]);
    const missing = await checkDefinition(
      { data: parallelTo('wr.new-checks', 'wr.routine-design-review', 'wr.routine-load-check') },
      'authoring',
      policy(),
    );
    expect(missing.errors).toEqual([]);
    expect(missing.warnings).toContainEqual({
      path: '/steps/0/parallelDelegations',
      rule: 'unresolvedDelegation',
      message:
        'parallel step "double-check" does not run as child executions (workflow "wr.routine-load-check" is not served here): it stays text, and the agent hands its delegations off or does them itself',
      actual: 'wr.routine-load-check',
    });
    expect(missing.warnings.map((w) => w.rule)).toContain('workrailInert');
    // Delegating to itself through a parallel step closes a cycle, as WorkRail refuses it.
    const self = await checkDefinition(
      { data: parallelTo('wr.self-checks', 'wr.self-checks') },
      'strict',
      policy(),
    );
    expect(self.errors.map((e) => [e.path, e.rule])).toEqual([
      ['/steps/0/parallelDelegations/0/workflowId', 'delegationCycle'],
    ]);
  });
});
