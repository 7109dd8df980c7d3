import { SYSTEM_CLOCK, type WorkClock } from '../../src/engine/validation-worker-client.js';
import { workerBundleUrl } from './worker-bundle.js';

/** The validation worker bundled from the current sources, for unit tests that construct a ValidationEngine. */
export const validationWorkerUrl = (): Promise<URL> => workerBundleUrl('src/engine/validation-worker.ts');

/**
 * A clock that makes a machine or a rule as slow as a test says, deterministically (the engine's
 * `clock` option, or `engine.useClock` for the app's own engine):
 *
 * - `wallStepMs`: every look at the wall clock finds that much more time gone: a machine so loaded that
 *   starting the worker and waiting for a core take longer than the budget;
 * - `workMs`: the work a request has done whenever it is measured (otherwise measured for real), and
 *   as much more wall time at every look meanwhile (work cannot outrun the wall clock). Over the budget,
 *   a rule whose own work ran out, however fast it really was;
 * - `overruns`: how many requests `workMs` applies to (default: all); later ones are measured for real.
 */
export function scriptedClock(script: {
  wallStepMs?: number;
  workMs?: number;
  overruns?: number;
}): WorkClock & { readonly overrun: number } {
  let skew = 0;
  let overrun = 0;
  let measuring: string | undefined;
  const scripted = () =>
    script.workMs !== undefined && (script.overruns === undefined || overrun < script.overruns);
  return {
    /** Requests whose work was given as `workMs` so far. */
    get overrun() {
      return overrun;
    },
    now() {
      skew += (script.wallStepMs ?? 0) + (scripted() ? (script.workMs as number) : 0);
      return performance.now() + skew;
    },
    processCpu: () => SYSTEM_CLOCK.processCpu(),
    work(probe) {
      if (!scripted()) return SYSTEM_CLOCK.work(probe);
      // Several looks at one request count once.
      const request = `${probe.postedAt}/${probe.seq}`;
      if (request !== measuring) overrun++;
      measuring = request;
      return script.workMs as number;
    },
  };
}
