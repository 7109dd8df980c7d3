import { describe, expect, it } from 'vitest';
import { fakeRequest, recordingResponse } from '../../../test/helpers/http-doubles.js';
import type { ScopeTables } from '../../protocol/scopes.js';
import { eraOf, type MessageLimits, readBody, readMessage } from './messages.js';

const tables: ScopeTables = {
  tools: new Map([
    ['workflow_list', { scope: 'read' as const }],
    ['workflow_start', { scope: 'run' as const }],
  ]),
  aliases: new Map(),
  resourceOf: () => undefined,
  templateNamed: () => undefined,
};
const limits: MessageLimits = {
  maxBody: 128,
  scopeTables: tables,
  resourceMetadataUrl: () => 'http://127.0.0.1:3927/.well-known/oauth-protected-resource/mcp',
};
const JSON_TYPE = { 'content-type': 'application/json' };

async function read(body: string | Buffer[], headers: Record<string, string> = JSON_TYPE, scopes?: string[]) {
  const { res, sent } = recordingResponse();
  const message = await readMessage(fakeRequest('POST', headers, body), res, scopes, limits);
  return { message, sent };
}

describe('reading a POST', () => {
  it('hands on a good message, checked', async () => {
    const { message, sent } = await read('{"jsonrpc":"2.0","id":1,"method":"ping"}');
    expect(message).toEqual({ body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    expect(sent.status).toBe(0);
  });

  it('refuses another media type (415), a body past the limit (413) and text that is not JSON (400)', async () => {
    const media = await read('{}', { 'content-type': 'text/plain' });
    expect([media.message, media.sent.status]).toEqual([undefined, 415]);
    expect(media.sent.json()?.error.message).toBe(
      'Unsupported Media Type: Content-Type must be application/json',
    );

    // Announced too large: refused before reading; streamed past the limit: refused when it passes it.
    const announced = await read('{}', { ...JSON_TYPE, 'content-length': '129' });
    const streamed = await read([Buffer.alloc(70, 32), Buffer.alloc(70, 32)]);
    for (const { message, sent } of [announced, streamed]) {
      expect([message, sent.status]).toEqual([undefined, 413]);
      expect(sent.json()?.error).toEqual({
        code: -32600,
        message: 'Invalid Request',
        data: { details: 'the body exceeds 128 bytes' },
      });
    }

    const broken = await read('{"jsonrpc":');
    expect([broken.message, broken.sent.status]).toEqual([undefined, 400]);
    expect(broken.sent.json()?.error.code).toBe(-32700);
  });

  it('answers a malformed message as stdio does (400), and drops what nothing answers (202)', async () => {
    const batch = await read('[]');
    expect(batch.sent.status).toBe(400);
    expect(batch.sent.json()?.error.data.details).toBe('batch requests are not supported');
    const notification = await read('{"jsonrpc":"2.0","method":"notifications/x","params":5}');
    expect([notification.message, notification.sent.status, notification.sent.body]).toEqual([
      undefined,
      202,
      '{}',
    ]);
  });

  it('checks the scope of the call when the caller authenticated: 403 naming the scope it needs', async () => {
    const call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workflow_start"}}';
    expect((await read(call, JSON_TYPE, ['read', 'run'])).message).toBeDefined();
    // No authentication (no scopes): every call may go ahead.
    expect((await read(call, JSON_TYPE, undefined)).message).toBeDefined();
    const { message, sent } = await read(call, JSON_TYPE, ['read']);
    expect([message, sent.status]).toEqual([undefined, 403]);
    expect(sent.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(sent.headers['www-authenticate']).toContain('scope="run"');
    expect(sent.headers['www-authenticate']).toContain(`resource_metadata="${limits.resourceMetadataUrl()}"`);
  });

  it('readBody stops at the limit', async () => {
    expect(await readBody(fakeRequest('POST', {}, 'x'.repeat(10)), 10)).toBe('x'.repeat(10));
    expect(await readBody(fakeRequest('POST', {}, 'x'.repeat(11)), 10)).toBeUndefined();
  });
});

describe('eraOf', () => {
  it('tells a 2026-07-28 request (its envelope and headers) from a 2025 one', () => {
    const legacy = fakeRequest('POST', { 'mcp-protocol-version': '2025-06-18' });
    expect(eraOf(legacy, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).toBe('legacy');
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    };
    expect(eraOf(fakeRequest('POST'), initialize)).toBe('legacy');
    const modern = fakeRequest('POST', { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    expect(eraOf(modern, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope } })).toBe(
      'modern',
    );
  });
});
