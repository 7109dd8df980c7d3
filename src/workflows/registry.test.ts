import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { scriptedClock, validationWorkerUrl } from '../../test/helpers/validation-worker.js';
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

it('a file whose rules were not checked in time is neither served nor broken nor cached: it is checked again later', async () => {
  const root = mkdtempSync(join(tmpdir(), 'wl-registry-'));
  dir = root;
  const source = join(root, 'workflows');
  mkdirSync(source);
  writeFileSync(
    join(source, 'words.json'),
    JSON.stringify({
      id: 'words',
      name: 'words',
      description: 'd',
      version: '1.0.0',
      steps: [
        {
          id: 'say-it',
          title: 'Say it',
          prompt: 'Say it.',
          validationCriteria: [{ type: 'regex', pattern: '^[a-z ]+$', message: 'words' }],
        },
      ],
    }),
  );
  // The first check's own work runs out (however fast it really was); later ones are measured for real.
  const clock = scriptedClock({ workMs: 2000, overruns: 1 });
  const engine = new ValidationEngine({ workerUrl: await validationWorkerUrl(), clock });
  const cacheFile = join(root, 'definition-cache.json');
  const registry = new WorkflowRegistry([{ kind: 'storage', dir: source }], {
    engine,
    cache: new DefinitionCache(cacheFile, 'test', new Set()),
  });
  let changes = 0;
  registry.onChange = () => {
    changes++;
  };
  try {
    await registry.ready();
    expect(clock.overrun).toBe(1);
    // No verdict yet: not listed as broken because of timing, and nothing cached for the next start.
    expect(registry.get('words')).toBeUndefined();
    expect(registry.list()).toEqual({ workflows: [], broken: [] });
    expect(registry.notCheckedYet()).toEqual([join(source, 'words.json')]);
    expect(existsSync(cacheFile) ? readFileSync(cacheFile, 'utf8') : '').not.toContain('words.json');
    // Checked again later (a second on), without any change to the file.
    await expect.poll(() => registry.get('words')?.status).toBe('valid');
    expect(registry.notCheckedYet()).toEqual([]);
    expect(changes).toBeGreaterThan(0);
  } finally {
    registry.close();
    engine.unload();
  }
});
