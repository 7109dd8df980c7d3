import { spawnSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  callTool,
  connectClient,
  FIXTURES,
  ROOT,
  type Sandbox,
  sandbox,
  tokenOf,
} from './helpers/server.js';

/**
 * WorkRail workflow files (fixtures written for this suite, one per feature) walked from workflow_start
 * to completion with canned outputs, through the real protocol.
 */
type Json = Record<string, any>;

let sb: Sandbox;
let client: Client;
let close: () => Promise<void>;
const call = (name: string, args: Json) => callTool(client, name, args);
const artifacts = (...items: Json[]) =>
  `Done.\n\n\`\`\`json\n${JSON.stringify({ artifacts: items })}\n\`\`\``;
const loopControl = (decision: 'continue' | 'stop', loopId?: string) =>
  artifacts({ kind: 'wr.loop_control', decision, ...(loopId ? { loopId } : {}) });

async function submit(answer: Json, summary: string, context?: Json): Promise<Json> {
  return call('workflow_next_step', {
    token: tokenOf(answer),
    output: { summary, ...(context ? { context } : {}) },
  });
}

beforeAll(async () => {
  sb = sandbox();
  cpSync(join(FIXTURES, 'workrail'), sb.runtime, { recursive: true });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  ({ client, close } = await connectClient(sb));
});

afterAll(async () => {
  await close();
  sb.cleanup();
});

describe('WorkRail workflows', () => {
  it('validate with zero errors; fields without effect here are warnings', () => {
    const res = spawnSync(
      process.execPath,
      [join(ROOT, 'scripts', 'workrail-check.mjs'), join(FIXTURES, 'workrail')],
      {
        encoding: 'utf8',
      },
    );
    expect(res.status).toBe(0);
    expect(res.stdout).toContain('6 of 6 files validate with zero errors.');
    expect(res.stdout).toContain('workrailInert:metricsProfile');
  });

  it('promptBlocks render in a fixed order with functions, refs and references; every field is kept', async () => {
    const started = await call('workflow_start', {
      workflow_id: 'wr.prompt-blocks-demo',
      context: { bedSize: 'large' },
    });
    const text: string = started.agent_content;
    const order = ['### Goal', '### Constraints', '### Procedure', '### Output required', '### Verify'].map(
      (h) => text.indexOf(h),
    );
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(text).toContain('1. Measure the bed.');
    expect(text).toContain('- plants: the chosen plants, one per line');
    expect(text).toContain('Keep the durable record of this step');
    expect(text).toContain('sunCheck(season?: string): Count the hours');
    expect(text).toContain('spacingRule(): Leave a hand');
    expect(text).toContain('Role: You are a patient gardener');
    expect(text).toContain('Soil notes: ./docs/soil.md');
    expect(started.guidance).toMatchObject({
      modelHint: 'model-with-strong-reasoning',
      requiresConfirmation: true,
    });
    const calendar = await submit(started, 'Basil, thyme and chives.');
    expect(calendar.step_name).toBe('calendar');
    const done = await submit(calendar, 'Plant in May.');
    expect(done.workflow_state).toBe('completed');

    const got = await call('workflow_get', { id: 'wr.prompt-blocks-demo' });
    for (const field of [
      'about',
      'examples',
      'metricsProfile',
      'features',
      'references',
      'functionDefinitions',
    ])
      expect(got).toHaveProperty(field);
    expect(got.steps[0]).toHaveProperty('parallelDelegations');
    const checked = await call('workflow_validate_manifest', { manifest: got });
    expect(checked.valid).toBe(true);
    expect(checked.warnings.map((w: Json) => w.actual)).toEqual(
      expect.arrayContaining([
        'metricsProfile',
        'features',
        'hasValidation',
        'parallelDelegations (no sub-agents are spawned)',
      ]),
    );
  });

  it('promptFragments are appended when their condition holds', async () => {
    const friend = await call('workflow_start', {
      workflow_id: 'legacy_fragments-demo',
      context: { recipientKind: 'friend', tone: 'Playful' },
    });
    expect(friend.agent_content).toContain('Use first names and a warm closing.');
    expect(friend.agent_content).not.toContain('Keep it formal');
    expect(friend.agent_content).toContain('Stay under eighty words.');
    const joke = await submit(friend, 'Dear Sam, thanks!');
    expect(joke.step_name).toBe('add-joke');
    expect((await submit(joke, 'Added a pun.')).workflow_state).toBe('completed');

    const colleague = await call('workflow_start', {
      workflow_id: 'legacy_fragments-demo',
      context: { recipientKind: 'colleague', tone: 'dry' },
    });
    expect(colleague.agent_content).toContain('Keep it formal and mention the project.');
    expect(colleague.agent_content).not.toContain('warm closing');
    expect((await submit(colleague, 'Dear Ms. Lee, thank you.')).workflow_state).toBe('completed');
  });

  it('an artifact-controlled loop runs until the agent reports stop', async () => {
    const started = await call('workflow_start', { workflow_id: 'wr.artifact-loop' });
    expect(started.agent_content).toContain('wr.loop_control');
    const missing = await submit(started, 'It is a mess.');
    expect(missing).toMatchObject({ success: false, step_name: 'look-first' });
    expect(missing.validation.issues[0]).toContain('no loop-control artifact');
    let answer = await submit(missing, loopControl('continue', 'tidy-rounds'));
    const seen: string[] = [];
    for (const decision of ['continue', 'continue', 'stop'] as const) {
      expect(answer.step_name).toBe('tidy-pass');
      expect(answer.agent_content).toContain('Role: You are a methodical organizer.');
      expect(answer.agent_content).toContain('sortPile(): Sort one pile');
      seen.push(answer.step_name);
      answer = await submit(answer, 'Cleared a corner.');
      expect(answer.step_name).toBe('tidy-decide');
      answer = await submit(answer, loopControl(decision));
    }
    expect(seen).toHaveLength(3);
    expect(answer.step_name).toBe('wrap-up');
    expect((await submit(answer, 'Three passes.')).workflow_state).toBe('completed');

    const skipped = await call('workflow_start', { workflow_id: 'wr.artifact-loop' });
    const after = await submit(skipped, loopControl('stop', 'tidy-rounds'));
    expect(after.step_name).toBe('wrap-up');

    // The stateless step check judges an output as a durable submission does.
    const check = (output: string) =>
      call('workflow_validate', { workflowId: 'wr.artifact-loop', stepId: 'tidy-decide', output });
    const refused = await check('All tidy now.');
    expect(refused.valid).toBe(false);
    expect(refused.issues[0]).toContain('no loop-control artifact');
    expect((await check(loopControl('stop'))).valid).toBe(true);
  });

  it('handoff contracts are enforced as in WorkRail, and their shape is in the step text', async () => {
    const started = await call('workflow_start', { workflow_id: 'wr.handoff-demo' });
    expect(started.agent_content).toContain('Artifact wr.coding_handoff: version: 1; keyDecisions: string[]');
    const missing = await submit(started, 'Built it.');
    expect(missing).toMatchObject({ success: false, step_name: 'build' });
    expect(missing.validation.issues).toEqual([
      'the output carries no "wr.coding_handoff" artifact (wr.contracts.coding_handoff)',
    ]);
    expect(missing.validation.suggestions[0]).toContain('"kind":"wr.coding_handoff"');
    const handoff = { kind: 'wr.coding_handoff', version: 1, keyDecisions: ['Cedar'], knownLimitations: [] };
    const send = (answer: Json, artifacts: Json[]) =>
      call('workflow_next_step', { token: tokenOf(answer), output: { summary: 'Built it.', artifacts } });
    const incomplete = await send(missing, [handoff]);
    expect(incomplete.success).toBe(false);
    expect(incomplete.validation.issues).toEqual(
      expect.arrayContaining([expect.stringMatching(/^wr\.coding_handoff\.testsAdded: /)]),
    );
    const wrongKind = await send(incomplete, [{ kind: 'wr.review_verdict', verdict: 'clean' }]);
    expect(wrongKind.validation.issues[0]).toContain('kind "wr.review_verdict"');
    const inspect = await send(wrongKind, [{ ...handoff, testsAdded: [], filesChanged: ['roof.txt'] }]);
    expect(inspect.step_name).toBe('inspect');
    expect(inspect.agent_content).toContain('Artifact wr.review_verdict (optional)');
    // Optional: no artifact passes; a malformed one does not.
    const bad = await send(inspect, [{ kind: 'wr.review_verdict', verdict: 'fine' }]);
    expect(bad.success).toBe(false);
    const hang = await submit(bad, 'Looks sturdy.');
    expect(hang.step_name).toBe('hang');
    const history = await client.readResource({
      uri: `workflowlookup://workflow/workflow_artifacts/${started.execution_id}/build`,
    });
    expect(JSON.parse((history.contents[0] as { text: string }).text)[0]).toMatchObject({
      name: 'wr.coding_handoff',
      artifact_type: 'data',
      content_type: 'application/json',
    });
    // The stateless step check reads the artifact from the output text.
    const check = await call('workflow_validate', {
      workflowId: 'wr.handoff-demo',
      stepId: 'build',
      output: artifacts({ ...handoff, testsAdded: [], filesChanged: [] }),
    });
    expect(check).toEqual({ valid: true, issues: [], suggestions: [] });
  });

  it('assessments are checked on submit and a low level requires a follow-up on the same step', async () => {
    const started = await call('workflow_start', { workflow_id: 'wr.assessment-gate' });
    expect(started.agent_content).toContain('Assessment "recipe-clarity"');
    const report = (clarity: string, safety: string) =>
      artifacts(
        {
          kind: 'wr.assessment',
          assessmentId: 'recipe-clarity',
          dimensions: { steps_ordered: 'high', amounts_given: clarity },
        },
        { kind: 'wr.assessment', assessmentId: 'recipe-safety', dimensions: { allergens_named: safety } },
      );
    const unreported = await submit(started, 'Here is the recipe.');
    expect(unreported.success).toBe(false);
    expect(unreported.validation.issues).toContain('the output does not report assessment "recipe-clarity"');
    const badLevel = await submit(unreported, report('medium', 'high'));
    expect(badLevel.validation.issues[0]).toContain('"amounts_given" rated one of "low", "high"');
    const low = await submit(badLevel, report('low', 'high'));
    expect(low).toMatchObject({ success: false, step_name: 'write-recipe' });
    expect(low.validation.issues).toEqual([
      'Follow-up required: Put the steps in order and give every amount.',
    ]);
    const next = await submit(low, report('high', 'high'));
    expect(next.step_name).toBe('serve');
    expect((await submit(next, 'Maple syrup.')).workflow_state).toBe('completed');
  });

  it('templateCall expands a built-in routine template; an unknown template is a named violation', async () => {
    const started = await call('workflow_start', { workflow_id: 'wr.routine-call' });
    const review = await submit(started, 'A tall, shallow shelf.');
    expect(review.step_name).toBe('review-sketch');
    expect(review.agent_content).toContain('Run the design-review routine');
    expect(review.agent_content).toContain('wr.routine-design-review');
    expect(review.agent_content).toContain('shelf-review.md');
    // A parallel step's text is its delegations, each with its workflow, model tier and arguments.
    const both = await submit(review, 'No findings.');
    expect(both.step_name).toBe('double-check');
    expect(both.agent_content).toContain(
      '"wr.routine-load-check" (model tier: mid), with deliverableName: load.md',
    );
    expect(both.agent_content).toContain('"wr.routine-style-check" (model tier: lightweight)');
    expect((await submit(both, 'Holds 40 kg; plain oak finish.')).workflow_state).toBe('completed');

    const got = await call('workflow_get', { id: 'wr.routine-call' });
    got.steps[1].templateCall.templateId = 'wr.templates.routine.nope';
    const checked = await call('workflow_validate_manifest', { manifest: got });
    expect(checked.valid).toBe(false);
    expect(checked.violations[0]).toMatchObject({
      rule: 'unknownTemplate',
      path: '/steps/1/templateCall/templateId',
    });
    expect(checked.violations[0].message).toContain('wr.templates.routine.nope');
    got.steps[1].prompt = 'Also a prompt.';
    const twoSources = await call('workflow_validate_manifest', { manifest: got });
    expect(twoSources.violations).toContainEqual(
      expect.objectContaining({ rule: 'promptSource', path: '/steps/1' }),
    );
    got.steps[2].parallelDelegations = [];
    const empty = await call('workflow_validate_manifest', { manifest: got });
    expect(empty.violations).toContainEqual(
      expect.objectContaining({ rule: 'parallelStep', path: '/steps/2/parallelDelegations' }),
    );
  });

  it('takes namespaced and legacy ids everywhere and keeps file names inside their directory', async () => {
    const manifest = {
      id: 'wr.saved_one',
      name: 'Saved',
      description: 'A namespaced id saved at run time',
      version: '1.0.0',
      steps: [{ id: 'only_step', title: 'Only', prompt: 'Do it.' }],
    };
    const saved = await call('workflow_save', { content: JSON.stringify(manifest) });
    expect(saved.workflow_id).toBe('wr.saved_one');
    expect(existsSync(join(sb.runtime, 'wr.saved_one.json'))).toBe(true);
    expect((await call('workflow_get', { id: 'wr.saved_one' })).id).toBe('wr.saved_one');
    for (const id of ['../escape', 'a/b', '.hidden', 'wr..x', 'wr.', '.wr.x']) {
      const res = await call('workflow_get', { id });
      expect(res.error?.code).toBe(-32602);
      const save = await call('workflow_save', { content: JSON.stringify({ ...manifest, id }) });
      expect(save.error).toBeDefined();
      expect(save.path).toBeUndefined();
    }
    const cli = spawnSync(process.execPath, [CLI, 'validate', join(sb.runtime, 'wr.saved_one.json')], {
      encoding: 'utf8',
      env: sb.env,
    });
    expect(cli.status).toBe(0);
  });

  it('a parallel step runs as child executions once every routine it names is served', async () => {
    // Not served: the step stays text (the walk above), and workflow_get shows its delegations.
    const before = await call('workflow_get', { id: 'wr.routine-call' });
    expect(before.steps[2]).toMatchObject({ type: 'parallel', id: 'double-check' });
    expect(before.steps[2].delegate).toBeUndefined();
    const routine = (id: string) => ({
      id,
      name: id,
      description: `The ${id} routine, written for this test`,
      version: '1.0.0',
      steps: [{ id: 'check', title: 'Check', prompt: 'Check it and write {deliverableName}.' }],
    });
    for (const id of ['wr.routine-load-check', 'wr.routine-style-check'])
      expect((await call('workflow_save', { content: JSON.stringify(routine(id)) })).workflow_id).toBe(id);
    const after = await call('workflow_get', { id: 'wr.routine-call' });
    const step = after.steps[2];
    expect(step.id).toBe('double-check');
    expect(step.type).toBeUndefined();
    expect(step.parallelDelegations).toBeUndefined();
    expect(step.verification).toEqual({ cognitive: true });
    expect(step.delegate).toEqual({
      join: 'all',
      children: [
        {
          name: 'routine-load-check-1',
          workflow: 'wr.routine-load-check',
          context: { deliverableName: 'load.md' },
          modelTier: 'mid',
        },
        { name: 'routine-style-check-2', workflow: 'wr.routine-style-check', modelTier: 'lightweight' },
      ],
    });
    expect(step.prompt).toContain('routine-load-check-1 (workflow "wr.routine-load-check")');
    for (const id of ['wr.routine-load-check', 'wr.routine-style-check'])
      await call('workflow_delete', { workflow_id: id, confirm: true });
  });
});
