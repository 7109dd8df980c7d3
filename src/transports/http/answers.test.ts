import { describe, expect, it } from 'vitest';
import { fakeRequest, recordingResponse } from '../../../test/helpers/http-doubles.js';
import { header, json, rpcError, sendWeb } from './answers.js';

describe('the transport’s own answers', () => {
  it('json writes a status, a JSON content type, extra headers and the body', () => {
    const { res, sent } = recordingResponse();
    json(res, 429, rpcError(-32000, 'Too many requests; retry in 3 s'), { 'retry-after': '3' });
    expect(sent.status).toBe(429);
    expect(sent.headers).toEqual({ 'content-type': 'application/json', 'retry-after': '3' });
    expect(sent.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'Too many requests; retry in 3 s' },
    });
  });

  it('json only ends a response that already started (a stream cannot change its status)', () => {
    const { res, sent } = recordingResponse();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    json(res, 500, rpcError(-32603, 'Internal error'));
    expect([sent.status, sent.body]).toEqual([200, '']);
  });

  it('rpcError carries data only when given', () => {
    expect(rpcError(-32600, 'Invalid Request')).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request' },
    });
    expect(rpcError(-32600, 'Invalid Request', { details: 'x' }).error).toHaveProperty('data', {
      details: 'x',
    });
  });

  it('sendWeb copies a web Response onto the node response', async () => {
    const { res, sent } = recordingResponse();
    await sendWeb(res, new Response('{"a":1}', { status: 401, headers: { 'www-authenticate': 'Bearer' } }));
    expect(sent.status).toBe(401);
    expect(sent.headers['www-authenticate']).toBe('Bearer');
    expect(sent.json()).toEqual({ a: 1 });
  });

  it('header reads a repeated header as one string', () => {
    const req = fakeRequest('POST', { 'mcp-method': 'tools/list' });
    (req.headers as Record<string, unknown>)['x-twice'] = ['a', 'b'];
    expect(header(req, 'mcp-method')).toBe('tools/list');
    expect(header(req, 'x-twice')).toBe('a, b');
    expect(header(req, 'absent')).toBeUndefined();
  });
});
