import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonLocator, yamlLocator } from './locate.js';
import { loadYaml } from './parse.js';
import { toPointer } from './validate-definition.js';

/** Every pointer in a value, and a few that do not exist (a missing property, an index past the end). */
function pointersOf(value: unknown): string[] {
  const out: string[] = [];
  const visit = (v: unknown, path: PropertyKey[]) => {
    out.push(toPointer(path));
    if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) visit(child, [...path, Array.isArray(v) ? Number(k) : k]);
      out.push(toPointer([...path, 'missing-key']), toPointer([...path, 99]));
    }
  };
  visit(value, []);
  return out;
}

describe('jsonLocator', () => {
  it('finds every node where the YAML library does, in one pass, for any JSON text', async () => {
    const YAML = await loadYaml();
    const key = fc.string({ maxLength: 6 }).filter((k) => k !== '__proto__');
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.boolean(), fc.constant(null)),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(key, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    await fc.assert(
      fc.asyncProperty(value, fc.constantFrom(0, 1, 2, '\t'), async (data, indent) => {
        const text = JSON.stringify(data, null, indent);
        const pointers = pointersOf(data);
        const lineCounter = new YAML.LineCounter();
        const doc = YAML.parseDocument(text, { lineCounter, uniqueKeys: false });
        fc.pre(doc.errors.length === 0);
        const fromYaml = yamlLocator(doc, lineCounter, YAML, text)(pointers);
        const fromJson = jsonLocator(text)(pointers);
        expect(Object.fromEntries(fromJson)).toEqual(Object.fromEntries(fromYaml));
      }),
      { numRuns: 300 },
    );
  });

  it('points a member at its key, a missing property at its parent, and escapes ~ and / in keys', () => {
    const text = '{\n  "a/b": {\n    "c~d": [10, {"e": 1}]\n  }\n}';
    const at = jsonLocator(text)(['/a~1b/c~0d/1/e', '/a~1b/c~0d/1/zzz', '/nope', '']);
    expect(Object.fromEntries(at)).toEqual({
      '/a~1b/c~0d/1/e': { line: 3, column: 18, source: '1' },
      '/a~1b/c~0d/1/zzz': { line: 3, column: 17 },
      '/nope': { line: 1, column: 1 },
      '': { line: 1, column: 1 },
    });
  });
});

describe('yamlLocator', () => {
  it('points at the key of a member and quotes a scalar as written (1.0 stays 1.0)', async () => {
    const YAML = await loadYaml();
    const text = 'id: x\nversion: 1.0\nsteps:\n  - id: a\n    promt: "hi"\n';
    const lineCounter = new YAML.LineCounter();
    const doc = YAML.parseDocument(text, { lineCounter });
    const at = yamlLocator(
      doc,
      lineCounter,
      YAML,
      text,
    )(['/version', '/steps/0', '/steps/0/promt', '/steps/0/x']);
    expect(Object.fromEntries(at)).toEqual({
      '/version': { line: 2, column: 1, source: '1.0' },
      '/steps/0': { line: 4, column: 5 },
      '/steps/0/promt': { line: 5, column: 5, source: '"hi"' },
      '/steps/0/x': { line: 4, column: 5 },
    });
  });
});
