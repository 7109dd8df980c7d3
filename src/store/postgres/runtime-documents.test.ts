import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentKind, RuntimeDocumentStore } from '../runtime-documents.js';
import { lazyDocumentStore } from '../runtime-documents.js';
import { openPostgresStore, type PostgresExecutionStore } from './postgres-store.js';
import { createTestDatabase, findTestServer, skipNotice, type TestDatabase } from './test-database.js';

// The runtime documents (migration 5): what replicas share of what agents save, with changes
// announced to every process and a listening connection that comes back by itself.

const server = await findTestServer();
if (server.url === undefined)
  process.stderr.write(skipNotice('PostgreSQL runtime documents suite', server.why));

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(server.url === undefined)('PostgreSQL runtime documents', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(server.url as string);
  });
  afterAll(async () => {
    await db?.drop();
  });

  const open = async () => {
    const { url } = await db.schema();
    const a = await openPostgresStore(url);
    const b = await openPostgresStore(url);
    return { url, a, b, close: () => Promise.all([a.close(), b.close()]) };
  };

  it('puts, finds by folded name or key, replaces and removes, with versions and authors', async () => {
    const { a, close } = await open();
    try {
      const docs = a.documents;
      const put = await docs.transaction((tx) =>
        tx.put({
          kind: 'workflow',
          name: 'Flow.yaml',
          key: 'flow',
          content: 'id: flow\n',
          updated_by: 'ann',
        }),
      );
      expect(put).toMatchObject({
        name: 'Flow.yaml',
        key: 'flow',
        version: sha('id: flow\n'),
        updated_by: 'ann',
      });
      expect(await docs.get('workflow', 'Flow.yaml')).toEqual(put);
      expect(await docs.get('catalog', 'Flow.yaml')).toBeUndefined();
      await docs.transaction(async (tx) => {
        expect((await tx.find('workflow', { name: 'flow.YAML' })).map((d) => d.name)).toEqual(['Flow.yaml']);
        expect((await tx.find('workflow', { key: 'flow' })).map((d) => d.name)).toEqual(['Flow.yaml']);
        expect(await tx.find('workflow', { name: 'other.yaml', key: 'other' })).toEqual([]);
      });
      // The database refuses a second document for one key, and a name differing only in case.
      await expect(
        docs.transaction((tx) =>
          tx.put({ kind: 'workflow', name: 'again.yaml', key: 'flow', content: 'x', updated_by: 'ann' }),
        ),
      ).rejects.toThrow();
      await expect(
        docs.transaction((tx) =>
          tx.put({ kind: 'workflow', name: 'flow.yaml', key: 'flow2', content: 'x', updated_by: 'ann' }),
        ),
      ).rejects.toThrow();
      // Nothing of a failed transaction stays.
      expect((await docs.list('workflow')).map((d) => d.name)).toEqual(['Flow.yaml']);
      await docs.transaction((tx) =>
        tx.put({
          kind: 'workflow',
          name: 'Flow.yaml',
          key: 'flow',
          content: 'id: flow # 2\n',
          updated_by: 'bob',
        }),
      );
      expect(await docs.get('workflow', 'Flow.yaml')).toMatchObject({
        version: sha('id: flow # 2\n'),
        updated_by: 'bob',
      });
      expect(await docs.transaction((tx) => tx.remove('workflow', 'Flow.yaml'))).toBe(true);
      expect(await docs.transaction((tx) => tx.remove('workflow', 'Flow.yaml'))).toBe(false);
      expect(await docs.list('workflow')).toEqual([]);
    } finally {
      await close();
    }
  });

  it('of two processes saving a new key at once, one writes and the other runs again and sees it', async () => {
    const { a, b, close } = await open();
    try {
      const save = (docs: RuntimeDocumentStore, who: string) =>
        docs.transaction(async (tx) => {
          const found = await tx.find('workflow', { name: 'race.yaml', key: 'race' });
          if (found.length > 0) return `conflict:${who}`;
          await new Promise((r) => setTimeout(r, 50));
          await tx.put({ kind: 'workflow', name: 'race.yaml', key: 'race', content: who, updated_by: who });
          return `saved:${who}`;
        });
      const results = await Promise.all([save(a.documents, 'a'), save(b.documents, 'b')]);
      expect(results.filter((r) => r.startsWith('saved'))).toHaveLength(1);
      expect(results.filter((r) => r.startsWith('conflict'))).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it('announces each change with its kind to every process, and comes back after losing the connection', async () => {
    const { a, b, close } = await open();
    try {
      const heard: (DocumentKind | undefined)[] = [];
      const stop = b.documents.watch((kind) => heard.push(kind));
      await until(() => b.documents.listening);
      await a.documents.transaction((tx) =>
        tx.put({ kind: 'catalog', name: 'api.json', key: 'api', content: '{}', updated_by: 'ann' }),
      );
      await until(() => heard.includes('catalog'));
      // An administrator ends every listening connection of this process: it reconnects and says so.
      heard.length = 0;
      const ended = await db.admin(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
        [`workflowlookup-listen-${process.pid}`],
      );
      expect(ended.length).toBeGreaterThan(0);
      await until(() => !b.documents.listening || heard.includes(undefined));
      await until(() => b.documents.listening && heard.includes(undefined));
      await a.documents.transaction((tx) => tx.remove('catalog', 'api.json'));
      await until(() => heard.includes('catalog'));
      stop();
      expect(b.documents.listening).toBe(false);
    } finally {
      await close();
    }
  });

  it('a store opened lazily attaches watchers once it can open, and tells them to read everything', async () => {
    const { url } = await db.schema();
    let attempts = 0;
    let store: PostgresExecutionStore | undefined;
    const lazy = lazyDocumentStore(async () => {
      if (++attempts < 3) throw new Error('not yet');
      store = await openPostgresStore(url);
      return store.documents;
    }, 'postgres://test');
    const heard: (DocumentKind | undefined)[] = [];
    const stop = lazy.watch((kind) => heard.push(kind));
    expect(lazy.listening).toBe(false);
    await until(() => heard.includes(undefined));
    expect(attempts).toBe(3);
    expect(lazy.listening).toBe(true);
    await lazy.transaction((tx) =>
      tx.put({
        kind: 'credential_binding',
        name: 'X_TOKEN',
        key: 'X_TOKEN',
        content: 'https://a',
        updated_by: 'ann',
      }),
    );
    await until(() => heard.includes('credential_binding'));
    stop();
    await store?.close();
  });
});
