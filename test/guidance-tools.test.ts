import { cpSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { connectClient, FIXTURES, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
let client: Client;
let closeClient: () => Promise<void>;
let raw: InProcessRaw;
let nextId = 1;

beforeAll(async () => {
  sb = sandbox();
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  cpSync(join(FIXTURES, 'invalid', 'broken-schema.yaml'), join(sb.runtime, 'broken-schema.yaml'));
  cpSync(
    join(FIXTURES, 'invalid', 'unevaluable-criteria.json'),
    join(sb.runtime, 'unevaluable-criteria.json'),
  );
  ({ client, close: closeClient } = await connectClient(sb));
  raw = new InProcessRaw({ env: sb.env, cwd: sb.project });
  await raw.initialize();
});

afterAll(async () => {
  await closeClient();
  raw.kill();
  sb.cleanup();
});

/** Calls a tool through tools/call (SDK client) and as a direct method, and checks both agree. */
async function call(name: string, args: Json): Promise<Json> {
  const viaTools = await client.callTool({ name, arguments: args });
  const direct = await raw.request(nextId++, name, args);
  if (viaTools.isError) {
    const err = (viaTools.structuredContent as Json).error;
    // Both faces carry the same error; only the correlation id differs per call.
    const strip = (e: Json) => ({ ...e, data: { ...e.data, correlation_id: undefined } });
    expect(strip(direct.error as Json)).toEqual(strip(err));
    expect(err.data.correlation_id).toMatch(/^wl-[0-9a-f]{12}$/);
    return { error: err };
  }
  expect(direct.result).toEqual(viaTools.structuredContent);
  return viaTools.structuredContent as Json;
}

describe('workflow_list', () => {
  it('lists bundled and runtime workflows in the seed shape and reports broken files beside them', async () => {
    const res = await call('workflow_list', {});
    for (const w of res.workflows) {
      // The seed's five keys; a workflow that cannot start yet (a catalog to import) adds ready and reason.
      const seed = Object.keys(w).filter((k) => !(w.ready === false && (k === 'ready' || k === 'reason')));
      expect(seed.sort()).toEqual(['category', 'description', 'id', 'name', 'version']);
      for (const k of seed) expect(typeof w[k]).toBe('string');
    }
    const ids = res.workflows.map((w: Json) => w.id);
    expect(ids).toEqual(expect.arrayContaining(['ai-task-implementation', 'rules-demo', 'loops-demo']));
    expect(ids).not.toContain('broken-schema');
    expect(res.workflows.find((w: Json) => w.id === 'conditions-demo').category).toBe('general');
    const ai = res.workflows.find((w: Json) => w.id === 'ai-task-implementation');
    expect(ai).toEqual({
      id: 'ai-task-implementation',
      name: 'AI Task Prompt Workflow',
      description: 'Guides through task understanding → planning → implementation → verification',
      category: 'development',
      version: '1.0.0',
    });
    const broken = res.broken.find((b: Json) => b.id === 'broken-schema');
    expect(broken.file).toContain('broken-schema.yaml');
    expect(broken.violations.length).toBeGreaterThan(0);
  });
});

describe('workflow_get', () => {
  it('returns a full definition', async () => {
    const res = await call('workflow_get', { id: 'ai-task-implementation' });
    expect(res.id).toBe('ai-task-implementation');
    expect(res.steps[0]).toMatchObject({ id: 'understand', requireConfirmation: true });
  });

  it('returns YAML definitions as parsed objects', async () => {
    const res = await call('workflow_get', { id: 'loops-demo' });
    expect(res.version).toBe('1.2.3');
    expect(res.steps[1].loop).toEqual({
      type: 'until',
      condition: { var: 'testsPassing', equals: true },
      maxIterations: 3,
    });
  });

  it('gives -32001 for an unknown id', async () => {
    const res = await call('workflow_get', { id: 'non-existent-workflow' });
    expect(res.error).toMatchObject({
      code: -32001,
      message: 'Workflow not found',
      data: {
        workflowId: 'non-existent-workflow',
        error_code: 'WORKFLOW_NOT_FOUND',
        category: 'not_found',
        context: { workflow_id: 'non-existent-workflow' },
        retryable: false,
        suggested_action: expect.stringContaining('workflow_list'),
        violations: [],
      },
    });
  });

  it('a misspelled or shortened id gets a did-you-mean, and the call that shows the workflow', async () => {
    const res = await call('workflow_get', { id: 'coding-task' });
    expect(res.error).toMatchObject({
      code: -32001,
      message: 'Workflow not found',
      data: {
        workflowId: 'coding-task',
        did_you_mean: ['coding-task-workflow'],
        message: 'Workflow not found; did you mean "coding-task-workflow"?',
        suggested_action: expect.stringContaining('Did you mean "coding-task-workflow"?'),
        next: [
          { tool: 'workflow_get', arguments: { workflow_id: 'coding-task-workflow' } },
          { tool: 'workflow_list', arguments: {} },
        ],
      },
    });
    const typo = await call('workflow_next', { workflowId: 'loops-demp', completedSteps: [] });
    expect(typo.error.data.did_you_mean).toEqual(['loops-demo']);
    // Nothing near: no guess.
    expect((await call('workflow_get', { id: 'zzzzzz-qqqq' })).error.data).not.toHaveProperty('did_you_mean');
    const start = await client.callTool({ name: 'workflow_start', arguments: { workflow_id: 'mr-review' } });
    expect((start.structuredContent as Json).error.data.did_you_mean).toEqual(['mr-review-workflow']);
  });

  it('gives -32002 with violations for a broken definition', async () => {
    const res = await call('workflow_get', { id: 'broken-schema' });
    expect(res.error.code).toBe(-32002);
    const paths = res.error.data.violations.map((v: Json) => `${v.path} ${v.rule}`);
    expect(paths).toEqual(
      expect.arrayContaining(['/version pattern', '/steps/0/id pattern', '/steps/1/prompt required']),
    );
    expect(paths.some((p: string) => p.startsWith('/steps/2') && p.endsWith('additionalProperties'))).toBe(
      true,
    );
  });
});

describe('workflow_next and conditions', () => {
  async function stepsRun(context: Json): Promise<string[]> {
    const ids: string[] = [];
    let completed: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await call('workflow_next', {
        workflowId: 'conditions-demo',
        completedSteps: completed,
        context,
      });
      if (res.isComplete) {
        expect(res.step).toBeNull();
        return ids;
      }
      ids.push(res.step.id);
      completed = [...res.completedSteps, res.step.id];
    }
    throw new Error('did not complete');
  }

  it('evaluates every operator against the context', async () => {
    expect(
      await stepsRun({
        taskScope: 'large',
        userExpertise: 'expert',
        complexity: 0.8,
        ticket: { priority: 'high' },
        hasDatabase: true,
      }),
    ).toEqual([
      'equals-step',
      'not-equals-step',
      'gt-step',
      'gte-step',
      'and-step',
      'dotted',
      'truthy',
      'always',
    ]);
    expect(await stepsRun({ taskScope: 'small', userExpertise: 'novice', complexity: 0.5 })).toEqual([
      'gte-step',
      'lte-step',
      'or-step',
      'not-step',
      'always',
    ]);
  });

  it('treats missing variables as documented: not_equals and not hold, comparisons do not', async () => {
    expect(await stepsRun({})).toEqual(['not-equals-step', 'not-step', 'always']);
  });

  it('returns guidance in the seed shape', async () => {
    const res = await call('workflow_next', {
      workflowId: 'ai-task-implementation',
      completedSteps: [],
      context: { taskId: 'TASK-123' },
    });
    expect(res.isComplete).toBe(false);
    expect(res.step.id).toBe('understand');
    expect(Object.keys(res.guidance).sort()).toEqual([
      'modelHint',
      'prompt',
      'requiresConfirmation',
      'validationCriteria',
    ]);
    expect(res.guidance.requiresConfirmation).toBe(true);
    expect(res.guidance.prompt).toContain(res.step.prompt);
  });

  it('gives -32003 for an unknown current or completed step and -32001 for an unknown workflow', async () => {
    const a = await call('workflow_next', {
      workflowId: 'conditions-demo',
      currentStep: 'nope-step',
      completedSteps: [],
    });
    expect(a.error).toMatchObject({ code: -32003, message: 'Step not found', data: { stepId: 'nope-step' } });
    const b = await call('workflow_next', { workflowId: 'conditions-demo', completedSteps: ['ghost'] });
    expect(b.error.code).toBe(-32003);
    const c = await call('workflow_next', { workflowId: 'ghost-flow', completedSteps: [] });
    expect(c.error.code).toBe(-32001);
  });
});

describe('workflow_next loops', () => {
  /** Walks a workflow as an agent would, feeding back completedSteps and context. */
  async function walk(initial: Json, onStep: (id: string, ctx: Json) => Json = () => ({})) {
    const seen: string[] = [];
    let completed: string[] = [];
    let context: Json = initial;
    for (let i = 0; i < 100; i++) {
      const res = await call('workflow_next', {
        workflowId: 'loops-demo',
        completedSteps: completed,
        context,
      });
      if (res.isComplete) return { seen, res };
      const label = res.loop ? `${res.step.id}#${res.loop.iteration}` : res.step.id;
      seen.push(label);
      context = { ...res.context, ...onStep(res.step.id, res.context) };
      completed = [...res.completedSteps, res.step.id];
    }
    throw new Error('did not complete');
  }

  it('runs until, forEach, for and while loops with maxIterations', async () => {
    let runs = 0;
    const { seen, res } = await walk(
      { review: { files: ['a.ts', 'b.ts'] }, drafts: 2, needsPolish: true, strict: true },
      (id, ctx) => {
        if (id === 'run-tests') runs++;
        if (id === 'review-file') expect(ctx.file).toBe(['a.ts', 'b.ts'][(ctx.currentIndex as number) ?? 0]);
        return { testsPassing: runs >= 2 };
      },
    );
    expect(seen).toEqual([
      'intro',
      'fix#1',
      'run-tests#1',
      'fix#2',
      'run-tests#2',
      'review-file#1',
      'review-file#2',
      'draft#1',
      'draft#2',
      'polish#1',
      'polish#2',
      'outro',
    ]);
    expect(res.context._loops).toBeUndefined();
  });

  it('stops an until loop at maxIterations; an empty list runs no iteration, a missing one refuses to go on', async () => {
    const { seen } = await walk({ review: { files: [] } });
    expect(seen).toEqual([
      'intro',
      'fix#1',
      'run-tests#1',
      'fix#2',
      'run-tests#2',
      'fix#3',
      'run-tests#3',
      'outro',
    ]);
    // No list at all: WorkRail's PRECONDITION_FAILED, never a silent skip; its next asks for the list.
    const missing = await call('workflow_next', {
      workflowId: 'loops-demo',
      completedSteps: ['intro', 'retry-loop'],
      context: { testsPassing: true },
    });
    expect(missing.error).toMatchObject({
      code: -32602,
      data: {
        error_code: 'PRECONDITION_FAILED',
        variable: 'review.files',
        loopId: 'files-loop',
        message: "forEach loop 'files-loop' requires an array in context['review.files']; it is not set",
        next: [
          {
            tool: 'workflow_next',
            arguments: {
              workflowId: 'loops-demo',
              completedSteps: ['intro', 'retry-loop'],
              context: { testsPassing: true },
            },
            fill: { 'context.review.files': expect.stringContaining('an array') },
          },
        ],
      },
    });
    const wrong = await call('workflow_next', {
      workflowId: 'loops-demo',
      completedSteps: ['intro', 'retry-loop'],
      context: { testsPassing: true, review: { files: 'a.ts' } },
    });
    expect(wrong.error.data.message).toMatch(/got string "a.ts"/);
    expect(wrong.error.data.next[0].arguments.context).toEqual({ testsPassing: true, review: {} });
  });

  it('tells the agent when a loop stopped at maxIterations without meeting its condition', async () => {
    const res = await call('workflow_next', {
      workflowId: 'loops-demo',
      completedSteps: ['intro', 'fix', 'run-tests'],
      context: { _loops: { 'retry-loop': { iteration: 3 } }, testsPassing: false, review: { files: [] } },
    });
    expect(res.step.id).toBe('outro');
    expect(res.notices).toEqual([
      'Loop "Fix until green" stopped after reaching its limit of 3 iterations; its exit condition was not met.',
    ]);
    expect(res.guidance.prompt).toContain('stopped after reaching its limit');
    const passed = await call('workflow_next', {
      workflowId: 'loops-demo',
      completedSteps: ['intro', 'fix', 'run-tests'],
      context: { _loops: { 'retry-loop': { iteration: 3 } }, testsPassing: true, review: { files: [] } },
    });
    expect(passed.notices).toBeUndefined();
  });

  it('reports loop position and the forEach item in guidance', async () => {
    const res = await call('workflow_next', {
      workflowId: 'loops-demo',
      completedSteps: ['intro', 'retry-loop'],
      context: { review: { files: ['x.ts'] } },
    });
    expect(res.step.id).toBe('review-file');
    expect(res.loop).toMatchObject({
      loopId: 'files-loop',
      iteration: 1,
      total: 1,
      type: 'forEach',
      item: { var: 'file', value: 'x.ts' },
    });
    expect(res.context.file).toBe('x.ts');
    expect(res.guidance.prompt).toContain('iteration 1 of 1. Current item (file): [context.file: `x.ts`]');
  });

  it('evaluates requireConfirmation conditions', async () => {
    const done = ['intro', 'retry-loop', 'files-loop', 'count-loop', 'while-loop'];
    const strict = await call('workflow_next', {
      workflowId: 'loops-demo',
      completedSteps: done,
      context: { strict: true },
    });
    expect(strict.guidance.requiresConfirmation).toBe(true);
    const lax = await call('workflow_next', { workflowId: 'loops-demo', completedSteps: done, context: {} });
    expect(lax.guidance.requiresConfirmation).toBe(false);
  });
});

describe('workflow_validate', () => {
  const validate = (stepId: string, output: string, context?: Json) =>
    call('workflow_validate', { workflowId: 'rules-demo', stepId, output, ...(context ? { context } : {}) });

  it('contains', async () => {
    expect(await validate('contains-step', 'We use authentication via tokens')).toEqual({
      valid: true,
      issues: [],
      suggestions: [],
    });
    expect(await validate('contains-step', 'nothing here')).toEqual({
      valid: false,
      issues: ['Must mention authentication'],
      suggestions: [
        'Review validation criteria and adjust output accordingly.',
        'Describe how requests are authenticated.',
      ],
    });
  });

  it('regex with flags', async () => {
    expect((await validate('regex-step', 'Done.\nTICKET-42\nthanks')).valid).toBe(true);
    expect((await validate('regex-step', 'TICKET-42 inline')).valid).toBe(false);
  });

  it('regex evaluation is linear: a catastrophic pattern answers at once', async () => {
    // With a backtracking engine this input takes longer than the universe has left (the test's timeout
    // catches it); how fast RE2 answers is bench/scenarios/hostile-inputs.mjs's goal.
    const res = await validate('redos-step', `${'a'.repeat(50_000)}b`);
    expect(res.valid).toBe(false);
  });

  it('length counts characters', async () => {
    expect((await validate('length-step', 'exactly 10')).valid).toBe(true);
    expect((await validate('length-step', 'short')).valid).toBe(false);
    expect((await validate('length-step', 'x'.repeat(21))).valid).toBe(false);
    expect((await validate('length-step', '😀'.repeat(10))).valid).toBe(true);
  });

  it('schema parses the output as JSON; non-JSON output is invalid', async () => {
    expect((await validate('schema-step', '{"endpoint":"/api/users","method":"GET"}')).valid).toBe(true);
    const wrong = await validate('schema-step', '{"endpoint":"/users","method":"FETCH"}');
    expect(wrong.valid).toBe(false);
    expect(wrong.issues[0]).toMatch(/^API endpoint must follow required structure/);
    const notJson = await validate('schema-step', 'endpoint: /api/users');
    expect(notJson.valid).toBe(false);
    expect(notJson.issues[0]).toMatch(/not valid JSON/);
  });

  it('context-aware rules apply only when their condition holds', async () => {
    const output = 'Implemented basic feature functionality.';
    expect((await validate('context-step', output)).valid).toBe(true);
    expect(
      await validate('context-step', output, {
        taskScope: 'large',
        userExpertise: 'expert',
        complexity: 0.9,
      }),
    ).toEqual({
      valid: false,
      issues: [
        'Large tasks require comprehensive testing',
        'Expert implementation should use advanced patterns',
      ],
      suggestions: ['Review validation criteria and adjust output accordingly.'],
    });
    expect(
      (
        await validate('context-step', output, {
          taskScope: 'large',
          userExpertise: 'expert',
          complexity: 0.5,
        })
      ).issues,
    ).toEqual(['Large tasks require comprehensive testing']);
  });

  it('and / or / not composition', async () => {
    expect((await validate('composition-step', 'authentication with jwt')).valid).toBe(true);
    expect((await validate('composition-step', 'authentication with session cookies')).valid).toBe(true);
    expect((await validate('composition-step', 'authentication with magic')).issues).toEqual([
      'Should use JWT',
      'Should use sessions',
    ]);
    expect((await validate('composition-step', 'authentication with jwt TODO')).issues).toEqual([
      'Must not leave TODOs',
    ]);
  });

  it('no criteria means valid', async () => {
    expect((await validate('free-step', 'anything')).valid).toBe(true);
  });

  it('a workflow whose criteria cannot be evaluated is broken (-32002 with the violations), never served', async () => {
    // Criteria that cannot be evaluated make a file broken on every path (docs/workflow-format.md, "Checking
    // definitions"), so the -32004 a step of such a workflow used to give is now -32002 for the workflow.
    const listed = await call('workflow_list', {});
    expect(listed.workflows.map((w: Json) => w.id)).not.toContain('unevaluable-criteria');
    const broken = listed.broken.find((b: Json) => b.id === 'unevaluable-criteria');
    expect(broken.violations.map((v: Json) => [v.path, v.rule, v.line])).toEqual([
      ['/steps/0/validationCriteria/0', 'criteria', 12],
      ['/steps/1/validationCriteria/0', 'criteria', 24],
      ['/steps/2/validationCriteria/0', 'criteria', 37],
    ]);
    const res = await call('workflow_validate', {
      workflowId: 'unevaluable-criteria',
      stepId: 'bad-regex-step',
      output: 'x',
    });
    expect(res.error).toMatchObject({ code: -32002, data: { error_code: 'WORKFLOW_INVALID' } });
    expect(res.error.data.violations[1].message).toMatch(/min 50 greater than max 10/);
  });

  it('unknown step -32003, unknown workflow -32001, empty or wrong-typed output -32602', async () => {
    expect((await validate('ghost-step', 'x')).error.code).toBe(-32003);
    expect(
      (await call('workflow_validate', { workflowId: 'ghost-flow', stepId: 'abc', output: 'x' })).error.code,
    ).toBe(-32001);
    const empty = await raw.request(nextId++, 'workflow_validate', {
      workflowId: 'rules-demo',
      stepId: 'free-step',
      output: '',
    });
    expect((empty.error as Json).code).toBe(-32602);
    const typed = await client.callTool({
      name: 'workflow_validate',
      arguments: { workflowId: 'rules-demo', stepId: 'free-step', output: 7 },
    });
    expect(typed.isError).toBe(true);
  });

  it('serves concurrent calls from one client correctly', async () => {
    const outputs = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 'authentication' : 'none'));
    const results = await Promise.all(
      outputs.map((output) =>
        client.callTool({
          name: 'workflow_validate',
          arguments: { workflowId: 'rules-demo', stepId: 'contains-step', output },
        }),
      ),
    );
    expect(results.map((r) => (r.structuredContent as Json).valid)).toEqual(
      outputs.map((_, i) => i % 2 === 0),
    );
  });
});
