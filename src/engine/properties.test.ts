/**
 * Property tests of the engine's pure parts: whatever they are given, the condition evaluator, the
 * templating engine and the validation engine answer or fail with a structured error (DomainFailure,
 * TemplateError, CriteriaError), never anything else; and rendering is single-pass.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import type { Condition, ValidationCriterion } from '../model/workflow.js';
import { evaluateCondition } from './conditions.js';
import { DomainFailure } from './errors.js';
import {
  expressionsIn,
  promptBudget,
  render,
  renderPreview,
  renderPrompt,
  TemplateError,
  type TemplateScope,
} from './templating.js';
import { CriteriaError, ValidationEngine } from './validation-engine.js';

const RUNS = 3000;

/** Runs `f`; anything it throws must be one of `allowed`. */
function onlyThrows(f: () => unknown, ...allowed: (abstract new (...args: never[]) => Error)[]): void {
  try {
    f();
  } catch (error) {
    if (!allowed.some((kind) => error instanceof kind)) throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Conditions

const varName = fc.constantFrom(
  'a',
  'b',
  'a.b',
  'a.b.c',
  'list',
  'list.0',
  'missing',
  'constructor',
  '__proto__',
  'toString',
  'a..b',
  '',
);
const number = fc.oneof(fc.double(), fc.integer({ min: -3, max: 3 }));
const leaf: fc.Arbitrary<Condition> = fc.record(
  {
    var: varName,
    equals: fc.jsonValue({ maxDepth: 2 }),
    not_equals: fc.jsonValue({ maxDepth: 2 }),
    gt: number,
    gte: number,
    lt: number,
    lte: number,
  },
  { requiredKeys: ['var'] },
) as fc.Arbitrary<Condition>;
const { condition } = fc.letrec<{ condition: Condition }>((tie) => ({
  condition: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record({ and: fc.array(tie('condition'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ or: fc.array(tie('condition'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ not: tie('condition') }),
  ),
}));
/** A chain of not/and up to 600 deep around a condition (past MAX_DEPTH the engine refuses it). */
const deepCondition = fc.tuple(condition, fc.integer({ min: 0, max: 600 })).map(([c, depth]) => {
  let out = c;
  for (let i = 0; i < depth; i++) out = i % 2 === 0 ? { not: out } : { and: [out] };
  return out;
});
const context = fc.dictionary(
  fc.constantFrom('a', 'b', 'list', 'x', '__proto__', 'constructor'),
  fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.dictionary(fc.constantFrom('b', 'c', '0'), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
  ),
  { maxKeys: 4 },
) as fc.Arbitrary<Record<string, unknown>>;

describe('condition evaluator', () => {
  it('returns a boolean or fails with a DomainFailure, for any condition and context', () => {
    fc.assert(
      fc.property(fc.oneof(condition, deepCondition), context, (c, ctx) => {
        onlyThrows(() => {
          if (typeof evaluateCondition(c, ctx) !== 'boolean') throw new Error('not a boolean');
        }, DomainFailure);
      }),
      { numRuns: RUNS },
    );
  });

  it('composes: not inverts, and/or are the logical connectives', () => {
    fc.assert(
      fc.property(condition, condition, context, (x, y, ctx) => {
        const ex = evaluateCondition(x, ctx);
        const ey = evaluateCondition(y, ctx);
        return (
          evaluateCondition({ not: x }, ctx) === !ex &&
          evaluateCondition({ and: [x, y] }, ctx) === (ex && ey) &&
          evaluateCondition({ or: [x, y] }, ctx) === (ex || ey)
        );
      }),
      { numRuns: RUNS },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Templating

const SENTINEL = 'SENTINEL-7f3a';
/** Template-looking text, including references to the sentinel, that must never be expanded. */
const trickyText = fc
  .array(
    fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom(
        '${{',
        '}}',
        '{{',
        '}',
        '{',
        '$',
        ' ',
        'inputs.secret',
        'secret',
        'steps.s.output',
        'env.E',
        '{{secret}}',
        '${{ inputs.secret }}',
        '${{ env.SECRET }}',
        '```',
      ),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(''));
const value = fc.oneof(
  trickyText,
  fc.jsonValue({ maxDepth: 3 }),
  fc.array(trickyText, { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 3 }), trickyText, { maxKeys: 3 }),
);
const scope: fc.Arbitrary<TemplateScope> = fc
  .record({ a: value, b: value, c: value, out: value })
  .map(({ a, b, c, out }) => ({
    inputs: { a, b, secret: SENTINEL },
    steps: { s: { out, n: 1 } },
    env: { E: 'env-value', SECRET: SENTINEL },
    context: { a, c, secret: SENTINEL, inputs: { a, secret: SENTINEL } },
  }));
/** References that never name the sentinel directly. */
const reference = fc.constantFrom(
  '${{ inputs.a }}',
  '${{inputs.b}}',
  '${{ steps.s.output.out }}',
  '${{ steps.s.output }}',
  '${{ steps.later.output }}',
  '${{ inputs.nope }}',
  '${{ env.E }}',
  '${{ bogus }}',
  '{{a}}',
  '{{ c }}',
  '{{inputs.a}}',
  '{{nope}}',
);
const literal = fc.string({ maxLength: 8 }).map((s) => s.replace(/[{}$]/g, ''));
const template = fc.array(fc.oneof(literal, reference), { maxLength: 8 }).map((parts) => parts.join(''));

describe('templating', () => {
  it('renders or fails with TemplateError, for any template text and scope', () => {
    fc.assert(
      fc.property(fc.oneof(trickyText, template), scope, (text, s) => {
        onlyThrows(() => render(text, s), TemplateError);
        onlyThrows(() => render({ k: [text, { n: text }] }, s), TemplateError);
        onlyThrows(() => renderPreview(text, s), TemplateError);
        renderPreview(text, s, { lenient: true });
        expect(typeof renderPrompt(text, s, promptBudget())).toBe('string');
        expect(Array.isArray(expressionsIn(text))).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('is single-pass: a substituted value is never expanded, so the sentinel never appears', () => {
    fc.assert(
      fc.property(template, scope, (text, s) => {
        for (const out of [
          renderPreview(text, s, { lenient: true }).value,
          renderPreview({ body: [text] }, s, { lenient: true }).value,
          renderPrompt(text, s, promptBudget()),
        ]) {
          expect(JSON.stringify(out)).not.toContain(SENTINEL);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('splices string values exactly, as written, in one pass', () => {
    const name = fc.constantFrom('a', 'b');
    const segments = fc.array(
      fc.oneof(
        literal.map((l) => ({ l })),
        name.map((n) => ({ n })),
      ),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(segments, trickyText, trickyText, (parts, a, b) => {
        const values: Record<string, string> = { a, b };
        const text = parts.map((p) => ('l' in p ? p.l : `\${{ inputs.${p.n} }}`)).join('');
        const expected = parts.map((p) => ('l' in p ? p.l : values[p.n])).join('');
        const s: TemplateScope = { inputs: values, steps: {}, env: {}, context: { a: '{{b}}', b: SENTINEL } };
        const refs = parts.filter((p) => 'n' in p);
        // A template that is exactly one reference (whitespace around it aside) is that value.
        const whole = refs.length === 1 && parts.every((p) => 'n' in p || p.l.trim() === '');
        expect(render(text, s)).toBe(whole ? values[(refs[0] as { n: string }).n] : expected);
      }),
      { numRuns: RUNS },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Validation engine

let engine: ValidationEngine;
beforeAll(async () => {
  engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });
  await engine.load();
});

const message = fc.constant('m');
const rule: fc.Arbitrary<ValidationCriterion> = fc.oneof(
  fc.record({
    type: fc.constant('contains' as const),
    value: fc.string({ minLength: 1, maxLength: 3 }),
    message,
  }),
  fc.record({
    type: fc.constant('regex' as const),
    pattern: fc.oneof(
      fc.string({ minLength: 1, maxLength: 8 }),
      fc.constantFrom('^a+$', '(a|b)*c', '\\d{2,}', '(?=x)', '[', 'a{2,1}', '^(a+)+$', '\\p{L}+'),
    ),
    flags: fc.constantFrom('', 'i', 'm', 's', 'u', 'ims', 'x', 'g'),
    message,
    condition: fc.option(leaf, { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('length' as const),
    min: fc.option(fc.nat(10), { nil: undefined }),
    max: fc.option(fc.nat(10), { nil: undefined }),
    message,
  }),
  fc.record({
    type: fc.constant('schema' as const),
    schema: fc.oneof(
      fc.dictionary(
        fc.constantFrom(
          'type',
          'required',
          'pattern',
          'items',
          'uniqueItems',
          'minLength',
          'enum',
          '$ref',
          'x',
        ),
        fc.jsonValue({ maxDepth: 2 }),
        { maxKeys: 3 },
      ),
      fc.constantFrom(
        { type: 'array', uniqueItems: true },
        { type: 'object', patternProperties: { '^a': { type: 'number' } } },
        { type: 'string', pattern: '^(a+)+$' },
        { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' },
      ),
    ),
    message,
  }),
) as fc.Arbitrary<ValidationCriterion>;
const { criterion } = fc.letrec<{ criterion: ValidationCriterion }>((tie) => ({
  criterion: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    rule,
    fc.record({ and: fc.array(tie('criterion'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ or: fc.array(tie('criterion'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ not: tie('criterion'), message: fc.option(message, { nil: undefined }) }),
  ),
}));
const output = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
);

describe('validation engine', () => {
  it('answers or fails with CriteriaError (or a DomainFailure from a condition), for any criteria and output', () => {
    fc.assert(
      fc.property(fc.array(criterion, { maxLength: 3 }), output, context, (criteria, out, ctx) => {
        onlyThrows(() => engine.check(criteria), CriteriaError);
        onlyThrows(
          () => {
            const result = engine.validate(criteria, out, ctx);
            expect(result.valid).toBe(result.issues.length === 0);
          },
          CriteriaError,
          DomainFailure,
        );
      }),
      { numRuns: RUNS },
    );
  });

  it('agrees with the plain definition of contains and length', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 3 }),
        fc.string({ maxLength: 12 }),
        fc.nat(12),
        (needle, out, max) => {
          const criteria: ValidationCriterion[] = [
            { type: 'contains', value: needle || 'x', message: 'c' },
            { type: 'length', max, message: 'l' },
          ];
          const expected = out.includes(needle || 'x') && [...out].length <= max;
          expect(engine.validate(criteria, out, {}).valid).toBe(expected);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
