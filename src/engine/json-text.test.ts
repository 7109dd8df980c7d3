import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ELLIPSIS, exactJson, MAX_DEPTH, NestingError, nestedDeeperThan, previewJson } from './json-text.js';

function nested(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { a: v } : [v];
  return v;
}

describe('exactJson', () => {
  it('writes what JSON.stringify writes for JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(exactJson(value)).toBe(JSON.stringify(value));
      }),
      { numRuns: 2000 },
    );
    expect(exactJson({ a: undefined, b: [undefined, () => 1], c: Number.NaN })).toBe(
      JSON.stringify({ a: undefined, b: [undefined, () => 1], c: Number.NaN }),
    );
    expect(exactJson(undefined)).toBeUndefined();
    expect(exactJson(new Date(0))).toBe(JSON.stringify(new Date(0)));
  });

  it('fails with NestingError, not a stack overflow, past MAX_DEPTH (10,000 levels)', () => {
    expect(() => JSON.stringify(nested(10_000))).toThrow(RangeError);
    expect(() => exactJson(nested(10_000))).toThrow(NestingError);
    expect(exactJson(nested(MAX_DEPTH))).toBe(JSON.stringify(nested(MAX_DEPTH)));
    expect(() => exactJson(nested(MAX_DEPTH + 1))).toThrow(NestingError);
  });
});

describe('previewJson', () => {
  it('stops at maxChars, with work bounded by it too', () => {
    const huge = new Array(1_000_000).fill({ id: 1234567, name: 'x'.repeat(20) });
    const preview = previewJson(huge, 1000);
    expect(preview.text).toHaveLength(1000);
    expect(preview.complete).toBe(false);
    expect(JSON.stringify(huge).startsWith(preview.text)).toBe(true);
    expect(previewJson('y'.repeat(5_000_000), 10)).toEqual({ text: `"${'y'.repeat(9)}`, complete: false });
  });

  it('is a prefix of the JSON text and complete when it fits', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 200 }), (value, max) => {
        const full = JSON.stringify(value);
        const preview = previewJson(value, max);
        if (full.length <= max) expect(preview).toEqual({ text: full, complete: true });
        else {
          expect(preview.complete).toBe(false);
          expect(preview.text).toHaveLength(max);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('elides levels past MAX_DEPTH', () => {
    const preview = previewJson(nested(10_000), 100_000);
    expect(preview.complete).toBe(false);
    expect(preview.text).toContain(ELLIPSIS);
  });
});

describe('nestedDeeperThan', () => {
  it('measures any depth without recursion', () => {
    expect(nestedDeeperThan(nested(1_000_000), MAX_DEPTH)).toBe(true);
    expect(nestedDeeperThan(nested(MAX_DEPTH), MAX_DEPTH)).toBe(false);
    expect(nestedDeeperThan(nested(MAX_DEPTH + 1), MAX_DEPTH)).toBe(true);
    expect(nestedDeeperThan('x', 0)).toBe(false);
  });
});
