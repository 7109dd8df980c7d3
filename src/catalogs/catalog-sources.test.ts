import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainFailure } from '../engine/errors.js';
import { MAX_SOURCE_BYTES, readSource, sourceTypeOf } from './catalog-sources.js';
import { HostPolicy } from './host-policy.js';

const DOC = 'openapi: 3.0.3\ninfo: {title: T, version: "1"}\npaths: {}\n';
let server: Server;
let port = 0;
let sent = 0;
let hits: string[] = [];
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'wl-sources-'));
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/huge.yaml') {
      res.writeHead(200, { 'content-type': 'application/yaml' });
      const chunk = Buffer.alloc(256 * 1024, ' ');
      const pump = () => {
        while (sent < 1024 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      return pump();
    }
    if (req.url === '/moved') {
      res.writeHead(301, { location: '/doc.yaml' });
      return res.end();
    }
    if (req.url === '/to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      return res.end();
    }
    if (req.url === '/doc.yaml') return res.end(DOC);
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const allowed = () => ({ allowUrls: true, policy: new HostPolicy([`127.0.0.1:${port}`]), cwd: dir });

async function details(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainFailure && error.error.code === 'invalid_params') return error.error.details;
    throw error;
  }
  throw new Error('expected invalid_params');
}

describe('readSource', () => {
  it('infers the type and reads files relative to the working directory', async () => {
    expect(sourceTypeOf('https://x/y.yaml', undefined)).toBe('url');
    expect(sourceTypeOf('api.yaml', undefined)).toBe('path');
    writeFileSync(join(dir, 'api.yaml'), DOC);
    expect(await readSource('api.yaml', undefined, allowed())).toBe(DOC);
    writeFileSync(join(dir, 'big.yaml'), Buffer.alloc(MAX_SOURCE_BYTES + 1, ' '));
    expect(await details(readSource('big.yaml', 'path', allowed()))).toMatch(/larger than 5242880 bytes/);
    expect(await details(readSource(dir, 'path', allowed()))).toMatch(/is not a file/);
    expect(await details(readSource('nope.yaml', 'path', allowed()))).toMatch(/no readable file/);
  });

  it('reads URLs only when allowed, following redirects', async () => {
    expect(
      await details(
        readSource(`http://127.0.0.1:${port}/doc.yaml`, undefined, { ...allowed(), allowUrls: false }),
      ),
    ).toMatch(/URL sources are disabled/);
    expect(await readSource(`http://127.0.0.1:${port}/moved`, undefined, allowed())).toBe(DOC);
    expect(await details(readSource(`http://127.0.0.1:${port}/missing`, undefined, allowed()))).toMatch(
      /answered 404/,
    );
  });

  it('refuses private hosts unless allowed, also as a redirect target', async () => {
    hits = [];
    const publicOnly = { allowUrls: true, policy: new HostPolicy(), cwd: dir };
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `2130706433:${port}`]) {
      expect(await details(readSource(`http://${host}/doc.yaml`, 'url', publicOnly))).toMatch(
        /WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS/,
      );
    }
    expect(hits).toEqual([]);
    expect(await details(readSource(`http://127.0.0.1:${port}/to-metadata`, 'url', allowed()))).toMatch(
      /169\.254\.169\.254.*WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS/,
    );
  });

  it('streams a URL answer and stops at the size limit instead of reading it whole', async () => {
    sent = 0;
    expect(await details(readSource(`http://127.0.0.1:${port}/huge.yaml`, 'url', allowed()))).toMatch(
      /larger than 5242880 bytes/,
    );
    await new Promise((r) => setTimeout(r, 100));
    // Stopped early, witnessed by the bytes the endless server got to send (not by a wall clock).
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });
});
