import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedClock, validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import type { ValidationCriteria, ValidationCriterion, Workflow } from '../model/workflow.js';
import { DomainFailure } from './errors.js';
import { MAX_DEPTH } from './json-text.js';
import { CriteriaError, VALIDATION_BUDGET_MS, ValidationEngine } from './validation-engine.js';
import { SYSTEM_CLOCK } from './validation-worker-client.js';
import { MAX_COMPILED, threadCpuMs } from './validation-worker-protocol.js';

let engine: ValidationEngine;
let engineUrl: URL;

beforeAll(async () => {
  engineUrl = await validationWorkerUrl();
  engine = new ValidationEngine({ workerUrl: engineUrl });
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

/** The retryable "not checked" error (never a verdict), with what its message says. */
const notChecked = (said: RegExp) =>
  expect.objectContaining({
    name: 'DomainFailure',
    error: expect.objectContaining({ code: 'validation_not_checked', message: expect.stringMatching(said) }),
  });

/** What `f` throws (a test of the error itself, beyond toThrow's class and message). */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
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

  it('stops a check whose own work runs over the budget: not checked (retryable), never a failed validation', () => {
    // Each answer says the budget cut the check; a stall would fail by the test's timeout.
    const slowSchema = thrown(() => engine.validate(schemaRule(exponentialSchema()), '"x"', {}));
    expect(slowSchema).toBeInstanceOf(DomainFailure);
    expect(slowSchema).toEqual(notChecked(/own work ran past the 1000 ms budget.*send the same call again/));
    expect((slowSchema as DomainFailure).error).toMatchObject({
      details: expect.stringMatching(/probably too expensive/),
    });
    // RE2 is linear, but this pattern over a megabyte still takes seconds.
    const slowRegex = thrown(() =>
      engine.validate(
        [
          { type: 'regex', pattern: '(?i)(\\w+\\s*){50}z', message: 'needs z' },
          { type: 'contains', value: 'hello', message: 'says hello' },
        ],
        'hello world '.repeat(80_000),
        {},
      ),
    );
    expect(slowRegex).toEqual(notChecked(/own work ran past/));
    expect(thrown(() => engine.schemaErrors(exponentialSchema(), 'x'))).toEqual(notChecked(/own work/));
    // The worker was replaced; checks go on.
    expect(engine.validate(schemaRule({ type: 'string' }), '"fine"', {}).valid).toBe(true);
  });

  it('shares one budget among all the rules of a call', () => {
    const rules: ValidationCriteria = Array.from({ length: 5 }, (_, i) => ({
      type: 'schema' as const,
      schema: { ...exponentialSchema(), title: `slow ${i}` },
      message: `slow ${i}`,
    }));
    const starts = engine.workerStarts;
    // One error for the call (not one per rule), after one budget: the worker is replaced once.
    expect(thrown(() => engine.validate(rules, '"x"', {}))).toEqual(notChecked(/1000 ms budget/));
    expect(engine.workerStarts).toBe(starts + 1);
  });

  it('never holds the event loop past the hard cap, even when no work is measured at all', async () => {
    // A machine where the worker gets no CPU at all: its work never reaches the budget, and the cap
    // (wall clock, everything included) ends the wait.
    const capped = new ValidationEngine({
      workerUrl: engineUrl,
      capMs: 300,
      clock: { ...SYSTEM_CLOCK, work: () => 0 },
    });
    try {
      await capped.load();
      expect(thrown(() => capped.validate(schemaRule(exponentialSchema()), '"x"', {}))).toEqual(
        notChecked(/^(?!.*starting).*no answer came within 300 ms/),
      );
      // The worker that ran it was replaced; once the new one is up, checks go on. A machine so busy that
      // even this answer takes longer than the 300 ms cap gets the same retryable error, and the call is
      // sent again as it says: what this holds is that the engine checks again, not how fast.
      let valid: boolean | undefined;
      for (let tries = 0; valid === undefined && tries < 20; tries++) {
        await capped.load();
        try {
          valid = capped.validate(schemaRule({ type: 'string' }), '"fine"', {}).valid;
        } catch (error) {
          if (!/no answer came within 300 ms/.test((error as Error).message)) throw error;
        }
      }
      expect(valid).toBe(true);
    } finally {
      capped.unload();
    }
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

describe('the budget measures the rule, never the machine', () => {
  const regex: ValidationCriterion = { type: 'regex', pattern: '^[a-z ]+$', message: 'lower-case words' };
  const schema: ValidationCriterion = {
    type: 'schema',
    schema: { type: 'object', required: ['a'] },
    message: 'an object with a',
  };
  const criteria: ValidationCriteria = [regex, schema];
  const workflow = {
    id: 'two-rules',
    name: 'n',
    description: 'd',
    version: '1.0.0',
    steps: [
      { id: 'one', title: 't', prompt: 'p', validationCriteria: [regex] },
      { id: 'two', title: 't', prompt: 'p', validationCriteria: [schema] },
    ],
  } as unknown as Workflow;

  it('a worker start slower than the budget counts for nothing: every verdict stands', () => {
    // A budget of 5 ms: no worker thread starts that fast (loading RE2 and ajv alone takes longer), and
    // none is started beforehand (no load()), so each call starts one inside its wait. The start-up
    // counts against the cap only; the rule's own work is measured as none.
    const slowStart = new ValidationEngine({
      workerUrl: engineUrl,
      budgetMs: 5,
      capMs: 120_000,
      clock: { ...SYSTEM_CLOCK, work: () => 0 },
    });
    try {
      for (let i = 0; i < 2; i++) {
        slowStart.unload();
        expect(slowStart.checkWorkflow(workflow)).toEqual([]);
        slowStart.unload();
        expect(slowStart.validate([regex], 'two words', {})).toEqual({
          valid: true,
          issues: [],
          suggestions: [],
        });
        slowStart.unload();
        expect(slowStart.validate([schema], '{"a": 1}', {}).valid).toBe(true);
      }
      expect(slowStart.workerStarts).toBe(6);
    } finally {
      slowStart.unload();
    }
  });

  it('a machine so loaded that every look at the clock finds 1.5 s gone changes no verdict', () => {
    // The hard cap (wall clock) is far off: it is what a loaded machine may reach, retryably, and what
    // this test holds is that the wall clock passing the budget at every look decides nothing.
    const loaded = new ValidationEngine({
      workerUrl: engineUrl,
      capMs: 600_000,
      clock: scriptedClock({ wallStepMs: 1500 }),
    });
    try {
      loaded.unload();
      expect(loaded.validate([regex], 'two words', {}).valid).toBe(true);
      expect(loaded.validate([regex], 'Two words', {}).issues).toEqual(['lower-case words']);
      expect(loaded.checkWorkflow(workflow)).toEqual([]);
    } finally {
      loaded.unload();
    }
  });

  it('a rule whose own work runs out is not checked, on every path, and the next call checks it', () => {
    const clock = scriptedClock({ workMs: 2 * VALIDATION_BUDGET_MS, overruns: 5 });
    // The scripted clock moves the wall by workMs at every look: a cap far off keeps this about the work.
    const slow = new ValidationEngine({ workerUrl: engineUrl, clock, capMs: 20 * VALIDATION_BUDGET_MS });
    try {
      const budget = /their own work ran past the 1000 ms budget/;
      expect(thrown(() => slow.validate(criteria, '{"a": 1}', {}))).toEqual(notChecked(budget));
      // A definition's rules are no violation of it when they were not checked: the same error.
      expect(thrown(() => slow.checkWorkflow(workflow))).toEqual(notChecked(budget));
      expect(thrown(() => slow.check(criteria))).toEqual(notChecked(budget));
      // Input patterns no longer "count as no match", output contracts get no "(root)" issue.
      expect(thrown(() => slow.matches('^[a-z]+$', 'abc'))).toEqual(notChecked(budget));
      expect(thrown(() => slow.schemaErrors({ type: 'object' }, {}))).toEqual(notChecked(budget));
      expect(clock.overrun).toBe(5);
      // Measured for real again: the verdicts, checked.
      expect(slow.validate(criteria, '{"a": 1}', {})).toMatchObject({
        valid: false,
        issues: ['lower-case words'],
      });
      expect(slow.checkWorkflow(workflow)).toEqual([]);
      expect(slow.matches('^[a-z]+$', 'abc')).toBe(true);
    } finally {
      slow.unload();
    }
  });

  it("measures work by the best source there is: the worker's readings, its thread, the process, the wall clock", () => {
    const probe = { seq: 1, postedAt: 0, tid: 0, idleCpuMs: undefined, doneCpuMs: undefined, wallMs: 5000 };
    // A request that is done: the worker's own readings before and after it, nothing read here.
    expect(
      SYSTEM_CLOCK.work({ ...probe, tid: 1, idleCpuMs: 40, doneCpuMs: 47, processCpuMs: undefined }),
    ).toBe(7);
    // No thread to read (not Linux): the process's CPU time since the request was posted, never the wall.
    const since = SYSTEM_CLOCK.work({ ...probe, processCpuMs: SYSTEM_CLOCK.processCpu() });
    expect(since).toBeGreaterThanOrEqual(0);
    expect(since).toBeLessThan(5000);
    // Nothing at all: the wall clock since the request was posted.
    expect(SYSTEM_CLOCK.work({ ...probe, processCpuMs: undefined })).toBe(5000);
  });

  it.runIf(process.platform === 'linux')("reads a thread's own CPU time from /proc", () => {
    const cpu = threadCpuMs('/proc/thread-self');
    expect(cpu).toEqual(expect.any(Number));
    expect(cpu).toBeGreaterThan(0);
  });
});
