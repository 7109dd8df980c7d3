// `workflowlookup dashboard` on PostgreSQL: it reads through the app's own store (no SQLite file), and
// an open page hears of a change another server process commits through LISTEN/NOTIFY, within a second.
import { cpSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  findTestServer,
  skipNotice,
  type TestDatabase,
} from '../src/store/postgres/test-database.js';
import { type DashboardProcess, raw, startDashboard } from './helpers/dashboard.js';
import { FIXTURES, RawServer, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

const pg = await findTestServer();
if (pg.url === undefined) process.stderr.write(skipNotice('dashboard on PostgreSQL suite', pg.why));

let db: TestDatabase | undefined;
let sb: Sandbox;
let dash: DashboardProcess | undefined;
let agent: RawServer | undefined;

beforeAll(async () => {
  if (pg.url === undefined) return;
  db = await createTestDatabase(pg.url);
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: 'dashboard-postgres-secret-0123456789abcdef' });
  cpSync(join(FIXTURES, 'valid', 'durable-demo.yaml'), join(sb.runtime, 'durable-demo.yaml'));
  sb.env.WORKFLOWLOOKUP_DATABASE_URL = (await db.schema()).url;
  // Each process its own data dir: nothing can pass between them but PostgreSQL.
  for (const dir of ['agent-data', 'dashboard-data']) mkdirSync(join(sb.root, dir));
  agent = new RawServer({
    env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'agent-data') },
    cwd: sb.project,
  });
  await agent.initialize();
  dash = await startDashboard(sb, { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'dashboard-data') });
});

afterAll(async () => {
  await dash?.stop();
  agent?.kill();
  await db?.drop();
  sb?.cleanup();
});

let ids = 0;
async function rpc(method: string, params: Json): Promise<Json> {
  const res = await (agent as RawServer).request(`r${ids++}`, method, params);
  if (res.error) throw new Error(JSON.stringify(res.error));
  return res.result as Json;
}

describe.skipIf(pg.url === undefined)('the dashboard on PostgreSQL', () => {
  it("shows another server's execution and hears of its changes through LISTEN/NOTIFY within a second", async () => {
    const d = dash as DashboardProcess;
    const started = await rpc('workflow_start', { workflow_name: 'durable-demo' });
    const id = started.execution_id as string;
    const get = (path: string) => raw(d.port, path, { headers: { host: `127.0.0.1:${d.port}` } });
    const list = await get('/');
    expect(list.status).toBe(200);
    expect(list.body).toContain(`data-execution="${id}"`);
    const page = await get(`/executions/${id}`);
    const live = /data-live="([^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&') as string;

    const events = await new Promise<{ count: () => number; close: () => void }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: d.port, path: live, headers: { host: `127.0.0.1:${d.port}` } },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => {
            text += c;
          });
          resolve({ count: () => text.split('event: changed').length - 1, close: () => req.destroy() });
        },
      );
      req.on('error', reject);
      req.end();
    });
    // The open page made the dashboard LISTEN on the app's own store.
    await expect
      .poll(
        async () =>
          (
            await (db as TestDatabase).admin(
              'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
              [`workflowlookup-listen-${d.child.pid}`],
            )
          )[0]?.n,
      )
      .toBe(1);

    const advanced = await rpc('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'The design: a queue.' },
    });
    await expect.poll(() => events.count()).toBe(1);

    // Measured from the moment the other server acknowledged the change.
    await rpc('workflow_next_step', { token: tokenOf(advanced), output: { summary: 'Implemented.' } });
    const acknowledged = Date.now();
    while (events.count() < 2 && Date.now() - acknowledged < 30_000)
      await new Promise((r) => setTimeout(r, 5));
    const latency = Date.now() - acknowledged;
    events.close();
    expect(events.count()).toBe(2);
    // Nothing polls: the page saw the change because the commit was announced (LISTEN/NOTIFY). The
    // latency is reported, not asserted (a wall clock on a shared machine is no test).
    process.stderr.write(`dashboard on PostgreSQL: change seen by an open page ${latency} ms after commit\n`);
    expect((await get(`/executions/${id}`)).body).toContain('<strong>review</strong>');
    const runs = await get('/tasks');
    expect(runs.status).toBe(200);
    expect(runs.body).toContain('No tasks.');
  });
});
