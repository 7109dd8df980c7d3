import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { fakeRequest, manualClock, recordingResponse } from '../../../test/helpers/http-doubles.js';
import type { AuthedRequest } from './authentication.js';
import { type OpenSession, SESSION_IDLE_MS, type SessionHooks, Sessions } from './sessions.js';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const MINUTE = 60_000;

/** A session transport that names itself on its first request, as the SDK's does on initialize. */
interface FakeSession {
  id: string;
  principal: string;
  served: number;
  closed: boolean;
  hooks: SessionHooks;
}

function fakeOpen(options: { refuse?: boolean } = {}) {
  const opened: FakeSession[] = [];
  const open: OpenSession = async (principal, hooks) => {
    const session: FakeSession = { id: `s${opened.length + 1}`, principal, served: 0, closed: false, hooks };
    opened.push(session);
    const transport = {
      async handleRequest(_req: AuthedRequest, res: ServerResponse) {
        if (session.served++ === 0 && !options.refuse) hooks.opened(session.id, transport, {});
        res.writeHead(200, { 'mcp-session-id': session.id });
        res.end('{}');
      },
      async close() {
        session.closed = true;
        hooks.closed(session.id);
      },
    };
    return transport;
  };
  return { open, opened };
}

async function send(sessions: Sessions, principal: string, body: unknown, sid?: string, method = 'POST') {
  const { res, sent } = recordingResponse();
  const req = fakeRequest(method, sid === undefined ? {} : { 'mcp-session-id': sid }) as AuthedRequest;
  await sessions.handle(req, res, body, principal);
  return sent;
}

const limits = { maxSessions: 3, maxSessionsPerPrincipal: 2 };

describe('Sessions', () => {
  it('opens a session with initialize and serves its requests to its principal only', async () => {
    const { open, opened } = fakeOpen();
    const sessions = new Sessions(open, limits, manualClock());
    expect((await send(sessions, 'alice', INITIALIZE)).status).toBe(200);
    expect(sessions.byPrincipal()).toEqual(new Map([['alice', 1]]));

    expect((await send(sessions, 'alice', { jsonrpc: '2.0', id: 2, method: 'ping' }, 's1')).status).toBe(200);
    expect(opened[0]?.served).toBe(2);
    // Another principal's session, or an unknown one: not found, never forbidden.
    for (const [principal, sid] of [
      ['bob', 's1'],
      ['alice', 'nope'],
    ] as const) {
      const sent = await send(sessions, principal, { jsonrpc: '2.0', id: 3, method: 'ping' }, sid);
      expect(sent.status).toBe(404);
      expect(sent.json()?.error).toEqual({ code: -32001, message: 'Session not found' });
    }
    expect(opened[0]?.served).toBe(2);
    sessions.stop();
  });

  it('answers before initialize as stdio does: ping works, anything else is 400', async () => {
    const { open, opened } = fakeOpen();
    const sessions = new Sessions(open, limits, manualClock());
    const ping = await send(sessions, 'alice', { jsonrpc: '2.0', id: 7, method: 'ping' });
    expect([ping.status, ping.json()]).toEqual([200, { jsonrpc: '2.0', id: 7, result: {} }]);
    const list = await send(sessions, 'alice', { jsonrpc: '2.0', id: 8, method: 'tools/list' });
    expect(list.status).toBe(400);
    expect(list.json()).toEqual({
      jsonrpc: '2.0',
      id: 8,
      error: {
        code: -32600,
        message: 'Server not initialized',
        data: { details: 'send initialize before tools/list', method: 'tools/list' },
      },
    });
    // A GET without a session (a notification stream) is refused the same way.
    const get = await send(sessions, 'alice', undefined, undefined, 'GET');
    expect(get.json()?.error.data).toEqual({ details: 'send initialize before other requests' });
    expect(opened).toHaveLength(0);
    sessions.stop();
  });

  it('caps sessions per principal (429) and in total (503); an initialize that opens none holds no place', async () => {
    const { open } = fakeOpen();
    const sessions = new Sessions(open, limits, manualClock());
    await send(sessions, 'alice', INITIALIZE);
    await send(sessions, 'alice', INITIALIZE);
    const third = await send(sessions, 'alice', INITIALIZE);
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('60');
    expect(third.json()?.error.message).toBe('Too many open sessions for this principal');
    expect(third.json()?.error.data.limit).toBe(2);
    expect(third.json()?.error.data.details).toMatch(/^alice has 2 open sessions/);

    await send(sessions, 'bob', INITIALIZE);
    const full = await send(sessions, 'carol', INITIALIZE);
    expect([full.status, full.headers['retry-after']]).toEqual([503, '5']);
    expect(full.json()?.error.message).toBe('Too many open sessions; try again shortly');
    sessions.stop();

    const refusing = new Sessions(fakeOpen({ refuse: true }).open, limits, manualClock());
    for (let i = 0; i < 5; i++) expect((await send(refusing, 'alice', INITIALIZE)).status).toBe(200);
    expect(refusing.size).toBe(0);
    refusing.stop();
  });

  it('a session that ends (DELETE, a closed connection) frees its place', async () => {
    const { open, opened } = fakeOpen();
    const sessions = new Sessions(open, limits, manualClock());
    await send(sessions, 'alice', INITIALIZE);
    await send(sessions, 'alice', INITIALIZE);
    opened[0]?.hooks.closed('s1');
    // Told twice (the SDK's onsessionclosed, then the connection's close): counted once.
    opened[0]?.hooks.closed('s1');
    opened[0]?.hooks.closed(undefined);
    expect(sessions.byPrincipal()).toEqual(new Map([['alice', 1]]));
    expect((await send(sessions, 'alice', INITIALIZE)).status).toBe(200);
    expect((await send(sessions, 'alice', INITIALIZE)).status).toBe(429);
    sessions.stop();
  });

  it('closes the sessions idle for 30 minutes, and only those', async () => {
    const clock = manualClock();
    const { open, opened } = fakeOpen();
    const sessions = new Sessions(open, limits, clock);
    await send(sessions, 'alice', INITIALIZE);
    await send(sessions, 'bob', INITIALIZE);
    clock.advance(20 * MINUTE);
    await send(sessions, 'bob', { jsonrpc: '2.0', id: 2, method: 'ping' }, 's2');
    clock.advance(SESSION_IDLE_MS - 20 * MINUTE + MINUTE);
    expect(opened.map((s) => s.closed)).toEqual([true, false]);
    expect(sessions.byPrincipal()).toEqual(new Map([['bob', 1]]));
    expect((await send(sessions, 'alice', { jsonrpc: '2.0', id: 3, method: 'ping' }, 's1')).status).toBe(404);
    clock.advance(20 * MINUTE);
    expect(opened.map((s) => s.closed)).toEqual([true, true]);
    expect(sessions.size).toBe(0);
    sessions.stop();
  });

  it('stop ends the sweep; close ends every session', async () => {
    const clock = manualClock();
    const { open, opened } = fakeOpen();
    const sessions = new Sessions(open, limits, clock);
    await send(sessions, 'alice', INITIALIZE);
    expect(clock.timers()).toBe(1);
    sessions.stop();
    expect(clock.timers()).toBe(0);
    clock.advance(2 * SESSION_IDLE_MS);
    expect(opened[0]?.closed).toBe(false);
    await sessions.close();
    expect(opened[0]?.closed).toBe(true);
    expect(sessions.size).toBe(0);
  });
});
