#!/usr/bin/env node
// A small task-tracker API matching examples/tasks-api.openapi.yaml, for trying command steps locally
// (README: "Automation walkthrough") and for the tests. Run: node examples/tasks-api-server.mjs [port]
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

export const TOKEN = process.env.TASKS_API_TOKEN ?? 'secret-token-123';

/**
 * A real HTTP server on 127.0.0.1 implementing the tasks-api fixture, with a few task ids that
 * misbehave on purpose: boom (always 500), flaky (503 once), slow (answers after 2 s), garbage
 * (invalid JSON), hop (redirects to another host), escape (redirects out of /api on the same host),
 * leak (echoes the Authorization header in a 400), echo and echo-text (echo it in a 200, as is and
 * encoded).
 */
export class TasksApi {
  /** @type {{ method: string, url: string, headers: import('node:http').IncomingHttpHeaders, body: string }[]} */
  requests = [];
  /** @type {import('node:http').Server | undefined} */
  server;
  exportPolls = 0;
  flakyCalls = 0;
  nextId = 100;
  port = 0;

  get baseUrl() {
    return `http://127.0.0.1:${this.port}/api`;
  }

  /** @param {number} [port] */
  async start(port = 0) {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c.toString('utf8');
      });
      req.on('end', () => this.handle(req, res, body));
    });
    await new Promise((r) => this.server?.listen(port, '127.0.0.1', () => r(undefined)));
    this.port = /** @type {import('node:net').AddressInfo} */ (this.server.address()).port;
  }

  async stop() {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(() => r(undefined)));
  }

  /** @param {import('node:http').ServerResponse} res @param {number} status @param {unknown} value */
  json(res, status, value) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  }

  /** @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {string} body */
  handle(req, res, body) {
    this.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    if (path === '/api/tasks/leak') {
      this.json(res, 400, { error: 'bad request', echoed: req.headers.authorization });
      return;
    }
    if (path.startsWith('/admin/')) {
      // Outside the API's base path: a catalog call must never get here, even by a redirect.
      this.json(res, 200, { keys: ['admin-only'] });
      return;
    }
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      this.json(res, 401, { error: 'unauthorized' });
      return;
    }
    const projectTasks = /^\/api\/projects\/([^/]+)\/tasks$/.exec(path);
    const task = /^\/api\/tasks\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && path === '/api/projects') {
      this.json(res, 200, [
        { id: 'p1', name: 'Alpha' },
        { id: 'p2', name: 'Beta' },
      ]);
    } else if (req.method === 'GET' && projectTasks) {
      const m = projectTasks;
      const items = [
        { id: 't1', title: 'Fix login', status: 'open' },
        { id: 't2', title: 'Write docs', status: 'open' },
      ];
      this.json(res, 200, { items: m[1] === 'p1' ? items : [], total: m[1] === 'p1' ? 2 : 0 });
    } else if (req.method === 'POST' && projectTasks) {
      const m = projectTasks;
      const parsed = JSON.parse(body || '{}');
      this.json(res, 201, { id: `t${this.nextId++}`, title: parsed.title, status: 'open', project: m[1] });
    } else if (req.method === 'GET' && task) {
      const id = task[1];
      if (id === 'boom') this.json(res, 500, { error: 'internal' });
      else if (id === 'flaky' && this.flakyCalls++ === 0) this.json(res, 503, { error: 'try again' });
      else if (id === 'slow') setTimeout(() => this.json(res, 200, { id }), 2000);
      else if (id === 'garbage') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"id": "garbage", ');
      } else if (id === 'hop') {
        res.writeHead(302, { location: `http://127.0.0.2:${this.port}/api/tasks/t1` });
        res.end();
      } else if (id === 'escape') {
        res.writeHead(302, { location: '/admin/keys' });
        res.end();
      } else if (id === 'echo') {
        const auth = req.headers.authorization ?? '';
        const token = auth.replace(/^Bearer /, '');
        this.json(res, 200, {
          id,
          title: `Echo of ${auth}`,
          status: 'open',
          header_base64: Buffer.from(auth).toString('base64'),
          token_base64url: Buffer.from(`:${token}`).toString('base64url'),
          header_url: `https://example.com/?auth=${encodeURIComponent(auth)}`,
          nested: { [token]: [token, { again: `x${token}x` }] },
        });
      } else if (id === 'echo-text') {
        const auth = req.headers.authorization ?? '';
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`you sent ${auth}; as base64 ${Buffer.from(`ab${auth}`).toString('base64')}`);
      } else this.json(res, 200, { id, title: 'A task', status: 'open' });
    } else if (req.method === 'POST' && path === '/api/exports') {
      this.exportPolls = 0;
      this.json(res, 202, { job_id: 'job-1' });
    } else if (req.method === 'GET' && path === '/api/exports/job-1') {
      this.exportPolls++;
      this.json(
        res,
        200,
        this.exportPolls < 3
          ? { job_id: 'job-1', status: 'running' }
          : {
              job_id: 'job-1',
              status: 'done',
              url: `${this.baseUrl}/downloads/job-1.csv`,
            },
      );
    } else {
      this.json(res, 404, { error: 'not found' });
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const api = new TasksApi();
  await api.start(Number(process.argv[2] ?? 4010));
  process.stdout.write(`tasks API on ${api.baseUrl} (bearer token: ${TOKEN})\n`);
}
