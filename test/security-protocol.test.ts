// Issue #20 (security, third round), items 2 and 3: no request name can stall or wedge a session.
// Hostile names (megabytes long, or the names of Object.prototype) go through the real protocol: the
// stdio rules and SDK server in-process, a spawned stdio server where the process matters, and HTTP
// (2025-11-25 sessions and stateless 2026-07-28 requests).
import * as fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, STATELESS_ENVELOPE } from './helpers/http-server.js';
import { inProcess } from './helpers/in-process.js';
import { inProcessHttp, rawSession, staticTokens } from './helpers/in-process-http.js';
import { RawServer, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

/** Every name a plain-object lookup would find without it being there. */
const PROTOTYPE_NAMES = [
  ...Object.getOwnPropertyNames(Object.prototype),
  ...Object.getOwnPropertyNames(Function.prototype),
  'prototype',
];

/** Names: Object.prototype's, those names in another form, and arbitrary text. */
const names = fc.oneof(
  fc.constantFrom(...PROTOTYPE_NAMES),
  fc.constantFrom(...PROTOTYPE_NAMES).map((n) => `workflow.${n}`),
  fc.string({ maxLength: 30 }),
  fc.string({ maxLength: 30, unit: 'binary' }),
);

/** Requests that put a client's name where the server looks something up. */
function requestsNaming(name: string, key: string): { method: string; params?: Json }[] {
  return [
    { method: name },
    { method: name, params: {} },
    { method: 'tools/call', params: { name, arguments: {} } },
    { method: 'tools/call', params: { name: 'workflow_list', arguments: { [key]: 1 } } },
    { method: 'resources/read', params: { uri: name } },
    { method: 'resources/read', params: { uri: `workflowlookup://workflow/${name}` } },
    { method: 'resources/read', params: { uri: `workflowlookup://workflow/workflow_details/${name}` } },
    { method: 'resources/subscribe', params: { uri: `workflowlookup://workflow/${name}` } },
    { method: 'prompts/get', params: { name } },
    {
      method: 'completion/complete',
      params: { ref: { type: 'ref/prompt', name }, argument: { name: key, value: '' } },
    },
    {
      method: 'completion/complete',
      params: { ref: { type: 'ref/resource', uri: name }, argument: { name: key, value: '' } },
    },
    {
      method: 'workflow_next',
      params: { workflowId: 'coding-task-workflow', completedSteps: [], context: { [key]: 'x' } },
    },
    {
      method: 'workflow_next',
      params: { workflowId: 'coding-task-workflow', completedSteps: [], context: { [key]: { [key]: 1 } } },
    },
    { method: 'workflow_start', params: { workflow_id: 'coding-task-workflow', context: { [key]: true } } },
    { method: 'workflow_get', params: { id: name } },
  ];
}

let sb: Sandbox;
beforeAll(() => {
  // In-process, the default data dir would be under the real home (os.homedir()).
  sb = sandbox({ WORKFLOWLOOKUP_DATA_DIR: '' });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = `${sb.root}/data`;
});
afterAll(() => sb.cleanup());

describe('names that are JavaScript object properties (#20.3)', () => {
  it('stdio: every request naming any name, or any context key, is answered exactly once, and the session lives', async () => {
    const s = await inProcess(sb);
    try {
      s.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      await s.read(1);
      s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      let n = 0;
      await fc.assert(
        fc.asyncProperty(names, names, async (name, key) => {
          const first = s.answers.length;
          const ids: string[] = [];
          for (const request of requestsNaming(name, key)) {
            const id = `q${n++}`;
            ids.push(id);
            s.send({ jsonrpc: '2.0', id, ...request });
          }
          const pingId = `ping${n++}`;
          s.send({ jsonrpc: '2.0', id: pingId, method: 'ping' });
          // Stdio answers in order: the ping's answer comes after every other one.
          const all = await s.read(first + ids.length + 1);
          const answers = all.slice(first);
          expect(answers.at(-1)).toMatchObject({ id: pingId, result: {} });
          for (const id of ids) {
            const mine = answers.filter((a) => a.id === id);
            expect(mine, `${id}: ${JSON.stringify(requestsNaming(name, key)[ids.indexOf(id)])}`).toHaveLength(
              1,
            );
            expect('result' in (mine[0] as Json) || 'error' in (mine[0] as Json)).toBe(true);
          }
        }),
        { numRuns: 60 },
      );
    } finally {
      await s.close();
    }
  });

  it('stdio, a real process: `constructor`, `toString`, `__proto__`, `hasOwnProperty`, `valueOf` as methods get -32601, then later requests are served', async () => {
    const server = new RawServer({ env: sb.env, cwd: sb.project });
    try {
      await server.initialize();
      for (const method of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
        const answer = await server.request(method, method);
        expect(answer, method).toMatchObject({ error: { code: -32601, data: { method } } });
      }
      const tool = await server.request('t', 'tools/call', { name: '__proto__', arguments: {} });
      expect(tool).toMatchObject({ error: { code: -32602 } });
      expect(await server.request('p', 'ping')).toMatchObject({ result: {} });
    } finally {
      server.kill();
    }
  });

  it('HTTP, sessions and stateless: one answer to each, and the session lives', async () => {
    const { env, token } = await staticTokens(sb, { alice: { scopes: ['read', 'run'] } });
    const server = await inProcessHttp(sb, env);
    const auth = { authorization: `Bearer ${token.alice}` };
    try {
      const session = await rawSession(server.url, auth);
      await fc.assert(
        fc.asyncProperty(names, names, async (name, key) => {
          for (const request of requestsNaming(name, key)) {
            const { status, answer } = await session.send(request.method, request.params);
            const what = `${status} ${JSON.stringify(request)}`;
            expect(answer, what).toBeDefined();
            expect('result' in (answer as Json) || 'error' in (answer as Json), what).toBe(true);
            const stateless = await post(
              server.url,
              {
                jsonrpc: '2.0',
                id: 7,
                method: request.method,
                params: { ...(request.params ?? {}), _meta: STATELESS_ENVELOPE },
              },
              {
                ...auth,
                'mcp-protocol-version': '2026-07-28',
                // A name no header can carry is sent without the (optional) header.
                ...(/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(request.method)
                  ? { 'mcp-method': request.method }
                  : {}),
              },
            );
            expect(stateless.json, `stateless ${stateless.status} ${JSON.stringify(request)}`).toMatchObject({
              id: 7,
            });
          }
          expect((await session.send('ping')).answer).toMatchObject({ result: {} });
        }),
        { numRuns: 15 },
      );
    } finally {
      await server.close();
    }
  });
});

describe('suggestions cost little whatever the name (#20.2)', () => {
  // 3.5 million characters: 71 s of edit distance on main, which the test's timeout does not allow.
  const huge = (prefix: string) => `${prefix}${'x'.repeat(3_500_000)}`;

  it('stdio: unknown methods, tools and arguments of megabytes are answered at once, then the session goes on', async () => {
    const s = await inProcess(sb);
    try {
      s.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      s.send({ jsonrpc: '2.0', id: 1, method: huge('workflow_lis') });
      s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: huge('workflow_lis') } });
      s.send({ jsonrpc: '2.0', id: 3, method: 'workflow_list', params: { [huge('limi')]: 1 } });
      s.send({ jsonrpc: '2.0', id: 4, method: 'workflow_lst' });
      s.send({ jsonrpc: '2.0', id: 5, method: 'ping' });
      const [, one, two, three, four, five] = await s.read(6);
      expect(one).toMatchObject({ id: 1, error: { code: -32601 } });
      expect(one?.error.data.did_you_mean).toBeUndefined();
      expect(two).toMatchObject({ id: 2, error: { code: -32602 } });
      // The name is echoed cut short, not in full.
      expect(JSON.stringify(two).length).toBeLessThan(2000);
      expect(three).toMatchObject({ id: 3, error: { code: -32602 } });
      expect(JSON.stringify(three).length).toBeLessThan(3000);
      // Short names still get their hint.
      expect(four).toMatchObject({ id: 4, error: { data: { did_you_mean: ['workflow_list'] } } });
      expect(five).toMatchObject({ id: 5, result: {} });
    } finally {
      await s.close();
    }
  });

  it("HTTP: a megabyte method name does not hold up another principal's ping", async () => {
    const { env, token } = await staticTokens(sb, {
      mallory: { scopes: ['read'] },
      bob: { scopes: ['read'] },
    });
    const server = await inProcessHttp(sb, env);
    try {
      const mallory = await rawSession(server.url, { authorization: `Bearer ${token.mallory}` });
      const bob = await rawSession(server.url, { authorization: `Bearer ${token.bob}` });
      // Three at once (about 30 s of event loop each on main: more than the test may take).
      const [ping, ...slow] = await Promise.all([
        bob.send('ping'),
        mallory.send(huge('tools/lis')),
        mallory.send(huge('resources/rea')),
        mallory.send(huge('workflow_lis')),
      ]);
      expect(ping.answer).toMatchObject({ result: {} });
      for (const answer of slow) expect(answer.answer).toMatchObject({ error: { code: -32601 } });
    } finally {
      await server.close();
    }
  });
});
