// What `fill` names and what happens when an agent fills it wrong, through the real protocol (an SDK
// client on the composition root, in-process): bad values and missing variables are refused with a fresh
// token and nothing advances; a loop whose list is missing refuses instead of skipping; a bad start
// context is refused with the call that fixes it; fill survives a refusal; authors see the same analysis.
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepFill } from '../src/engine/fill.js';
import { inProcessClient } from './helpers/in-process.js';
import { callTool, FIXTURES, ROOT, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
let client: Client;
let close: () => Promise<void>;
const call = (name: string, args: Json) => callTool(client, name, args);
const submit = (answer: Json, output: Json) => call('workflow_next_step', { token: tokenOf(answer), output });

beforeAll(async () => {
  sb = sandbox();
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  copyFileSync(join(FIXTURES, 'valid', 'loops-demo.yaml'), join(sb.runtime, 'loops-demo.yaml'));
  copyFileSync(join(FIXTURES, 'workrail', 'artifact-loop.json'), join(sb.runtime, 'artifact-loop.json'));
  ({ client, close } = await inProcessClient(sb));
});

afterAll(async () => {
  await close();
  sb.cleanup();
});

const ASSESSED = 'Scope: large. Expertise: novice. Complexity: 0.8.';

describe('fill names what later conditions read', () => {
  it('names the variables with their values and the comparison rule, before and after a refusal', async () => {
    const started = await call('workflow_start', { workflow_id: 'conditional-workflow-example' });
    const fill = started.next[0].fill;
    expect(fill).toEqual({
      'output.summary': expect.stringContaining('assess-task'),
      'output.context.taskScope': 'one of "small", "medium", "large" (case-insensitive)',
      'output.context.userExpertise': 'one of "novice", "intermediate", "expert" (case-insensitive)',
      'output.context.complexity': 'a number (compared: >= 0.5, >= 0.7)',
    });
    // A summary the criteria refuse: the retry names the same variables (they were lost before).
    const refused = await submit(started, { summary: 'Not sure yet.' });
    expect(refused.success).toBe(false);
    expect(refused.next[0].fill).toEqual(fill);
  });

  it('refuses a value outside the listed values or of the wrong type: fresh token, nothing advances', async () => {
    const started = await call('workflow_start', { workflow_id: 'conditional-workflow-example' });
    const outside = await submit(started, {
      summary: ASSESSED,
      context: { taskScope: 'huge', userExpertise: 'novice', complexity: 0.8 },
    });
    expect(outside).toMatchObject({ success: false, step_name: 'assess-task', workflow_state: 'running' });
    expect(outside.validation.issues).toEqual([
      'output.context.taskScope must be one of "small", "medium", "large" (case-insensitive); got string "huge"',
    ]);
    expect(tokenOf(outside)).not.toBe(tokenOf(started));
    expect(outside.next[0].fill['output.context.taskScope']).toContain('one of "small", "medium", "large"');
    // Numeric comparisons need a number: "0.8" would never be >= 0.7.
    const text = await submit(outside, {
      summary: ASSESSED,
      context: { taskScope: 'large', userExpertise: 'novice', complexity: '0.8' },
    });
    expect(text.validation.issues).toEqual([
      'output.context.complexity must be a number (compared: >= 0.5, >= 0.7); got string "0.8"',
    ]);
    // The old token is spent; nothing advanced.
    const stale = await submit(started, { summary: ASSESSED });
    expect(stale.error.data.error_code).toBe('EXECUTION_STATE_CONFLICT');
    const resumed = await call('workflow_resume', { execution_id: started.execution_id });
    expect(resumed.current_step).toBe('assess-task');
    const ok = await submit(text, {
      summary: ASSESSED,
      context: { taskScope: 'LARGE', userExpertise: 'novice', complexity: 0.8 },
    });
    expect(ok).toMatchObject({ success: true, step_name: 'architecture-review' });
  });

  it('a variable left out is unset, as in WorkRail: the conditions that read it take their unset branch', async () => {
    const started = await call('workflow_start', { workflow_id: 'conditional-workflow-example' });
    const partial = await submit(started, { summary: ASSESSED, context: { taskScope: 'small' } });
    // expert-fast-track needs userExpertise, guided-walkthrough and risk-analysis need it or complexity.
    expect(partial).toMatchObject({ success: true, step_name: 'implement' });
  });

  it('refuses a bad start context with the call that fixes it; nothing is created', async () => {
    const before = await call('workflow_executions', {
      workflow_id: 'conditional-workflow-example',
      states: ['running', 'completed', 'failed', 'paused', 'abandoned', 'diverged'],
    });
    const res = await call('workflow_start', {
      workflow_id: 'conditional-workflow-example',
      context: { taskScope: 'huge', userExpertise: 'novice' },
    });
    expect(res.error).toMatchObject({
      code: -32602,
      data: {
        error_code: 'PRECONDITION_FAILED',
        variable: 'taskScope',
        next: [
          {
            tool: 'workflow_start',
            arguments: { workflow_id: 'conditional-workflow-example', context: { userExpertise: 'novice' } },
            fill: { 'context.taskScope': 'one of "small", "medium", "large" (case-insensitive)' },
          },
        ],
      },
    });
    const after = await call('workflow_executions', {
      workflow_id: 'conditional-workflow-example',
      states: ['running', 'completed', 'failed', 'paused', 'abandoned', 'diverged'],
    });
    expect(after.executions.length).toBe(before.executions.length);
  });

  it('a forEach list must be an array, and the output that would enter its loop without one is refused', async () => {
    const started = await call('workflow_start', { workflow_id: 'mr-review-workflow' });
    expect(started.next[0].fill['output.context.changedFiles']).toBe(
      'an array (loop "Review each changed file" runs once per item)',
    );
    const brief =
      'Intent: fix the login bug so that sessions survive restarts. Risk areas: token refresh and expiry handling. CI status: green on every job.';
    const notArray = await submit(started, { summary: brief, context: { changedFiles: 'src/a.ts' } });
    expect(notArray.validation.issues).toEqual([
      'output.context.changedFiles must be an array (loop "Review each changed file" runs once per item); got string "src/a.ts"',
    ]);
    const none = await submit(notArray, { summary: brief });
    expect(none.validation.issues).toEqual([
      "PRECONDITION_FAILED: forEach loop 'review-each-file' requires an array in context['changedFiles']; it is not set",
    ]);
    const ok = await submit(none, { summary: brief, context: { changedFiles: ['src/a.ts'] } });
    expect(ok).toMatchObject({ success: true, step_name: 'review-file', loop: { total: 1 } });
  });

  it('a loop whose list nobody asked for refuses to start (PRECONDITION_FAILED), then goes on once given', async () => {
    // loops-demo: no step asks for review.files, so fill offers it (optional); reaching the loop without it
    // refuses the output that would enter it, with a fresh token and fill naming the list.
    let answer = await call('workflow_start', { workflow_id: 'loops-demo' });
    expect(answer.step_name).toBe('intro');
    answer = await submit(answer, { summary: 'Started.' });
    expect(answer.step_name).toBe('fix');
    answer = await submit(answer, { summary: 'Fixed.' });
    expect(answer.step_name).toBe('run-tests');
    expect(answer.next[0].fill['output.context.testsPassing']).toMatch(
      /^optional: true or false; loop "Fix until green" repeats until testsPassing == true/,
    );
    const refused = await submit(answer, { summary: 'All green.', context: { testsPassing: true } });
    expect(refused).toMatchObject({ success: false, step_name: 'run-tests' });
    expect(refused.validation.issues).toEqual([
      "PRECONDITION_FAILED: forEach loop 'files-loop' requires an array in context['review.files']; it is not set",
    ]);
    expect(refused.next[0].fill['output.context.review.files']).toContain('an array');
    const ok = await submit(refused, {
      summary: 'All green.',
      context: { testsPassing: true, review: { files: ['a.ts'] } },
    });
    expect(ok).toMatchObject({ success: true, step_name: 'review-file', loop: { loopId: 'files-loop' } });
  });

  it('names loop decisions and raw-JSON summaries with their shape', async () => {
    const loop = await call('workflow_start', { workflow_id: 'wr.artifact-loop' });
    expect(loop.next[0].fill['output.artifacts.0']).toBe(
      'required: {"kind": "wr.loop_control", "decision": "continue" | "stop"} ("stop" leaves loop tidy-loop, "Tidy in rounds")',
    );
    const stateless = await call('workflow_next', { workflowId: 'wr.artifact-loop', completedSteps: [] });
    expect(stateless.next[0]).toEqual({
      tool: 'workflow_next',
      arguments: { workflowId: 'wr.artifact-loop', completedSteps: ['look-first'], context: {} },
      fill: {
        'context._loopControl.tidy-loop':
          'required: "continue" or "stop" ("stop" leaves loop tidy-loop, "Tidy in rounds")',
      },
    });
    // The artifact as fill shows it, in output.artifacts: "stop" skips the loop.
    const stopped = await submit(loop, {
      summary: 'Already tidy.',
      artifacts: [{ kind: 'wr.loop_control', decision: 'stop' }],
    });
    expect(stopped.step_name).toBe('wrap-up');

    const review = await call('workflow_next', {
      workflowId: 'mr-review-workflow',
      completedSteps: ['gather-context', 'review-each-file', 'cross-cutting-check'],
      context: { changedFiles: [] },
    });
    expect(review.step.id).toBe('summarize-findings');
    const durable = await call('workflow_start', { workflow_id: 'mr-review-workflow' });
    expect(durable.step_name).toBe('gather-context');
    // The durable face words the same step's summary as raw JSON of the schema's shape.
    const workflow = JSON.parse(readFileSync(join(ROOT, 'workflows', 'mr-review-workflow.json'), 'utf8'));
    const step = workflow.steps.find((s: Json) => s.id === 'summarize-findings');
    expect(stepFill(workflow, step, {}, 'durable')['output.summary']).toBe(
      'raw JSON only (no Markdown fences, no other text), shaped {"summary": string, "findings": [{"file": string, "line"?: integer, "severity": "critical" | "major" | "minor" | "nit", "title": string, "detail": string, "suggestion"?: string}]}',
    );
  });
});

describe('authors see the same analysis', () => {
  it('workflow_get source and diagram views list the context needs; the diagram marks what steps set', async () => {
    const diagram = await call('workflow_get', { id: 'conditional-workflow-example', view: 'diagram' });
    expect(diagram.context).toContainEqual({
      variable: 'taskScope',
      expects: 'one of "small", "medium", "large" (case-insensitive)',
      set_by: ['assess-task'],
      asked: true,
      read_by: [
        'architecture-review (runCondition)',
        'expert-fast-track (runCondition)',
        'test-plan (runCondition)',
        'implement (criteria)',
      ],
    });
    // `*` marks a required variable (as it is: inside the quoted label it is no syntax).
    expect(diagram.mermaid).toContain('sets: taskScope*, userExpertise*, complexity*');
    const source = await call('workflow_get', { id: 'mr-review-workflow', view: 'source' });
    expect(source.context).toEqual([
      {
        variable: 'changedFiles',
        expects: 'an array (loop "Review each changed file" runs once per item)',
        set_by: ['gather-context'],
        asked: true,
        read_by: ['review-each-file (items)'],
      },
    ]);
  });

  it('validate warns where a condition reads a variable no step, input or default sets, and says what unset means', async () => {
    const manifest = {
      id: 'unset-demo',
      name: 'Unset demo',
      description: 'Reads variables nobody sets',
      version: '1.0.0',
      metaGuidance: ['mode is "fast" or "slow".'],
      steps: [
        { id: 'first', title: 'First', prompt: 'Start.', runCondition: { var: 'early', equals: true } },
        { id: 'second', title: 'Second', prompt: 'Go.', runCondition: { var: 'mode', equals: 'fast' } },
        {
          id: 'each',
          type: 'loop',
          title: 'Each',
          loop: { type: 'forEach', items: 'things', maxIterations: 3 },
          body: [{ id: 'one', title: 'One', prompt: 'Do one.' }],
        },
        { id: 'last', title: 'Last', prompt: 'Use {{inputs.ghost}}.', runCondition: { var: 'inputs.ghost' } },
      ],
    };
    const res = await call('workflow_validate_manifest', { manifest });
    expect(res.valid).toBe(true);
    // Saved, its start call offers what only the start context sets in time.
    const saved = await call('workflow_save', { content: JSON.stringify(manifest) });
    expect(saved.next[0]).toEqual({
      tool: 'workflow_start',
      arguments: { workflow_id: 'unset-demo' },
      fill: { 'context.early': 'optional: true or false (read before the first step)' },
    });
    expect(res.warnings.map((w: Json) => [w.path, w.rule, w.actual])).toEqual([
      ['/steps/0/runCondition', 'undocumentedVariable', 'early'],
      ['/steps/1/runCondition', 'unsetVariable', 'mode'],
      ['/steps/2/loop/items', 'undocumentedVariable', 'things'],
      ['/steps/3/runCondition', 'unsetVariable', 'inputs.ghost'],
    ]);
    const [early, mode, things, ghost] = res.warnings.map((w: Json) => w.message);
    expect(early).toContain('Unset, its equals, in, text and numeric tests are false and not_equals is true');
    expect(mode).toContain('no step before the read asks for');
    expect(mode).toContain('fill offers it (optional) on step "first"');
    expect(things).toContain('loop "each" refuses to start (PRECONDITION_FAILED)');
    expect(ghost).toContain('declares no input "ghost"');
  });
});
