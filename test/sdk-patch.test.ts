import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, startHttpServer } from './helpers/http-server.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { RawServer, ROOT, type Sandbox, sandbox, twoSteps } from './helpers/server.js';

// The build patches the SDK's code (scripts/sdk-patches.mjs, docs/performance-startup.md): here, that
// dist/ has every patch and none of the code it replaces, and that the built server, which runs the
// patched SDK, answers what the patch touches exactly as the in-process server, which runs the SDK from
// node_modules as published, does.

type Json = Record<string, any>;

interface Guard {
  guard: string;
  schema: string;
  originalBody: string;
  patchedBody: string;
  original: string;
}
interface Patches {
  GUARDS: Guard[];
  MESSAGE_GUARDS: string;
  messageGuards(options?: { log?: (text: string) => void }): import('esbuild').Plugin;
}

let patches: Patches;
let bundle: string;
let sb: Sandbox;

beforeAll(async () => {
  // `npm test` builds before Vitest; a file run alone builds only when there is nothing built.
  if (!existsSync(join(ROOT, 'dist', 'cli.js')))
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
  patches = (await import(pathToFileURL(join(ROOT, 'scripts', 'sdk-patches.mjs')).href)) as Patches;
  const chunks = join(ROOT, 'dist', 'chunks');
  bundle = readdirSync(chunks)
    .filter((name) => name.endsWith('.js'))
    .map((name) => readFileSync(join(chunks, name), 'utf8'))
    .join('\n');
  sb = sandbox({ WORKFLOWLOOKUP_TOOLS: 'all' });
  writeFileSync(join(sb.runtime, 'doomed.yaml'), twoSteps('doomed', 'Doomed'));
});
afterAll(() => sb?.cleanup());

/** Code as esbuild prints it and as the SDK has it, made comparable: quotes, `==` for `===`, spaces. */
const plain = (code: string) => code.replaceAll('"', "'").replaceAll('===', '==').replace(/\s+/g, ' ').trim();

describe('dist has the patched SDK', () => {
  it('has every message guard patched, and no guard as the SDK wrote it', () => {
    for (const g of patches.GUARDS) {
      // `isX = (value) => body` (esbuild joins declarations, and may suffix a name that collides).
      const definitions = [
        ...bundle.matchAll(
          new RegExp(`\\b${g.guard}\\d* = \\(value\\) => (.+?\\.safeParse\\(value\\)\\.success)`, 'g'),
        ),
      ].map((m) => plain((m[1] as string).replace(new RegExp(`\\b${g.schema}\\d+\\b`, 'g'), g.schema)));
      expect(definitions, g.guard).toEqual([plain(g.patchedBody)]);
      expect(definitions, g.guard).not.toContain(plain(g.originalBody));
    }
  });

  it('has the lazy stand-in for the SDK JSON Schema validator, not the module it replaces', () => {
    expect(bundle).toContain('// lazy-sdk-validator:sdk-shims');
    expect(bundle).toMatch(/this\.inner \?\?= new Validator\(this\.ajv\)/);
    expect(bundle).not.toMatch(/^\/\/ node_modules\/@modelcontextprotocol\/server\/dist\/shims\w*\.mjs$/m);
  });
});

/** A message with its errors' correlation ids (random, one per failed call) made equal. */
const withoutCorrelationIds = (message: Json): Json =>
  JSON.parse(JSON.stringify(message).replace(/\bwl-[0-9a-f]{12}\b/g, 'wl-<correlation id>')) as Json;

/** A server spoken to in raw JSON-RPC lines: the built process, or the in-process wiring. */
interface Raw {
  send(message: unknown): void;
  read(count: number): Promise<Json[]>;
}

/**
 * What the message guards decide: requests, notifications, results and errors (answers to the server's
 * own elicitation requests, and to nothing), and messages that are none of these. Returns every message
 * with an id the server sent (answers and its requests), in order.
 */
async function conversation(server: Raw): Promise<Json[]> {
  const transcript: Json[] = [];
  let read = 0;
  const next = async (wanted: (message: Json) => boolean): Promise<Json> => {
    for (;;) {
      const message = (await server.read(read + 1))[read++] as Json;
      if ('id' in message) transcript.push(withoutCorrelationIds(message));
      if (wanted(message)) return message;
    }
  };
  const answer = (id: string) => next((m) => m.id === id && !('method' in m));
  const ask = (id: string, method: string, params?: Json) => {
    server.send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
    return answer(id);
  };
  const elicitation = () => next((m) => m.method === 'elicitation/create');
  const remove = { name: 'workflow_delete', arguments: { workflow_id: 'doomed' } };

  await ask('init', 'initialize', {
    protocolVersion: '2025-11-25',
    capabilities: { elicitation: {} },
    clientInfo: { name: 'guards', version: '1.0.0' },
  });
  server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  await ask('ping', 'ping');
  await ask('list', 'tools/list');
  // Each message that gets no answer is followed by a ping, answered once it has been handled.
  server.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
  await ask('after-notification', 'ping');
  server.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed', stray: true });
  await ask('after-malformed-notification', 'ping');
  server.send({ jsonrpc: '2.0', id: 'nobody-asked', result: {} });
  await ask('after-result', 'ping');
  server.send({ jsonrpc: '2.0', id: 'nobody-asked-either', error: { code: -32000, message: 'no' } });
  await ask('after-error', 'ping');
  for (const [id, malformed] of [
    ['stray-key', { method: 'ping', params: {}, stray: true }],
    ['method-number', { method: 7 }],
    ['result-null', { result: null }],
    ['result-list', { result: [] }],
    ['error-text', { error: 'boom' }],
  ] as const) {
    server.send({ jsonrpc: '2.0', id, ...malformed });
    await answer(id);
  }
  // The server's own requests: answered by a result (after one that is not), then by an error. While the
  // call waits for its answer, what the server says to other messages waits too (answers keep their order).
  server.send({ jsonrpc: '2.0', id: 'declined', method: 'tools/call', params: remove });
  const first = await elicitation();
  server.send({ jsonrpc: '2.0', id: first.id, result: null });
  server.send({ jsonrpc: '2.0', id: first.id, result: { action: 'decline' } });
  await answer('declined');
  server.send({ jsonrpc: '2.0', id: 'failed', method: 'tools/call', params: remove });
  const second = await elicitation();
  server.send({ jsonrpc: '2.0', id: second.id, error: { code: -32603, message: 'the user went away' } });
  await answer('failed');
  return transcript;
}

/** What the SDK's HTTP entry classifies with the guards (2026-07-28 bodies, no session): one body each. */
const HTTP_BODIES: [string, Record<string, string>, unknown][] = [
  ['2026 request', { 'mcp-method': 'tools/list' }, { method: 'tools/list', id: 1 }],
  ['2026 result', {}, { id: 2, result: {} }],
  ['2026 error', {}, { id: 3, error: { code: -32000, message: 'no' } }],
  [
    '2026 notification',
    { 'mcp-method': 'notifications/cancelled' },
    { method: 'notifications/cancelled', params: { requestId: 9 } },
  ],
  ['2026 stray key', { 'mcp-method': 'tools/list' }, { method: 'tools/list', id: 4, stray: true }],
  ['2026 method number', {}, { method: 7, id: 5 }],
  ['2026 result null', {}, { id: 6, result: null }],
];
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

async function httpConversation(url: string) {
  const answers: Json[] = [];
  for (const [name, headers, body] of HTTP_BODIES) {
    const message = body as Json;
    const withEnvelope =
      typeof message.method === 'string'
        ? { ...message, params: { ...message.params, _meta: ENVELOPE } }
        : message;
    const res = await post(
      url,
      { jsonrpc: '2.0', ...withEnvelope },
      { 'mcp-protocol-version': '2026-07-28', ...headers },
    );
    answers.push({ name, status: res.status, json: res.json && withoutCorrelationIds(res.json) });
  }
  return answers;
}

describe('the patched SDK answers as the SDK does', () => {
  it('over stdio: requests, notifications, results, errors and malformed messages', async () => {
    const env = (name: string) => ({ ...sb.env, WORKFLOWLOOKUP_DATA_DIR: join(sb.root, name) });
    const built = new RawServer({ env: env('built'), cwd: sb.project });
    const published = new InProcessRaw({ env: env('published'), cwd: sb.project });
    try {
      const [patched, unpatched] = await Promise.all([conversation(built), conversation(published)]);
      expect(patched).toEqual(unpatched);
      // The conversation says what it covers: without these answers the comparison would prove little.
      const byId = new Map(unpatched.filter((m) => !('method' in m)).map((m) => [m.id, m]));
      expect(byId.get('ping')?.result).toEqual({});
      expect(byId.get('list')?.result.tools.length).toBeGreaterThan(10);
      expect(byId.get('after-result')?.result).toEqual({});
      for (const id of ['stray-key', 'method-number', 'result-null', 'result-list', 'error-text'])
        expect(byId.get(id)?.error?.code, id).toBe(-32600);
      expect(JSON.stringify(byId.get('declined'))).toContain('declined');
      expect(JSON.stringify(byId.get('failed'))).toContain('the user went away');
      expect(unpatched.filter((m) => m.method === 'elicitation/create')).toHaveLength(2);
    } finally {
      built.kill();
      await published.close();
    }
  });

  it('over HTTP: the bodies its entry classifies', async () => {
    const built = await startHttpServer(sb, {
      WORKFLOWLOOKUP_RATE_LIMIT: '0',
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'built-http'),
    });
    const published = await inProcessHttp(sb, { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'published-http') });
    try {
      const [patched, unpatched] = await Promise.all([
        httpConversation(built.url),
        httpConversation(published.url),
      ]);
      expect(patched).toEqual(unpatched);
      expect(unpatched[0]).toMatchObject({ status: 200, json: { result: { tools: expect.any(Array) } } });
    } finally {
      built.kill();
      await published.close();
    }
  });
});

describe('a patch that no longer applies fails the build', () => {
  it('names the patch, the file, and the code it expected', async () => {
    const root = join(sb.root, 'changed-sdk');
    const dist = join(root, 'node_modules', '@modelcontextprotocol', 'server', 'dist');
    mkdirSync(dist, { recursive: true });
    const [changed, ...others] = patches.GUARDS as [Guard, ...Guard[]];
    // The SDK of a later release: one guard written differently, and the others gone from this file.
    writeFileSync(
      join(dist, 'src-changed.mjs'),
      `const ${changed.guard} = (value) => isPlainObject(value) && ${changed.schema}.safeParse(value).success;\nexport { ${changed.guard} };\n`,
    );
    writeFileSync(
      join(root, 'entry.mjs'),
      "export * from './node_modules/@modelcontextprotocol/server/dist/src-changed.mjs';\n",
    );
    const failed = await build({
      entryPoints: [join(root, 'entry.mjs')],
      bundle: true,
      write: false,
      logLevel: 'silent',
      plugins: [patches.messageGuards({ log: () => undefined })],
    }).then(
      () => undefined,
      (error: {
        errors: {
          text: string;
          location: { file: string; line: number } | null;
          notes: { text: string }[];
        }[];
      }) => error.errors,
    );
    expect(failed).toBeDefined();
    expect(failed).toContainEqual(
      expect.objectContaining({
        text: `${patches.MESSAGE_GUARDS}: the SDK's ${changed.guard} is not the code this patch replaces`,
        location: expect.objectContaining({ file: expect.stringContaining('src-changed.mjs'), line: 1 }),
        notes: expect.arrayContaining([expect.objectContaining({ text: `expected: ${changed.original}` })]),
      }),
    );
    for (const g of others)
      expect(failed?.map((e) => e.text)).toContainEqual(expect.stringContaining(`defines ${g.guard}`));
  });
});
