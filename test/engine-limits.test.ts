import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, connectClient, FIXTURES, RawServer, type Sandbox, tokenOf } from './helpers/server.js';
import { apiSandbox, type TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

/** Well past the old stall: `^(a+)+$` took 19 s at 28 characters with a backtracking RegExp. */
const EVIL = `${'a'.repeat(30)}!`;
// How fast an attack is answered is a goal of bench/scenarios/hostile-inputs.mjs (each within 5 s; the
// validation budget is 1 s), not a wall-clock assertion here: a hang still fails the test by its timeout,
// and each answer says what the budget did ("not checked within 1000 ms").

/** A schema whose check doubles per level: a40 runs a0 2^40 times on any string. */
function exponentialSchema(levels = 40): Json {
  const defs: Json = { a0: { type: 'string', minLength: 1 } };
  for (let i = 1; i <= levels; i++)
    defs[`a${i}`] = { allOf: [{ $ref: `#/$defs/a${i - 1}` }, { $ref: `#/$defs/a${i - 1}` }] };
  return { $defs: defs, $ref: `#/$defs/a${levels}` };
}

const schemaRule = (schema: Json, message = 'Output must match the schema') => ({
  type: 'schema',
  schema,
  message,
});

let sb: Sandbox;
let api: TasksApi;
let client: Client;
let closeClient: () => Promise<void>;
const call = (name: string, args: Json) => callTool(client, name, args);

const save = async (workflow: Json) => {
  const saved = await call('workflow_save', { content: JSON.stringify(workflow) });
  expect(saved.workflow_id).toBe(workflow.id);
};

beforeAll(async () => {
  ({ api, sb } = await apiSandbox());
  ({ client, close: closeClient } = await connectClient(sb));
  await call('catalog_import_openapi', {
    source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
    catalog_title: 'Tasks API',
    base_url: api.baseUrl,
  });
  // The rules that once stalled the server (bench/scenarios/hostile-inputs.mjs times the same workflow).
  await save(JSON.parse(readFileSync(join(FIXTURES, 'hostile', 'stall-rules.json'), 'utf8')));
});

afterAll(async () => {
  await closeClient();
  await api.stop();
  sb.cleanup();
});

describe('schema and regex rules cannot stall the server', () => {
  it('workflow_validate answers pattern, patternProperties and uniqueItems attacks at once, correctly', async () => {
    const validate = (stepId: string, output: string) =>
      call('workflow_validate', { workflowId: 'stall-rules', stepId, output });
    const pattern = await validate('pattern', JSON.stringify(EVIL));
    expect(pattern.issues).toEqual(['Output must match the schema ((root) must match pattern "^(a+)+$")']);
    expect((await validate('pattern', JSON.stringify('aaaa'))).valid).toBe(true);
    const props = await validate('pattern-props', JSON.stringify({ [EVIL]: 'x', aaa: 'y' }));
    expect(props.issues).toEqual(['Output must match the schema (/aaa must be number)']);
    const items = Array.from({ length: 30_000 }, (_, i) => ({ id: i, tags: ['x'] }));
    const unique = await validate('unique', JSON.stringify(items));
    expect(unique.valid).toBe(true);
    const dupes = await validate('unique', JSON.stringify([...items, { tags: ['x'], id: 29_999 }]));
    expect(dupes.issues[0]).toContain(
      'must NOT have duplicate items (items ## 29999 and 30000 are identical)',
    );
  });

  it('fails a check that runs over the 1 s budget, and keeps serving', async () => {
    const slow = await call('workflow_validate', {
      workflowId: 'stall-rules',
      stepId: 'exponential',
      output: '"x"',
    });
    expect(slow).toMatchObject({ valid: false });
    expect(slow.issues).toEqual([
      'Output must match the schema (not checked within 1000 ms: the output or the rule is too complex)',
    ]);
    const regex = await call('workflow_validate', {
      workflowId: 'stall-rules',
      stepId: 'slow-regex',
      output: 'hello world '.repeat(80_000),
    });
    expect(regex.issues[0]).toMatch(/^Needs a z \(not checked within 1000 ms/);
    const list = await call('workflow_list', {});
    expect(list.workflows.length).toBeGreaterThan(0);
  });

  it('also through workflow_validate_manifest: a schema that compiles forever is reported, not waited for', async () => {
    const res = await call('workflow_validate_manifest', {
      content: JSON.stringify({
        id: 'slow-manifest',
        name: 'n',
        description: 'd',
        version: '1.0.0',
        steps: [
          {
            id: 'one',
            title: 't',
            prompt: 'p',
            validationCriteria: [schemaRule({ type: 'string', pattern: '(?=x)' })],
          },
        ],
      }),
    });
    expect(res.valid).toBe(false);
    expect(res.violations[0].message).toMatch(/not RE2 syntax/);
  });

  it('workflow_next_step rejects within the budget and mints a fresh token', async () => {
    await save({
      id: 'stall-durable',
      name: 'Stall durable',
      description: 'Schema rules in a durable execution',
      version: '1.0.0',
      steps: [
        {
          id: 'pattern',
          title: 'p',
          prompt: 'p',
          validationCriteria: [schemaRule({ type: 'string', pattern: '^(a+)+$' })],
        },
        { id: 'exponential', title: 'e', prompt: 'e', validationCriteria: [schemaRule(exponentialSchema())] },
      ],
    });
    const started = await call('workflow_start', { workflow_name: 'stall-durable' });
    const rejected = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: JSON.stringify(EVIL) },
    });
    expect(rejected.validation.issues[0]).toMatch(/must match pattern/);
    const accepted = await call('workflow_next_step', {
      token: tokenOf(rejected),
      output: { summary: '"aaaa"' },
    });
    expect(accepted.step_name).toBe('exponential');
    const slow = await call('workflow_next_step', { token: tokenOf(accepted), output: { summary: '"x"' } });
    expect(slow.validation).toMatchObject({
      valid: false,
      issues: [expect.stringMatching(/not checked within/)],
    });
    expect(tokenOf(slow)).toEqual(expect.any(String));
  });

  it('checks output_contract on API responses with RE2 and within the budget', async () => {
    const contractFlow = (id: string, contract: Json) => ({
      id,
      name: id,
      description: 'A response checked by its output_contract',
      version: '1.0.0',
      inputs: { title: { type: 'string', description: 'Task title', required: true } },
      steps: [
        {
          id: 'create',
          title: 'Create',
          run: 'tasks-api create-task',
          with: { projectId: 'p1' },
          body: { title: '${{ inputs.title }}' },
          output_contract: contract,
        },
      ],
    });
    await save(
      contractFlow('contract-pattern', { type: 'object', properties: { title: { pattern: '^(a+)+$' } } }),
    );
    // $ref resolves against the root: the definitions go there.
    const { $defs } = exponentialSchema();
    await save(
      contractFlow('contract-exponential', {
        $defs,
        type: 'object',
        properties: { title: { $ref: '#/$defs/a40' } },
      }),
    );
    const pattern = await call('workflow_start', {
      workflow_name: 'contract-pattern',
      inputs: { title: EVIL },
    });
    expect(pattern.error.data).toMatchObject({ error_code: 'COMMAND_FAILED', reason: 'output_contract' });
    expect(pattern.error.data.message).toContain('/title must match pattern');
    const exponential = await call('workflow_start', {
      workflow_name: 'contract-exponential',
      inputs: { title: 'x' },
    });
    expect(exponential.error.data).toMatchObject({ reason: 'output_contract' });
    expect(exponential.error.data.message).toContain('not checked within 1000 ms');
  });
});

describe('bounded work and memory', () => {
  it('a forEach over a 1,000,000-element array renders a bounded prompt', async () => {
    await save({
      id: 'huge-loop',
      name: 'Huge loop',
      description: 'forEach over a big context array',
      version: '1.0.0',
      steps: [
        {
          id: 'each',
          type: 'loop',
          title: 'Each',
          loop: { type: 'forEach', items: 'things', maxIterations: 1000 },
          body: [{ id: 'one', title: 'Do {{currentItem}}', prompt: 'Item {{currentIndex}} of {{things}}' }],
        },
      ],
    });
    const things = new Array(1_000_000).fill(0);
    const next = await call('workflow_next', {
      workflowId: 'huge-loop',
      completedSteps: [],
      context: { things },
    });
    expect(next.loop).toMatchObject({ total: 1_000_000, iteration: 1 });
    expect(next.guidance.prompt.length).toBeLessThan(40_000);
    expect(next.guidance.prompt).toContain('[truncated: only the first 8000 characters are shown]');
    const started = await call('workflow_start', { workflow_name: 'huge-loop', context: { things } });
    expect(started.agent_content.length).toBeLessThan(45_000);
  });

  it.runIf(process.platform === 'linux')(
    'compiled schemas are cached with a bound: memory stays flat over thousands of distinct schemas',
    async () => {
      const raw = new RawServer({ env: sb.env, cwd: sb.project });
      try {
        await raw.initialize();
        const rss = () =>
          Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${raw.child.pid}/status`, 'utf8'))?.[1]) / 1024;
        let n = 0;
        const round = async () => {
          for (let k = 0; k < 20; k++) {
            const rules = Array.from({ length: 100 }, () => {
              n++;
              return schemaRule({
                type: 'object',
                required: [`k${n}`],
                properties: { [`p${n}`]: { minLength: n % 7 } },
              });
            });
            const content = JSON.stringify({
              id: `many-schemas-${n}`,
              name: 'n',
              description: 'd',
              version: '1.0.0',
              steps: [{ id: 'one', title: 't', prompt: 'p', validationCriteria: rules }],
            });
            const res = await raw.request(`m${n}`, 'workflow_validate_manifest', { content });
            expect((res.result as Json).valid).toBe(true);
          }
          return rss();
        };
        const first = await round();
        const rounds: number[] = [];
        for (let i = 0; i < 4; i++) rounds.push(await round());
        // 8,000 distinct schemas after the first 2,000: the old engine grew about 5 MB per 1,000, for good
        // (35-40 MB by the last two rounds). The lower of those two leaves out a collection that has not
        // run yet, which alone exceeded 20 MB on a loaded machine.
        const settled = Math.min(...rounds.slice(-2));
        expect(settled - first).toBeLessThan(25);
      } finally {
        raw.kill();
      }
    },
  );
});
