import { describe, expect, it } from 'vitest';
import type { Condition } from '../model/workflow.js';
import { conditionVariables, deepEqual, evaluateCondition, readPath } from './conditions.js';
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

  it('treats a missing variable as undefined', () => {
    expect(evaluateCondition({ var: 'missing', equals: null }, ctx)).toBe(false);
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
