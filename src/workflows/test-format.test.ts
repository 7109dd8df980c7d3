import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { formatOf, isTestFile, parseDefinition } from './parse.js';
import { parseTests } from './test-files.js';
import { testFileJsonSchema } from './test-format.js';

const root = join(import.meta.dirname, '..', '..');
const FILE = join(root, 'schema', 'workflow-test.schema.json');

describe('workflow test JSON Schema', () => {
  it('is the schema generated from the zod model (WORKFLOWLOOKUP_WRITE_DOCS=1 rewrites it)', () => {
    const generated = `${JSON.stringify(testFileJsonSchema(), null, 2)}\n`;
    if (process.env.WORKFLOWLOOKUP_WRITE_DOCS === '1') writeFileSync(FILE, generated);
    expect(existsSync(FILE), 'schema/workflow-test.schema.json').toBe(true);
    expect(readFileSync(FILE, 'utf8')).toBe(generated);
  });

  it('agrees with the model on every bundled test file, and on files the model refuses', async () => {
    const validate = new Ajv2020({ strict: false, allErrors: true }).compile(testFileJsonSchema());
    const dir = join(root, 'workflows');
    const files = readdirSync(dir).filter(isTestFile);
    expect(files.length).toBeGreaterThanOrEqual(8);
    for (const f of files) {
      const text = readFileSync(join(dir, f), 'utf8');
      const parsed = await parseDefinition(text, formatOf(f) ?? 'yaml');
      expect(parsed.ok, f).toBe(true);
      expect(validate(parsed.ok ? parsed.data : undefined), `${f}: ${JSON.stringify(validate.errors)}`).toBe(
        true,
      );
      expect((await parseTests({ text, format: formatOf(f) ?? 'yaml' })).errors, f).toEqual([]);
    }
    for (const bad of [
      {},
      { scenarios: [] },
      { scenarios: [{ name: 'x', expect: { state: 'done' } }] },
      { scenarios: [{ name: 'x', steps: { a: [{ times: 0 }] } }] },
      { scenarios: [{ name: 'x', commands: { a: { error: { reason: 'boom' } } } }] },
      { scenarios: [{ name: 'x', surprise: true }] },
      // Children: how one ends, what each does (one level), how a join ends.
      { scenarios: [{ name: 'x', children: { fan: { end: 'crashed' } } }] },
      { scenarios: [{ name: 'x', children: { fan: { each: { a: { each: {} } } } } }] },
      { children: { fan: { late: 'yes' } }, scenarios: [{ name: 'x' }] },
      { scenarios: [{ name: 'x', expect: { children: { fan: { join: 'maybe' } } } }] },
      { scenarios: [{ name: 'x', expect: { children: { fan: { each: { a: { summary: 'done' } } } } } }] },
    ]) {
      expect(validate(bad), JSON.stringify(bad)).toBe(false);
      expect((await parseTests({ data: bad })).valid, JSON.stringify(bad)).toBe(false);
    }
    const scripted = {
      children: { fan: { defaults: { summary: 'verdict: pass' } } },
      scenarios: [
        {
          name: 'x',
          children: { fan: { steps: { look: [{ summary: 'a' }] }, each: { '2': { end: 'abandoned' } } } },
          expect: {
            children: {
              fan: {
                completed: ['1'],
                abandoned: ['2'],
                join: 'held',
                timeouts: 0,
                each: { '1': { path: ['look'] } },
              },
            },
          },
        },
      ],
    };
    expect(validate(scripted), JSON.stringify(validate.errors)).toBe(true);
    expect((await parseTests({ data: scripted })).errors).toEqual([]);
  });
});
