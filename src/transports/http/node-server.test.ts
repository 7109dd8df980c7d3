import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type Logger, silentLogger } from '../../telemetry/log.js';
import { clientErrorAnswer, listenNode, type NodeListener, type RequestHandler } from './node-server.js';

const failure = (code: string) => Object.assign(new Error(code), { code }) as NodeJS.ErrnoException;

describe('clientErrorAnswer', () => {
  it('answers what node:http could not read with a status and a JSON-RPC body, never a bare reset', () => {
    const answers = ['HPE_HEADER_OVERFLOW', 'ERR_HTTP_REQUEST_TIMEOUT', 'HPE_INVALID_METHOD'].map((code) =>
      clientErrorAnswer(failure(code), 16_384),
    );
    expect(answers.map((a) => a?.split('\r\n')[0])).toEqual([
      'HTTP/1.1 431 Request Header Fields Too Large',
      'HTTP/1.1 408 Request Timeout',
      'HTTP/1.1 400 Bad Request',
    ]);
    const [head, body] = (answers[0] as string).split('\r\n\r\n') as [string, string];
    expect(head).toContain(`content-length: ${Buffer.byteLength(body)}`);
    expect(head).toContain('connection: close');
    expect(JSON.parse(body).error.data.details).toMatch(
      /exceed 16384 bytes \(WORKFLOWLOOKUP_HTTP_MAX_HEADER_BYTES\)/,
    );
  });

  it('gives up on a connection that is gone', () => {
    expect(clientErrorAnswer(failure('ECONNRESET'), 16_384)).toBeUndefined();
    expect(clientErrorAnswer(failure('EPIPE'), 16_384)).toBeUndefined();
  });
});

describe('listenNode', () => {
  let node: NodeListener | undefined;
  afterEach(async () => {
    await node?.end();
    node = undefined;
  });

  const start = async (handle: RequestHandler, log: Logger = silentLogger) => {
    node = await listenNode({ host: '127.0.0.1', port: 0, maxHeaderBytes: 1024 }, handle, log);
    return `http://127.0.0.1:${node.port}/mcp`;
  };

  /** A handler whose POSTs and GETs wait until `open()`; `entered` resolves when one arrived. */
  const gated = () => {
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let entered: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const handle: RequestHandler = async (_req, res) => {
      entered();
      await gate;
      res.writeHead(200);
      res.end('done');
    };
    return { handle, open, arrived };
  };

  /** Whether `promise` settled by the time every callback queued now has run. */
  const settledNow = async (promise: Promise<unknown>) => {
    let settled = false;
    void promise.then(() => {
      settled = true;
    });
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    return settled;
  };

  it('answers a handler that throws with 500 and logs why', async () => {
    const logged: unknown[] = [];
    const log = {
      ...silentLogger,
      error: (fields: unknown, message?: string) => logged.push([fields, message]),
    };
    const url = await start(async () => {
      throw new Error('boom');
    }, log as Logger);
    const res = await fetch(url, { method: 'POST', body: '{}' });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32603, message: 'Internal error' },
    });
    expect(logged).toEqual([
      [{ err: expect.objectContaining({ message: 'boom' }) }, 'http: the request failed'],
    ]);
  });

  it('answers a request head over the limit with 431', async () => {
    const url = await start(async (_req, res) => {
      res.end();
    });
    const res = await fetch(url, { headers: { 'x-big': 'x'.repeat(2048) } });
    expect(res.status).toBe(431);
    expect((await res.json()).error.message).toBe('Request Header Fields Too Large');
  });

  it('drain does not wait for a notification stream (GET)', async () => {
    const { handle, open, arrived } = gated();
    const url = await start(handle);
    const stream = fetch(url);
    await arrived;
    expect(await settledNow(node?.drain(60_000) as Promise<void>)).toBe(true);
    open();
    await (await stream).text();
  });

  it('drain waits for a request in flight', async () => {
    const { handle, open, arrived } = gated();
    const url = await start(handle);
    const answer = fetch(url, { method: 'POST', body: '{}' });
    await arrived;
    const drained = node?.drain(60_000) as Promise<void>;
    expect(await settledNow(drained)).toBe(false);
    open();
    await drained;
    expect(await (await answer).text()).toBe('done');
  });

  it('stops accepting, then ends what is left', async () => {
    const url = await start(async (_req, res) => {
      res.end('ok');
    });
    expect(await (await fetch(url)).text()).toBe('ok');
    node?.stopAccepting();
    await node?.end();
    node = undefined;
    const refused = await new Promise<string>((resolve) => {
      request(url, { agent: false })
        .on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
        .on('response', () => resolve('answered'))
        .end();
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});
