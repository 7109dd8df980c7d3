import { describe, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import { upToPattern } from '../model/workflow.js';
import { checkDefinition, DEFINITION_LIMITS } from './check.js';
import { regexCost } from './regex-cost.js';

const engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });

const workflow = (extra: Record<string, unknown> = {}, step: Record<string, unknown> = {}) => ({
  id: 'unit-flow',
  name: 'Unit',
  description: 'A workflow for unit tests',
  version: '1.0.0',
  steps: [{ id: 'only-step', title: 'Only', prompt: 'Do it.', ...step }],
  ...extra,
});

describe('checkDefinition levels', () => {
  const badRegex = workflow(
    {},
    {
      runCondition: { var: 'undocumentedKnob', equals: 1 },
      validationCriteria: [{ type: 'regex', pattern: '(open', message: 'm' }],
    },
  );

  it('load stops at the model: no engine needed, unevaluable criteria not looked at', async () => {
    const load = await checkDefinition({ data: badRegex }, 'load');
    expect(load).toMatchObject({ level: 'load', valid: true, id: 'unit-flow', errors: [], warnings: [] });
  });

  it('strict adds criteria and the env allow-list; authoring adds warnings with the same errors', async () => {
    const strict = await checkDefinition({ data: badRegex }, 'strict', { engine });
    expect(strict.valid).toBe(false);
    expect(strict.errors.map((e) => [e.path, e.rule])).toEqual([
      ['/steps/0/validationCriteria/0', 'criteria'],
    ]);
    expect(strict.warnings).toEqual([]);
    const authoring = await checkDefinition({ data: badRegex }, 'authoring', { engine });
    expect(authoring.errors).toEqual(strict.errors);
    expect(authoring.warnings.map((w) => w.rule)).toEqual(['undocumentedVariable']);
  });

  it('a prompt fragment condition is a read like any other: an unmentioned variable is warned about', async () => {
    const fragments = workflow(
      {},
      { promptFragments: [{ id: 'care', when: { var: 'hiddenKnob', equals: 'on' }, text: 'Extra care.' }] },
    );
    const authoring = await checkDefinition({ data: fragments }, 'authoring', { engine });
    expect(authoring.errors).toEqual([]);
    expect(authoring.warnings.map((w) => [w.path, w.rule, w.actual])).toEqual([
      ['/steps/0/promptFragments/0/when', 'undocumentedVariable', 'hiddenKnob'],
    ]);
  });

  it('env names must be allowed, in templates and in input defaults', async () => {
    const env = workflow(
      { inputs: { token: { type: 'string', description: 'x', default: { env: 'HOME' } } } },
      { prompt: 'Release ${{ env.RELEASE }} for ${{ inputs.token }}' },
    );
    const refused = await checkDefinition({ data: env }, 'strict', { engine });
    expect(refused.errors.map((e) => [e.path, e.actual])).toEqual([
      ['/steps/0/prompt', 'RELEASE'],
      ['/inputs/token/default', 'HOME'],
    ]);
    const allowed = await checkDefinition({ data: env }, 'strict', {
      engine,
      allowedEnv: new Set(['RELEASE', 'HOME']),
    });
    expect(allowed.valid).toBe(true);
  });

  it('input patterns and output contracts that cannot be evaluated are errors too', async () => {
    const report = await checkDefinition(
      {
        data: {
          ...workflow({ inputs: { name: { type: 'string', description: 'n', pattern: '(?<=x)' } } }),
          steps: [{ id: 'call-api', title: 'Call', run: 'api get-thing', output_contract: { type: 'nope' } }],
        },
      },
      'strict',
      { engine },
    );
    expect(report.errors.map((e) => [e.path, e.rule])).toEqual([
      ['/inputs/name/pattern', 'criteria'],
      ['/steps/0/output_contract', 'criteria'],
    ]);
  });

  it('the strict level refuses to run without the engine rather than pass silently', async () => {
    await expect(checkDefinition({ data: badRegex }, 'strict')).rejects.toThrow(/engine/);
  });

  it('text and object give the same errors; text adds line and column (of the key)', async () => {
    const data = workflow({ version: 'one' });
    const text = JSON.stringify(data, null, 2);
    const fromText = await checkDefinition({ text, format: 'json' }, 'authoring', { engine });
    const fromData = await checkDefinition({ data }, 'authoring', { engine });
    expect(fromText.errors.map(({ line, column, ...rest }) => rest)).toEqual(fromData.errors);
    expect(fromText.errors[0]).toMatchObject({ path: '/version', line: 5, column: 3 });
    const yaml = await checkDefinition({ text: 'id: unit-flow\nversion: one\n', format: 'yaml' }, 'load');
    expect(yaml.errors.find((e) => e.path === '/version')).toMatchObject({ line: 2, column: 1 });
  });
});

describe('checkDefinition limits', () => {
  it('measures size in UTF-8 bytes, for text and objects alike', async () => {
    const big = 'é'.repeat(DEFINITION_LIMITS.maxBytes / 2 + 1);
    const text = await checkDefinition({ text: big, format: 'yaml' }, 'load');
    expect(text.errors[0]).toMatchObject({
      rule: 'maxFileSize',
      actual: String(DEFINITION_LIMITS.maxBytes + 2),
    });
    const data = await checkDefinition({ data: workflow({ description: big }) }, 'load');
    expect(data.errors[0]?.rule).toBe('maxFileSize');
  });

  it('bounds depth and size before the schema runs (no recursion on hostile input)', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = { not: deep };
    const report = await checkDefinition({ data: workflow({}, { runCondition: deep }) }, 'load');
    expect(report.errors).toEqual([expect.objectContaining({ rule: 'maxDepth' })]);
    const wide = await checkDefinition(
      { data: workflow({ final_output: new Array(200_000).fill(0) }) },
      'load',
    );
    expect(wide.errors).toEqual([expect.objectContaining({ rule: 'maxNodes' })]);
  });

  it('refuses YAML nested too deeply before composing it, and alias bombs', async () => {
    const deep = await checkDefinition(
      { text: `${'['.repeat(10_000)}${']'.repeat(10_000)}`, format: 'yaml' },
      'load',
    );
    expect(deep.errors).toEqual([expect.objectContaining({ rule: 'maxDepth', line: 1, column: 65 })]);
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (const name of 'bcdefg') {
      const prev = String.fromCharCode(name.charCodeAt(0) - 1);
      levels.push(`${name}: &${name} [${new Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const bomb = await checkDefinition({ text: levels.join('\n'), format: 'yaml' }, 'load');
    expect(bomb.errors).toEqual([expect.objectContaining({ rule: 'yamlAliases' })]);
  });

  it('caps the work of regex and JSON Schema compilation', async () => {
    const steps = Array.from({ length: 200 }, (_, i) => ({
      id: `step-${i}`,
      title: 't',
      prompt: 'p',
      validationCriteria: [{ type: 'regex', pattern: 'a{1000}', message: 'm' }],
    }));
    const regex = await checkDefinition({ data: { ...workflow(), steps } }, 'strict', { engine });
    expect(regex.errors).toEqual([
      expect.objectContaining({ rule: 'maxRegexCost', path: '/steps/98/validationCriteria/0/pattern' }),
    ]);
    const properties = Object.fromEntries(
      Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string' }]),
    );
    const schema = await checkDefinition(
      {
        data: workflow(
          {},
          { validationCriteria: [{ type: 'schema', schema: { type: 'object', properties }, message: 'm' }] },
        ),
      },
      'strict',
      { engine },
    );
    expect(schema.errors).toEqual([expect.objectContaining({ rule: 'maxSchemaNodes' })]);
  });

  it('reports at most 100 findings and lists unknown keys briefly', async () => {
    const inputs = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`in${i}`, 7]));
    const many = await checkDefinition({ data: workflow({ inputs }) }, 'load');
    expect(many.errors).toHaveLength(DEFINITION_LIMITS.maxReported + 1);
    expect(many.errors.at(-1)).toMatchObject({ rule: 'maxReported', actual: '500' });
    const keys = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`extra${i}`, i]));
    const unknown = await checkDefinition({ data: { ...workflow(), ...keys } }, 'load');
    // One finding per unknown key (at the key), ten of them, and one counting the rest.
    expect(unknown.errors).toHaveLength(11);
    expect(unknown.errors[0]).toMatchObject({ path: '/extra0', message: 'unknown property "extra0"' });
    expect(unknown.errors.at(-1)?.message).toBe('4990 more unknown properties');
  });

  it('never echoes the text of a file that is not a workflow', async () => {
    const secret = 'root:x:0:0:TOPSECRET-c0ffee:/root:/bin/bash\n';
    for (const format of ['yaml', 'json'] as const) {
      const report = await checkDefinition({ text: secret, format }, 'load');
      expect(JSON.stringify(report)).not.toContain('TOPSECRET');
      expect(report.errors[0]?.line).toBe(1);
    }
    const hex = await checkDefinition({ text: 'a3f1c0ffee'.repeat(6), format: 'yaml' }, 'load');
    expect(hex.errors[0]).toMatchObject({ rule: 'type', actual: 'string' });
    expect(JSON.stringify(hex)).not.toContain('c0ffee');
  });
});

describe('durations in the schema', () => {
  it('upToPattern matches exactly the integers 0..max without leading zeros', () => {
    for (const max of [0, 5, 9, 10, 60, 99, 100, 300, 1000, 3600, 4095]) {
      const re = new RegExp(`^${upToPattern(max)}$`);
      for (let n = 0; n <= max + 50; n++) expect(re.test(String(n)), `${n} <= ${max}`).toBe(n <= max);
      expect(re.test('007')).toBe(false);
    }
    const big = new RegExp(`^${upToPattern(3_600_000)}$`);
    for (const n of [0, 999_999, 3_599_999, 3_600_000]) expect(big.test(String(n))).toBe(true);
    for (const n of [3_600_001, 3_700_000, 9_999_999, 10_000_000]) expect(big.test(String(n))).toBe(false);
  });

  it('refuses timeouts, polls and attempts above their caps, with a clear message', async () => {
    const command = (extra: Record<string, unknown>) => ({
      ...workflow(),
      steps: [{ id: 'call-api', title: 'Call', run: 'api get-thing', ...extra }],
    });
    const repeat = { until: { var: 'output.done' }, every: '1s', max_attempts: 5, timeout: '1m' };
    const cases: [Record<string, unknown>, string | undefined][] = [
      [{ timeout: '5m' }, undefined],
      [{ timeout: '999m' }, '/steps/0/timeout'],
      [{ timeout: 300_001 }, '/steps/0/timeout'],
      [{ timeout: '300001ms' }, '/steps/0/timeout'],
      [{ repeat: { ...repeat, timeout: '60m' } }, undefined],
      [{ repeat: { ...repeat, timeout: '3601s' } }, '/steps/0/repeat/timeout'],
      [{ repeat: { ...repeat, every: '11m' } }, '/steps/0/repeat/every'],
      [{ repeat: { ...repeat, max_attempts: 1001 } }, '/steps/0/repeat/max_attempts'],
    ];
    for (const [extra, path] of cases) {
      const report = await checkDefinition({ data: command(extra) }, 'load');
      expect({ extra, paths: report.errors.map((e) => e.path) }).toEqual({
        extra,
        paths: path ? [path] : [],
      });
      if (path) expect(report.errors[0]?.message).toMatch(/at most (\d+[ms]+ \(\d+ms\)|1000 requests)/);
    }
    const loop = await checkDefinition(
      {
        data: {
          ...workflow(),
          steps: [
            {
              id: 'loop-step',
              type: 'loop',
              title: 'L',
              loop: { type: 'for', count: 2, maxIterations: 10_001 },
              body: [{ id: 'inner', title: 'I', prompt: 'p' }],
            },
          ],
        },
      },
      'load',
    );
    expect(loop.errors.map((e) => [e.path, e.rule])).toEqual([['/steps/0/loop/maxIterations', 'maximum']]);
  });
});

describe('regexCost', () => {
  it('counts characters, and counted repetitions as what they expand to', () => {
    expect(regexCost('abc')).toBe(3);
    expect(regexCost('a{1000}')).toBe(1000);
    expect(regexCost('(?:ab){10}')).toBe(20);
    expect(regexCost('(?:a{10}){10}')).toBe(100);
    expect(regexCost('[a-z]{3,5}x')).toBe(6);
    expect(regexCost('\\d{2,}')).toBe(3);
    expect(regexCost('a*b+c?')).toBe(3);
    expect(regexCost('(?P<year>\\d{4})-\\p{L}')).toBe(6);
    expect(regexCost('x{')).toBe(2);
  });
});
