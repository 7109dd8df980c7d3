import { describe, expect, it } from 'vitest';
import type { Condition } from '../model/workflow.js';
import { conditionVariables, deepEqual, evaluateCondition, looseEquals, readPath } from './conditions.js';
import { DomainFailure } from './errors.js';
import { MAX_DEPTH } from './json-text.js';

const ctx = {
  taskScope: 'large',
  complexity: 0.8,
  ticket: { priority: 'high', tags: ['a'] },
  zero: 0,
  list: [],
};

describe('evaluateCondition', () => {
  it.each([
    [{ var: 'taskScope', equals: 'large' }, true],
    [{ var: 'taskScope', equals: 'small' }, false],
    [{ var: 'taskScope', not_equals: 'small' }, true],
    [{ var: 'complexity', gt: 0.8 }, false],
    [{ var: 'complexity', gte: 0.8 }, true],
    [{ var: 'complexity', lt: 0.9 }, true],
    [{ var: 'complexity', lte: 0.7 }, false],
    [{ var: 'complexity', gt: 0.5, lt: 0.9 }, true],
    [{ var: 'ticket.priority', equals: 'high' }, true],
    [{ var: 'ticket.tags', equals: ['a'] }, true],
    [{ var: 'ticket' }, true],
    [{ var: 'zero' }, false],
    [{ var: 'list' }, false],
    [
      {
        and: [
          { var: 'taskScope', equals: 'large' },
          { var: 'complexity', gt: 0.5 },
        ],
      },
      true,
    ],
    [
      {
        or: [
          { var: 'taskScope', equals: 'small' },
          { var: 'complexity', gt: 0.9 },
        ],
      },
      false,
    ],
    [{ not: { var: 'taskScope', equals: 'small' } }, true],
  ])('%j -> %s', (condition, expected) => {
    expect(evaluateCondition(condition, ctx)).toBe(expected);
  });

  it('treats a missing variable as undefined, which equals null as in WorkRail', () => {
    expect(evaluateCondition({ var: 'missing', equals: null }, ctx)).toBe(true);
    expect(evaluateCondition({ var: 'missing', not_equals: null }, ctx)).toBe(false);
    expect(evaluateCondition({ var: 'missing', equals: 'large' }, ctx)).toBe(false);
    expect(evaluateCondition({ var: 'missing', not_equals: 'x' }, ctx)).toBe(true);
    expect(evaluateCondition({ var: 'missing', gt: -1 }, ctx)).toBe(false);
    expect(evaluateCondition({ var: 'missing' }, ctx)).toBe(false);
    expect(evaluateCondition({ var: 'taskScope', gt: 1 }, ctx)).toBe(false);
  });

  it('never reads through the prototype chain', () => {
    expect(readPath(ctx, 'constructor')).toBeUndefined();
    expect(readPath(ctx, '__proto__')).toBeUndefined();
    expect(readPath(ctx, 'ticket.priority.length')).toBeUndefined();
  });
});

describe("WorkRail's comparison rule", () => {
  it.each([
    ['Small', 'small', true],
    [' small ', 'SMALL', true],
    ['small', 'smaller', false],
    ['10', 10, true],
    [10, '10', true],
    ['10.0', 10, true],
    ['ten', 10, false],
    ['true', true, true],
    ['Yes', true, true],
    ['1', true, true],
    ['false', false, true],
    ['no', false, true],
    ['true', false, false],
    [true, 'TRUE', true],
    [1, true, false],
    [null, null, true],
    [undefined, null, true],
    [0, null, false],
    [['a'], ['a'], true],
  ])('%j equals %j: %s', (value, compared, expected) => {
    expect(looseEquals(value, compared)).toBe(expected);
    expect(evaluateCondition({ var: 'v', equals: compared as never }, { v: value })).toBe(expected);
    expect(evaluateCondition({ var: 'v', not_equals: compared as never }, { v: value })).toBe(!expected);
  });

  it('applies to in; numeric comparisons read numbers only; an exact key wins over a dotted path', () => {
    expect(evaluateCondition({ var: 'v', in: ['Large', 'Medium'] }, { v: 'large' })).toBe(true);
    expect(evaluateCondition({ var: 'v', in: [5, 6] }, { v: '6' })).toBe(true);
    expect(evaluateCondition({ var: 'v', gt: 5 }, { v: '10' })).toBe(false);
    expect(evaluateCondition({ var: 'a.b', equals: 'flat' }, { 'a.b': 'flat', a: { b: 'nested' } })).toBe(
      true,
    );
    expect(evaluateCondition({ var: 'a.b', equals: 'nested' }, { a: { b: 'nested' } })).toBe(true);
  });
});

describe('deep structures (10,000 levels)', () => {
  const deepValue = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = { a: [v] };
    return v;
  };
  const deepCondition = (depth: number): Condition => {
    let c: Condition = { var: 'x', equals: 1 };
    for (let i = 0; i < depth; i++) c = i % 2 === 0 ? { not: c } : { and: [c] };
    return c;
  };

  it('compares deeply nested values without overflowing the stack', () => {
    expect(deepEqual(deepValue(10_000), deepValue(10_000))).toBe(true);
    expect(deepEqual(deepValue(10_000), deepValue(9_999))).toBe(false);
    expect(evaluateCondition({ var: 'v', equals: deepValue(10_000) }, { v: deepValue(10_000) })).toBe(true);
    expect(evaluateCondition({ var: 'v', not_equals: deepValue(10_000) }, { v: deepValue(10_001) })).toBe(
      true,
    );
  });

  it('refuses a condition nested 10,000 deep with a domain error, not a RangeError', () => {
    const failure = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    for (const f of [
      () => evaluateCondition(deepCondition(10_000), { x: 1 }),
      () => conditionVariables(deepCondition(10_000)),
    ]) {
      const error = failure(f);
      expect(error).toBeInstanceOf(DomainFailure);
      expect((error as DomainFailure).error).toMatchObject({
        code: 'workflow_invalid',
        violations: [{ rule: 'maxDepth', message: expect.stringContaining(`${MAX_DEPTH} levels`) }],
      });
    }
    expect(evaluateCondition(deepCondition(100), { x: 1 })).toBe(true);
    expect(conditionVariables(deepCondition(100))).toEqual(['x']);
  });
});
