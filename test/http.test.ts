import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

type Key = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, httpClient, type Json, post, startHttpServer } from './helpers/http-server.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { CLI, FIXTURES, type Sandbox, SPAWNED_WAIT_MS, sandbox, tokenOf } from './helpers/server.js';
import { TasksApi, TOKEN } from './helpers/tasks-api.js';

const INIT = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** A served app: in-process by default, or the spawned `serve --http` where the process matters. */
type Served = { url: string; kill(signal?: string): void };
const servers: Served[] = [];
let sb: Sandbox;
beforeAll(() => {
  sb = sandbox();
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
});
afterAll(() => {
  for (const s of servers) s.kill();
  sb.cleanup();
});

/** `serve --http` built in-process (test/helpers/in-process-http.ts): a real HTTP server on 127.0.0.1. */
async function server(env: Record<string, string> = {}): Promise<Served> {
  const http = await inProcessHttp(sb, env);
  const s = { url: http.url, kill: () => void http.close() };
  servers.push(s);
  return s;
}

/** The spawned `serve --http`, for what only a process shows (its exit on SIGTERM). */
async function processServer(env: Record<string, string> = {}): Promise<HttpServer> {
  const s = await startHttpServer(sb, env);
  servers.push(s);
  return s;
}

/** A raw 2025 session: initialize, then requests with the session header. */
async function session(url: string, headers: Record<string, string> = {}) {
  const init = await post(url, INIT, headers);
  const sid = init.headers.get('mcp-session-id') as string;
  const h = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  let id = 0;
  return {
    sid,
    headers: h,
    call: async (method: string, params?: unknown) =>
      (await post(url, { jsonrpc: '2.0', id: ++id, method, ...(params !== undefined ? { params } : {}) }, h))
        .json as Json,
  };
}

describe('Streamable HTTP, both eras', () => {
  it('serves tools, resources and prompts to SDK clients of 2025-11-25 (session) and 2026-07-28 (stateless)', async () => {
    const s = await server();
    for (const pin of [undefined, '2026-07-28']) {
      const client = await httpClient(s.url, pin ? { pin } : {});
      try {
        const tools = await client.listTools();
        expect(tools.tools.map((t) => t.name)).toContain('workflow_start');
        // Seeds 001/002 over HTTP too: the four guidance tools, every tool with an output schema (which
        // the SDK client checks each structuredContent against from here on).
        expect(tools.tools.map((t) => t.name)).toEqual(
          expect.arrayContaining(['workflow_list', 'workflow_get', 'workflow_next', 'workflow_validate']),
        );
        for (const tool of tools.tools) expect(tool.outputSchema?.type, tool.name).toBe('object');
        const started = (
          await client.callTool({
            name: 'workflow_start',
            arguments: { workflow_name: 'coding-task-workflow' },
          })
        ).structuredContent as Json;
        expect(started).toMatchObject({ success: true, workflow_state: 'running' });
        expect(started.new_token).toBe(tokenOf(started)); // seed 004
        const next = (
          await client.callTool({
            name: 'workflow.next_step',
            arguments: {
              token: tokenOf(started),
              output: { summary: 'A plan with enough detail to satisfy the checks.' },
            },
          })
        ).structuredContent as Json;
        expect(next.execution_id).toBe(started.execution_id);
        const status = await client.readResource({
          uri: `workflowlookup://workflow/workflow_status/${started.execution_id}`,
        });
        expect(JSON.parse((status.contents[0] as { text: string }).text)).toMatchObject({
          execution_id: started.execution_id,
          workflow_name: 'coding-task-workflow',
        });
        const prompts = await client.listPrompts();
        expect(prompts.prompts.map((p) => p.name)).toContain('workflow_author');
        const failed = await client.callTool({ name: 'workflow_get', arguments: { id: 'no-such-workflow' } });
        expect(failed.isError).toBe(true);
        expect((failed.structuredContent as Json).error.code).toBe(-32001);
      } finally {
        await client.close();
      }
    }
  });

  it('keeps seed 001 direct methods and the same errors over HTTP', async () => {
    const s = await server();
    const raw = await session(s.url);
    expect((await raw.call('workflow_get', { id: 'nope-nope' })).error).toMatchObject({
      code: -32001,
      data: { error_code: 'WORKFLOW_NOT_FOUND' },
    });
    expect((await raw.call('workflow.list', null)).result.workflows.length).toBeGreaterThan(0);
    expect((await raw.call('workflow_get', {})).error).toMatchObject({ code: -32602 });
    const modern = await post(
      s.url,
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'workflow_list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'workflow_list' },
    );
    expect(modern.json?.result.workflows.length).toBeGreaterThan(0);
  });

  it('ends a session on DELETE and answers an unknown session with 404', async () => {
    const s = await server();
    const raw = await session(s.url);
    expect((await raw.call('ping')).result).toEqual({});
    const del = await fetch(s.url, { method: 'DELETE', headers: raw.headers });
    expect(del.status).toBe(200);
    expect((await post(s.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, raw.headers)).status).toBe(404);
    const unknown = await post(
      s.url,
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { ...raw.headers, 'mcp-session-id': 'made-up' },
    );
    expect(unknown.status).toBe(404);
  });
});

describe('safe by default', () => {
  it('refuses hostile Host and Origin headers (DNS rebinding)', async () => {
    const s = await server();
    const port = new URL(s.url).port;
    for (const headers of [{ host: `evil.example.com:${port}` }, { origin: 'http://evil.example.com' }]) {
      const res = await new Promise<number>((resolve, reject) => {
        const req = require('node:http').request(
          s.url,
          {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              ...headers,
            },
          },
          (r: { statusCode: number; resume: () => void }) => {
            r.resume();
            resolve(r.statusCode);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(INIT));
      });
      expect(res).toBe(403);
    }
    expect((await post(s.url, INIT, { origin: `http://localhost:${port}` })).status).toBe(200);
  });

  it('limits the body size and the request rate per principal', async () => {
    const s = await server({ WORKFLOWLOOKUP_MAX_MESSAGE_BYTES: '4096', WORKFLOWLOOKUP_RATE_LIMIT: '6' });
    const big = await post(s.url, { ...INIT, params: { ...INIT.params, pad: 'x'.repeat(8000) } });
    expect(big.status).toBe(413);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 10; i++) {
      const res = await post(s.url, INIT);
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers.get('retry-after');
    }
    expect(statuses.filter((x) => x === 429).length).toBeGreaterThan(0);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });

  it('refuses to bind a non-loopback address without authentication (exit 2)', () => {
    const res = spawnSync(process.execPath, [CLI, 'serve', '--http', '--host', '0.0.0.0', '--port', '0'], {
      env: sb.env,
      cwd: sb.project,
      encoding: 'utf8',
      timeout: SPAWNED_WAIT_MS,
    });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('without authentication');
  });
});

describe('authentication: static tokens', () => {
  let s: Served;
  let alice: string;
  let bob: string;
  let reader: string;
  const tokensFile = () => join(sb.root, 'tokens.json');

  beforeAll(async () => {
    const env = { ...sb.env, WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: tokensFile() };
    const add = (name: string, scopes: string) =>
      spawnSync(process.execPath, [CLI, 'token', 'add', name, '--scopes', scopes], {
        env,
        encoding: 'utf8',
      }).stdout.trim();
    alice = add('alice', 'read,run');
    bob = add('bob', 'read,run');
    reader = add('reader', 'read');
    s = await server({ WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: tokensFile() });
  });

  it('publishes protected-resource metadata and challenges callers without a valid token', async () => {
    const base = new URL(s.url);
    const meta = (await (
      await fetch(`${base.origin}/.well-known/oauth-protected-resource/mcp`)
    ).json()) as Json;
    expect(meta).toMatchObject({
      resource: s.url,
      scopes_supported: ['read', 'run', 'author', 'admin', 'approve'],
    });
    const missing = await post(s.url, INIT);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(
      /^Bearer .*error="invalid_token".*resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/,
    );
    const wrong = await post(s.url, INIT, { authorization: 'Bearer wlt_not-a-real-token' });
    expect(wrong.status).toBe(401);
    const malformed = await post(s.url, INIT, { authorization: `Token ${alice}` });
    expect(malformed.status).toBe(401);
    expect((await post(s.url, INIT, { authorization: `Bearer ${alice}` })).status).toBe(200);
  });

  it('answers 403 with the scope a call needs', async () => {
    const raw = await session(s.url, { authorization: `Bearer ${reader}` });
    expect((await raw.call('workflow_list')).result.workflows.length).toBeGreaterThan(0);
    const res = await post(
      s.url,
      {
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'workflow.start', arguments: { workflow_name: 'coding-task-workflow' } },
      },
      raw.headers,
    );
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toMatch(/error="insufficient_scope".*scope="run"/);
    const direct = await post(
      s.url,
      { jsonrpc: '2.0', id: 6, method: 'workflow_start', params: { workflow_name: 'x-y-z' } },
      raw.headers,
    );
    expect(direct.status).toBe(403);
  });

  it('isolates principals: executions, resources and tokens of one are not found by another', async () => {
    const a = await httpClient(s.url, { token: alice });
    const b = await httpClient(s.url, { token: bob });
    try {
      const started = (
        await a.callTool({ name: 'workflow_start', arguments: { workflow_name: 'coding-task-workflow' } })
      ).structuredContent as Json;
      const id = started.execution_id as string;
      const listA = (await a.callTool({ name: 'workflow_executions', arguments: {} }))
        .structuredContent as Json;
      const listB = (await b.callTool({ name: 'workflow_executions', arguments: {} }))
        .structuredContent as Json;
      expect(listA.executions.map((e: Json) => e.execution_id)).toContain(id);
      expect(listB.executions.map((e: Json) => e.execution_id)).not.toContain(id);
      for (const [name, args] of [
        ['workflow_resume', { execution_id: id }],
        ['workflow_set_state', { execution_id: id, state: 'paused' }],
      ] as const) {
        const res = await b.callTool({ name, arguments: args });
        expect((res.structuredContent as Json).error.data.error_code, name).toBe('EXECUTION_NOT_FOUND');
      }
      for (const kind of [
        'current_step',
        'workflow_status',
        'step_history',
        'workflow_artifacts',
        'telemetry',
      ]) {
        await expect(
          b.readResource({ uri: `workflowlookup://workflow/${kind}/${id}` }),
          kind,
        ).rejects.toThrow();
      }
      const telemetry = JSON.parse(
        (
          (await b.readResource({ uri: 'workflowlookup://workflow/telemetry' })).contents[0] as {
            text: string;
          }
        ).text,
      ) as Json[];
      expect(telemetry.filter((e) => e.execution_id === id)).toEqual([]);
      // A stolen continuation token is worthless to another principal.
      const stolen = await b.callTool({
        name: 'workflow_next_step',
        arguments: { token: tokenOf(started), output: { summary: 'not mine' } },
      });
      expect((stolen.structuredContent as Json).error.data.error_code).toBe('TOKEN_INVALID');
      // Choosing another principal's execution id does not reveal it either.
      const taken = await b.callTool({
        name: 'workflow_start',
        arguments: { workflow_name: 'coding-task-workflow', execution_id: id },
      });
      expect(JSON.stringify(taken.structuredContent)).not.toContain('coding-task-workflow');
      expect(
        (await a.callTool({ name: 'workflow_resume', arguments: { execution_id: id } })).isError,
      ).toBeFalsy();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('binds a session to its principal: another token on the same session is not found', async () => {
    const raw = await session(s.url, { authorization: `Bearer ${alice}` });
    const hijack = await post(
      s.url,
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { ...raw.headers, authorization: `Bearer ${bob}` },
    );
    expect(hijack.status).toBe(404);
  });
});

describe('authentication: JWT', () => {
  let s: Served;
  let sign: (claims: Json, options?: { key?: Key; exp?: number | string; kid?: string }) => Promise<string>;

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const other = await generateKeyPair('ES256');
    const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const file = join(sb.root, 'jwks.json');
    writeFileSync(file, JSON.stringify({ keys: [jwk] }));
    sign = async (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: options.kid ?? 'k1' })
        .setIssuedAt()
        .setExpirationTime(options.exp ?? '10m')
        .sign(options.key ?? privateKey);
    void other;
    s = await server({
      WORKFLOWLOOKUP_AUTH: 'jwt',
      WORKFLOWLOOKUP_JWT_ISSUER: 'https://issuer.example',
      WORKFLOWLOOKUP_JWT_AUDIENCE: 'workflowlookup',
      WORKFLOWLOOKUP_JWKS_FILE: file,
    });
    (globalThis as { otherKey?: Key }).otherKey = other.privateKey;
  });

  const good = { iss: 'https://issuer.example', aud: 'workflowlookup', sub: 'carol', scope: 'read run' };

  it('accepts a valid token and names the principal from sub', async () => {
    const token = await sign(good);
    const client = await httpClient(s.url, { token });
    try {
      const started = (
        await client.callTool({
          name: 'workflow_start',
          arguments: { workflow_name: 'coding-task-workflow' },
        })
      ).structuredContent as Json;
      expect(started.success).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('answers every failure with 401 (invalid_token) or 403 (insufficient_scope) and the WWW-Authenticate header', async () => {
    const otherKey = (globalThis as { otherKey?: Key }).otherKey as Key;
    const cases: [string, string | undefined, number, RegExp][] = [
      ['missing', undefined, 401, /error="invalid_token"/],
      ['malformed', 'not.a.jwt', 401, /error="invalid_token"/],
      ['expired', await sign(good, { exp: Math.floor(Date.now() / 1000) - 60 }), 401, /expired/],
      ['wrong audience', await sign({ ...good, aud: 'someone-else' }), 401, /aud/],
      ['wrong issuer', await sign({ ...good, iss: 'https://evil.example' }), 401, /iss/],
      ['bad signature', await sign(good, { key: otherKey }), 401, /signature/],
      ['no subject', await sign({ iss: good.iss, aud: good.aud, scope: 'read' }), 401, /sub/],
      [
        'insufficient scope',
        await sign({ ...good, scope: 'read' }),
        403,
        /error="insufficient_scope".*scope="run"/,
      ],
    ];
    for (const [name, token, status, header] of cases) {
      const raw = await post(
        s.url,
        name === 'insufficient scope'
          ? {
              jsonrpc: '2.0',
              id: 1,
              method: 'workflow_start',
              params: { workflow_name: 'coding-task-workflow' },
            }
          : INIT,
        token ? { authorization: `Bearer ${token}` } : {},
      );
      expect(raw.status, name).toBe(status);
      expect(raw.headers.get('www-authenticate'), name).toMatch(header);
      expect(raw.headers.get('www-authenticate'), name).toContain('resource_metadata=');
    }
  });
});

describe('graceful shutdown', () => {
  it('finishes in-flight requests on SIGTERM, then exits 0', async () => {
    const api = new TasksApi();
    await api.start();
    try {
      const env = {
        WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
        WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
      };
      // SIGTERM while a request waits on the network, then the exit code: a process.
      const s = await processServer(env);
      const raw = await session(s.url);
      expect(
        (
          await raw.call('catalog_import_openapi', {
            source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
            catalog_title: 'Tasks API',
            base_url: api.baseUrl,
          })
        ).error,
      ).toBeUndefined();
      const saved = await raw.call('workflow_save', {
        content: [
          'id: slow-over-http',
          'name: Slow over HTTP',
          'description: Calls an API that takes 2 s',
          'version: 1.0.0',
          'steps:',
          '  - { id: fetch-slow, title: Fetch, run: tasks-api get-task, with: { taskId: slow } }',
          '  - { id: review, title: Review, prompt: Review it. }',
        ].join('\n'),
      });
      expect(saved.error).toBeUndefined();
      const slow = post(
        s.url,
        { jsonrpc: '2.0', id: 'slow', method: 'workflow_start', params: { workflow_name: 'slow-over-http' } },
        raw.headers,
      );
      await new Promise((r) => setTimeout(r, 400));
      s.kill('SIGTERM');
      const answered = await slow;
      expect(answered.json?.result).toMatchObject({ workflow_state: 'running', step_name: 'review' });
      expect(await s.exited).toEqual({ code: 0, signal: null });
    } finally {
      await api.stop();
    }
  });
});
