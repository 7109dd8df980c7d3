/**
 * The server's log: pino, one JSON line per event on stderr (stdout carries JSON-RPC), with a level,
 * the request's correlation id (the `correlation_id` its error answers carry) and, when traces are on,
 * the trace and span ids. On a terminal the same events are printed as short human lines instead.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { DestinationStream, Logger as PinoLogger } from 'pino';
import { requestScope } from './context.js';
import { echoedName } from './metrics.js';
import { activeTraceIds } from './trace.js';

export interface LogFn {
  (message: string): void;
  (fields: Record<string, unknown>, message?: string): void;
}

/** What code that logs needs (pino's logger has it); tests pass `silentLogger`. */
export interface Logger {
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  /** A logger whose lines all carry `bindings` (a component, a run id). */
  child(bindings: Record<string, unknown>): Logger;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_LEVEL_SETTING = 'WORKFLOWLOOKUP_LOG_LEVEL';

/** The level `WORKFLOWLOOKUP_LOG_LEVEL` names (default info), and what was wrong with it if anything. */
export function logLevelFrom(env: NodeJS.ProcessEnv): { level: LogLevel; problem?: string } {
  const raw = env[LOG_LEVEL_SETTING]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return { level: 'info' };
  if ((LOG_LEVELS as readonly string[]).includes(raw)) return { level: raw as LogLevel };
  return {
    level: 'info',
    problem: `${LOG_LEVEL_SETTING}=${raw} is not a level (${LOG_LEVELS.join(', ')}); logging at info`,
  };
}

const noop: LogFn = () => undefined;
/** Drops everything (tests, and one-shot commands whose output is the answer). */
export const silentLogger: Logger = {
  error: noop,
  warn: noop,
  info: noop,
  debug: noop,
  child: () => silentLogger,
};

/** A line's fields, added to every line: the running request's correlation id and trace ids. */
function requestFields(): Record<string, string> {
  const scope = requestScope();
  const ids = activeTraceIds();
  if (scope === undefined && ids === undefined) return {};
  return { ...(scope ? { correlation_id: scope.correlationId } : {}), ...ids };
}

const LABELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const SKIP = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name']);

/**
 * One JSON line as a person reads it: `12:04:05.120 WARN message key=value [wl-…]`. A tiny formatter
 * rather than pino-pretty (and its dependencies) on every start.
 */
export function humanLine(json: string): string {
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof event.time === 'string' ? event.time.slice(11, 23) : '';
  const level = typeof event.level === 'string' ? event.level.toUpperCase() : LABELS[event.level as number];
  const fields = Object.entries(event)
    .filter(([key]) => !SKIP.has(key) && key !== 'correlation_id' && key !== 'err')
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const err = event.err as { stack?: string; message?: string } | undefined;
  const tail = typeof event.correlation_id === 'string' ? ` [${event.correlation_id}]` : '';
  return `${time} ${level ?? ''} ${String(event.msg ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}${tail}${err ? `\n${err.stack ?? err.message ?? ''}` : ''}\n`;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go (default stderr); `human` formats them for a person (default: when stderr is a TTY). */
  stream?: { write(line: string): unknown };
  human?: boolean;
}

/**
 * pino, required on the first line actually written: in the main bundle, its 150 KB would cost ~8 ms of
 * every start (a tenth of the first answer), for a log that most runs never write to. The build bundles
 * it into dist/vendor/pino.cjs (the installed package has no pino in node_modules); this module is in
 * dist/cli.js or a chunk under dist/chunks/, so both places are tried. From the sources, pino itself.
 */
let pinoModule: typeof import('pino').default | undefined;
const loadPino = () => {
  if (pinoModule === undefined) {
    const bundled = ['./vendor/pino.cjs', '../vendor/pino.cjs']
      .map((p) => new URL(p, import.meta.url))
      .find((url) => existsSync(fileURLToPath(url)));
    pinoModule = createRequire(import.meta.url)(
      bundled === undefined ? 'pino' : fileURLToPath(bundled),
    ) as typeof import('pino').default;
  }
  return pinoModule;
};

const LEVEL_VALUES: Record<LogLevel, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};

/** The Logger over a pino logger made on first use; calls below the level cost one comparison. */
function lazy(make: () => PinoLogger, threshold: number): Logger {
  let real: PinoLogger | undefined;
  const get = () => {
    real ??= make();
    return real;
  };
  const at = (value: number, name: 'error' | 'warn' | 'info' | 'debug'): LogFn =>
    value < threshold
      ? noop
      : (((first: string | Record<string, unknown>, message?: string) => {
          if (message === undefined) get()[name](first as Record<string, unknown>);
          else get()[name](first as Record<string, unknown>, message);
        }) as LogFn);
  return {
    error: at(LEVEL_VALUES.error, 'error'),
    warn: at(LEVEL_VALUES.warn, 'warn'),
    info: at(LEVEL_VALUES.info, 'info'),
    debug: at(LEVEL_VALUES.debug, 'debug'),
    child: (bindings) => lazy(() => get().child(bindings), threshold),
  };
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const human = options.human ?? (options.stream === undefined && process.stderr.isTTY === true);
  const target = options.stream ?? process.stderr;
  return lazy(() => {
    const pino = loadPino();
    // Synchronous writes: a line logged just before exit is not lost (logging is rare: errors, recovery).
    const destination: DestinationStream = human
      ? { write: (line: string) => target.write(humanLine(line)) }
      : ((options.stream as DestinationStream | undefined) ?? pino.destination({ fd: 2, sync: true }));
    return pino(
      {
        name: 'workflowlookup',
        level,
        base: { pid: process.pid },
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
        mixin: requestFields,
      },
      destination,
    );
  }, LEVEL_VALUES[level]);
}

/**
 * An event's message naming what it is about, as docs/operations.md shows ("Workflow not found:
 * nightly-release"): the ids it concerns (a workflow, an execution, a step, a file) follow the
 * message's lead (its title, when the message starts with it; else the whole message), leaving out
 * those it names already. Each is cut as echoed names are: an id may be the client's text.
 */
export function messageNaming(message: string, ids: readonly unknown[], lead?: string): string {
  const named = ids
    .filter((id): id is string => typeof id === 'string' && id !== '' && !mentions(message, id))
    .map(echoedName);
  if (named.length === 0) return message;
  const at = lead !== undefined && message.startsWith(lead) ? lead.length : message.length;
  return `${message.slice(0, at)}: ${named.join(', ')}${message.slice(at)}`;
}

/** Whether `text` names `id` as a whole (`coding-task` is not named by `coding-task-workflow`). */
function mentions(text: string, id: string): boolean {
  const part = /[\w.-]/;
  for (let at = text.indexOf(id); at !== -1; at = text.indexOf(id, at + 1)) {
    const before = text[at - 1];
    const after = text[at + id.length];
    if ((before === undefined || !part.test(before)) && (after === undefined || !part.test(after)))
      return true;
  }
  return false;
}

/** An error as log fields: its message, and its stack at debug level only (it says where, not why). */
export function errorFields(error: unknown): Record<string, unknown> {
  return error instanceof Error ? { err: error } : { err: String(error) };
}
