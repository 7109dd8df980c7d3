import { describe, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import { checkDefinition } from './check.js';

// The knownCheck rule of the check policy (CheckPolicy.knownChecks): a step's `verify: {check}` against
// the operator's checks file. The registry passes no knownChecks, so a served file is not judged by it.

const engine = new ValidationEngine({ workerUrl: await validationWorkerUrl() });

const verified = {
  id: 'verified',
  name: 'Verified',
  description: 'Steps the server checks',
  version: '1.0.0',
  steps: [
    { id: 'fix', title: 'Fix', prompt: 'Fix it.', verify: { check: 'unit-tests' } },
    {
      id: 'again',
      type: 'loop',
      title: 'Until clean',
      loop: { type: 'until', condition: { var: 'clean', equals: true }, maxIterations: 3 },
      body: [{ id: 'lint', title: 'Lint', prompt: 'Tidy up.', verify: { check: 'lint' } }],
    },
  ],
};

describe('the knownCheck rule', () => {
  it('with the checks defined, a step (loop bodies included) naming another is an error from strict on', async () => {
    const policy = { engine, knownChecks: new Set(['unit-tests']) };
    const strict = await checkDefinition({ data: verified }, 'strict', policy);
    expect(strict.valid).toBe(false);
    expect(strict.errors).toEqual([
      {
        path: '/steps/1/body/0/verify/check',
        rule: 'knownCheck',
        message: `step "lint" names check "lint", which the server's checks file does not define`,
        actual: 'lint',
      },
    ]);
    const authoring = await checkDefinition({ data: verified }, 'authoring', policy);
    expect(authoring.errors).toEqual(strict.errors);
    expect(authoring.warnings.filter((w) => w.rule === 'knownCheck')).toEqual([]);
    const all = await checkDefinition({ data: verified }, 'authoring', {
      engine,
      knownChecks: new Set(['unit-tests', 'lint']),
    });
    expect(all.valid).toBe(true);
  });

  it('without a checks file, each step naming a check is an authoring warning; the verdict does not change', async () => {
    const strict = await checkDefinition({ data: verified }, 'strict', { engine, knownChecks: 'none' });
    expect(strict).toMatchObject({ valid: true, errors: [], warnings: [] });
    const authoring = await checkDefinition({ data: verified }, 'authoring', { engine, knownChecks: 'none' });
    expect(authoring.valid).toBe(true);
    const warned = authoring.warnings.filter((w) => w.rule === 'knownCheck');
    expect(warned.map((w) => [w.path, w.actual])).toEqual([
      ['/steps/0/verify/check', 'unit-tests'],
      ['/steps/1/body/0/verify/check', 'lint'],
    ]);
    expect(warned[0]?.message).toContain('cannot run here');
  });

  it('a policy that does not say (the registry) leaves verify alone', async () => {
    const authoring = await checkDefinition({ data: verified }, 'authoring', { engine });
    expect(authoring.valid).toBe(true);
    expect(authoring.warnings.filter((w) => w.rule === 'knownCheck')).toEqual([]);
  });
});
