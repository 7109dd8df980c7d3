import { describe, expect, it } from 'vitest';
import { canTransition, EXECUTION_STATES, isTerminal, TRANSITIONS } from './state-machine.js';

describe('state machine', () => {
  it('allows exactly the seed 004 transitions', () => {
    const allowed = EXECUTION_STATES.flatMap((from) =>
      EXECUTION_STATES.filter((to) => canTransition(from, to)).map((to) => `${from}->${to}`),
    );
    expect(allowed).toEqual([
      'idle->running',
      'running->paused',
      'running->completed',
      'running->failed',
      'running->abandoned',
      'running->diverged',
      'paused->running',
      'paused->abandoned',
    ]);
  });

  it('has four terminal states', () => {
    expect(EXECUTION_STATES.filter(isTerminal)).toEqual(['completed', 'failed', 'abandoned', 'diverged']);
    expect(Object.keys(TRANSITIONS)).toEqual([...EXECUTION_STATES]);
  });
});
