import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyTooLarge, send } from './guarded-http.js';
import { HostPolicy, HostRefused } from './host-policy.js';

let server: Server;
let port = 0;
let connections = 0;
const requests: string[] = [];
let streamed = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/endless') {
      // Chunked, no content-length: only the reader's limit stops it.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (streamed < 512 * 1024 * 1024) {
          streamed += chunk.length;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      return pump();
    }
    if (req.url === '/stall') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.write('partial');
    }
    if (req.url === '/declared') {
      res.writeHead(200, { 'content-length': String(50 * 1024 * 1024) });
      return res.write('x');
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`hello ${req.headers.authorization ?? ''}`);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const get = (url: string, policy: HostPolicy, extra: Partial<Parameters<typeof send>[1]> = {}) =>
  send(new URL(url), {
    method: 'GET',
    headers: { authorization: 'Bearer s3cret-value' },
    signal: AbortSignal.timeout(5000),
    policy,
    ...extra,
  });

describe('send', () => {
  it('refuses loopback in every notation without opening a connection', async () => {
    const before = connections;
    for (const host of ['127.0.0.1', '2130706433', '0x7f000001', '127.1', '0177.0.0.1', '0.0.0.0', '[::1]']) {
      await expect(get(`http://${host}:${port}/`, new HostPolicy()), host).rejects.toThrow(HostRefused);
    }
    expect(connections).toBe(before);
  });

  it('refuses names that resolve to private addresses: localhost, rebinding, mixed answers', async () => {
    const before = connections;
    await expect(get(`http://localhost:${port}/`, new HostPolicy())).rejects.toThrow(HostRefused);
    const rebinding = async () => [{ address: '127.0.0.1', family: 4 }];
    await expect(
      get(`http://api.example.test:${port}/`, new HostPolicy(), { resolve: rebinding }),
    ).rejects.toThrow(/api\.example\.test.*127\.0\.0\.1/);
    const mixed = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '169.254.169.254', family: 4 },
    ];
    await expect(
      get(`http://api.example.test:${port}/`, new HostPolicy(), { resolve: mixed }),
    ).rejects.toThrow(HostRefused);
    expect(connections).toBe(before);
  });

  it('calls an allowed private host, and checks the connected address again before sending', async () => {
    const allowed = new HostPolicy([`127.0.0.1:${port}`]);
    const res = await get(`http://127.0.0.1:${port}/hi`, allowed);
    expect(res.status).toBe(200);
    expect((await res.read(1000)).toString()).toBe('hello Bearer s3cret-value');

    // A resolver answer that passed, then a socket that ends up elsewhere (what rebinding between the
    // lookup and the connect would look like): the second check stops it before a byte is written.
    class FlipPolicy extends HostPolicy {
      checks: string[] = [];
      override check(url: URL, address: string): void {
        this.checks.push(address);
        if (this.checks.length > 1) super.check(url, address);
      }
    }
    const flip = new FlipPolicy();
    const seen = requests.length;
    await expect(
      get(`http://rebound.example.test:${port}/`, flip, {
        resolve: async () => [{ address: '127.0.0.1', family: 4 }],
      }),
    ).rejects.toThrow(HostRefused);
    expect(flip.checks).toEqual(['127.0.0.1', '127.0.0.1']);
    await new Promise((r) => setTimeout(r, 50));
    expect(requests.length).toBe(seen);
  });

  it('stops reading past the limit and closes the connection', async () => {
    const allowed = new HostPolicy([`127.0.0.1:${port}`]);
    streamed = 0;
    const res = await get(`http://127.0.0.1:${port}/endless`, allowed);
    await expect(res.read(1024 * 1024)).rejects.toThrow(BodyTooLarge);
    await new Promise((r) => setTimeout(r, 100));
    // The server could only push what socket buffers hold before the client hung up.
    expect(streamed).toBeLessThan(64 * 1024 * 1024);
    const declared = await get(`http://127.0.0.1:${port}/declared`, allowed);
    await expect(declared.read(1024)).rejects.toThrow(BodyTooLarge);
  });

  it('gives up on a body that stalls once the signal fires', async () => {
    const allowed = new HostPolicy([`127.0.0.1:${port}`]);
    const res = await get(`http://127.0.0.1:${port}/stall`, allowed, { signal: AbortSignal.timeout(300) });
    expect(res.status).toBe(200);
    await expect(res.read(1024)).rejects.toThrow();
  });

  it('refuses schemes other than http and https', async () => {
    await expect(get('file:///etc/passwd', new HostPolicy(['*']))).rejects.toThrow(/only http and https/);
  });
});
