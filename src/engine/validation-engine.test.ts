import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import type { ValidationCriteria, Workflow } from '../model/workflow.js';
import { MAX_DEPTH } from './json-text.js';
import { CriteriaError, VALIDATION_BUDGET_MS, ValidationEngine } from './validation-engine.js';
import { MAX_COMPILED } from './validation-worker-protocol.js';

let engine: ValidationEngine;

beforeAll(async () => {
  engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });
  await engine.load();
});

afterAll(() => undefined);

const schemaRule = (schema: Record<string, unknown>): ValidationCriteria => [
  { type: 'schema', schema, message: 'Output must match the schema' },
];

/** A schema whose check doubles per level: a40 runs a0 2^40 times on any string. */
function exponentialSchema(levels = 40): Record<string, unknown> {
  const defs: Record<string, unknown> = { a0: { type: 'string', minLength: 1 } };
  for (let i = 1; i <= levels; i++)
    defs[`a${i}`] = { allOf: [{ $ref: `#/$defs/a${i - 1}` }, { $ref: `#/$defs/a${i - 1}` }] };
  return { $defs: defs, $ref: `#/$defs/a${levels}` };
}

/** Runs `f` and returns how long it took, in ms (only for the one bound no answer can witness). */
function timed<T>(f: () => T): [T, number] {
  const started = performance.now();
  const value = f();
  return [value, performance.now() - started];
}

describe('rules', () => {
  it('evaluates contains, regex, length and schema rules with and/or/not and conditions', () => {
    const criteria: ValidationCriteria = [
      { type: 'contains', value: 'plan', message: 'mention the plan' },
      { type: 'regex', pattern: '^\\d+ steps', flags: 'm', message: 'count the steps' },
      { type: 'length', min: 5, max: 200, message: 'length' },
      {
        or: [
          { type: 'contains', value: 'tests', message: 'tests' },
          { type: 'regex', pattern: 'NEVER', message: 'never' },
        ],
      },
      { not: { type: 'contains', value: 'TODO', message: 'todo' }, message: 'no TODOs' },
      {
        type: 'regex',
        pattern: 'x{9}',
        message: 'only when strict',
        condition: { var: 'strict', equals: true },
      },
    ];
    expect(engine.validate(criteria, 'The plan:\n3 steps and tests', {}).valid).toBe(true);
    const failing = engine.validate(criteria, 'The plan:\n3 steps and tests TODO', { strict: true });
    expect(failing.valid).toBe(false);
    expect(failing.issues).toEqual(['no TODOs', 'only when strict']);
    expect(engine.validate(schemaRule({ type: 'object', required: ['a'] }), '{"a":1}', {}).valid).toBe(true);
    expect(engine.validate(schemaRule({ type: 'object', required: ['a'] }), 'nope', {}).issues[0]).toMatch(
      /not valid JSON/,
    );
    expect(engine.matches('^[a-z]+$', 'abc')).toBe(true);
    expect(engine.schemaErrors({ type: 'object', required: ['a'] }, {})).toEqual([
      "(root) must have required property 'a'",
    ]);
  });

  it('reports rules that cannot be evaluated', () => {
    expect(() => engine.check([{ type: 'regex', pattern: '(', message: 'm' }])).toThrow(CriteriaError);
    expect(() => engine.check([{ type: 'regex', pattern: 'a', flags: 'x', message: 'm' }])).toThrow(/flag/);
    expect(() => engine.check([{ type: 'length', min: 3, max: 1, message: 'm' }])).toThrow(/greater than/);
    expect(() => engine.check(schemaRule({ type: 'nope' }))).toThrow(
      expect.objectContaining({ kind: 'schema' }),
    );
    // ECMAScript-only syntax is refused: schema patterns are matched with RE2.
    expect(() => engine.check(schemaRule({ type: 'string', pattern: '^(?=a)a$' }))).toThrow(/not RE2 syntax/);
    expect(() => engine.matches('(', 'x')).toThrow(CriteriaError);
    const workflow = {
      id: 'broken-rules',
      name: 'n',
      description: 'd',
      version: '1.0.0',
      steps: [
        {
          id: 'one',
          title: 't',
          prompt: 'p',
          validationCriteria: [
            { type: 'regex', pattern: '(', message: 'm' },
            { and: [{ type: 'schema', schema: { type: 'nope' }, message: 'm' }] },
            { type: 'length', min: 2, max: 1, message: 'm' },
            { type: 'contains', value: 'fine', message: 'm' },
          ],
        },
      ],
    } as unknown as Workflow;
    expect(engine.checkWorkflow(workflow).map((v) => v.path)).toEqual([
      '/steps/0/validationCriteria/0',
      '/steps/0/validationCriteria/1/and/0',
      '/steps/0/validationCriteria/2',
    ]);
  });

  it('compiles schemas that share an $id', () => {
    const a = { $id: 'https://example.com/s', type: 'string' };
    const b = { $id: 'https://example.com/s', type: 'number' };
    expect(engine.validate(schemaRule(a), '"x"', {}).valid).toBe(true);
    expect(engine.validate(schemaRule(b), '1', {}).valid).toBe(true);
    expect(engine.validate(schemaRule(b), '"x"', {}).valid).toBe(false);
  });
});

describe('no schema, pattern or output stalls the server', () => {
  it('matches schema patterns and patternProperties in linear time (RE2)', () => {
    const evil = JSON.stringify(`${'a'.repeat(5000)}!`);
    // Each answer is the checked verdict, not "not checked within 1000 ms": both ran to the end inside
    // the budget (a backtracking engine never would), which no wall clock needs to confirm.
    const pattern = engine.validate(schemaRule({ type: 'string', pattern: '^(a+)+$' }), evil, {});
    expect(pattern.issues[0]).toMatch(/must match pattern/);
    const props = engine.validate(
      schemaRule({ type: 'object', patternProperties: { '^(a+)+$': { type: 'number' } } }),
      JSON.stringify({ [`${'a'.repeat(5000)}!`]: 'x', aaaa: 'not a number' }),
      {},
    );
    expect(props.issues[0]).toMatch(/must be number/);
    for (const issue of [...pattern.issues, ...props.issues]) expect(issue).not.toMatch(/not checked within/);
  });

  it('checks uniqueItems over 30,000 objects in linear time, and still finds duplicates', () => {
    const items = Array.from({ length: 30_000 }, (_, i) => ({ i, tags: ['a', { b: i }] }));
    // Valid means checked to the end within the budget (over it, the answer is "not checked").
    const unique = engine.validate(
      schemaRule({ type: 'array', uniqueItems: true }),
      JSON.stringify(items),
      {},
    );
    expect(unique.valid).toBe(true);
    const duplicated = [...items, { tags: ['a', { b: 7 }], i: 7 }];
    expect(
      engine.validate(schemaRule({ type: 'array', uniqueItems: true }), JSON.stringify(duplicated), {})
        .issues[0],
    ).toMatch(/must NOT have duplicate items \(items ## 7 and 30000 are identical\)/);
    expect(
      engine.validate(schemaRule({ uniqueItems: true }), '[1, "1", true, "true", null, [1], {"1":1}]', {})
        .valid,
    ).toBe(true);
  });

  it('stops a check that runs over the budget and fails it instead of stalling', () => {
    // Each answer says the budget cut the check; a stall would fail by the test's timeout.
    const slowSchema = engine.validate(schemaRule(exponentialSchema()), '"x"', {});
    expect(slowSchema).toMatchObject({ valid: false });
    expect(slowSchema.issues[0]).toMatch(/not checked within 1000 ms/);
    // RE2 is linear, but this pattern over a megabyte still takes seconds.
    const slowRegex = engine.validate(
      [
        { type: 'regex', pattern: '(?i)(\\w+\\s*){50}z', message: 'needs z' },
        { type: 'contains', value: 'hello', message: 'says hello' },
      ],
      'hello world '.repeat(80_000),
      {},
    );
    expect(slowRegex.issues).toEqual([expect.stringMatching(/^needs z \(not checked within/)]);
    const contract = engine.schemaErrors(exponentialSchema(), 'x');
    expect(contract).toEqual([expect.stringMatching(/not checked within/)]);
    // The worker was replaced; checks go on.
    expect(engine.validate(schemaRule({ type: 'string' }), '"fine"', {}).valid).toBe(true);
  });

  it('shares one budget among all the rules of a call', () => {
    const rules: ValidationCriteria = Array.from({ length: 5 }, (_, i) => ({
      type: 'schema' as const,
      schema: { ...exponentialSchema(), title: `slow ${i}` },
      message: `slow ${i}`,
    }));
    const [result, took] = timed(() => engine.validate(rules, '"x"', {}));
    expect(result.issues).toHaveLength(5);
    // The one bound no answer can witness (five budgets would give the same issues, in five times the
    // time), so it stays, generous: four budgets' worth of slack over the one shared budget.
    expect(took).toBeLessThan(5 * VALIDATION_BUDGET_MS);
  });

  it('keeps at most MAX_COMPILED compiled schemas, however many distinct ones it sees', () => {
    for (let i = 0; i < 3000; i++) {
      engine.validate(schemaRule({ type: 'object', required: [`k${i}`] }), `{"k${i}": 1}`, {});
    }
    const stats = engine.stats();
    expect(stats.cachedSchemas).toBeLessThanOrEqual(MAX_COMPILED);
    expect(stats.compiledSinceReset).toBeLessThanOrEqual(MAX_COMPILED);
  });
});

describe('deep structures (10,000 levels)', () => {
  const nest = (depth: number, leaf: unknown = { type: 'string' }) => {
    let v: unknown = leaf;
    for (let i = 0; i < depth; i++) v = { type: 'array', items: v };
    return v as Record<string, unknown>;
  };

  it('refuses schemas and criteria nested too deeply with CriteriaError', () => {
    expect(() => engine.check(schemaRule(nest(10_000)))).toThrow(
      expect.objectContaining({ kind: 'schema', message: expect.stringMatching(/nested deeper than/) }),
    );
    expect(() => engine.validate(schemaRule(nest(10_000)), '[]', {})).toThrow(CriteriaError);
    expect(() => engine.schemaErrors(nest(10_000), [])).toThrow(CriteriaError);
    let criteria: ValidationCriteria = { type: 'contains', value: 'x', message: 'm' };
    for (let i = 0; i < 10_000; i++) criteria = i % 2 ? { and: [criteria] } : { not: criteria };
    expect(() => engine.check(criteria)).toThrow(CriteriaError);
    expect(() => engine.validate(criteria, 'x', {})).toThrow(CriteriaError);
    const workflow = {
      id: 'deep',
      name: 'n',
      description: 'd',
      version: '1.0.0',
      steps: [{ id: 'one', title: 't', prompt: 'p', validationCriteria: criteria }],
    } as unknown as Workflow;
    expect(engine.checkWorkflow(workflow)).toEqual([
      expect.objectContaining({
        path: '/steps/0/validationCriteria',
        message: expect.stringContaining(`${MAX_DEPTH}`),
      }),
    ]);
  });

  it('fails outputs nested too deeply instead of crashing', () => {
    const deepOutput = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const result = engine.validate(
      schemaRule({ uniqueItems: true, items: { uniqueItems: true } }),
      deepOutput,
      {},
    );
    expect(result.valid).toBe(true);
    const duplicates = `[${deepOutput},${deepOutput}]`;
    expect(engine.validate(schemaRule({ uniqueItems: true }), duplicates, {}).issues[0]).toMatch(
      /nested deeper/,
    );
    let deepValue: unknown = 1;
    for (let i = 0; i < 10_000; i++) deepValue = [deepValue];
    expect(engine.schemaErrors({ type: 'array' }, deepValue)).toEqual([
      `(root) is nested deeper than ${MAX_DEPTH} levels`,
    ]);
  });
});

describe('the worker runs only while checks need it', () => {
  it('starts for regex and schema rules only, and stops on unload', async () => {
    const lazy = new ValidationEngine({ workerUrl: await validationWorkerUrl() });
    await lazy.loadFor([
      { type: 'contains', value: 'plan', message: 'plan' },
      { not: { type: 'length', min: 1, message: 'long' }, message: 'short' },
    ]);
    await lazy.loadFor(undefined);
    expect(lazy.loaded).toBe(false);
    // contains and length rules run without it
    expect(lazy.validate([{ type: 'contains', value: 'plan', message: 'plan' }], 'a plan', {}).valid).toBe(
      true,
    );
    expect(lazy.loaded).toBe(false);
    const regex: ValidationCriteria = [
      {
        or: [
          { type: 'length', min: 99, message: 'long' },
          { type: 'regex', pattern: '^a', message: 'a' },
        ],
      },
    ];
    await lazy.loadFor(regex);
    expect(lazy.loaded).toBe(true);
    expect(lazy.validate(regex, 'a plan', {}).valid).toBe(true);
    lazy.unload();
    expect(lazy.loaded).toBe(false);
    // A check after unload starts another worker.
    expect(lazy.validate(schemaRule({ type: 'object' }), '{}', {}).valid).toBe(true);
    expect(lazy.loaded).toBe(true);
    lazy.unload();
  });
});
