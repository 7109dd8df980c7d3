// WorkRail parity through the real protocol (in-process SDK client): the comparison rule, variant
// files, templateCall expansion, metaGuidance and personas sent once.
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessClient } from './helpers/in-process.js';
import { callTool, FIXTURES, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
let client: Client;
let close: () => Promise<void>;
const call = (name: string, args: Json) => callTool(client, name, args);
const write = (name: string, workflow: Json) =>
  writeFileSync(join(sb.runtime, name), JSON.stringify(workflow, null, 2));
const submit = (answer: Json, summary: string, extra: Json = {}) =>
  call('workflow_next_step', { token: answer.new_token, output: { summary, ...extra } });

beforeAll(async () => {
  sb = sandbox();
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  cpSync(join(FIXTURES, 'parity'), sb.runtime, { recursive: true });
  write('compare-demo.json', {
    id: 'compare-demo',
    name: 'Comparison demo',
    description: 'Steps that run only for some values, to exercise the comparison rule',
    version: '1.0.0',
    steps: [
      { id: 'assess', title: 'Assess', prompt: 'Say how big the task is.' },
      { id: 'large-only', title: 'Large', prompt: 'Plan.', runCondition: { var: 'size', equals: 'Large' } },
      { id: 'ten-only', title: 'Ten', prompt: 'Count.', runCondition: { var: 'files', equals: 10 } },
      { id: 'flag-only', title: 'Flag', prompt: 'Flag.', runCondition: { var: 'risky', equals: true } },
      {
        id: 'listed',
        title: 'Listed',
        prompt: 'List.',
        runCondition: { var: 'size', in: ['MEDIUM', 'large'] },
      },
      {
        id: 'not-small',
        title: 'Not small',
        prompt: 'Check.',
        runCondition: { var: 'size', not_equals: 'small' },
      },
      { id: 'wrap-up', title: 'Wrap up', prompt: 'Done.' },
    ],
  });
  ({ client, close } = await inProcessClient(sb));
});

afterAll(async () => {
  await close();
  sb.cleanup();
});

/** The step ids a durable walk hands out when the first step reports `context`. */
async function durableWalk(context: Json): Promise<string[]> {
  let answer = await call('workflow_start', { workflow_id: 'compare-demo' });
  const seen: string[] = [];
  for (let first = true; answer.step_name !== undefined; first = false) {
    seen.push(answer.step_name);
    answer = await submit(answer, 'Done.', first ? { context } : {});
  }
  expect(answer.workflow_state).toBe('completed');
  return seen;
}

/** The same walk through the stateless face. */
async function statelessWalk(context: Json): Promise<string[]> {
  const seen: string[] = [];
  let completedSteps: string[] = [];
  let ctx: Json = context;
  for (;;) {
    const next = await call('workflow_next', { workflowId: 'compare-demo', completedSteps, context: ctx });
    if (next.isComplete) return seen;
    seen.push(next.step.id);
    completedSteps = [...next.completedSteps, next.step.id];
    ctx = next.context;
  }
}

describe("one comparison rule, WorkRail's", () => {
  it.each([
    [
      { size: 'large', files: '10', risky: 'true' },
      ['assess', 'large-only', 'ten-only', 'flag-only', 'listed', 'not-small', 'wrap-up'],
    ],
    [
      { size: ' LARGE ', files: 10.0, risky: 'yes' },
      ['assess', 'large-only', 'ten-only', 'flag-only', 'listed', 'not-small', 'wrap-up'],
    ],
    [{ size: 'Small', files: '9', risky: 'false' }, ['assess', 'wrap-up']],
    // (A number for a variable compared with true is refused as the wrong type: src/engine/context-needs.test.ts.)
    [{ size: 'medium', risky: 'no' }, ['assess', 'listed', 'not-small', 'wrap-up']],
    [{}, ['assess', 'not-small', 'wrap-up']],
  ])('context %j takes %j in both faces', async (context, expected) => {
    expect(await durableWalk(context)).toEqual(expected);
    expect(await statelessWalk(context)).toEqual(expected);
  });
});

describe('templateCall expands into the installed routine', () => {
  it("hands out the routine's steps with their gates, guidance and contract", async () => {
    const got = await call('workflow_get', { id: 'wr.shed-plan' });
    expect(got.steps.map((s: Json) => s.id)).toEqual([
      'sketch',
      'review-shed.step-weak-spots',
      'review-shed.step-verdict',
      'build',
    ]);
    let answer = await call('workflow_start', { workflow_id: 'wr.shed-plan', context: { size: 'Large' } });
    answer = await submit(answer, 'Plan drawn.');
    expect(answer.step_name).toBe('review-shed.step-weak-spots');
    // {arg} filled from templateCall.args; the routine's role and metaGuidance come along.
    expect(answer.agent_content).toContain('Step: Find the weak spots of the shed roof');
    expect(answer.agent_content).toContain('List where the shed roof could fail under load');
    expect(answer.agent_content).toContain('Role: You are a skeptical reviewer.');
    expect(answer.agent_content).toContain('Quote the part of the design each finding is about.');
    answer = await submit(answer, 'The roof sags in snow.');
    expect(answer.step_name).toBe('review-shed.step-verdict');
    expect(answer.agent_content).toContain('Write the verdict on the shed roof to shed-review.md.');
    expect(answer.agent_content).toContain('Keep the verdict to one paragraph.');
    expect(answer.guidance.requiresConfirmation).toBe(true);
    expect(answer.agent_content).toContain('Artifact wr.review_verdict');
    // The routine step's contract is enforced.
    const refused = await submit(answer, 'Looks fine.');
    expect(refused).toMatchObject({ success: false, step_name: 'review-shed.step-verdict' });
    const verdict = {
      kind: 'wr.review_verdict',
      verdict: 'minor',
      confidence: 'medium',
      findings: [],
      summary: 'Add a brace',
    };
    const build = await submit(refused, 'Verdict written.', { artifacts: [verdict] });
    expect(build.step_name).toBe('build');
    // The caller's runCondition gates every expanded step.
    const small = await call('workflow_start', { workflow_id: 'wr.shed-plan', context: { size: 'small' } });
    expect((await submit(small, 'Plan drawn.')).step_name).toBe('build');
    // The stateless face walks the same steps.
    const next = await call('workflow_next', {
      workflowId: 'wr.shed-plan',
      completedSteps: ['sketch'],
      context: { size: 'large' },
    });
    expect(next.step.id).toBe('review-shed.step-weak-spots');
  });

  it('a missing argument makes the workflow broken, naming it', async () => {
    write('shed-missing-arg.json', {
      id: 'wr.shed-missing-arg',
      name: 'Shed without arguments',
      description: 'Calls the routine without the arguments it needs',
      version: '1.0.0',
      steps: [
        { id: 'review', title: 'Review', templateCall: { templateId: 'wr.templates.routine.design-review' } },
      ],
    });
    const { client: fresh, close: closeFresh } = await inProcessClient(sb);
    try {
      const listed = await callTool(fresh, 'workflow_list', {});
      const broken = listed.broken.find((b: Json) => b.id === 'wr.shed-missing-arg');
      expect(broken.violations[0]).toMatchObject({ rule: 'templateArg', actual: 'subject' });
      const got = await callTool(fresh, 'workflow_get', { id: 'wr.shed-missing-arg' });
      expect(got.error.code).toBe(-32002);
    } finally {
      await closeFresh();
    }
  });
});

describe('variant files resolve as in WorkRail', () => {
  it('x.v2.json wins over x.agentic.json and x.json; x.agentic.json over x.json', async () => {
    const listed = await call('workflow_list', {});
    expect(listed.workflows.filter((w: Json) => w.id === 'wr.porch')).toEqual([
      expect.objectContaining({ name: 'Porch (v2)', version: '2.0.0' }),
    ]);
    expect(listed.broken.filter((b: Json) => ['wr.porch', 'wr.gate'].includes(b.id))).toEqual([]);
    expect((await call('workflow_start', { workflow_id: 'wr.porch' })).step_name).toBe('v2-step');
    expect((await call('workflow_get', { id: 'wr.gate' })).steps[0].id).toBe('agentic-gate');
  });
});

describe('metaGuidance and personas are sent once', () => {
  const PERSONA_LINE = /^Persona: (\w+), as given in full earlier in this execution\./;

  it('in full when they first appear, change, or after a resume; otherwise a one-line reference', async () => {
    const seen: Json[] = [];
    let answer = await call('workflow_start', {
      workflow_id: 'house-call',
      context: { trades: ['paint', 'tile'] },
    });
    while (answer.step_name !== undefined) {
      seen.push(answer);
      if (answer.step_name === 'tidy') {
        // After a resume the agent gets everything in full again; the next step refers back to it.
        const resumed = await call('workflow_resume', { execution_id: answer.execution_id });
        expect(resumed.agent_content).toContain('# Implementer');
        expect(resumed.agent_content).toContain('Wipe your boots at the door.');
        expect(resumed.agent_name).toBe('implementer');
      }
      answer = await submit(answer, 'Done.');
    }
    const by = Object.fromEntries(seen.map((a) => [a.step_name, a.agent_content as string]));
    expect(by.survey).toContain('# Architect');
    expect(by.survey).toContain('Keep in mind:\n- Wipe your boots at the door.');
    expect(by.measure).toMatch(PERSONA_LINE);
    expect(by.measure).not.toContain('# Architect');
    expect(by.measure).toContain(
      "Keep in mind the workflow's standing guidance, given in full with its first step.",
    );
    expect(by.measure).not.toContain('Wipe your boots');
    expect(by.fix).toContain('# Implementer');
    expect(by.tidy).toMatch(PERSONA_LINE);
    expect(by.check).toContain('# Reviewer');
    // agent_name keeps its meaning on every step.
    expect(seen.map((a) => a.agent_name)).toEqual([
      'architect',
      'architect',
      'implementer',
      'implementer',
      'reviewer',
      'default',
    ]);
    // A parallel step lists only the delegations whose condition holds (contains reads a list).
    expect(by.crew).toContain('wr.routine-painter');
    expect(by.crew).toContain('room: hall');
    expect(by.crew).not.toContain('wr.routine-plumber');
  });

  it('a replayed submission and the current_step resource say the same as when the step was entered', async () => {
    const first = await call('workflow_start', { workflow_id: 'house-call' });
    const output = { summary: 'Walked through.' };
    const measure = await call('workflow_next_step', { token: first.new_token, output });
    const again = await call('workflow_next_step', { token: first.new_token, output });
    expect(again.agent_content).toBe(measure.agent_content);
    expect(measure.agent_content).toMatch(PERSONA_LINE);
    const resource = await client.readResource({
      uri: `workflowlookup://workflow/current_step/${first.execution_id}`,
    });
    const current = JSON.parse((resource.contents[0] as { text: string }).text);
    expect(current.agent_content).toContain('# Architect');
    expect(current.agent_content).toContain('Wipe your boots at the door.');
    // With no delegation active, the parallel step says so in one line.
    let answer = measure;
    while (answer.step_name !== 'crew') answer = await submit(answer, 'Done.');
    expect(answer.agent_content).toContain('No part of this step applies to this context');
  });

  it('the stateless face gives the metaGuidance with the first step only', async () => {
    const first = await call('workflow_next', { workflowId: 'house-call', completedSteps: [] });
    expect(first.guidance.prompt).toContain('Wipe your boots at the door.');
    const second = await call('workflow_next', { workflowId: 'house-call', completedSteps: ['survey'] });
    expect(second.guidance.prompt).not.toContain('Wipe your boots');
    expect(second.guidance.prompt).toContain("the workflow's standing guidance");
  });
});
