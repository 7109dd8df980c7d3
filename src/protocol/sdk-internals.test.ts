import {
  createMcpHandler,
  InMemoryTransport,
  type JSONRPCMessage,
  McpServer,
  ResourceTemplate,
} from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { forgetClient, requestHandler, sdkShapeProblems, withoutPrototypes } from './sdk-internals.js';

// These tests fail when the installed SDK no longer has what src/protocol/sdk-internals.ts reaches, or
// no longer behaves as that module assumes: read that module's header before changing the SDK's version.

type Json = Record<string, unknown>;
/** A JSON-RPC answer, as far as these tests read it. */
interface Answer {
  id: string | number;
  result?: { tools?: unknown[] } & Json;
  error?: { code: number; message: string };
}

const CAPABILITIES = { elicitation: { form: {} }, roots: { listChanged: true } };
const CLIENT = { name: 'shape-test', version: '1.2.3' };

/** An SDK server with one tool, prompt, resource and resource template; `strip` as createMcpServer does. */
function serverWithOneOfEach(strip = true): McpServer {
  const server = new McpServer(
    { name: 'shape', version: '1.0.0' },
    { capabilities: { tools: {}, prompts: {}, resources: {} } },
  );
  if (strip) withoutPrototypes(server);
  server.registerTool(
    'echo',
    { description: 'Echoes its text', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  server.registerPrompt(
    'greet',
    { description: 'Greets', argsSchema: z.object({ name: z.string() }) },
    async ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}` } }] }),
  );
  server.registerResource('note', 'note://one', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: 'one' }],
  }));
  server.registerResource(
    'notes',
    new ResourceTemplate('note://{id}', { list: undefined }),
    { mimeType: 'text/plain' },
    async (uri, variables) => ({ contents: [{ uri: uri.href, text: String(variables.id) }] }),
  );
  return server;
}

const open: McpServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

/** `server` over the SDK's in-memory transport, initialized (2025-11-25) with CAPABILITIES and CLIENT. */
async function connected(server: McpServer) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const waiting = new Map<string | number, (answer: Answer) => void>();
  clientSide.onmessage = (message) => {
    const answer = JSON.parse(JSON.stringify(message)) as Answer;
    if ('id' in answer && !('method' in answer)) waiting.get(answer.id)?.(answer);
  };
  await clientSide.start();
  await server.connect(serverSide);
  open.push(server);
  let next = 0;
  const request = async (method: string, params: Json = {}): Promise<Answer> => {
    const id = ++next;
    const answered = new Promise<Answer>((resolve) => waiting.set(id, resolve));
    await clientSide.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
    return answered;
  };
  await request('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: CAPABILITIES,
    clientInfo: CLIENT,
  });
  return request;
}

describe('the SDK has every member sdk-internals.ts reaches', () => {
  it('finds no problem on a server with a tool, a prompt, a resource and a template, before and after a client', async () => {
    const server = serverWithOneOfEach();
    expect(sdkShapeProblems(server)).toEqual([]);
    await connected(server);
    expect(sdkShapeProblems(server)).toEqual([]);
    // The check reads each client field through its getter and puts it back as it was.
    expect(server.server.getClientCapabilities()).toEqual(CAPABILITIES);
    expect(server.server.getClientVersion()).toEqual(CLIENT);
  });

  it('names what is missing or no longer read where it is assumed to be', () => {
    const server = serverWithOneOfEach();
    const fields = server as unknown as Record<string, unknown>;
    delete fields._registeredPrompts;
    Object.defineProperty(server.server, 'getClientVersion', { value: () => undefined });
    expect(sdkShapeProblems(server)).toEqual([
      'McpServer._registeredPrompts is not a field of the server',
      'Server.getClientVersion() does not read Server._clientVersion',
    ]);
  });
});

describe('requestHandler', () => {
  it('hands a wrapper the SDK handler of its method, which answers as the SDK does', async () => {
    const server = serverWithOneOfEach();
    const sdkList = requestHandler<{ tools: { name: string }[] }>(server.server, 'tools/list');
    const sdkCall = requestHandler(server.server, 'tools/call');
    expect(sdkList).toBeTypeOf('function');
    expect(sdkCall).toBeTypeOf('function');
    if (sdkList === undefined || sdkCall === undefined) return;
    server.server.setRequestHandler('tools/list', async (request, ctx) => {
      const listed = await sdkList(request.params, ctx);
      return { tools: listed.tools.map((t) => ({ ...t, description: `wrapped: ${t.name}` })) } as never;
    });
    // As tasks-protocol.ts installs its tools/call: the 3-argument form, params as the SDK parsed them.
    server.server.setRequestHandler(
      'tools/call',
      { params: z.looseObject({ name: z.string() }) },
      (params, ctx) => sdkCall(params, ctx),
    );
    const request = await connected(server);
    const listed = await request('tools/list');
    expect(listed.result?.tools).toMatchObject([
      {
        name: 'echo',
        description: 'wrapped: echo',
        inputSchema: { properties: { text: { type: 'string' } } },
      },
    ]);
    expect((await request('tools/call', { name: 'echo', arguments: { text: 'hi' } })).result).toMatchObject({
      content: [{ type: 'text', text: 'hi' }],
    });
    // The SDK's own refusals come through the wrapper unchanged.
    expect((await request('tools/call', { name: 'nope', arguments: {} })).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Tool nope not found'),
    });
  });

  it('finds nothing for a method nothing handles', () => {
    expect(requestHandler(serverWithOneOfEach().server, 'acme/unknown')).toBeUndefined();
  });
});

describe('withoutPrototypes', () => {
  it('leaves the registries without a prototype, holding what was registered after it', () => {
    const fields = serverWithOneOfEach() as unknown as Record<string, object>;
    for (const [registry, entry] of [
      ['_registeredTools', 'echo'],
      ['_registeredPrompts', 'greet'],
      ['_registeredResources', 'note://one'],
      ['_registeredResourceTemplates', 'notes'],
    ] as const) {
      expect(Object.getPrototypeOf(fields[registry]), registry).toBeNull();
      expect(Object.keys(fields[registry] ?? {}), registry).toEqual([entry]);
    }
  });

  it('so that constructor and toString are names like any unknown one', async () => {
    const request = await connected(serverWithOneOfEach());
    expect((await request('tools/call', { name: 'constructor', arguments: {} })).error?.message).toContain(
      'Tool constructor not found',
    );
    expect((await request('prompts/get', { name: 'toString' })).error?.message).toContain(
      'Prompt toString not found',
    );
  });

  it('is still needed: the SDK itself takes an inherited name for a registered entry', async () => {
    // If this fails, the SDK looks names up as own keys now, and withoutPrototypes can go.
    const request = await connected(serverWithOneOfEach(false));
    expect((await request('tools/call', { name: 'constructor', arguments: {} })).error?.message).toContain(
      'Tool constructor disabled',
    );
  });
});

describe('forgetClient', () => {
  it('clears what initialize told the server, for the getters and for the SDK own capability checks', async () => {
    const server = serverWithOneOfEach();
    await connected(server);
    expect(server.server.getClientCapabilities()).toEqual(CAPABILITIES);
    forgetClient(server.server);
    expect(server.server.getClientCapabilities()).toBeUndefined();
    expect(server.server.getClientVersion()).toBeUndefined();
    const form = { message: 'Go on?', requestedSchema: { type: 'object' as const, properties: {} } };
    await expect(server.server.elicitInput(form)).rejects.toThrow('Client does not support form elicitation');
  });

  it('keeps a pooled 2026-07-28 server from answering with the previous request client', async () => {
    const server = serverWithOneOfEach();
    const handler = createMcpHandler(() => server, { legacy: 'reject' });
    const post = async (envelope: Json) => {
      const res = await handler.fetch(
        new Request('http://127.0.0.1/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/list',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope } }),
        }),
      );
      expect(res.status, await res.clone().text()).toBe(200);
      await res.text();
    };
    const envelope = (extra: Json) => ({
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      ...extra,
    });
    const first = envelope({
      'io.modelcontextprotocol/clientCapabilities': CAPABILITIES,
      'io.modelcontextprotocol/clientInfo': CLIENT,
    });
    await post(first);
    expect(server.server.getClientCapabilities()).toEqual(CAPABILITIES);
    expect(server.server.getClientVersion()).toEqual(CLIENT);
    // An envelope without clientInfo leaves the previous client's: this is what forgetClient is for.
    await post(envelope({}));
    expect(server.server.getClientVersion()).toEqual(CLIENT);
    forgetClient(server.server);
    await post(envelope({}));
    expect(server.server.getClientCapabilities()).toEqual({});
    expect(server.server.getClientVersion()).toBeUndefined();
    await handler.close();
  });
});
