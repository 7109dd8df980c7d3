import { describe, expect, it } from 'vitest';
import { boundedDistance, didYouMean, MAX_CANDIDATES, MAX_COMPARED, nearestNames } from './nearest.js';

describe('nearestNames', () => {
  it('finds typos, other spellings and a name cut short', () => {
    expect(nearestNames('promt', ['prompt', 'title', 'runCondition'])).toEqual(['prompt']);
    expect(nearestNames('workflowId', ['workflow_id', 'execution_id'])).toEqual(['workflow_id']);
    expect(nearestNames('coding-task', ['coding-task-workflow', 'mr-review-workflow'])).toEqual([
      'coding-task-workflow',
    ]);
    expect(nearestNames('postgress', ['postgres', 'postgresql'])).toEqual(['postgres']);
    expect(nearestNames('zzzz', ['prompt', 'title'])).toEqual([]);
    expect(didYouMean('titel', ['title'])).toBe('; did you mean "title"?');
    expect(didYouMean('qqq', ['title'])).toBe('');
  });

  it('bounds the work: names are compared on their first 64 characters, and at most 10,000 of them', () => {
    // Equal on the compared prefix: found however long the rest is.
    const long = 'a'.repeat(MAX_COMPARED);
    expect(nearestNames(`${long}${'b'.repeat(100_000)}`, [`${long}c`])).toEqual([`${long}c`]);
    const known = Array.from({ length: MAX_CANDIDATES + 5 }, (_, i) => `name-${i}`);
    known.push('target');
    expect(nearestNames('targt', known)).toEqual([]);
    expect(nearestNames('targt', known.slice(-10))).toEqual(['target']);
  });

  it('the distance stops once it exceeds the limit', () => {
    expect(boundedDistance('kitten', 'sitting', 3)).toBe(3);
    expect(boundedDistance('kitten', 'sitting', 1)).toBe(2);
    expect(boundedDistance('a', 'abcdef', 2)).toBe(3);
  });
});
