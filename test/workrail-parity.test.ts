// WorkRail parity through the real protocol (in-process SDK client): the comparison rule, variant
// files, templateCall expansion, metaGuidance and personas sent once.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessClient } from './helpers/in-process.js';
import { callTool, type Sandbox, sandbox } from './helpers/server.js';

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
    // (A number for a variable compared with true is refused as the wrong type: literal-agent.test.ts.)
    [{ size: 'medium', risky: 'no' }, ['assess', 'listed', 'not-small', 'wrap-up']],
    [{}, ['assess', 'not-small', 'wrap-up']],
  ])('context %j takes %j in both faces', async (context, expected) => {
    expect(await durableWalk(context)).toEqual(expected);
    expect(await statelessWalk(context)).toEqual(expected);
  });
});
