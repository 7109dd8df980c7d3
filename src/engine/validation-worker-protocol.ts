/** Messages between ValidationEngine (validation-worker-client.ts) and its worker (validation-worker.ts). */

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

/** Indexes into the shared Int32Array the worker signals on. */
export const SIGNAL = { ready: 0, done: 1 } as const;

export interface WorkerInit {
  port: import('node:worker_threads').MessagePort;
  signal: Int32Array;
}
