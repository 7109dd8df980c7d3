// Issue #27.1 / #22.3: a stateless (2026-07-28) request is served by a server kept from an earlier
// request of the same principal. Nothing may carry over from one request to the next: the tool groups
// one request listed, the client it declared, or the principal a server was built for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, STATELESS_ENVELOPE } from './helpers/http-server.js';
import { inProcessHttp, staticTokens } from './helpers/in-process-http.js';
import { type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
let server: Awaited<ReturnType<typeof inProcessHttp>>;
let token: Record<string, string>;

/** One stateless request as `who` (a static token). */
async function call(who: string, method: string, params: Json = {}, name?: string): Promise<Json> {
  const res = await post(
    server.url,
    { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: STATELESS_ENVELOPE } },
    {
      authorization: `Bearer ${token[who]}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
  );
  if (!res.json) throw new Error(`no answer (${res.status}): ${res.text}`);
  return res.json;
}

const listed = async (who: string) =>
  ((await call(who, 'tools/list')).result.tools as { name: string }[]).map((t) => t.name).sort();

beforeAll(async () => {
  sb = sandbox();
  const tokens = await staticTokens(sb, {
    alice: { scopes: ['read', 'run', 'author'] },
    bob: { scopes: ['read', 'run', 'author'] },
  });
  token = tokens.token;
  server = await inProcessHttp(sb, tokens.env);
});
afterAll(async () => {
  await server?.close();
  sb?.cleanup();
});

describe('stateless requests on kept servers', () => {
  it('a group one request lists is not listed for the next', async () => {
    const before = await listed('alice');
    expect(before).not.toContain('workflow_save');
    const enabled = await call(
      'alice',
      'tools/call',
      { name: 'workflow_tools', arguments: { enable: ['authoring'] } },
      'workflow_tools',
    );
    expect(enabled.result.structuredContent.enabled).toEqual(['authoring']);
    // Many times over: whichever kept server answers, it lists the configured groups only.
    for (let i = 0; i < 5; i++) expect(await listed('alice')).toEqual(before);
  });

  it('each request acts for its own principal, in any order, on any kept server', async () => {
    const start = async (who: string) =>
      (
        await call(
          who,
          'tools/call',
          { name: 'workflow_start', arguments: { workflow_id: 'coding-task-workflow' } },
          'workflow_start',
        )
      ).result.structuredContent.execution_id as string;
    const mine = async (who: string) =>
      (
        (await call(who, 'tools/call', { name: 'workflow_executions', arguments: {} }, 'workflow_executions'))
          .result.structuredContent.executions as { execution_id: string }[]
      ).map((e) => e.execution_id);
    const a = await start('alice');
    const b = await start('bob');
    const a2 = await start('alice');
    for (let i = 0; i < 3; i++) {
      const [ofAlice, ofBob] = await Promise.all([mine('alice'), mine('bob')]);
      expect(ofAlice).toEqual(expect.arrayContaining([a, a2]));
      expect(ofAlice).not.toContain(b);
      expect(ofBob).toEqual([b]);
    }
  });
});
