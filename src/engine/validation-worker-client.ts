import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import {
  type CheckReply,
  type CheckRequest,
  nextSeq,
  SIGNAL,
  SIGNAL_SLOTS,
  threadCpuMs,
  type WorkerInit,
} from './validation-worker-protocol.js';

/** A worker unused this long is stopped (it holds ~15 MB); the next check starts another. */
const IDLE_MS = 30_000;

/**
 * The shortest wait between two looks at a request that is still running: CPU time is read in steps of
 * a scheduler tick at best, so looking more often only costs reads.
 */
const MIN_LOOK_MS = 10;

/**
 * The request was not checked: its own work ran past the budget (`work`), or no answer came within the
 * hard cap (`cap`, `start`: the worker had not even started). Nothing was decided; a worker that was
 * running the request has been terminated and replaced.
 */
export class WorkerTimeout extends Error {
  constructor(
    readonly reason: 'work' | 'cap' | 'start',
    readonly budgetMs: number,
    readonly capMs: number,
  ) {
    super(
      reason === 'work'
        ? `the check's own work ran past the ${budgetMs} ms budget`
        : `the check got no answer within ${capMs} ms${reason === 'start' ? ' (the worker was still starting)' : ''}`,
    );
    this.name = 'WorkerTimeout';
  }
}

/** What the client knows about a request when it measures the request's work (see WorkClock.work). */
export interface WorkProbe {
  /** The request's seq on its worker, and when it was posted (WorkClock.now): together, which request. */
  seq: number;
  postedAt: number;
  /** The worker thread's Linux thread id, 0 where there is none. */
  tid: number;
  /** The worker thread's CPU time (ms) when it went idle before this request, when it published it. */
  idleCpuMs: number | undefined;
  /** Its CPU time (ms) when it went idle after this request: published once the request is done. */
  doneCpuMs: number | undefined;
  /** The process's CPU time (ms) when the request was posted; read only where there is no `tid`. */
  processCpuMs: number | undefined;
  /** Wall-clock ms since the request was posted (WorkClock.now): the measure when nothing else is read. */
  wallMs: number;
}

/**
 * How the client tells the time. The budget is the request's own work, never the wall clock: waiting for
 * the worker to start, or for a core on a loaded machine, does not count. Tests inject one to make a slow
 * machine or a slow rule happen deterministically.
 */
export interface WorkClock {
  /** Monotonic wall-clock milliseconds: the hard cap is measured on it. */
  now(): number;
  /** The process's CPU time in ms (the fallback measure, read when a request is posted). */
  processCpu(): number;
  /** Milliseconds of work the request has done since the worker began it. */
  work(probe: WorkProbe): number;
}

/** The process's CPU time in ms (user and system, every thread). */
function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * The default clock. The work is the worker thread's own CPU time where Linux lets it be read: the
 * worker publishes its reading after each request (so a request that is done needs no read here), and
 * a request still running is read from /proc/self/task/<tid>/schedstat (30-60 µs a read on a virtual
 * machine; only once it has run as long as the budget on the wall clock). Elsewhere, the process's CPU
 * time since the request was posted (the waiting thread is blocked meanwhile, so that is the worker's
 * work plus what the runtime's helper threads did); failing both, the wall clock.
 */
export const SYSTEM_CLOCK: WorkClock = {
  now: () => performance.now(),
  processCpu: processCpuMs,
  work(probe) {
    if (probe.tid > 0 && probe.idleCpuMs !== undefined) {
      const cpu = probe.doneCpuMs ?? threadCpuMs(`/proc/self/task/${probe.tid}`);
      if (cpu !== undefined) return Math.max(0, cpu - probe.idleCpuMs);
    }
    if (probe.processCpuMs !== undefined) return Math.max(0, processCpuMs() - probe.processCpuMs);
    return probe.wallMs;
  },
};

/** One request's bounds, in ms: its own work (`budgetMs`), and everything including start-up (`capMs`). */
export interface RequestLimits {
  budgetMs: number;
  capMs: number;
}

type Request = CheckRequest extends infer R ? (R extends unknown ? Omit<R, 'seq'> : never) : never;

interface Live {
  worker: Worker;
  port: MessagePort;
  signal: Int32Array;
  idleCpuMs: Float64Array;
  seq: number;
  /** The seq of the last request answered (0: none), after which the worker publishes its idle CPU time. */
  answered: number;
  ready: Promise<void>;
  idle: NodeJS.Timeout;
}

/**
 * Runs checks in a worker thread and waits for each answer synchronously, while the request's own work
 * stays within a budget and the whole wait within a hard cap.
 *
 * Why a worker: a regex engine or JSON Schema validator running on the event loop cannot be stopped
 * once started, and some work has no useful static bound (RE2 is linear but a big pattern over a
 * megabyte still takes seconds; a small recursive schema can fan out exponentially). A thread can be
 * terminated mid-loop, which bounds every case at once, including the ones nobody has thought of.
 *
 * Why wait synchronously (Atomics.wait, then receiveMessageOnPort): validation sits inside
 * synchronous code (a store transaction, step selection), and the server answers requests in order
 * anyway.
 *
 * What is measured: the budget is the work of the request itself, counted from when the worker began it
 * (`SIGNAL.started`), in the worker thread's CPU time where it can be read (see SYSTEM_CLOCK), so that a
 * verdict depends on the rule and the output, not on how busy the machine is. Starting the worker (it
 * stops after 30 s idle, so an agent whose steps are minutes apart starts one for nearly every step)
 * and waiting for a core never count. An answer that arrives is kept only when its work stayed within
 * the budget, so a rule at the edge gets the same outcome whenever this thread happens to wake. The
 * hard cap (wall clock, everything included) is the longest the event loop is ever held: past it, or
 * past the budget, the worker is terminated, a fresh one starts in the background, and the request is
 * not checked (WorkerTimeout), which callers answer as a retryable error, never as a verdict.
 */
export class ValidationWorkerClient {
  private live: Live | undefined;
  /** Threads started so far (tests observe that a start needing no regex or schema check starts none). */
  starts = 0;
  /** How time and work are measured (ValidationEngine's `clock` option and useClock set it). */
  clock: WorkClock = SYSTEM_CLOCK;

  constructor(private readonly url: URL) {}

  /** Starts the worker if needed and resolves once it is ready, without blocking the event loop. */
  async start(): Promise<void> {
    const live = this.current();
    live.idle.refresh();
    await live.ready;
  }

  /** Whether a worker runs (or is starting). */
  get running(): boolean {
    return this.live !== undefined;
  }

  /** Stops the worker now instead of after IDLE_MS; the next start or request starts another. */
  release(): void {
    if (this.live !== undefined) this.stop(this.live);
  }

  /** Sends a request and waits for its answer within `limits`; throws WorkerTimeout when not checked. */
  request(request: Request, limits: RequestLimits): CheckReply {
    const { clock } = this;
    const { budgetMs, capMs } = limits;
    const cap = clock.now() + capMs;
    const live = this.current();
    // Start-up counts against the cap only. A worker still starting at the cap is left to finish: the
    // same call sent again finds it ready.
    for (;;) {
      const ready = Atomics.load(live.signal, SIGNAL.ready);
      if (ready === 1) break;
      if (ready === -1) {
        this.stop(live);
        throw new Error(`the validation worker (${this.url.href}) could not load its libraries`);
      }
      const left = cap - clock.now();
      if (left <= 0) throw new WorkerTimeout('start', budgetMs, capMs);
      Atomics.wait(live.signal, SIGNAL.ready, 0, left);
    }
    live.idle.refresh();
    const previous = live.answered;
    live.seq = nextSeq(live.seq);
    const seq = live.seq;
    const tid = Atomics.load(live.signal, SIGNAL.tid);
    const processCpuMs = tid === 0 ? clock.processCpu() : undefined;
    const posted = clock.now();
    // Throws (nothing is sent) for a value that cannot be cloned, e.g. one nested too deeply.
    live.port.postMessage({ ...request, seq });
    const work = (): number => {
      // Until the worker begins the request (it may still be finishing the last one), nothing counts.
      if (Atomics.load(live.signal, SIGNAL.started) !== seq) return 0;
      // The reading after the last request is in its slot until this one is done; once this one is,
      // the reading after it is in the other slot (validation-worker-protocol.ts, idleCpuMs).
      const idleAfter = Atomics.load(live.signal, SIGNAL.idleAfter);
      return clock.work({
        seq,
        postedAt: posted,
        tid,
        idleCpuMs: idleAfter === previous || idleAfter === seq ? live.idleCpuMs[previous & 1] : undefined,
        doneCpuMs: idleAfter === seq ? live.idleCpuMs[seq & 1] : undefined,
        processCpuMs,
        wallMs: clock.now() - posted,
      });
    };
    const overrun = (reason: 'work' | 'cap'): never => {
      this.stop(live);
      this.live = this.spawn();
      throw new WorkerTimeout(reason, budgetMs, capMs);
    };
    for (;;) {
      const done = Atomics.load(live.signal, SIGNAL.done);
      if (done === seq) break;
      const now = clock.now();
      if (now >= cap) overrun('cap');
      // One thread's CPU time cannot grow faster than the wall clock: nothing is read before the
      // request has run as long as the budget on the wall clock (the common case reads nothing).
      let wait = budgetMs - (now - posted);
      if (wait <= 0) {
        const used = work();
        if (used >= budgetMs) overrun('work');
        wait = Math.max(MIN_LOOK_MS, budgetMs - used);
      }
      Atomics.wait(live.signal, SIGNAL.done, done, Math.min(wait, cap - now));
    }
    live.answered = seq;
    let reply: CheckReply | undefined;
    for (let m = receiveMessageOnPort(live.port); m !== undefined; m = receiveMessageOnPort(live.port)) {
      const message = m.message as CheckReply;
      if (message.seq === seq) reply = message;
    }
    if (reply === undefined) {
      this.stop(live);
      throw new Error('the validation worker signalled an answer that did not arrive');
    }
    // The answer counts only if its own work stayed within the budget, however late this thread woke.
    if (clock.now() - posted > budgetMs && work() > budgetMs)
      throw new WorkerTimeout('work', budgetMs, capMs);
    return reply;
  }

  private current(): Live {
    this.live ??= this.spawn();
    return this.live;
  }

  private spawn(): Live {
    this.starts++;
    const { port1, port2 } = new MessageChannel();
    const signal = new Int32Array(new SharedArrayBuffer(SIGNAL_SLOTS * Int32Array.BYTES_PER_ELEMENT));
    const idleCpuMs = new Float64Array(new SharedArrayBuffer(2 * Float64Array.BYTES_PER_ELEMENT));
    const init: WorkerInit = { port: port2, signal, idleCpuMs };
    const worker = new Worker(this.url, {
      workerData: init,
      transferList: [port2],
      // A runaway output or schema ends this thread (and fails the check), never the server.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    // Neither keeps the process alive: the server exits when its transport closes.
    worker.unref();
    port1.unref();
    const live: Live = {
      worker,
      port: port1,
      signal,
      idleCpuMs,
      seq: 0,
      answered: 0,
      ready: Promise.resolve(),
      idle: setTimeout(() => this.stop(live), IDLE_MS).unref(),
    };
    live.ready = new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the validation worker exited with code ${code}`)));
    });
    // A synchronous caller may never await it; its failure shows as a check that cannot start.
    live.ready.catch(() => undefined);
    const forget = () => {
      if (this.live === live) this.live = undefined;
    };
    worker.on('error', forget);
    worker.on('exit', forget);
    return live;
  }

  private stop(live: Live): void {
    if (this.live === live) this.live = undefined;
    clearTimeout(live.idle);
    live.port.close();
    live.worker.terminate().catch(() => undefined);
  }
}
