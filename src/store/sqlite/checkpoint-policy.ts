/** What SqliteExecutionStore (checkpointer.ts) and its checkpoint thread (checkpoint-worker.ts) share. */

/** A checkpoint runs once writes pause this long... */
export const CHECKPOINT_IDLE_MS = 20;
/** ...or after this many commits of steady load. */
export const CHECKPOINT_EVERY_COMMITS = 50;
/**
 * The WAL starts over only once a checkpoint has copied all of it: one that runs beside a busy writer
 * leaves the frames committed meanwhile, so under steady load the WAL would grow for ever. Past this
 * many frames (32 MB of 4 KB pages, several hundred steps) the thread asks the event loop, the only
 * writer in this process, to copy what is left right after a commit (a few frames, but with the
 * checkpoint's two fsyncs, on the event loop).
 */
export const WAL_LIMIT_FRAMES = 8000;

/** Slots of the Int32Array shared with the thread. */
export const SIGNAL = {
  /** Commits so far (wrapping); the thread waits on this slot. */
  commits: 0,
  /** Set to 1 to end the thread (and commits bumped, to wake it). */
  stop: 1,
  /** Set to 1 by the thread when the event loop should finish a checkpoint (see WAL_LIMIT_FRAMES). */
  finish: 2,
  /**
   * 1 while the thread sleeps until the next commit (nothing to checkpoint); only then does a commit
   * wake it. Otherwise it wakes every CHECKPOINT_IDLE_MS by itself and counts what came in meanwhile,
   * so that a commit costs an atomic add, not a thread switch.
   */
  sleeping: 3,
  /**
   * 1 while the thread runs its policy (it has its connection and has not failed): the event loop
   * checkpoints by itself otherwise, without waiting to hear of the thread's end.
   */
  alive: 4,
} as const;
export const SIGNAL_SLOTS = 5;

export interface CheckpointWorkerData {
  /** The database file (its WAL is beside it). */
  file: string;
  signal: Int32Array;
}
