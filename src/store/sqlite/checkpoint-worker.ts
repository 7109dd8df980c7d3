/**
 * The thread that checkpoints the store's WAL (an entry point of its own in the bundle:
 * dist/checkpoint-worker.js), on a connection of its own to the same file. A checkpoint ends in an
 * fsync of the WAL and one of the database file, several milliseconds on an ordinary disk: on the
 * server's event loop that was the tail of step latency. Here it runs beside the commits, which a
 * passive checkpoint never blocks.
 *
 * The store counts its commits in a shared Int32Array (checkpointer.ts); this thread sleeps on that
 * counter and runs the policy of checkpoint-policy.ts. Nothing here writes to stdout (the MCP wire).
 */
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import {
  CHECKPOINT_EVERY_COMMITS,
  CHECKPOINT_IDLE_MS,
  type CheckpointWorkerData,
  SIGNAL,
  WAL_LIMIT_FRAMES,
} from './checkpoint-policy.js';
import { pragma, statement } from './statements.js';

const { file, signal } = workerData as CheckpointWorkerData;

const db = new Database(file, { fileMustExist: true });
pragma(db, 'synchronous = NORMAL');
pragma(db, 'wal_autocheckpoint = 0');
// A checkpoint copies WAL frames; it needs no page cache of note (better-sqlite3's default is 16 MB).
pragma(db, 'cache_size = -512');
const passive = statement(db, 'PRAGMA wal_checkpoint(PASSIVE)');

function checkpoint(): void {
  const commits = Atomics.load(signal, SIGNAL.commits);
  try {
    // A passive checkpoint takes no lock a writer needs; another process checkpointing makes it do less.
    const { log } = passive.get() as { log: number };
    if (log >= WAL_LIMIT_FRAMES && Atomics.load(signal, SIGNAL.commits) !== commits) {
      Atomics.store(signal, SIGNAL.finish, 1);
    }
  } catch {
    // A passing error (I/O, a busy file): the next checkpoint tries again.
  }
}

// The commits made while this thread started count too.
let seen = 0;
let pending = 0;
Atomics.store(signal, SIGNAL.alive, 1);
try {
  while (Atomics.load(signal, SIGNAL.stop) === 0) {
    if (pending === 0) {
      Atomics.store(signal, SIGNAL.sleeping, 1);
      // Returns at once if a commit came in since `seen` was read; close() wakes it too.
      Atomics.wait(signal, SIGNAL.commits, seen);
      Atomics.store(signal, SIGNAL.sleeping, 0);
    } else {
      Atomics.wait(signal, SIGNAL.stop, 0, CHECKPOINT_IDLE_MS);
    }
    const commits = Atomics.load(signal, SIGNAL.commits);
    const arrived = (commits - seen) | 0;
    seen = commits;
    pending += arrived;
    // Under steady load every so many commits; otherwise once a whole idle period passed without one.
    if (pending >= CHECKPOINT_EVERY_COMMITS || (pending > 0 && arrived === 0)) {
      pending = 0;
      checkpoint();
    }
  }
} finally {
  Atomics.store(signal, SIGNAL.alive, 0);
  db.close();
}
