/**
 * The one way the server makes outbound HTTP requests (catalog commands, input providers, URL catalog
 * sources). Built on node:http/https rather than fetch because fetch cannot check where a name resolves
 * to: here every resolved address passes the HostPolicy before a socket is opened, the address the
 * socket connected to is checked again before a byte of the request is written, and bodies are read
 * as a stream that is cut off past a byte limit.
 */
import type { LookupAddress } from 'node:dns';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isIP, type LookupFunction, connect as netConnect, type Socket } from 'node:net';
import { type HostPolicy, HostRefused } from './host-policy.js';

// Loaded on the first outbound request, not at start-up: most sessions never call an API, and these
// modules (TLS above all) are a measurable part of the server's start (bench/).
let networking:
  | Promise<
      [
        typeof import('node:dns/promises'),
        typeof import('node:http'),
        typeof import('node:https'),
        typeof import('node:tls'),
      ]
    >
  | undefined;
const loadNetworking = () =>
  (networking ??= Promise.all([
    import('node:dns/promises'),
    import('node:http'),
    import('node:https'),
    import('node:tls'),
  ]));

/** A body longer than the caller's limit; the connection was closed without reading the rest. */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the response is larger than ${limit} bytes`);
    this.name = 'BodyTooLarge';
  }
}

export interface OutboundRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Aborts connecting, the request and the body read. */
  signal: AbortSignal;
  policy: HostPolicy;
  /** Resolves a host name (default: the system resolver); tests stand in for DNS with it. */
  resolve?: (hostname: string) => Promise<LookupAddress[]>;
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  header(name: string): string | undefined;
  /** The whole body; fails with BodyTooLarge (and closes the connection) past `limit` bytes. */
  read(limit: number): Promise<Buffer>;
  /** Drops the body and the connection. */
  discard(): void;
}

/** Sends one request (no redirects followed) once its destination passed the policy. */
export async function send(url: URL, options: OutboundRequest): Promise<HttpAnswer> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new HostRefused(`only http and https URLs can be called, not ${url.protocol}`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const secure = url.protocol === 'https:';
  const port = Number(url.port || (secure ? 443 : 80));
  const { policy, signal } = options;
  if (isIP(host) !== 0) policy.check(url, host);
  const [dns, http, https, tls] = await loadNetworking();

  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    const resolving = options.resolve
      ? options.resolve(hostname)
      : dns.lookup(hostname, { all: true, family: lookupOptions.family ?? 0 });
    resolving.then(
      (addresses) => {
        try {
          if (addresses.length === 0) throw new Error(`${hostname} has no address`);
          // Every answer must pass, so a name that mixes public and private addresses is refused.
          for (const a of addresses) policy.check(url, a.address);
        } catch (refused) {
          return callback(refused as NodeJS.ErrnoException, '', 0);
        }
        const first = addresses[0] as LookupAddress;
        if (lookupOptions.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  const createConnection = (_: unknown, done: (error: Error | null, socket: Socket) => void) => {
    const socket: Socket = secure
      ? tls.connect({
          host,
          port,
          lookup,
          ALPNProtocols: ['http/1.1'],
          ...(isIP(host) === 0 ? { servername: host } : {}),
        })
      : netConnect({ host, port, lookup });
    const abort = () => socket.destroy(signal.reason as Error);
    signal.addEventListener('abort', abort, { once: true });
    socket.once('error', (error) => {
      signal.removeEventListener('abort', abort);
      done(error, socket);
    });
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      signal.removeEventListener('abort', abort);
      try {
        policy.check(url, socket.remoteAddress ?? '');
      } catch (refused) {
        socket.destroy();
        return done(refused as Error, socket);
      }
      done(null, socket);
    });
    return undefined;
  };

  return new Promise((resolve, reject) => {
    const req = (secure ? https.request : http.request)(
      url,
      { method: options.method, headers: options.headers, signal, createConnection },
      (res) => resolve(answer(res)),
    );
    req.once('error', reject);
    req.end(options.body);
  });
}

function answer(res: IncomingMessage): HttpAnswer {
  return {
    status: res.statusCode ?? 0,
    headers: res.headers,
    header: (name) => {
      const value = res.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    read: async (limit) => {
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > limit) {
        res.destroy();
        throw new BodyTooLarge(limit);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res) {
        size += (chunk as Buffer).length;
        if (size > limit) {
          res.destroy();
          throw new BodyTooLarge(limit);
        }
        chunks.push(chunk as Buffer);
      }
      return Buffer.concat(chunks);
    },
    discard: () => res.destroy(),
  };
}
