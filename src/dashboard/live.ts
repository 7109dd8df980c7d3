import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../executions/execution-model.js';
import type { ExecutionQueries } from '../executions/execution-queries.js';
import type { ExecutionHead } from '../store/execution-store.js';
import type { Logger } from '../telemetry/log.js';

/** What a page learns when an execution changes; it then fetches its own HTML again. */
export interface ChangeEvent {
  execution_id: string;
  state: string;
  current_step: string | null;
  updated_at: string;
  /** Changes when anything shown about the execution may have changed. */
  version: string;
}

export const versionOf = (h: Pick<ExecutionHead, 'updated_at' | 'state' | 'current_seq' | 'token_attempt'>) =>
  `${h.updated_at}|${h.state}|${h.current_seq}|${h.token_attempt}`;

/** Tasks the runs page follows: the newest, and every unfinished one however old. */
const RECENT_TASKS = 50;
const OPEN_TASKS = 200;

/**
 * A principal's tasks as one short version: it changes when a task is created, or one of the newest or
 * unfinished ones changes status or reports progress. The runs page carries it; task streams compare.
 */
export async function tasksVersion(queries: ExecutionQueries, caller: Caller): Promise<string> {
  const [recent, open] = await Promise.all([
    queries.tasks({ limit: RECENT_TASKS }, caller),
    queries.tasks({ statuses: ['working', 'input_required'], limit: OPEN_TASKS }, caller),
  ]);
  const hash = createHash('sha256');
  for (const t of [...recent, ...open]) hash.update(`${t.task_id}|${t.status}|${t.last_updated_at}\n`);
  return hash.digest('base64url').slice(0, 22);
}

interface Stream {
  res: ServerResponse;
  principal: string;
  /** An execution id, or undefined for every execution of the principal (list pages). */
  execution: string | undefined;
  /** A runs page: the tasks version it shows (see tasksVersion), instead of execution changes. */
  tasks?: { version: string };
}

export interface LiveOptions {
  /** How often the store is polled while pages are open (default 250 ms). */
  pollMs?: number;
  /** Comment lines that keep idle connections (and proxies) alive (default 15 s). */
  heartbeatMs?: number;
  /** Open streams allowed at once (default 100); more get 503. */
  maxStreams?: number;
  /** Open streams of one principal allowed at once (default 20); more get 429. */
  maxStreamsPerPrincipal?: number;
  log?: Logger;
}

interface Cursor {
  since: string;
  /** Versions already published at exactly `since` (changes within one millisecond share it). */
  seen: Set<string>;
}

/**
 * Server-Sent Events for the dashboard: one stream per open page, fed by a poll of the store that runs
 * only while streams are open (one indexed query per principal per tick, however many pages), plus an
 * immediate look whenever the store reports a commit. Works across processes: the store is the only
 * channel, so an execution advanced by any server shows up.
 */
export class LiveUpdates {
  private readonly streams = new Set<Stream>();
  private readonly cursors = new Map<string, Cursor>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private lastError: string | undefined;
  private readonly pollMs: number;
  private readonly heartbeatMs: number;
  private readonly maxStreams: number;
  private readonly maxPerPrincipal: number;
  private readonly unwatch: (() => void)[] = [];

  constructor(
    private readonly queries: () => Promise<ExecutionQueries>,
    private readonly redact: (text: string) => string,
    private readonly options: LiveOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 250;
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
    this.maxStreams = options.maxStreams ?? 100;
    this.maxPerPrincipal = options.maxStreamsPerPrincipal ?? 20;
  }

  get size(): number {
    return this.streams.size;
  }

  /** Looks at once when `queries` reports commits (in-process writers; PostgreSQL NOTIFY). */
  follow(queries: ExecutionQueries): void {
    this.unwatch.push(queries.watch(() => this.poke()));
  }

  /**
   * Serves one EventSource request. `since` is the newest change the page showed: changes after it
   * (even ones made before the stream opened) are sent.
   */
  attach(
    req: IncomingMessage,
    res: ServerResponse,
    stream: {
      principal: string;
      execution?: string | undefined;
      since: string;
      /** A runs page instead: the tasks version it shows. */
      tasks?: string | undefined;
      /** When the stream must end (ms since the epoch): the viewer's session expiry. */
      until?: number | undefined;
    },
  ): void {
    if (this.closed) {
      res.writeHead(204).end(); // EventSource does not reconnect after a 204
      return;
    }
    // Per principal first: one principal's pages cannot take every stream from the others.
    let mine = 0;
    for (const s of this.streams) if (s.principal === stream.principal) mine++;
    if (mine >= this.maxPerPrincipal) {
      res
        .writeHead(429, { 'retry-after': '5', 'content-type': 'text/plain' })
        .end(`too many live pages open for ${stream.principal} (at most ${this.maxPerPrincipal})`);
      return;
    }
    if (this.streams.size >= this.maxStreams) {
      res
        .writeHead(503, { 'retry-after': '5', 'content-type': 'text/plain' })
        .end('too many live pages open');
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    res.flushHeaders();
    req.socket.setNoDelay(true);
    res.write('retry: 1000\n\n');
    const entry: Stream = {
      res,
      principal: stream.principal,
      execution: stream.execution,
      ...(stream.tasks !== undefined ? { tasks: { version: stream.tasks } } : {}),
    };
    this.streams.add(entry);
    if (entry.tasks === undefined) {
      const cursor = this.cursors.get(stream.principal);
      if (cursor === undefined || stream.since < cursor.since) {
        this.cursors.set(stream.principal, { since: stream.since, seen: new Set() });
      }
    }
    const beat = setInterval(() => res.write(': ping\n\n'), this.heartbeatMs);
    beat.unref();
    // A stream outlives no session: the page reconnects, and is then asked to sign in again.
    const end =
      stream.until === undefined
        ? undefined
        : setTimeout(() => res.end(), Math.max(0, Math.min(stream.until - Date.now(), 2 ** 31 - 1)));
    end?.unref();
    res.on('close', () => {
      clearInterval(beat);
      clearTimeout(end);
      this.streams.delete(entry);
      if (![...this.streams].some((s) => s.principal === entry.principal && s.tasks === undefined))
        this.cursors.delete(entry.principal);
      if (this.streams.size === 0) this.stop();
    });
    this.start();
  }

  /** Looks for changes now (after an action, or when the store reports a commit). */
  poke(): void {
    if (this.streams.size === 0 || this.closed) return;
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = this.poll()
      .then(() => {
        this.lastError = undefined;
      })
      .catch((error: unknown) => {
        // Polled four times a second: say it once, not every tick, until it changes or recovers.
        const message = String(error);
        if (message !== this.lastError) this.options.log?.warn(`dashboard: live update failed: ${message}`);
        this.lastError = message;
      })
      .finally(() => {
        this.polling = undefined;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  private start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.poke(), this.pollMs);
    this.timer.unref();
  }

  private stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async poll(): Promise<void> {
    const queries = await this.queries();
    const taskPrincipals = new Set([...this.streams].filter((s) => s.tasks).map((s) => s.principal));
    for (const principal of taskPrincipals) {
      const version = await tasksVersion(queries, { principal });
      const frame = `event: changed\ndata: ${JSON.stringify({ version })}\n\n`;
      for (const s of this.streams) {
        if (s.tasks === undefined || s.principal !== principal || s.tasks.version === version) continue;
        s.tasks.version = version;
        if (!s.res.write(frame)) s.res.destroy();
      }
    }
    for (const [principal, cursor] of this.cursors) {
      const changed = await queries.changedSince(cursor.since, { principal });
      const fresh = changed.filter((h) => !cursor.seen.has(`${h.execution_id}|${versionOf(h)}`));
      const newest = changed.at(-1)?.updated_at;
      if (newest !== undefined) {
        if (newest !== cursor.since) cursor.seen.clear();
        cursor.since = newest;
        for (const h of changed)
          if (h.updated_at === newest) cursor.seen.add(`${h.execution_id}|${versionOf(h)}`);
      }
      // One event per execution per tick: the latest version.
      const latest = new Map(fresh.map((h) => [h.execution_id, h]));
      for (const h of latest.values()) this.publish(principal, h);
    }
  }

  private publish(principal: string, h: ExecutionHead): void {
    const event: ChangeEvent = {
      execution_id: h.execution_id,
      state: h.state,
      current_step: h.current_step,
      updated_at: h.updated_at,
      version: versionOf(h),
    };
    const frame = `event: changed\ndata: ${this.redact(JSON.stringify(event))}\n\n`;
    for (const s of this.streams) {
      // One execution's page also shows its children: a child's change is the parent page's too.
      if (
        s.tasks !== undefined ||
        s.principal !== principal ||
        (s.execution !== undefined && s.execution !== h.execution_id && s.execution !== h.parent_id)
      )
        continue;
      // A full socket buffer means a stuck client: drop it (it reconnects and reloads) rather than buffer.
      if (!s.res.write(frame)) s.res.destroy();
    }
  }

  /** Ends every stream and stops polling; later requests get 204. Call before closing the server. */
  close(): void {
    this.closed = true;
    this.stop();
    for (const u of this.unwatch.splice(0)) u();
    for (const s of this.streams) s.res.end();
    this.streams.clear();
    this.cursors.clear();
  }
}
