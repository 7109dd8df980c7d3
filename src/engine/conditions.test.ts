import { describe, expect, it } from 'vitest';
import { evaluateCondition, readPath } from './conditions.js';

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
