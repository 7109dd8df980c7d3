// Issue #20 (security, third round) over HTTP, in-process (the app, the HTTP transport and the dashboard
// mount built as `serve --http` builds them, on a real socket): subscriptions (1), scopes decided on
// the resource the SDK resolves (4), per-principal caps (5), the reserved stdio principal (6), the
// dashboard's scrubber (7), oversized headers (8), failed bearer tokens and chosen execution ids (9).
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { InMemoryTransport, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localCaller } from '../src/executions/execution-model.js';
import { RESOURCE_SCOPES } from '../src/protocol/scopes.js';
import { addToken } from '../src/transports/http-auth.js';
import { raw } from './helpers/dashboard.js';
import { post, STATELESS_ENVELOPE } from './helpers/http-server.js';
import { inProcessHttp, rawSession, staticTokens } from './helpers/in-process-http.js';
import { type Sandbox, sandbox } from './helpers/server.js';
import { envelope } from './helpers/tasks.js';

type Json = Record<string, any>;
type Server = Awaited<ReturnType<typeof inProcessHttp>>;

let sb: Sandbox;
const servers: Server[] = [];
beforeAll(() => {
  sb = sandbox();
  writeFileSync(
    join(sb.runtime, 'ask-agent.yaml'),
    [
      'id: ask-agent',
      'name: One agent step',
      'description: Waits for the agent',
      'version: 1.0.0',
      'steps:',
      '  - { id: answer, title: Answer, prompt: Say something., validationCriteria: [{ type: length, min: 10, message: say more }] }',
      '',
    ].join('\n'),
  );
});
afterAll(async () => {
  await Promise.allSettled(servers.map((s) => s.close()));
  sb.cleanup();
});

async function serve(env: Record<string, string>, options: { dashboard?: boolean } = {}): Promise<Server> {
  const s = await inProcessHttp(sb, env, options);
  servers.push(s);
  return s;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The param the 2026-07-28 `Mcp-Name` header repeats, by method. */
const NAMED: Record<string, string> = {
  'tools/call': 'name',
  'resources/read': 'uri',
  'tasks/cancel': 'taskId',
};

/** A stateless (2026-07-28) request: the HTTP status and the JSON-RPC answer. */
async function stateless(url: string, headers: Record<string, string>, method: string, params: Json = {}) {
  const name = NAMED[method] === undefined ? undefined : params[NAMED[method] as string];
  const res = await post(
    url,
    { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: params._meta ?? STATELESS_ENVELOPE } },
    {
      ...headers,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name.trim() } : {}),
    },
  );
  return { status: res.status, answer: res.json, headers: res.headers };
}

async function startExecution(
  url: string,
  token: string,
  workflow = 'coding-task-workflow',
): Promise<string> {
  const { answer } = await stateless(url, bearer(token), 'tools/call', {
    name: 'workflow_start',
    arguments: { workflow_id: workflow },
  });
  const id = answer?.result?.structuredContent?.execution_id;
  if (typeof id !== 'string') throw new Error(`workflow_start: ${JSON.stringify(answer)}`);
  return id;
}

describe('resources/subscribe is bounded and names only what the caller may read (#20.1)', () => {
  let s: Server;
  let token: Record<string, string>;
  let aliceExecution: string;
  let bobExecution: string;

  beforeAll(async () => {
    const tokens = await staticTokens(sb, {
      reader: { scopes: ['read'] },
      alice: { scopes: ['read', 'run'] },
      bob: { scopes: ['read', 'run'] },
    });
    token = tokens.token;
    s = await serve({
      ...tokens.env,
      WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS: '3',
      WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '4',
    });
    aliceExecution = await startExecution(s.url, token.alice as string);
    bobExecution = await startExecution(s.url, token.bob as string);
  });

  const details = (id: string) => `workflowlookup://workflow/workflow_details/${id}`;

  it('refuses URIs that are too long, name no resource, or name one the caller may not read', async () => {
    const reader = await rawSession(s.url, bearer(token.reader as string));
    const long = await reader.send('resources/subscribe', { uri: details('x'.repeat(4_000_000)) });
    expect(long.answer).toMatchObject({ error: { code: -32602 } });
    expect(long.answer?.error.data.details).toMatch(/at most 2048/);
    for (const uri of [
      'workflowlookup://workflow/nothing-here',
      details('ghost-workflow'),
      'https://example.com/x',
      'not a uri',
    ]) {
      const res = await reader.send('resources/subscribe', { uri });
      expect(res.answer?.error, uri).toBeDefined();
    }
    // An execution resource needs `run`: 403 before anything is read.
    const run = await reader.send('resources/subscribe', {
      uri: `workflowlookup://workflow/current_step/${aliceExecution}`,
    });
    expect(run.status).toBe(403);
    // With `run`, another principal's execution is not found.
    const alice = await rawSession(s.url, bearer(token.alice as string));
    const theirs = await alice.send('resources/subscribe', {
      uri: `workflowlookup://workflow/current_step/${bobExecution}`,
    });
    expect(theirs.answer?.error).toBeDefined();
    expect(JSON.stringify(theirs.answer)).not.toContain('coding-task-workflow');
    const mine = await alice.send('resources/subscribe', {
      uri: `workflowlookup://workflow/current_step/${aliceExecution}`,
    });
    expect(mine.answer).toMatchObject({ result: {} });
    await reader.close();
    await alice.close();
  });

  it('caps subscriptions per session and per principal, with a clear error, and frees them with the session', async () => {
    const first = await rawSession(s.url, bearer(token.alice as string));
    for (const uri of [
      'workflowlookup://workflow/available_workflows',
      details('coding-task-workflow'),
      details('mr-review-workflow'),
      // the same resource again, spelled otherwise: still one subscription
      'WORKFLOWLOOKUP://workflow/available_workflows',
    ]) {
      expect((await first.send('resources/subscribe', { uri })).answer, uri).toMatchObject({ result: {} });
    }
    const fourth = await first.send('resources/subscribe', { uri: details('ask-agent') });
    expect(fourth.answer).toMatchObject({
      error: { code: -32000, message: 'Too many subscriptions', data: { limit: 3 } },
    });
    expect(fourth.answer?.error.data.details).toMatch(/WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS/);
    // Unsubscribing makes room.
    await first.send('resources/unsubscribe', { uri: details('mr-review-workflow') });
    expect((await first.send('resources/subscribe', { uri: details('ask-agent') })).answer).toMatchObject({
      result: {},
    });

    // alice holds 3; her second session may add one more (4 per principal), then no more.
    const second = await rawSession(s.url, bearer(token.alice as string));
    expect(
      (await second.send('resources/subscribe', { uri: details('presentation-creation') })).answer,
    ).toMatchObject({ result: {} });
    const over = await second.send('resources/subscribe', { uri: details('workflow-for-workflows') });
    expect(over.answer).toMatchObject({ error: { code: -32000, data: { limit: 4 } } });
    expect(over.answer?.error.data.details).toMatch(/WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS_PER_PRINCIPAL/);
    // Another principal is not affected.
    const bob = await rawSession(s.url, bearer(token.bob as string));
    expect(
      (await bob.send('resources/subscribe', { uri: details('workflow-for-workflows') })).answer,
    ).toMatchObject({ result: {} });
    // Ending the first session gives its subscriptions back.
    await first.close();
    expect(
      (await second.send('resources/subscribe', { uri: details('workflow-for-workflows') })).answer,
    ).toMatchObject({ result: {} });
    await second.close();
    await bob.close();
  });
});

describe('the run scope is decided on the resource the SDK resolves, never on its spelling (#20.4)', () => {
  let s: Server;
  let token: Record<string, string>;
  let id: string;

  beforeAll(async () => {
    const tokens = await staticTokens(sb, {
      owner: { scopes: ['read', 'run'] },
      'owner-ro': { scopes: ['read'], principal: 'owner' },
    });
    token = tokens.token;
    s = await serve(tokens.env);
    id = await startExecution(s.url, token.owner as string);
  });

  const spellings = () => [
    `workflowlookup://workflow/current_step/${id}`,
    `WORKFLOWLOOKUP://workflow/current_step/${id}`,
    ` workflowlookup://workflow/current_step/${id}`,
    `workflowlookup://workflow/x/../current_step/${id}`,
    `workflowlookup://workflow/./telemetry/${id}`,
    `workflowlookup://workflow/./telemetry`,
    `workflowlookup://workflow/execution_progress/${id}`,
    `workflowlookup://workflow/workflow_status/${id}`,
    `workflowlookup://workflow/step_history/${id}`,
    `workflowlookup://workflow/workflow_artifacts/${id}`,
    `workflowlookup://workflow/workflow_artifacts/${id}/phase-0`,
  ];

  it('a read-only token of the owner reads none of its execution resources, however spelled, in either era', async () => {
    const ro = bearer(token['owner-ro'] as string);
    const session = await rawSession(s.url, ro);
    for (const uri of spellings()) {
      const viaSession = await session.send('resources/read', { uri });
      expect(viaSession.status, uri).toBe(403);
      expect(JSON.stringify(viaSession.answer ?? {}), uri).not.toContain(id);
      const viaStateless = await stateless(s.url, ro, 'resources/read', { uri });
      expect(viaStateless.status, uri).toBe(403);
    }
    // Nor lists them, nor completes their ids.
    const listed = await session.send('resources/list');
    expect(JSON.stringify(listed.answer)).not.toContain(id);
    const completed = await session.send('completion/complete', {
      ref: { type: 'ref/resource', uri: 'workflowlookup://workflow/current_step/{executionId}' },
      argument: { name: 'executionId', value: '' },
    });
    expect(completed.status).toBe(403);
    // Definitions stay readable with `read`.
    expect(
      (await session.send('resources/read', { uri: 'workflowlookup://workflow/available_workflows' })).answer,
    ).toMatchObject({ result: { contents: [expect.any(Object)] } });
    await session.close();
  });

  it('every tool and every resource has its scope (a missing one would need admin)', () => {
    expect(s.app.runner.tools.filter((t) => t.scope === undefined).map((t) => t.name)).toEqual([]);
    expect(s.app.resources.map((r) => r.name).filter((n) => !RESOURCE_SCOPES.has(n))).toEqual([]);
  });

  it('with `run`, the same spellings read the execution (the refusal was the scope)', async () => {
    const session = await rawSession(s.url, bearer(token.owner as string));
    for (const uri of spellings()) {
      const res = await session.send('resources/read', { uri });
      expect(res.answer, uri).toMatchObject({ result: { contents: [expect.any(Object)] } });
    }
    await session.close();
  });

  it('the server itself refuses, whatever checked the request before it (the resource the SDK matched decides)', async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const answers: Json[] = [];
    clientSide.onmessage = (m) => {
      answers.push(m as Json);
    };
    await clientSide.start();
    await s.app.serverFactory({ principal: 'owner', era: 'legacy' }).connect(serverSide);
    const authInfo = { token: 't', clientId: 'c', scopes: ['read'], extra: { principal: 'owner' } };
    const send = (message: Json) =>
      clientSide.send(message as JSONRPCMessage, { authInfo } as Parameters<typeof clientSide.send>[1]);
    await send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    await send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const uris = spellings();
    for (const [i, uri] of uris.entries()) {
      await send({ jsonrpc: '2.0', id: i + 1, method: 'resources/read', params: { uri } });
    }
    await send({ jsonrpc: '2.0', id: 99, method: 'ping' });
    await expect.poll(() => answers.some((a) => a.id === 99)).toBe(true);
    for (const [i, uri] of uris.entries()) {
      const answer = answers.find((a) => a.id === i + 1);
      expect(answer, uri).toMatchObject({ error: { code: -32007, data: { required_scope: 'run' } } });
    }
    await clientSide.close();
  });
});

describe('one principal cannot use up what the others need (#20.5)', () => {
  it('sessions: a principal gets 429 at its own cap; the others still open theirs', async () => {
    const { env, token } = await staticTokens(sb, {
      greedy: { scopes: ['read'] },
      other: { scopes: ['read'] },
      third: { scopes: ['read'] },
    });
    const s = await serve({
      ...env,
      WORKFLOWLOOKUP_HTTP_MAX_SESSIONS: '4',
      WORKFLOWLOOKUP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '2',
    });
    const init = (t: string) =>
      post(
        s.url,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        },
        bearer(t),
      );
    const greedy: string[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await init(token.greedy as string);
      statuses.push(res.status);
      if (res.status === 200) greedy.push(res.headers.get('mcp-session-id') as string);
    }
    expect(statuses).toEqual([200, 200, 429, 429, 429, 429]);
    const refused = await init(token.greedy as string);
    expect(refused.json).toMatchObject({
      error: { code: -32000, message: 'Too many open sessions for this principal', data: { limit: 2 } },
    });
    expect(refused.json?.error.data.details).toMatch(/WORKFLOWLOOKUP_HTTP_MAX_SESSIONS_PER_PRINCIPAL/);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect((await init(token.other as string)).status).toBe(200);
    expect((await init(token.other as string)).status).toBe(200);
    // Every place taken (by two principals): the total cap answers 503.
    expect((await init(token.third as string)).status).toBe(503);
    // A session that ends gives its place back, to its principal as to the others.
    await fetch(s.url, {
      method: 'DELETE',
      headers: { ...bearer(token.greedy as string), 'mcp-session-id': greedy[0] as string },
    });
    expect((await init(token.third as string)).status).toBe(200);
  });

  it('tasks: a principal is refused past its own cap while another still starts one', async () => {
    const { env, token } = await staticTokens(sb, {
      busy: { scopes: ['read', 'run'] },
      calm: { scopes: ['read', 'run'] },
    });
    const s = await serve({
      ...env,
      WORKFLOWLOOKUP_MAX_TASKS_PER_PRINCIPAL: '1',
      WORKFLOWLOOKUP_MAX_TASKS: '3',
    });
    const run = (t: string) =>
      stateless(s.url, bearer(t), 'tools/call', {
        name: 'workflow_run',
        arguments: { workflow_id: 'ask-agent' },
        _meta: envelope(),
      });
    const first = await run(token.busy as string);
    expect(first.answer?.result).toMatchObject({ resultType: 'task', status: 'working' });
    const second = await run(token.busy as string);
    expect(second.answer).toMatchObject({
      error: { code: -32000, message: 'Too many tasks', data: { limit: 1 } },
    });
    expect(second.answer?.error.data.details).toMatch(/WORKFLOWLOOKUP_MAX_TASKS_PER_PRINCIPAL/);
    const other = await run(token.calm as string);
    expect(other.answer?.result).toMatchObject({ resultType: 'task' });
    // Cancelling the task gives the slot back.
    await stateless(s.url, bearer(token.busy as string), 'tasks/cancel', {
      taskId: first.answer?.result.taskId,
      _meta: envelope(),
    });
    await expect.poll(async () => (await run(token.busy as string)).answer?.result?.resultType).toBe('task');
  });

  it('live dashboard streams: a principal gets 429 past its own cap; another still opens one', async () => {
    const { env, token } = await staticTokens(sb, {
      watcher: { scopes: ['read'] },
      viewer: { scopes: ['read'] },
    });
    const s = await serve(
      {
        ...env,
        WORKFLOWLOOKUP_DASHBOARD_MAX_STREAMS_PER_PRINCIPAL: '2',
        WORKFLOWLOOKUP_DASHBOARD_MAX_STREAMS: '5',
      },
      { dashboard: true },
    );
    const open: { destroy: () => void }[] = [];
    const stream = (t: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port: s.port, path: '/dashboard/events', headers: bearer(t) },
          (res) => {
            open.push(req);
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      expect(await stream(token.watcher as string)).toBe(200);
      expect(await stream(token.watcher as string)).toBe(200);
      expect(await stream(token.watcher as string)).toBe(429);
      expect(await stream(token.viewer as string)).toBe(200);
    } finally {
      for (const r of open) r.destroy();
    }
  });
});

describe('the stdio principal is reserved (#20.6)', () => {
  it('a JWT whose sub is "local" is refused, and cannot see the local user\'s executions', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const file = join(sb.root, 'jwks-local.json');
    writeFileSync(
      file,
      JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] }),
    );
    const s = await serve({
      WORKFLOWLOOKUP_AUTH: 'jwt',
      WORKFLOWLOOKUP_JWT_ISSUER: 'https://issuer.example',
      WORKFLOWLOOKUP_JWT_AUDIENCE: 'workflowlookup',
      WORKFLOWLOOKUP_JWKS_FILE: file,
    });
    // The stdio user (the same app, as `serve --http --stdio` shares it) has an execution.
    const started = await s.app.runner.run(
      'workflow_start',
      { workflow_id: 'coding-task-workflow' },
      { caller: localCaller(), tools: s.app.toolSwitch() },
    );
    expect('result' in started).toBe(true);
    const sign = (sub: string) =>
      new SignJWT({ iss: 'https://issuer.example', aud: 'workflowlookup', sub, scope: 'read run' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(privateKey);
    const claim = await stateless(s.url, bearer(await sign('local')), 'tools/call', {
      name: 'workflow_executions',
      arguments: {},
    });
    expect(claim.status).toBe(401);
    expect(claim.headers.get('www-authenticate')).toMatch(/reserved/);
    const someone = await stateless(s.url, bearer(await sign('carol')), 'tools/call', {
      name: 'workflow_executions',
      arguments: {},
    });
    expect(someone.answer?.result.structuredContent.executions).toEqual([]);
  });

  it('static tokens: `token add` refuses the principal, and one written into the file by hand is refused', async () => {
    const file = join(sb.root, 'tokens-local.json');
    await expect(addToken(file, 'local', ['read', 'run'])).rejects.toThrow(/reserved.*--principal/);
    await expect(addToken(file, 'me', ['read', 'run'], 'local')).rejects.toThrow(/reserved/);
    const token = await addToken(file, 'me', ['read', 'run'], 'me');
    const { readFileSync } = await import('node:fs');
    const edited = JSON.parse(readFileSync(file, 'utf8')) as Json;
    edited.tokens[0].principal = 'local';
    writeFileSync(file, JSON.stringify(edited));
    const s = await serve({ WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: file });
    const res = await stateless(s.url, bearer(token), 'tools/list');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/reserved/);
  });
});

describe('the dashboard hides catalog credentials in every form (#20.7)', () => {
  it('base64 forms of a credential and numbers under credential-like keys are hidden on the execution page', async () => {
    const secret = 'catalog-api-token-0123456789';
    const s = await serve({ WORKFLOWLOOKUP_CATALOG_DEMO_TOKEN: secret }, { dashboard: true });
    const encoded = Buffer.from(`user:${secret}`).toString('base64');
    const started = await s.app.runner.run(
      'workflow_start',
      {
        workflow_id: 'coding-task-workflow',
        context: {
          header: `Basic ${encoded}`,
          inUrl: Buffer.from(secret).toString('base64url'),
          apiKey: 12_345_678_901,
          max_tokens: 4096,
        },
      },
      { caller: localCaller(), tools: s.app.toolSwitch() },
    );
    const id = (started as { result: Json }).result.execution_id as string;
    const page = await raw(s.port, `/dashboard/executions/${id}`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('Context');
    expect(page.body).not.toContain(encoded);
    expect(page.body).not.toContain(Buffer.from(secret).toString('base64url'));
    expect(page.body).not.toContain('12345678901');
    // A count under a credential-like name stays visible.
    expect(page.body).toContain('4096');
  });
});

describe('oversized headers get 431, not a reset (#20.8)', () => {
  it('answers a 20 KB bearer token with 431 and a JSON body, and serves it under a higher limit', async () => {
    const big = `Bearer ${'a'.repeat(20_000)}`;
    const s = await serve({});
    const res = await raw(s.port, '/mcp', { method: 'POST', headers: { authorization: big } });
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body)).toMatchObject({
      error: { message: 'Request Header Fields Too Large' },
    });
    expect(res.body).toMatch(/WORKFLOWLOOKUP_HTTP_MAX_HEADER_BYTES/);
    const roomy = await serve({ WORKFLOWLOOKUP_HTTP_MAX_HEADER_BYTES: '65536' });
    const accepted = await raw(roomy.port, '/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-padding': 'a'.repeat(20_000) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(accepted.status).not.toBe(431);
  });
});

describe('failed bearer tokens and chosen execution ids (#20.9)', () => {
  it('rate-limits failed bearer tokens per address (429, Retry-After); tokens that verified lately still work', async () => {
    const { env, token } = await staticTokens(sb, {
      regular: { scopes: ['read'] },
      newcomer: { scopes: ['read'] },
    });
    const s = await serve({ ...env, WORKFLOWLOOKUP_AUTH_FAILURE_LIMIT: '5' });
    expect((await stateless(s.url, bearer(token.regular as string), 'tools/list')).status).toBe(200);
    // Asking without a token is discovery, not a failure.
    for (let i = 0; i < 10; i++) expect((await stateless(s.url, {}, 'tools/list')).status).toBe(401);
    const statuses = [];
    for (let i = 0; i < 8; i++)
      statuses.push((await stateless(s.url, bearer(`wlt_wrong-${i}`), 'tools/list')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    const limited = await stateless(s.url, bearer('wlt_wrong-again'), 'tools/list');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.answer?.error.message).toMatch(/Too many failed authentication attempts/);
    // A token that verified before the flood is still served; one never seen waits like the rest.
    expect((await stateless(s.url, bearer(token.regular as string), 'tools/list')).status).toBe(200);
    expect((await stateless(s.url, bearer(token.newcomer as string), 'tools/list')).status).toBe(429);
  });

  it("workflow_start with another principal's execution_id says nothing of it: a plain invalid argument", async () => {
    const { env, token } = await staticTokens(sb, {
      ann: { scopes: ['read', 'run'] },
      ben: { scopes: ['read', 'run'] },
    });
    const s = await serve(env);
    const taken = await startExecution(s.url, token.ann as string, 'mr-review-workflow');
    const start = (t: string, id: string) =>
      stateless(s.url, bearer(t), 'tools/call', {
        name: 'workflow_start',
        arguments: { workflow_id: 'coding-task-workflow', execution_id: id },
      });
    const answer = (await start(token.ben as string, taken)).answer?.result;
    expect(answer.isError).toBe(true);
    const error = answer.structuredContent.error;
    expect(error.data.error_code).toBe('INVALID_PARAMS');
    const text = JSON.stringify(answer);
    for (const leak of [taken, 'mr-review-workflow', 'STATE_CONFLICT', 'exists', 'state']) {
      expect(text, leak).not.toContain(leak);
    }
    // The owner still has it.
    const own = await stateless(s.url, bearer(token.ann as string), 'tools/call', {
      name: 'workflow_resume',
      arguments: { execution_id: taken },
    });
    expect(own.answer?.result.isError).toBeFalsy();
  });
});
