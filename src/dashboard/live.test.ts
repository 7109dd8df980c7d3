import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExecutionQueries } from '../executions/execution-queries.js';
import type { ExecutionHead } from '../store/execution-store.js';
import { LiveUpdates } from './live.js';

/** A store as the watcher sees it: heads it can change, and a count of the polls. */
class FakeStore {
  heads: ExecutionHead[] = [];
  polls = 0;
  queries = {
    changedSince: async (since: string, caller: { principal: string }) => {
      this.polls++;
      return this.heads
        .filter((h) => h.principal === caller.principal && h.updated_at >= since)
        .sort((a, b) => (a.updated_at < b.updated_at ? -1 : 1));
    },
    watch: () => () => undefined,
  } as unknown as ExecutionQueries;

  set(id: string, over: Partial<ExecutionHead>): void {
    const base: ExecutionHead = {
      execution_id: id,
      principal: 'local',
      workflow_name: 'w',
      state: 'running',
      current_step: 'a',
      current_seq: 1,
      token_attempt: 0,
      started_at: 'T0',
      updated_at: 'T0',
      completed_at: null,
      duration_ms: null,
      parent_id: null,
    };
    this.heads = [...this.heads.filter((h) => h.execution_id !== id), { ...base, ...over }];
  }
}

let store: FakeStore;
let live: LiveUpdates;
let server: Server;
let port: number;

beforeEach(async () => {
  store = new FakeStore();
  live = new LiveUpdates(
    async () => store.queries,
    (t) => t,
    { pollMs: 20 },
  );
  server = createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    live.attach(req, res, {
      principal: q.get('principal') ?? 'local',
      execution: q.get('execution') ?? undefined,
      since: q.get('since') ?? '',
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  live.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function stream(query: string) {
  let text = '';
  let status = 0;
  const req = request({ host: '127.0.0.1', port, path: `/?${query}` }, (res) => {
    status = res.statusCode ?? 0;
    res.setEncoding('utf8').on('data', (c: string) => {
      text += c;
    });
  });
  req.on('error', () => undefined);
  req.end();
  return {
    status: () => status,
    events: () =>
      [...text.matchAll(/event: changed\ndata: (.*)\n/g)].map(
        (m) => JSON.parse(m[1] as string) as { execution_id: string; version: string },
      ),
    close: () => req.destroy(),
  };
}

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('LiveUpdates', () => {
  it('sends each change once, including changes made in the same millisecond as the last one seen', async () => {
    store.set('e1', { updated_at: 'T1' });
    const s = stream('since=T1');
    await until(() => store.polls > 2);
    expect(s.events()).toHaveLength(1); // e1 at T1 itself: the page may predate it, so it is sent once
    store.set('e1', { updated_at: 'T1', current_seq: 2 }); // same millisecond, new version
    await until(() => s.events().length === 2);
    store.set('e1', { updated_at: 'T2', state: 'paused' });
    await until(() => s.events().length === 3);
    const polls = store.polls;
    await until(() => store.polls > polls + 3);
    expect(s.events().map((e) => e.version)).toEqual(['T1|running|1|0', 'T1|running|2|0', 'T2|paused|1|0']);
    s.close();
  });

  it("keeps principals apart and an execution's page to that execution", async () => {
    const all = stream('since=T0');
    const one = stream('since=T0&execution=e2');
    const other = stream('since=T0&principal=alice');
    await until(() => live.size === 3);
    store.set('e1', { updated_at: 'T1' });
    store.set('e2', { updated_at: 'T2' });
    store.set('a1', { updated_at: 'T3', principal: 'alice' });
    await until(() => all.events().length === 2 && other.events().length === 1);
    await until(() => one.events().length === 1);
    expect(one.events().map((e) => e.execution_id)).toEqual(['e2']);
    expect(other.events().map((e) => e.execution_id)).toEqual(['a1']);
    for (const s of [all, one, other]) s.close();
  });

  it("sends a child's changes to its parent's page (it shows its children), never to another principal's", async () => {
    const parent = stream('since=T0&execution=p1');
    const stranger = stream('since=T0&execution=p1&principal=alice');
    await until(() => live.size === 2);
    store.set('c1', { updated_at: 'T1', parent_id: 'p1' });
    store.set('c2', { updated_at: 'T2', parent_id: 'other' });
    store.set('p1', { updated_at: 'T3' });
    await until(() => parent.events().length === 2);
    const polls = store.polls;
    await until(() => store.polls > polls + 3);
    expect(parent.events().map((e) => e.execution_id)).toEqual(['c1', 'p1']);
    expect(stranger.events()).toEqual([]);
    for (const s of [parent, stranger]) s.close();
  });

  it('polls only while a page is open, and answers 204 (do not reconnect) once closed', async () => {
    const s = stream('since=T0');
    await until(() => store.polls > 1);
    s.close();
    await until(() => live.size === 0);
    const polls = store.polls;
    await new Promise((r) => setTimeout(r, 150));
    expect(store.polls).toBe(polls);
    live.close();
    const late = stream('since=T0');
    await until(() => late.status() !== 0);
    expect(late.status()).toBe(204);
  });
});
