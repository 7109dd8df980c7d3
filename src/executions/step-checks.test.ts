import { describe, expect, it } from 'vitest';
import { assembledKits, LOCAL, twoStepWorkflow } from '../../test/helpers/execution-parts.js';
import type { CheckResult, CheckRunner } from './checks.js';
import { withCheck } from './step-checks.js';

// The checks part alone: a step's check runs once per token however many submissions of it arrive at
// once, and its verdict joins the step's validation as one more issue.

const assembled = assembledKits();

/** Checks that pass after `release()`, counting their runs. */
function heldChecks() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const runner: CheckRunner & { runs: number } = {
    runs: 0,
    configured: true,
    available: () => undefined,
    known: () => true,
    async run(name) {
      runner.runs++;
      await gate;
      return {
        check: name,
        passed: true,
        exit_code: 0,
        timed_out: false,
        duration_ms: 1,
        output_bytes: 0,
        truncated: false,
        tail: '',
      };
    },
  };
  return { runner, release };
}

describe('StepChecks', () => {
  it('runs the check once for concurrent submissions of one token, and they all get one answer', async () => {
    const { runner, release } = heldChecks();
    const { kit, parts } = await assembled({ checks: runner });
    const started = await parts.starting.start(
      { workflow_id: 'two', definition: kit.definition(twoStepWorkflow({ verify: { check: 'tests' } })) },
      LOCAL,
    );
    const token = 'token' in started ? (started.token as string) : '';
    const submissions = Array.from({ length: 5 }, () =>
      parts.submission.submit(token, { summary: 'fixed' }, LOCAL),
    );
    await expect.poll(() => runner.runs).toBe(1);
    release();
    const answers = await Promise.all(submissions);
    expect(runner.runs).toBe(1);
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]).toMatchObject({ kind: 'step', view: { step_name: 'second' } });
  });

  it("adds a failed check to the step's validation as one more issue, with how it failed", () => {
    const base = { valid: true, issues: [], suggestions: [] };
    const failed: CheckResult = {
      check: 'tests',
      passed: false,
      exit_code: 1,
      timed_out: false,
      duration_ms: 5,
      output_bytes: 0,
      truncated: false,
      tail: '',
    };
    expect(withCheck(base, failed)).toMatchObject({
      valid: false,
      issues: ['CHECK_FAILED: check "tests" exited with 1'],
    });
    expect(withCheck(base, { ...failed, exit_code: null, timed_out: true }).issues[0]).toContain(
      'timed out after 5 ms',
    );
    expect(withCheck(base, { ...failed, passed: true })).toBe(base);
  });
});
