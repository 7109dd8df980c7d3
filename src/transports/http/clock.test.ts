import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from './clock.js';

describe('systemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads the time and runs periodic work until stopped', () => {
    vi.useFakeTimers({ now: 5_000 });
    expect(systemClock.now()).toBe(5_000);
    let runs = 0;
    const stop = systemClock.every(60_000, () => runs++);
    vi.advanceTimersByTime(120_000);
    expect(runs).toBe(2);
    stop();
    vi.advanceTimersByTime(120_000);
    expect(runs).toBe(2);
  });
});
