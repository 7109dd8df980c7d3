import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { callTool, connectClient, FIXTURES, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox | undefined;
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

const COMMAND_WORKFLOW = `id: needs-tasks-api
name: Needs the tasks API
description: One command step
version: 1.0.0
steps:
  - { id: fetch, title: Fetch a task, run: tasks-api get-task, with: { taskId: t1 } }
`;

describe('workflow_list', () => {
  it('flags a workflow whose command steps need a catalog that is not imported, until it is', async () => {
    sb = sandbox();
    sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
    writeFileSync(join(sb.runtime, 'needs-tasks-api.yaml'), COMMAND_WORKFLOW);
    const { client, close } = await connectClient(sb);
    try {
      const before = await callTool(client, 'workflow_list', {});
      const flagged = before.workflows.find((w: Json) => w.id === 'needs-tasks-api');
      expect(flagged).toMatchObject({ ready: false });
      expect(flagged.reason).toMatch(/"tasks-api".*catalog_import_openapi/);
      // Workflows without command steps carry no mark; every mark has its reason.
      expect(before.workflows.find((w: Json) => w.id === 'coding-task-workflow').ready).toBeUndefined();
      for (const w of before.workflows.filter((x: Json) => x.ready !== undefined))
        expect(w.reason).toBeTruthy();

      const imported = await callTool(client, 'catalog_import_openapi', {
        source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
        catalog_title: 'Tasks API',
        base_url: 'https://tasks.example.com/api',
      });
      expect(imported.catalog_id).toBe('tasks-api');
      const after = await callTool(client, 'workflow_list', {});
      const ready = after.workflows.find((w: Json) => w.id === 'needs-tasks-api');
      expect(ready.ready).toBeUndefined();
      expect(ready.reason).toBeUndefined();
    } finally {
      await close();
    }
  });

  it('pages with limit and cursor; without arguments it lists everything (seed 001)', async () => {
    sb = sandbox();
    for (let i = 0; i < 25; i++) {
      writeFileSync(
        join(sb.runtime, `paged-${String(i).padStart(2, '0')}.json`),
        JSON.stringify({
          id: `paged-${String(i).padStart(2, '0')}`,
          name: `Paged ${i}`,
          description: 'paging',
          version: '1.0.0',
          steps: [{ id: 'one', title: 'One', prompt: 'Do it.' }],
        }),
      );
    }
    const server = new InProcessRaw({ env: sb.env, cwd: sb.project });
    try {
      await server.initialize();
      // Seed 001: a direct call without arguments answers {workflows: [...]} with every workflow.
      const all = (await server.request(1, 'workflow_list', {})).result as Json;
      const ids = all.workflows.map((w: Json) => w.id);
      expect(ids.filter((id: string) => id.startsWith('paged-'))).toHaveLength(25);
      expect(all.next_cursor).toBeUndefined();
      for (const w of all.workflows)
        expect(Object.keys(w)).toEqual(
          expect.arrayContaining(['id', 'name', 'description', 'category', 'version']),
        );

      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = (
          await server.request(`p${pages}`, 'workflow_list', { limit: 10, ...(cursor ? { cursor } : {}) })
        ).result as Json;
        expect(page.workflows.length).toBeLessThanOrEqual(10);
        if (pages > 0) expect(page.broken).toEqual([]);
        seen.push(...page.workflows.map((w: Json) => w.id));
        cursor = page.next_cursor;
        pages++;
      } while (cursor !== undefined && pages < 20);
      expect(seen).toEqual(ids);
      expect(pages).toBe(Math.ceil(ids.length / 10));

      const bad = await server.request('bad', 'workflow_list', { cursor: 'not-a-cursor' });
      expect((bad.error as Json).code).toBe(-32602);
      expect((bad.error as Json).data.details).toMatch(/cursor/);
      const tooBig = await server.request('big', 'workflow_list', { limit: 100_000 });
      expect((tooBig.error as Json).code).toBe(-32602);
    } finally {
      server.kill();
    }
  });
});
