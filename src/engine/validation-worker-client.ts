import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { type CheckReply, type CheckRequest, SIGNAL, type WorkerInit } from './validation-worker-protocol.js';

/** How long a (re)started worker may take to load its libraries before a check waits on it. */
const STARTUP_MS = 5_000;

/** A worker unused this long is stopped (it holds ~15 MB); the next check starts another. */
const IDLE_MS = 30_000;

/** The worker did not answer before the deadline; it has been terminated and replaced. */
export class WorkerTimeout extends Error {
  constructor() {
    super('the check did not finish in time');
    this.name = 'WorkerTimeout';
  }
}

type Request = CheckRequest extends infer R ? (R extends unknown ? Omit<R, 'seq'> : never) : never;

interface Live {
  worker: Worker;
  port: MessagePort;
  signal: Int32Array;
  seq: number;
  ready: Promise<void>;
  idle: NodeJS.Timeout;
}

/**
 * Runs checks in a worker thread and waits for each answer synchronously, up to a deadline.
 *
 * Why a worker: a regex engine or JSON Schema validator running on the event loop cannot be stopped
 * once started, and some work has no useful static bound (RE2 is linear but a big pattern over a
 * megabyte still takes seconds; a small recursive schema can fan out exponentially). A thread can be
 * terminated mid-loop, which bounds every case at once, including the ones nobody has thought of.
 *
 * Why wait synchronously (Atomics.wait, then receiveMessageOnPort): validation sits inside
 * synchronous code (a store transaction, step selection), and the server answers requests in order
 * anyway. The wait is what bounds the stall: at most the deadline, after which the worker is
 * terminated and a fresh one is started in the background for the next check.
 */
export class ValidationWorkerClient {
  private live: Live | undefined;
  /** Threads started so far (tests observe that a start needing no regex or schema check starts none). */
  starts = 0;

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

  /** Sends a request and waits for its answer until `deadline` (a performance.now() time). */
  request(request: Request, deadline: number): CheckReply {
    const live = this.current();
    if (Atomics.load(live.signal, SIGNAL.ready) === 0) {
      Atomics.wait(live.signal, SIGNAL.ready, 0, STARTUP_MS);
      if (Atomics.load(live.signal, SIGNAL.ready) === 0) {
        this.stop(live);
        throw new Error(`the validation worker (${this.url.href}) did not start`);
      }
    }
    live.idle.refresh();
    live.seq = live.seq >= 0x7fffffff ? 1 : live.seq + 1;
    const seq = live.seq;
    // Throws (nothing is sent) for a value that cannot be cloned, e.g. one nested too deeply.
    live.port.postMessage({ ...request, seq });
    for (;;) {
      const done = Atomics.load(live.signal, SIGNAL.done);
      if (done === seq) break;
      const remaining = deadline - performance.now();
      if (remaining <= 0) {
        this.stop(live);
        this.live = this.spawn();
        throw new WorkerTimeout();
      }
      Atomics.wait(live.signal, SIGNAL.done, done, remaining);
    }
    for (let m = receiveMessageOnPort(live.port); m !== undefined; m = receiveMessageOnPort(live.port)) {
      const reply = m.message as CheckReply;
      if (reply.seq === seq) return reply;
    }
    this.stop(live);
    throw new Error('the validation worker signalled an answer that did not arrive');
  }

  private current(): Live {
    this.live ??= this.spawn();
    return this.live;
  }

  private spawn(): Live {
    this.starts++;
    const { port1, port2 } = new MessageChannel();
    const signal = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    const init: WorkerInit = { port: port2, signal };
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
      seq: 0,
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
