/**
 * Stand-ins the unit tests of the HTTP transport's parts (src/transports/http/) share: a node response that records what was
 * written, a request with headers (and a body when given), and a clock moved by hand.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../../src/transports/http/clock.js';

export interface Recorded {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body as JSON (undefined when empty). */
  json(): Record<string, any> | undefined;
}

/** A ServerResponse that records its status, headers and body. */
export function recordingResponse(): { res: ServerResponse; sent: Recorded } {
  const sent: Recorded = {
    status: 0,
    headers: {},
    body: '',
    json: () => (sent.body === '' ? undefined : JSON.parse(sent.body)),
  };
  const res = {
    headersSent: false,
    writeHead(status: number, headers: Record<string, string> = {}) {
      sent.status = status;
      sent.headers = Object.fromEntries(
        Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)]),
      );
      res.headersSent = true;
      return res;
    },
    end(chunk?: string | Buffer) {
      if (chunk !== undefined) sent.body += chunk.toString();
      return res;
    },
  };
  return { res: res as unknown as ServerResponse, sent };
}

/** An IncomingMessage with `headers`, a client address, and `body` as its stream. */
export function fakeRequest(
  method: string,
  headers: Record<string, string> = {},
  body?: string | Buffer[],
  remoteAddress = '192.0.2.1',
): IncomingMessage {
  const chunks = body === undefined ? [] : typeof body === 'string' ? [Buffer.from(body)] : body;
  return {
    method,
    url: '/mcp',
    headers,
    socket: { remoteAddress },
    async *[Symbol.asyncIterator]() {
      yield* chunks;
    },
  } as unknown as IncomingMessage;
}

/** A clock that moves only when told, running the periodic work it was given each time it moves. */
export function manualClock(start = 1_000_000): Clock & { advance(ms: number): void; timers(): number } {
  let now = start;
  const periodic = new Set<() => void>();
  return {
    now: () => now,
    every(_ms, fn) {
      const entry = () => fn();
      periodic.add(entry);
      return () => periodic.delete(entry);
    },
    advance(ms) {
      now += ms;
      for (const fn of [...periodic]) fn();
    },
    timers: () => periodic.size,
  };
}
