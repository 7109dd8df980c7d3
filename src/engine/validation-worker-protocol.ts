/** Messages between ValidationEngine (validation-worker-client.ts) and its worker (validation-worker.ts). */
import { readFileSync } from 'node:fs';

/** One regex or JSON Schema check. */
export type Check =
  | { kind: 'regex'; pattern: string; flags: string }
  | { kind: 'schema'; schema: Record<string, unknown> };

export type CheckRequest =
  /** Compile every check (a criteria check without an output). */
  | { seq: number; op: 'compile'; checks: Check[] }
  /**
   * Run every check on one input: `text` is matched by regexes and parsed as JSON for schemas;
   * `value` is validated by schemas as it is.
   */
  | { seq: number; op: 'run'; checks: Check[]; input: { text: string } | { value: unknown } }
  /** Cache sizes, for tests and diagnostics. */
  | { seq: number; op: 'stats' };

export type CheckResult =
  | { ok: true }
  /** The check ran and failed; `errors` holds up to 10 JSON Schema errors. */
  | { ok: false; detail?: string; errors?: string[] }
  /** The check cannot be evaluated (bad regex, a schema that does not compile). */
  | { invalid: string; kind: 'criteria' | 'schema' };

export interface WorkerStats {
  cachedSchemas: number;
  cachedRegexes: number;
  /** Schemas compiled by the current ajv instances (they are replaced after MAX_COMPILED). */
  compiledSinceReset: number;
  heapUsedBytes: number;
}

export type CheckReply =
  | { seq: number; results: CheckResult[] }
  | { seq: number; stats: WorkerStats }
  /** The request as a whole failed (a bug, or a value that could not be handled at all). */
  | { seq: number; failure: string };

/** Compiled schemas the worker keeps at once, and compilations before it replaces its ajv instances. */
export const MAX_COMPILED = 256;

/**
 * Indexes into the shared Int32Array (`WorkerInit.signal`):
 *
 * - `ready`: 1 once the worker has loaded its libraries, -1 when it could not (0 while it starts);
 * - `started`: the seq of the request the worker began last (the work is timed from there);
 * - `done`: the seq of the request it answered last (the answer is in the port when it is set);
 * - `tid`: the worker thread's Linux thread id, 0 where there is none to read (the waiting side reads the
 *   thread's own CPU time from /proc/self/task/<tid>/);
 * - `idleAfter`: the seq of the request after which the worker last wrote its CPU time (`idleCpuMs`),
 *   0 for the reading it wrote when it became ready.
 */
export const SIGNAL = { ready: 0, started: 1, done: 2, tid: 3, idleAfter: 4 } as const;

/** Int32 slots of the signal array. */
export const SIGNAL_SLOTS = 5;

export interface WorkerInit {
  port: import('node:worker_threads').MessagePort;
  signal: Int32Array;
  /**
   * Two Float64 slots: the worker thread's CPU time in ms, written once it is idle again after request
   * `seq` into slot `seq & 1` (0 when it became ready), then `SIGNAL.idleAfter` set to `seq`. Where a
   * request's work started is then in the slot of the request before it, untouched while it runs, and
   * where it ended in its own slot: the waiting side reads /proc itself only while a request runs long
   * (see validation-worker-client.ts). Request seqs alternate in parity, wrapping included.
   */
  idleCpuMs: Float64Array;
}

/** The next request seq after `seq`: 1, 2, 3, … and, past the largest Int32, 2 again (parity alternates). */
export function nextSeq(seq: number): number {
  return seq >= 0x7fffffff ? 2 : seq + 1;
}

/** The CPU time (ms) a thread of this process has run, from /proc (Linux); undefined when it cannot be read. */
export function threadCpuMs(statDir: string): number | undefined {
  try {
    // `schedstat`: nanoseconds on the CPU, then time waiting for one, then time slices.
    const text = readProc(`${statDir}/schedstat`);
    const ns = Number(text.slice(0, text.indexOf(' ')));
    if (Number.isFinite(ns) && ns > 0) return ns / 1e6;
  } catch {
    // Kernels without CONFIG_SCHED_INFO have no schedstat: `stat` has it in clock ticks.
  }
  try {
    const text = readProc(`${statDir}/stat`);
    // Fields after the command name (which may hold spaces) start with the state, field 3; utime and
    // stime are fields 14 and 15, in USER_HZ ticks (100 per second on every Linux ABI).
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

const readProc = (path: string) => readFileSync(path, 'latin1');
