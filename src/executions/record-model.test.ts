import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonical } from './execution-model.js';

// The hashes of outputs and record events are sha256 of canonical(); chains already stored depend on its
// exact text. The form it had (map, filter, sort, join) is kept here as the reference it must equal.
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

describe('canonical', () => {
  it('writes any JSON value (and undefined members) exactly as the reference form does', () => {
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        { depthSize: 'small' },
        fc.string({ unit: 'binary' }),
        fc.double(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.constant(undefined),
        fc.array(tie('any'), { maxLength: 5 }),
        fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }), tie('any'), { maxKeys: 6 }),
      ),
    })).any;
    fc.assert(
      fc.property(value, (v) => canonical(v) === reference(v)),
      { numRuns: 2000 },
    );
  });

  it('sorts keys by code unit and leaves undefined members out', () => {
    expect(canonical({ b: 1, a: [1, undefined, { d: undefined, c: 'x' }], é: true, Z: null })).toBe(
      '{"Z":null,"a":[1,null,{"c":"x"}],"b":1,"é":true}',
    );
  });
});
