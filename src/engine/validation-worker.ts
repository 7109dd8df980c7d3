/**
 * The thread that runs ValidationEngine's regex and JSON Schema checks (an entry point of its own in
 * the bundle: dist/validation-worker.js). Its caller waits for each answer while the request's own work
 * stays within the validation budget (this thread's CPU time where it can be read), and terminates the
 * thread when it runs over, so no pattern, schema or output holds the server's event loop for longer
 * than that (and a hard cap); see validation-worker-client.ts. This side signals where each request's
 * work starts and publishes its thread id and CPU time for that measure.
 *
 * Inside, checks are also made cheap where they can be: ajv matches `pattern` and
 * `patternProperties` with RE2 (linear time) instead of backtracking RegExps, and `uniqueItems`
 * hashes items (linear) instead of comparing every pair (quadratic). Compiled schemas are cached
 * with a bound, and the ajv instances, which keep every schema they ever compiled, are replaced
 * after MAX_COMPILED compilations, so memory stays flat however many distinct schemas come by.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import type {
  Ajv,
  ErrorObject,
  FuncKeywordDefinition,
  Options,
  SchemaValidateFunction,
  ValidateFunction,
} from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { RE2JS } from 're2js';
import { MAX_DEPTH } from './json-text.js';
import {
  type Check,
  type CheckReply,
  type CheckRequest,
  type CheckResult,
  MAX_COMPILED,
  SIGNAL,
  threadCpuMs,
  type WorkerInit,
} from './validation-worker-protocol.js';

const MAX_REGEXES = 1000;
const MAX_REPORTED_ERRORS = 10;

interface Libraries {
  RE2JS: typeof RE2JS;
  Ajv: new (opts: Options) => Ajv;
  Ajv2020: new (opts: Options) => Ajv2020;
  addFormats: (ajv: Ajv | Ajv2020) => void;
}

/** A named export of a CommonJS module, however the loader (Node, esbuild) wrapped it. */
function commonJsExport(namespace: object, name: string): unknown {
  const candidates = [namespace, (namespace as { default?: object }).default];
  for (const candidate of candidates) {
    const value = (candidate as Record<string, unknown> | undefined)?.[name];
    if (typeof value === 'function') return value;
  }
  const fallback = (namespace as { default?: unknown }).default;
  if (typeof fallback === 'function') return fallback;
  throw new Error(`cannot load ${name}`);
}

async function importLibraries(): Promise<Libraries> {
  const [re2, ajv, ajv2020, formats] = await Promise.all([
    import('re2js'),
    import('ajv'),
    import('ajv/dist/2020.js'),
    import('ajv-formats'),
  ]);
  return {
    RE2JS: re2.RE2JS,
    Ajv: commonJsExport(ajv, 'Ajv') as Libraries['Ajv'],
    Ajv2020: commonJsExport(ajv2020, 'Ajv2020') as Libraries['Ajv2020'],
    addFormats: commonJsExport(formats, 'default') as Libraries['addFormats'],
  };
}

class Invalid extends Error {
  constructor(
    message: string,
    readonly kind: 'criteria' | 'schema',
  ) {
    super(message);
  }
}

/** Insertion-ordered map used as an LRU: a hit moves the entry to the end, the oldest goes first. */
function lruGet<K, V>(map: Map<K, V>, key: K): V | undefined {
  const value = map.get(key);
  if (value !== undefined) {
    map.delete(key);
    map.set(key, value);
  }
  return value;
}

function lruSet<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as K);
}

/**
 * A key that is equal for JSON-equal values (object keys sorted), for uniqueItems. Throws past
 * MAX_DEPTH; the check then fails with a clear reason instead of overflowing the stack.
 */
function canonical(value: unknown, depth = 0): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (depth >= MAX_DEPTH) throw new RangeError(`an item is nested deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v, depth + 1)).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k], depth + 1)}`).join(',')}}`;
}

/** `uniqueItems` in linear time: ajv's own compares every pair of items that are not scalars. */
const validateUnique: SchemaValidateFunction = (schema: boolean, data: unknown[]): boolean => {
  if (!schema || data.length < 2) return true;
  const seen = new Map<string, number>();
  for (let i = 0; i < data.length; i++) {
    const key = canonical(data[i]);
    const j = seen.get(key);
    if (j !== undefined) {
      validateUnique.errors = [
        {
          keyword: 'uniqueItems',
          message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
          params: { i: j, j: i },
        },
      ];
      return false;
    }
    seen.set(key, i);
  }
  return true;
};

const uniqueItems: FuncKeywordDefinition = {
  keyword: 'uniqueItems',
  type: 'array',
  schemaType: 'boolean',
  errors: true,
  validate: validateUnique,
};

class Checker {
  private ajv2020: Ajv2020 | undefined;
  private ajv07: Ajv | undefined;
  private readonly schemas = new Map<string, ValidateFunction>();
  private readonly regexes = new Map<string, RE2JS>();
  private compiled = 0;

  constructor(private readonly libs: Libraries) {}

  /** ajv's `code.regExp`: RE2 instead of RegExp for `pattern` and `patternProperties`. */
  private readonly re2RegExp = Object.assign(
    (pattern: string) => {
      let compiled: RE2JS;
      try {
        compiled = this.libs.RE2JS.compile(pattern);
      } catch (error) {
        throw new Error(
          `pattern ${JSON.stringify(pattern)} is not RE2 syntax (lookarounds and backreferences are not supported): ${(error as Error).message}`,
        );
      }
      return { test: (s: string) => compiled.matcher(s).find(), toString: () => `re2:${pattern}` };
    },
    { code: 're2' },
  );

  private ajv(draft07: boolean): Ajv | Ajv2020 {
    if (this.compiled >= MAX_COMPILED) {
      // Each ajv instance keeps what it compiled (its schema cache and generated code) for good.
      this.ajv2020 = undefined;
      this.ajv07 = undefined;
      this.schemas.clear();
      this.compiled = 0;
    }
    const make = <T extends Ajv | Ajv2020>(Ctor: new (opts: Options) => T): T => {
      const instance = new Ctor({
        allErrors: true,
        strict: false,
        validateFormats: true,
        // Schemas of different rules may share an $id; none is a reference target for another.
        addUsedSchema: false,
        // Warnings about user schemas (unknown formats, ...) would repeat on every compilation.
        logger: false,
        code: { regExp: this.re2RegExp },
      });
      this.libs.addFormats(instance);
      instance.removeKeyword('uniqueItems');
      instance.addKeyword(uniqueItems);
      return instance;
    };
    if (draft07) {
      this.ajv07 ??= make(this.libs.Ajv);
      return this.ajv07;
    }
    this.ajv2020 ??= make(this.libs.Ajv2020);
    return this.ajv2020;
  }

  schema(schema: Record<string, unknown>): ValidateFunction {
    const draft07 = typeof schema.$schema === 'string' && schema.$schema.includes('draft-07');
    const key = `${draft07 ? '07' : '2020'}:${createHash('sha256').update(JSON.stringify(schema)).digest('base64')}`;
    const cached = lruGet(this.schemas, key);
    if (cached) return cached;
    const ajv = this.ajv(draft07);
    let compiled: ValidateFunction;
    try {
      this.compiled++;
      compiled = ajv.compile(schema);
      ajv.removeSchema(schema);
    } catch (error) {
      throw new Invalid(
        `JSON Schema of a schema rule does not compile: ${error instanceof RangeError ? `it is nested too deeply (${error.message})` : (error as Error).message}`,
        'schema',
      );
    }
    lruSet(this.schemas, key, compiled, MAX_COMPILED);
    return compiled;
  }

  regex(pattern: string, flags: string): RE2JS {
    const key = `${flags}/${pattern}`;
    const cached = lruGet(this.regexes, key);
    if (cached) return cached;
    const { RE2JS } = this.libs;
    let bits = 0;
    for (const flag of flags) {
      if (flag === 'i') bits |= RE2JS.CASE_INSENSITIVE;
      else if (flag === 'm') bits |= RE2JS.MULTILINE;
      else if (flag === 's') bits |= RE2JS.DOTALL;
      else if (flag !== 'u')
        throw new Invalid(`regex flag "${flag}" is not supported (use i, m, s)`, 'criteria');
    }
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(pattern, bits);
    } catch (error) {
      throw new Invalid(
        `regex pattern ${JSON.stringify(pattern)} is invalid: ${(error as Error).message}`,
        'criteria',
      );
    }
    lruSet(this.regexes, key, compiled, MAX_REGEXES);
    return compiled;
  }

  private compile(check: Check): void {
    if (check.kind === 'regex') this.regex(check.pattern, check.flags);
    else this.schema(check.schema);
  }

  private runOne(
    check: Check,
    input: { text: string } | { value: unknown },
    parsed: () => Parsed,
  ): CheckResult {
    if (check.kind === 'regex') {
      const regex = this.regex(check.pattern, check.flags);
      if (!('text' in input)) return { ok: false, detail: 'a regex needs text' };
      return regex.matcher(input.text).find() ? { ok: true } : { ok: false };
    }
    const validate = this.schema(check.schema);
    let value: unknown;
    if ('text' in input) {
      const json = parsed();
      if ('error' in json) return { ok: false, detail: `output is not valid JSON (${json.error})` };
      value = json.value;
    } else value = input.value;
    try {
      if (validate(value) === true) return { ok: true };
    } catch (error) {
      if (error instanceof RangeError) return { ok: false, detail: `cannot be checked: ${error.message}` };
      throw error;
    }
    return {
      ok: false,
      errors: (validate.errors ?? []).slice(0, MAX_REPORTED_ERRORS).map(describeError),
    };
  }

  handle(request: CheckRequest): CheckReply {
    if (request.op === 'stats') {
      return {
        seq: request.seq,
        stats: {
          cachedSchemas: this.schemas.size,
          cachedRegexes: this.regexes.size,
          compiledSinceReset: this.compiled,
          heapUsedBytes: getHeapStatistics().used_heap_size,
        },
      };
    }
    let json: Parsed | undefined;
    const parsed = (): Parsed => {
      if (json === undefined) {
        const text = (request as { input: { text: string } }).input.text;
        try {
          json = { value: JSON.parse(text) };
        } catch (error) {
          json = { error: (error as Error).message };
        }
      }
      return json;
    };
    const results = request.checks.map((check): CheckResult => {
      try {
        if (request.op === 'compile') {
          this.compile(check);
          return { ok: true };
        }
        return this.runOne(check, request.input, parsed);
      } catch (error) {
        if (error instanceof Invalid) return { invalid: error.message, kind: error.kind };
        throw error;
      }
    });
    return { seq: request.seq, results };
  }
}

type Parsed = { value: unknown } | { error: string };

function describeError(e: ErrorObject): string {
  return `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`;
}

// The server's stdout carries JSON-RPC only: whatever a library here prints goes to stderr instead.
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;

const { port, signal, idleCpuMs } = workerData as WorkerInit;

/** This thread's id on Linux (the first field of its stat), 0 where there is no /proc to read. */
function ownThreadId(): number {
  try {
    const tid = Number.parseInt(readFileSync('/proc/thread-self/stat', 'latin1'), 10);
    return Number.isSafeInteger(tid) && tid > 0 && threadCpuMs('/proc/thread-self') !== undefined ? tid : 0;
  } catch {
    return 0;
  }
}

const tid = ownThreadId();

/**
 * Publishes this thread's CPU time now that it is idle (after request `after`, 0: none yet): where the
 * next request's work starts, read by the waiting side only when a request runs long. Written after the
 * answer, so the read is never on the answer's path.
 */
function publishIdleCpu(after: number): void {
  if (tid === 0) return;
  const cpu = threadCpuMs('/proc/thread-self');
  if (cpu === undefined) return;
  idleCpuMs[after & 1] = cpu;
  // The store publishes the value written before it (a reader that sees `after` sees the value).
  Atomics.store(signal, SIGNAL.idleAfter, after);
}

let checker: Checker;
try {
  checker = new Checker(await importLibraries());
} catch (error) {
  // A waiting caller learns at once that this worker will never answer (instead of at its cap).
  Atomics.store(signal, SIGNAL.ready, -1);
  Atomics.notify(signal, SIGNAL.ready);
  throw error;
}
port.on('message', (request: CheckRequest) => {
  // The request's work starts now: waiting for a core or for this thread to start never counts.
  Atomics.store(signal, SIGNAL.started, request.seq);
  Atomics.notify(signal, SIGNAL.started);
  let reply: CheckReply;
  try {
    reply = checker.handle(request);
  } catch (error) {
    reply = { seq: request.seq, failure: (error as Error).message ?? String(error) };
  }
  port.postMessage(reply);
  // The caller is blocked in Atomics.wait: the answer is already in its port when it wakes.
  Atomics.store(signal, SIGNAL.done, request.seq);
  Atomics.notify(signal, SIGNAL.done);
  publishIdleCpu(request.seq);
});
publishIdleCpu(0);
Atomics.store(signal, SIGNAL.tid, tid);
Atomics.store(signal, SIGNAL.ready, 1);
Atomics.notify(signal, SIGNAL.ready);
parentPort?.postMessage('ready');
