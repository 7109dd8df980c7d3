import { describe, expect, it } from 'vitest';
import type { InputSpec } from '../model/workflow.js';
import { checkInputValue, resolveInputs } from './inputs.js';

const matches = (pattern: string, text: string) => new RegExp(pattern).test(text);

describe('inputs', () => {
  it('checks types, enums, lengths, patterns and ranges', () => {
    const spec = (s: Partial<InputSpec>) => ({ description: 'd', required: false, ...s }) as InputSpec;
    expect(checkInputValue(spec({ type: 'string', enum: ['a', 'b'] }), 'c', matches)).toBe(
      'must be one of "a", "b"',
    );
    expect(checkInputValue(spec({ type: 'integer', minimum: 2 }), 1, matches)).toBe('must be >= 2');
    expect(checkInputValue(spec({ type: 'string', pattern: '^x' }), 'y', matches)).toBe('must match ^x');
    expect(checkInputValue(spec({ type: 'string', maxLength: 1 }), '😀😀', matches)).toBe(
      'must be at most 1 characters',
    );
  });

  it('handles values and enums nested 10,000 deep without a stack overflow', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = { a: [deep] };
    const spec = { type: 'object', description: 'd', required: true, enum: [deep] } as unknown as InputSpec;
    expect(checkInputValue(spec, deep, matches)).toBeUndefined();
    expect(checkInputValue(spec, { a: [] }, matches)).toMatch(/^must be one of \{"a":\[\{"a":/);
    expect(resolveInputs({ d: spec }, { d: deep }, { env: {}, matches }).ready).toBe(true);
  });
});
