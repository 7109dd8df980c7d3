/**
 * The one runtime adapter: node:http. It listens, answers what node refuses to parse, traces and counts
 * requests, turns a thrown error into a 500, and closes in steps (stop accepting, let in-flight work
 * finish, end what is left) so the composer can end the transport's own parts in between.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, type HttpSettings } from '../../config.js';
import type { Logger } from '../../telemetry/log.js';
import { withIncomingHeaders } from '../../telemetry/trace.js';
import { json, rpcError } from './answers.js';

/**
 * The raw HTTP answer to a request node:http refused while reading it: 431 for a head over the size
 * limit (a large JWT), 408 for one too slow to arrive, 400 for anything unparsable; undefined when the
 * connection is gone anyway.
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException, maxHeaderBytes: number): string | undefined {
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return undefined;
  const [status, reason, details] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'Request Header Fields Too Large',
          `the request headers exceed ${maxHeaderBytes} bytes (WORKFLOWLOOKUP_HTTP_MAX_HEADER_BYTES); a bearer token that large needs a higher limit`,
        ]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'the request did not arrive in time']
        : [400, 'Bad Request', 'the request is not valid HTTP/1.1'];
  const body = JSON.stringify(rpcError(-32600, reason, { details }));
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** A listening node:http server, closed in the steps `RunningHttp.close` takes. */
export interface NodeListener {
  /** The port bound (the real one when 0 was asked for). */
  port: number;
  /** Stops accepting connections; what is open stays open until `end`. */
  stopAccepting(): void;
  /** Waits until no counted request is in flight, or `graceMs` passed. */
  drain(graceMs: number): Promise<void>;
  /** Closes idle connections, forces the rest after a second, and resolves once the server is closed. */
  end(): Promise<void>;
}

export async function listenNode(
  settings: Pick<HttpSettings, 'host' | 'port' | 'maxHeaderBytes'>,
  handle: RequestHandler,
  log: Logger,
): Promise<NodeListener> {
  let inflight = 0;
  let drained: (() => void) | undefined;
  let stopped: Promise<void> | undefined;
  const stopAccepting = () => {
    stopped ??= new Promise<void>((resolve) => http.close(() => resolve()));
  };

  const http: Server = createServer({ maxHeaderSize: settings.maxHeaderBytes }, (req, res) => {
    // A GET holds a notification stream open for as long as the client wants: not work to wait for.
    const counted = req.method !== 'GET';
    if (counted) inflight++;
    withIncomingHeaders(req.headers, () => handle(req, res))
      .catch((error: unknown) => {
        log.error({ err: error }, 'http: the request failed');
        json(res, 500, rpcError(-32603, 'Internal error'));
      })
      .finally(() => {
        if (!counted) return;
        inflight--;
        if (inflight === 0) drained?.();
      });
  });
  // A request node:http cannot take gets an HTTP answer saying why, not a reset connection.
  http.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    const answer = clientErrorAnswer(error, settings.maxHeaderBytes);
    if (answer === undefined || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(answer);
  });

  await new Promise<void>((resolve, reject) => {
    // A port in use is a setting to change, named as the operator sets it (not `listen EADDRINUSE`).
    const failed = (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new ConfigError(
              `port ${settings.port} on ${settings.host} is in use: choose another with --port or WORKFLOWLOOKUP_HTTP_PORT (0 picks a free one)`,
            )
          : error,
      );
    http.once('error', failed);
    http.listen(settings.port, settings.host, () => {
      http.off('error', failed);
      resolve();
    });
  });

  return {
    port: (http.address() as AddressInfo).port,
    stopAccepting,
    async drain(graceMs) {
      if (inflight === 0) return;
      await new Promise<void>((resolve) => {
        drained = resolve;
        setTimeout(resolve, graceMs).unref();
      });
    },
    async end() {
      stopAccepting();
      http.closeIdleConnections();
      const force = setTimeout(() => http.closeAllConnections(), 1000);
      force.unref();
      await stopped;
      clearTimeout(force);
    },
  };
}
