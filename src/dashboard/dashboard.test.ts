import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import { type App, createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { silentLogger } from '../telemetry/log.js';
import { createDashboard, type Dashboard } from './dashboard.js';
import { ANONYMOUS } from './viewer.js';

// The dashboard mounted the way `serve --http` mounts it: under a path, behind authentication that
// names the principal of each request (here a test header stands in for the transport's auth).
let root: string;
let app: App;
let dashboard: Dashboard;
let server: Server;
let port: number;
const ids = { alice: '', bob: '' };

function get(
  path: string,
  who?: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
) {
  return new Promise<{ status: number; body: string; location?: string | undefined }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: init.method ?? 'GET',
        headers: { ...(who ? { 'x-test-principal': who } : {}), ...init.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, location: res.headers.location }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wl-dash-'));
  const repo = join(import.meta.dirname, '..', '..');
  const config = loadConfig({
    cwd: root,
    env: {
      HOME: join(root, 'home'),
      XDG_CONFIG_HOME: join(root, 'config'),
      WORKFLOWLOOKUP_WORKFLOWS_PATH: join(repo, 'test', 'fixtures', 'valid'),
      WORKFLOWLOOKUP_DATA_DIR: join(root, 'data'),
      WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false',
    },
  });
  app = createApp(config, {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
  });
  const service = await app.services.executions();
  for (const principal of ['alice', 'bob'] as const) {
    const outcome = await service.start({ workflow_id: 'durable-demo' }, { principal });
    ids[principal] = outcome.kind === 'step' ? outcome.execution_id : '';
  }
  dashboard = createDashboard(app, { basePath: '/dashboard' });
  server = createServer((req, res) => {
    // The mounting transport's part: who asks, passed with the request (nobody without the header).
    const who = req.headers['x-test-principal'];
    const viewer = typeof who === 'string' ? { principal: who, allPrincipals: false } : ANONYMOUS;
    if (req.url?.startsWith('/dashboard')) dashboard.handle(req, res, viewer);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  dashboard.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await app.close();
  rmSync(root, { recursive: true, force: true });
});

describe('dashboard mounted behind authentication', () => {
  it('answers 401 without a principal, and serves every link under the mount path', async () => {
    expect((await get('/dashboard/')).status).toBe(401);
    const page = await get('/dashboard/', 'alice');
    expect(page.status).toBe(200);
    const links = [...page.body.matchAll(/(?:href|src|action|data-live)="([^"]+)"/g)].map(
      (m) => m[1] as string,
    );
    expect(links.length).toBeGreaterThan(5);
    expect(links.filter((l) => l.startsWith('/') && !l.startsWith('/dashboard/'))).toEqual([]);
    expect((await get('/dashboard', 'alice')).location).toBe('/dashboard/');
    expect((await get('/dashboard/assets/dashboard.css', 'alice')).status).toBe(200);
  });

  it("shows a principal its own executions only, whatever it asks for, and acts on nobody else's", async () => {
    const alice = await get('/dashboard/', 'alice');
    expect(alice.body).toContain(ids.alice);
    expect(alice.body).not.toContain(ids.bob);
    expect((await get('/dashboard/?principal=bob', 'alice')).body).not.toContain(ids.bob);
    expect(alice.body).not.toContain('name="principal"');
    expect((await get(`/dashboard/executions/${ids.bob}`, 'alice')).status).toBe(404);
    expect((await get(`/dashboard/executions/${ids.bob}?principal=bob`, 'alice')).status).toBe(404);
    expect((await get(`/dashboard/executions/${ids.alice}`, 'alice')).status).toBe(200);

    const confirm = await get(`/dashboard/executions/${ids.alice}?confirm=abandon`, 'alice');
    const csrf = /name="csrf" value="([^"]+)"/.exec(confirm.body)?.[1] ?? '';
    const post = (id: string, who: string, form: Record<string, string>) =>
      get(`/dashboard/executions/${id}/state`, who, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
    // Alice's form token is hers: it does not work for bob, and alice cannot reach bob's execution.
    expect((await post(ids.alice, 'bob', { csrf, state: 'paused' })).status).toBe(403);
    expect((await post(ids.bob, 'alice', { csrf, state: 'paused', principal: 'bob' })).status).toBe(404);
    const service = await app.services.executions();
    expect((await service.queries.status(ids.bob, { principal: 'bob' })).state).toBe('running');
    const done = await post(ids.alice, 'alice', { csrf, state: 'paused' });
    expect(done.location).toBe(`/dashboard/executions/${ids.alice}?notice=paused`);
    expect((await service.queries.status(ids.alice, { principal: 'alice' })).state).toBe('paused');
  });

  it('lets the owner of the data dir (the standalone dashboard) switch between principals', async () => {
    const owner = createDashboard(app, { basePath: '/dashboard' });
    const local = createServer((req, res) => owner.handle(req, res));
    await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
    const ownerPort = (local.address() as AddressInfo).port;
    const fetchPage = (path: string) =>
      new Promise<string>((resolve) => {
        request({ host: '127.0.0.1', port: ownerPort, path }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve(body));
        }).end();
      });
    try {
      // The local user owns no execution of this team server's data dir: the first principal that does is
      // shown, with the selector (it once showed an empty page, the selector hidden for one principal).
      const first = await fetchPage('/dashboard/');
      expect(first).toContain(ids.alice);
      expect(first).toMatch(/<select name="principal">.*<option value="alice" selected>/);
      const bob = await fetchPage('/dashboard/?principal=bob');
      expect(bob).toContain(ids.bob);
      expect(bob).not.toContain(ids.alice);
      expect(bob).toMatch(/<select name="principal">.*<option value="bob" selected>/);
      expect(await fetchPage(`/dashboard/executions/${ids.bob}?principal=bob`)).toContain(ids.bob);
    } finally {
      owner.close();
      local.closeAllConnections();
      await new Promise((r) => local.close(r));
    }
  });

  it('builds the one-execution page from its read model alone: one executionPage call, nothing else', async () => {
    const service = await app.services.executions();
    const calls: string[] = [];
    // Every method of the read side the page calls is recorded (the live stream is not opened here).
    const counted = new Proxy(service.queries, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const reading = createDashboard(app, { basePath: '/dashboard', queries: async () => counted });
    const srv = createServer((req, res) =>
      reading.handle(req, res, { principal: 'alice', allPrincipals: false }),
    );
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const page = await new Promise<{ status: number; body: string }>((resolve) => {
      const path = `/dashboard/executions/${ids.alice}`;
      request({ host: '127.0.0.1', port: (srv.address() as AddressInfo).port, path }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      }).end();
    });
    try {
      expect(page.status).toBe(200);
      expect(page.body).toContain(ids.alice);
      expect(calls).toEqual(['executionPage']);
    } finally {
      reading.close();
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    }
  });

  it('accepts a form from another dashboard process only when they share the token secret', async () => {
    const serve = async (d: Dashboard) => {
      const srv = createServer((req, res) => d.handle(req, res));
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      return srv;
    };
    const call = (srv: Server, path: string, init: { method?: string; body?: string } = {}) =>
      new Promise<{ status: number; body: string }>((resolve) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: (srv.address() as AddressInfo).port,
            path,
            method: init.method ?? 'GET',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (c: string) => {
              body += c;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.end(init.body);
      });
    const service = await app.services.executions();
    const started = await service.start({ workflow_id: 'durable-demo' }, { principal: 'local' });
    const id = started.kind === 'step' ? started.execution_id : '';
    const shared = { ...app, config: { ...app.config, tokenSecret: 's'.repeat(40) } };
    const pairs: [Dashboard, Dashboard, number][] = [
      [createDashboard(app), createDashboard(app), 403],
      [createDashboard(shared), createDashboard(shared), 303],
    ];
    for (const [a, b, expected] of pairs) {
      const [first, second] = [await serve(a), await serve(b)];
      try {
        const form = await call(first, `/executions/${id}?confirm=pause`);
        const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? '';
        expect(csrf).toMatch(/^\d+\.[\w-]{43}$/);
        const posted = await call(second, `/executions/${id}/state`, {
          method: 'POST',
          body: new URLSearchParams({ csrf, state: 'paused' }).toString(),
        });
        expect(posted.status).toBe(expected);
      } finally {
        for (const [d, srv] of [
          [a, first],
          [b, second],
        ] as const) {
          d.close();
          srv.closeAllConnections();
          await new Promise((r) => srv.close(r));
        }
      }
    }
  });
});
