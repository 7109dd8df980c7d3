// Delegation as people and agents see it: the dashboard mounted by `serve --http` (in-process, behind
// static tokens) shows a parent with its children, the join while it is open and the results after it,
// a child with its parent; the executions list shows the tree; the workflow_status resource lists the
// children. Another principal sees none of it. The browser checks (1280 and 390 px) are in
// dashboard.browser.test.ts.
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raw } from './helpers/dashboard.js';
import { inProcessHttp, staticTokens } from './helpers/in-process-http.js';
import { callTool, FIXTURES, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

const NAVIGATE = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none', accept: 'text/html' };

let sb: Sandbox;
let server: Awaited<ReturnType<typeof inProcessHttp>>;
let token: Record<string, string>;
const clients: Client[] = [];

async function agent(who: string) {
  const client = new Client({ name: who, version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { authorization: `Bearer ${token[who]}` } },
    }),
  );
  clients.push(client);
  return {
    call: (name: string, args: Json) => callTool(client, name, args),
    status: async (id: string) =>
      JSON.parse(
        (
          (await client.readResource({ uri: `workflowlookup://workflow/workflow_status/${id}` }))
            .contents[0] as {
            text: string;
          }
        ).text,
      ) as Json,
    client,
  };
}

/** A dashboard page as `who` (a bearer token works without signing in). */
const page = (who: string, path: string) =>
  raw(server.port, `/dashboard${path}`, {
    headers: { ...NAVIGATE, authorization: `Bearer ${token[who]}` },
  });

/** The rows of a list page: execution id, and its parent when it is shown under one. */
const rowsOf = (body: string) =>
  [
    ...body.matchAll(
      /<tr data-execution="([^"]+)"(?: class="child-row depth-(\d)" data-parent="([^"]*)")?>/g,
    ),
  ].map((m) => ({ id: m[1] as string, depth: Number(m[2] ?? 0), parent: m[3] }));

beforeAll(async () => {
  sb = sandbox();
  cpSync(join(FIXTURES, 'fan-out'), sb.runtime, { recursive: true });
  const tokens = await staticTokens(sb, {
    alice: { scopes: ['read', 'run'] },
    bob: { scopes: ['read', 'run'] },
  });
  token = tokens.token;
  server = await inProcessHttp(sb, tokens.env, { dashboard: true });
});

afterAll(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  sb?.cleanup();
});

describe('delegation on the dashboard and in the resources', () => {
  let parent: string;
  let children: Json[];

  it('the parent page shows each child (name, state, progress, workflow, link) and the open join (rule, progress, deadline)', async () => {
    const alice = await agent('alice');
    const started = await alice.call('workflow_start', { workflow_id: 'fan-out' });
    parent = started.execution_id;
    const delegated = await alice.call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'changed the parser' },
    });
    expect(delegated.step_status).toBe('delegated');
    children = delegated.delegation.children;
    // One child moves a step on, so the progress differs.
    const first = await alice.call('workflow_resume', { execution_id: children[0]?.execution_id });
    await alice.call('workflow_next_step', { token: tokenOf(first), output: { summary: 'read it' } });

    const res = await page('alice', `/executions/${parent}`);
    expect(res.status).toBe(200);
    const section = /<section id="children"[^>]*>([\s\S]*?)<\/section>/.exec(res.body)?.[1] ?? '';
    expect(section).toContain('<h2>Children</h2>');
    expect(section).toContain('waiting for children');
    expect(section).toContain('Join: <strong>all</strong>');
    expect(section).toContain('0 of 3 children completed, 3 still open (the step needs all)');
    expect(section).toMatch(/times out <time datetime="[^"]+">/);
    expect(section).toContain('results in <code>context.reviews</code>');
    for (const [i, name] of ['security', 'performance', 'readability'].entries()) {
      const id = children[i]?.execution_id as string;
      const row = new RegExp(`<tr data-child="${id}">([\\s\\S]*?)</tr>`).exec(section)?.[1] ?? '';
      expect(row, name).toContain(`<strong>${name}</strong>`);
      expect(row, name).toContain(`href="/dashboard/executions/${id}"`);
      expect(row, name).toContain('href="/dashboard/workflows/review-routine"');
      expect(row, name).toContain('<span class="state state-running">running</span>');
      expect(row, name).toContain(
        i === 0
          ? 'step 2: <strong>report</strong> · 1 of 2 steps done'
          : 'step 1: <strong>read</strong> · 0 of 2 steps done',
      );
    }
    // The parent's own step waits on its children.
    expect(res.body).toMatch(/id="seq-2" data-step="reviews">[\s\S]*?state-delegated">delegated</);
  });

  it("a child's page links to its parent and names it; the list shows the children under their parent, once each", async () => {
    const child = children[1]?.execution_id as string;
    const res = await page('alice', `/executions/${child}`);
    expect(res.status).toBe(200);
    expect(res.body).toContain(
      `<dt>Parent</dt><dd id="parent"><a href="/dashboard/executions/${parent}">${parent}</a> <span class="muted">step reviews #2</span></dd>`,
    );
    expect(res.body).toMatch(/<dd id="child-name"><strong>performance<\/strong>/);
    // A child that delegates nothing has no children section to show.
    expect(res.body).toMatch(/<section id="children" class="children" data-region hidden>/);

    const list = rowsOf((await page('alice', '/')).body);
    expect(list.map((r) => r.id).sort()).toEqual([parent, ...children.map((c) => c.execution_id)].sort());
    const at = list.findIndex((r) => r.id === parent);
    expect(list[at]?.depth).toBe(0);
    // Right under the parent (in the order they were created: created together, their ids break the tie).
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    expect(list.slice(at + 1, at + 4).sort(byId)).toEqual(
      children.map((c) => ({ id: c.execution_id, depth: 1, parent })).sort(byId),
    );
  });

  it('the workflow_status resource lists the children (name, execution id, workflow, state) and a child its parent', async () => {
    const alice = await agent('alice');
    const status = await alice.status(parent);
    expect(status.children.map((c: Json) => [c.name, c.execution_id, c.workflow_id, c.state])).toEqual(
      children.map((c) => [c.name, c.execution_id, 'review-routine', 'running']),
    );
    expect(status.delegations).toEqual([
      expect.objectContaining({
        step: 'reviews',
        seq: 2,
        join: 'all',
        into: 'reviews',
        children: ['security', 'performance', 'readability'],
        open: expect.objectContaining({ completed: 0, running: 3, deadline: expect.any(String) }),
        results: null,
      }),
    ]);
    const child = await alice.status(children[0]?.execution_id);
    expect(child).toMatchObject({
      parent_id: parent,
      parent: { execution_id: parent, step: 'reviews', seq: 2, name: 'security', depth: 1 },
    });
    expect(child.parent.trace).toBeUndefined();
    expect(child.children).toBeUndefined();
  });

  it('another principal never sees a child: not on a page, not in the list, not through the resource', async () => {
    const bob = await agent('bob');
    await bob.call('workflow_start', { workflow_id: 'fan-out' });
    for (const id of [parent, ...children.map((c) => c.execution_id)]) {
      expect((await page('bob', `/executions/${id}`)).status, id).toBe(404);
      await expect(bob.status(id), id).rejects.toThrow();
    }
    const list = (await page('bob', '/')).body;
    for (const id of [parent, ...children.map((c) => c.execution_id)]) expect(list).not.toContain(id);
    expect(rowsOf(list)).toHaveLength(1);
  });

  it('after the join: the results gathered under `into`, each with its state, and the children ended', async () => {
    const alice = await agent('alice');
    for (const c of children) {
      let answer = await alice.call('workflow_resume', { execution_id: c.execution_id });
      while (answer.next?.[0]?.tool === 'workflow_next_step' && answer.next[0].fill !== undefined) {
        answer = await alice.call('workflow_next_step', {
          ...answer.next[0].arguments,
          output: { summary: `${c.name}: <b>fine</b>` },
        });
      }
    }
    const moved = await alice.call('workflow_resume', { execution_id: parent });
    expect(moved.current_step).toBe('synthesis');
    const res = await page('alice', `/executions/${parent}`);
    const section = /<section id="children"[^>]*>([\s\S]*?)<\/section>/.exec(res.body)?.[1] ?? '';
    expect(section).toContain('<span class="state state-completed">joined</span>');
    expect(section).not.toContain('waiting for children');
    // In the delegation's order still, as its results keep it.
    expect([...section.matchAll(/<tr data-child="([^"]+)">/g)].map((m) => m[1])).toEqual(
      children.map((c) => c.execution_id),
    );
    for (const c of children) {
      expect(section).toContain(
        `<li data-result="${c.name}"><strong>${c.name}</strong> <span class="state state-completed">completed</span><span class="muted summary-line">${c.name}: &lt;b&gt;fine&lt;/b&gt;</span></li>`,
      );
      expect(section).toMatch(
        new RegExp(
          `<tr data-child="${c.execution_id}">[\\s\\S]*?state-completed">completed<[\\s\\S]*?2 of 2 steps done`,
        ),
      );
    }
    const status = await alice.status(parent);
    expect(status.delegations[0]).toMatchObject({
      open: null,
      results: children.map((c) => ({ name: c.name, state: 'completed', summary: `${c.name}: <b>fine</b>` })),
    });
  });
});
