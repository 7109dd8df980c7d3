import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { workflowJsonSchema } from '../model/workflow.js';
import { formatOf, isDefinitionFile, parseDefinition } from './parse.js';
import { validateDefinition } from './validate-definition.js';

const root = join(import.meta.dirname, '..', '..');
const committed = JSON.parse(readFileSync(join(root, 'schema', 'workflow.schema.json'), 'utf8'));

async function definitions(dir: string): Promise<[string, unknown][]> {
  const out: [string, unknown][] = [];
  for (const f of readdirSync(dir).filter((name) => isDefinitionFile(name))) {
    const parsed = await parseDefinition(readFileSync(join(dir, f), 'utf8'), formatOf(f) ?? 'json');
    if (parsed.ok) out.push([f, parsed.data]);
  }
  return out;
}

describe('workflow JSON Schema', () => {
  it('is the schema generated from the zod model (run `npm run schema` after changing the model)', () => {
    expect(committed).toEqual(workflowJsonSchema());
  });

  it('agrees with the model on every bundled workflow and fixture', async () => {
    const validate = new Ajv2020({ strict: false, allErrors: true }).compile(committed);
    const all = [
      ...(await definitions(join(root, 'workflows'))),
      ...(await definitions(join(root, 'test', 'fixtures', 'valid'))),
      ...(await definitions(join(root, 'test', 'fixtures', 'invalid'))),
    ];
    expect(all.length).toBeGreaterThan(8);
    for (const [file, data] of all) {
      const model = validateDefinition(data);
      const semanticOnly =
        !model.ok && model.violations.every((v) => v.rule === 'uniqueStepId' || v.rule === 'loopBody');
      expect({ file, valid: validate(data) }).toEqual({ file, valid: model.ok || semanticOnly });
    }
  });

  it('accepts the WorkRail format fields', () => {
    const workrail = {
      id: 'workrail-style',
      name: 'WorkRail style',
      description: 'Uses every WorkRail field',
      version: '0.1.0',
      category: 'development',
      preconditions: ['p'],
      clarificationPrompts: ['c'],
      metaGuidance: ['m'],
      steps: [
        {
          id: 'step-one',
          title: 'One',
          prompt: 'Do it',
          agentRole: 'You are a careful engineer',
          guidance: ['g'],
          askForFiles: true,
          requireConfirmation: { var: 'mode', equals: 'strict' },
          runCondition: { and: [{ var: 'a', gt: 1 }, { not: { var: 'b' } }] },
          validationCriteria: [{ type: 'length', min: 1, message: 'non-empty' }],
        },
        {
          id: 'loop-one',
          type: 'loop',
          title: 'Loop',
          loop: { type: 'for', count: 3, maxIterations: 3, iterationVar: 'i' },
          body: [{ id: 'inner-step', title: 'Inner', prompt: 'again' }],
        },
      ],
    };
    expect(validateDefinition(workrail).ok).toBe(true);
  });
});
