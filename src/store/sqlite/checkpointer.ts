import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  CHECKPOINT_EVERY_COMMITS,
  CHECKPOINT_IDLE_MS,
  type CheckpointWorkerData,
  SIGNAL,
  SIGNAL_SLOTS,
} from './checkpoint-policy.js';

/** How long close() waits for the thread to finish a checkpoint and close its connection. */
const STOP_MS = 2_000;

/**
 * dist/checkpoint-worker.js, an entry point of the bundle, found beside this module whether it was
 * bundled into cli.js or into a chunk under dist/chunks/. Run from the sources (tests), there is none.
 */
function bundledWorker(): URL | undefined {
  return ['./checkpoint-worker.js', '../checkpoint-worker.js']
    .map((p) => new URL(p, import.meta.url))
    .find((url) => existsSync(fileURLToPath(url)));
}

/**
 * Keeps the WAL of a SQLite store checkpointed (SQLite's own checkpoints are off: they ran inside
 * whichever commit crossed 1,000 WAL pages). The checkpoints run in a thread of their own
 * (checkpoint-worker.ts), so their fsyncs never hold the event loop; without that thread (run from
 * the sources, or once it has died) they run here, through `checkpointHere`, under the same policy.
 */
export class Checkpointer {
  private worker: Worker | undefined;
  private readonly signal = new Int32Array(
    new SharedArrayBuffer(SIGNAL_SLOTS * Int32Array.BYTES_PER_ELEMENT),
  );
  private closing = false;
  /** The thread asked for a checkpoint here (see WAL_LIMIT_FRAMES), which has not run yet. */
  private finishDue = false;
  private commitsSinceCheckpoint = 0;
  private timer: NodeJS.Timeout | undefined;

  /** `workerUrl`: the thread's script (default: the bundled one); `false`: checkpoint here. */
  constructor(
    private readonly file: string,
    private readonly checkpointHere: () => Promise<void>,
    private workerUrl: URL | false | undefined = bundledWorker(),
  ) {}

  /**
   * The thread is started by the first steady load (CHECKPOINT_EVERY_COMMITS commits without a pause),
   * not with the store: at an agent's pace the checkpoints run in the pauses between steps, where they
   * hold no one up, and the thread would only cost its memory (a V8 isolate, about 8 MB).
   */
  private startWorker(): void {
    const url = this.workerUrl;
    this.workerUrl = undefined;
    if (url === false || url === undefined) return;
    const data: CheckpointWorkerData = { file: this.file, signal: this.signal };
    try {
      this.worker = new Worker(url, {
        workerData: data,
        // A loop and a connection: a small heap is plenty.
        resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
        // Whatever the thread might print stays with it: the server's stdout is the MCP wire.
        stdout: true,
        stderr: true,
      });
    } catch {
      return;
    }
    // The server exits when its transport closes, whatever this thread is doing.
    this.worker.unref();
    const lost = () => {
      if (this.worker === undefined) return;
      this.worker = undefined;
      // Commits the thread had not checkpointed yet are checkpointed here.
      if (!this.closing) this.committed();
    };
    this.worker.once('error', lost);
    this.worker.once('exit', lost);
  }

  /** Tells the policy that a transaction committed. */
  committed(): void {
    if (this.closing) return;
    if (this.worker !== undefined) {
      // Counted even before the thread is up: it starts with the commits made meanwhile.
      Atomics.add(this.signal, SIGNAL.commits, 1);
      if (Atomics.load(this.signal, SIGNAL.alive) === 1) {
        if (Atomics.compareExchange(this.signal, SIGNAL.sleeping, 1, 0) === 1) {
          Atomics.notify(this.signal, SIGNAL.commits);
        }
        if (this.finishDue) {
          // The writer has not yielded since (a bulk import): now, queued behind this transaction.
          this.finish();
        } else if (Atomics.compareExchange(this.signal, SIGNAL.finish, 1, 0) === 1) {
          // Once this commit's answer is on its way: the next request may wait a moment, not this one.
          this.finishDue = true;
          setImmediate(() => {
            if (this.finishDue) this.finish();
          }).unref();
        }
        return;
      }
    }
    if (++this.commitsSinceCheckpoint >= CHECKPOINT_EVERY_COMMITS) {
      this.checkpointNow();
      if (this.workerUrl !== undefined) this.startWorker();
      return;
    }
    if (this.timer !== undefined) this.timer.refresh();
    else {
      this.timer = setTimeout(() => this.checkpointNow(), CHECKPOINT_IDLE_MS);
      this.timer.unref();
    }
  }

  private finish(): void {
    this.finishDue = false;
    void this.checkpointHere();
  }

  private checkpointNow(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.commitsSinceCheckpoint = 0;
    void this.checkpointHere();
  }

  /** Stops the thread (after the checkpoint it may be running) and any timer. */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const worker = this.worker;
    if (worker === undefined) return;
    Atomics.store(this.signal, SIGNAL.stop, 1);
    Atomics.notify(this.signal, SIGNAL.stop);
    // A bump, not just a wake-up: the thread may be about to sleep on the count it last saw.
    Atomics.add(this.signal, SIGNAL.commits, 1);
    Atomics.notify(this.signal, SIGNAL.commits);
    // Still starting (a short-lived store, such as a CLI command's), it has nothing to finish.
    if (Atomics.load(this.signal, SIGNAL.alive) === 0) {
      await worker.terminate().catch(() => undefined);
      return;
    }
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), STOP_MS);
    });
    if ((await Promise.race([exited, late])) === 'late') await worker.terminate().catch(() => undefined);
    clearTimeout(timer);
  }
}
