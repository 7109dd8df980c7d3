/**
 * How the HTTP transport writes its own answers (refusals, limits, the answers it gives before a
 * request reaches the SDK): JSON-RPC errors in JSON bodies, and the SDK's web Responses copied onto
 * node's. Shared by every module of the transport so that a refusal looks the same wherever it is made.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  // A stream already answering (an SSE response) cannot change its status: end it instead.
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A JSON-RPC error answering no request in particular (the transport refused it before reading an id). */
export const rpcError = (code: number, message: string, data?: unknown) => ({
  jsonrpc: '2.0',
  id: null,
  error: { code, message, ...(data !== undefined ? { data } : {}) },
});

/** Writes a web Response (the SDK's OAuth challenges) to a node response. */
export async function sendWeb(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/** A request header as one string (node gives repeated ones as an array). */
export const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return typeof value === 'string' ? value : value?.join(', ');
};
