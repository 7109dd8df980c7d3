import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ValidationEngine } from '../src/engine/validation-engine.js';
import { quickReference } from '../src/faces/authoring/authoring-prompts.js';
import { IdSchema, workflowJsonSchema } from '../src/model/workflow.js';
import { checkDefinition } from '../src/workflows/check.js';
import { ROOT } from './helpers/server.js';
import { validationWorkerUrl } from './helpers/validation-worker.js';

/**
 * docs/authoring-guide.md is served as the authoring spec resource and quoted in the prompts: it must
 * describe exactly the language the schema accepts, so the two cannot drift apart again.
 */
const guide = readFileSync(join(ROOT, 'docs', 'authoring-guide.md'), 'utf8');
const schema = workflowJsonSchema() as { $defs: Record<string, { properties?: Record<string, unknown> }> };

function propertiesOf(def: string): string[] {
  return Object.keys(schema.$defs[def]?.properties ?? {});
}

/** Every property name of every object anywhere in the schema. */
function allProperties(): Set<string> {
  const names = new Set<string>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    const props = (node as { properties?: Record<string, unknown> }).properties;
    if (props && typeof props === 'object') for (const name of Object.keys(props)) names.add(name);
    stack.push(...Object.values(node));
  }
  return names;
}

/** Names in the first column of the guide's field tables (`| field | … |`). */
function documentedFields(): string[] {
  const names: string[] = [];
  let inFieldTable = false;
  for (const line of guide.split('\n')) {
    if (!line.startsWith('|')) {
      inFieldTable = false;
      continue;
    }
    const first = line.split('|')[1]?.trim() ?? '';
    if (first === 'field') inFieldTable = true;
    else if (inFieldTable && !/^-+$/.test(first)) {
      for (const m of first.matchAll(/`([^`]+)`/g)) names.push(m[1] as string);
    }
  }
  return names;
}

describe('authoring guide', () => {
  it('mentions every top-level, step and nested property of the workflow JSON Schema', () => {
    const topLevel = propertiesOf('Workflow');
    const step = ['PromptStep', 'LoopStep', 'CommandStep'].flatMap(propertiesOf);
    expect(topLevel.length).toBeGreaterThan(10);
    expect(step).toEqual(expect.arrayContaining(['run', 'repeat', 'output_contract', 'depends_on', 'loop']));
    const missing = [...new Set([...topLevel, ...step, ...allProperties()])].filter(
      (name) => !guide.includes(`\`${name}\``),
    );
    expect(missing).toEqual([]);
  });

  it('documents no field the schema lacks', () => {
    const fields = documentedFields();
    expect(fields.length).toBeGreaterThan(40);
    const known = allProperties();
    expect(fields.filter((f) => !known.has(f))).toEqual([]);
  });

  it('every complete example in the guide is a valid workflow', async () => {
    const engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });
    const blocks = [...guide.matchAll(/```(yaml|json)\n([\s\S]*?)```/g)];
    let complete = 0;
    for (const [, format, text] of blocks) {
      if (!/^\s*(?:"id"|id):/m.test(text as string) || !/(?:"steps"|^steps):/m.test(text as string)) continue;
      complete++;
      const report = await checkDefinition(
        { text: text as string, format: format as 'yaml' | 'json' },
        'strict',
        {
          engine,
        },
      );
      expect({ example: (text as string).slice(0, 60), errors: report.errors }).toEqual({
        example: (text as string).slice(0, 60),
        errors: [],
      });
    }
    expect(complete).toBeGreaterThanOrEqual(3);
  });

  it('prompts carry a short quick reference that points at the full guide', () => {
    const reference = quickReference(guide);
    expect(reference).toContain('workflowlookup://authoring/spec');
    for (const word of ['run', 'repeat', 'inputs', 'validationCriteria', '${{ env.<NAME> }}'])
      expect(reference).toContain(word);
    expect(Buffer.byteLength(reference)).toBeLessThan(4096);
    expect(Buffer.byteLength(guide)).toBeGreaterThan(8 * Buffer.byteLength(reference));
  });
});

describe('one id rule', () => {
  it('the tools reference, the guide and the checker agree: [a-z0-9_-] or ns.name, 3-64 characters', () => {
    const reference = readFileSync(join(ROOT, 'docs', 'tools.md'), 'utf8');
    // Every statement of the rule names both forms; none says underscores or dots are out.
    for (const [name, text] of [
      ['docs/tools.md', reference],
      ['docs/authoring-guide.md', guide],
    ] as const) {
      const statements = text.split('\n').filter((l) => /\bids?\b.*(match|are 3-64|3-64 char)/i.test(l));
      expect(statements.length, name).toBeGreaterThan(0);
      for (const line of statements) {
        expect(line, `${name}: ${line}`).not.toMatch(
          /no underscores|no dots|`\^\[a-z0-9-\]\+\$`(?! and WorkRail)/,
        );
      }
      expect(text, name).toContain('`^[a-z0-9_-]+$`');
      expect(text, name).toContain('`ns.name`');
    }
    const examples = (label: string) =>
      [...(new RegExp(`^${label}: (.*)$`, 'm').exec(guide)?.[1] ?? '').matchAll(/`([^`]+)`/g)].map(
        (m) => m[1] as string,
      );
    const valid = examples('Valid ids');
    const invalid = examples('Not ids');
    expect(valid).toContain('plan_step');
    expect(valid).toContain('wr.coding-task');
    expect(invalid.length).toBeGreaterThan(4);
    for (const id of valid) expect(IdSchema.safeParse(id).success, id).toBe(true);
    for (const id of invalid) expect(IdSchema.safeParse(id).success, id).toBe(false);
  });
});
