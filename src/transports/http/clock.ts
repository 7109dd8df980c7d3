/**
 * Time as the HTTP transport's bookkeeping reads it (idle sessions, tokens that verified lately), so a
 * unit test can move it by hand and fire a periodic sweep itself instead of waiting for either.
 */
export interface Clock {
  now(): number;
  /** Runs `fn` every `ms` without keeping the process alive; returns what stops it. */
  every(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    // A sweep is housekeeping: it must not hold a process open that has nothing else to do.
    timer.unref();
    return () => clearInterval(timer);
  },
};
