import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import type { ValidationCriteria } from '../model/workflow.js';
import { DefinitionCache } from './definition-cache.js';
import { WorkflowRegistry } from './registry.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('checks definitions with the regex worker at start, then does not keep it running', async () => {
  const root = mkdtempSync(join(tmpdir(), 'wl-registry-'));
  dir = root;
  const source = join(root, 'workflows');
  mkdirSync(source);
  const criteria = (pattern: string): ValidationCriteria => [{ type: 'regex', pattern, message: 'say it' }];
  const definition = (id: string, pattern: string) =>
    JSON.stringify({
      id,
      name: id,
      description: 'd',
      version: '1.0.0',
      steps: [{ id: 'say-it', title: 'Say it', prompt: 'Say it.', validationCriteria: criteria(pattern) }],
    });
  writeFileSync(join(source, 'good.json'), definition('good', '^ok'));
  // Not RE2 syntax: only the worker can tell.
  writeFileSync(join(source, 'bad.json'), definition('bad', '(?<=x)y'));
  const load = async () => {
    const engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });
    const cache = new DefinitionCache(join(root, 'definition-cache.json'), 'test', new Set());
    const registry = new WorkflowRegistry([{ kind: 'storage', dir: source }], { engine, cache });
    await registry.ready();
    return { engine, registry };
  };

  const cold = await load();
  expect(cold.registry.get('good')?.status).toBe('valid');
  expect(cold.registry.get('bad')).toMatchObject({ status: 'broken', violations: [{ rule: 'criteria' }] });
  expect(cold.engine.loaded).toBe(false);
  // A check after that starts the worker again.
  await cold.engine.loadFor(criteria('^ok'));
  expect(cold.engine.validate(criteria('^ok'), 'ok then', {}).valid).toBe(true);
  cold.engine.unload();

  // Nor does a start from the definition cache.
  const warm = await load();
  expect(warm.registry.get('bad')?.status).toBe('broken');
  expect(warm.engine.loaded).toBe(false);
});
