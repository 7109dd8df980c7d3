import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuthError } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRequest, manualClock, recordingResponse } from '../../../test/helpers/http-doubles.js';
import type { HttpSettings } from '../../config.js';
import { addToken } from '../http-auth.js';
import { type AuthedRequest, HttpAuthentication } from './authentication.js';

const MINUTE = 60_000;

const settingsWith = (auth: HttpSettings['auth']): HttpSettings => ({
  host: '127.0.0.1',
  port: 3927,
  path: '/mcp',
  publicUrl: 'http://127.0.0.1:3927/mcp',
  allowedHosts: [],
  allowedOrigins: [],
  auth,
  rateLimit: 0,
  maxSessions: 1,
  maxSessionsPerPrincipal: 1,
  maxHeaderBytes: 16_384,
  // Two failed tokens a minute per client address.
  authFailureLimit: 2,
  dashboard: false,
});

let dir: string;
let file: string;
let alice: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'wl-authentication-'));
  file = join(dir, 'tokens.json');
  alice = await addToken(file, 'alice', ['read', 'run']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function authenticate(
  auth: HttpAuthentication,
  authorization: string | undefined,
  address = '192.0.2.1',
) {
  const { res, sent } = recordingResponse();
  const req = fakeRequest(
    'POST',
    authorization === undefined ? {} : { authorization },
    undefined,
    address,
  ) as AuthedRequest;
  const principal = await auth.authenticate(req, res);
  return { principal, sent, req };
}

describe('HttpAuthentication', () => {
  it('without authentication everyone is the local user, and no token can be verified', async () => {
    const auth = await HttpAuthentication.create(
      settingsWith({ mode: 'none' }),
      new URL('http://127.0.0.1:3927/mcp'),
    );
    expect(auth.required).toBe(false);
    const { principal, sent } = await authenticate(auth, undefined);
    expect(principal).toBe('local');
    expect(sent.status).toBe(0);
    await expect(auth.verify('anything')).rejects.toBeInstanceOf(OAuthError);
    auth.stop();
  });

  it('names the principal of a good token and answers anything else with a challenge naming the metadata', async () => {
    const auth = await HttpAuthentication.create(
      settingsWith({ mode: 'tokens', file }),
      new URL('http://127.0.0.1:3927/mcp'),
      manualClock(),
    );
    expect(auth.required).toBe(true);
    expect(auth.metadataUrl).toBe('http://127.0.0.1:3927/.well-known/oauth-protected-resource/mcp');

    const good = await authenticate(auth, `Bearer ${alice}`);
    expect(good.principal).toBe('alice');
    expect(good.req.auth?.scopes).toEqual(['read', 'run']);
    expect(good.req.auth?.resourceMetadataUrl).toBe(auth.metadataUrl);

    for (const [header, reason] of [
      [undefined, 'no bearer token'],
      ['Basic abc', 'the Authorization header must be "Bearer <token>"'],
      ['Bearer wlt_not-a-token', 'unknown token'],
    ] as const) {
      const { principal, sent } = await authenticate(auth, header, `198.51.100.${header?.length ?? 0}`);
      expect(principal).toBeUndefined();
      expect(sent.status).toBe(401);
      expect(sent.headers['www-authenticate']).toContain('error="invalid_token"');
      expect(sent.headers['www-authenticate']).toContain(`resource_metadata="${auth.metadataUrl}"`);
      expect(sent.json()?.error_description).toBe(reason);
    }
    auth.stop();
  });

  it('limits failed tokens per address, sparing tokens that verified in the last 10 minutes', async () => {
    const clock = manualClock();
    const auth = await HttpAuthentication.create(
      settingsWith({ mode: 'tokens', file }),
      new URL('http://127.0.0.1:3927/mcp'),
      clock,
    );
    expect((await authenticate(auth, `Bearer ${alice}`)).principal).toBe('alice');
    // Asking without a token is discovery, not a failure: it never spends the budget.
    for (let i = 0; i < 5; i++) expect((await authenticate(auth, undefined)).sent.status).toBe(401);
    expect((await authenticate(auth, 'Bearer bad-1')).sent.status).toBe(401);
    expect((await authenticate(auth, 'Bearer bad-2')).sent.status).toBe(401);

    const refused = await authenticate(auth, 'Bearer bad-3');
    expect(refused.sent.status).toBe(429);
    expect(refused.sent.headers['retry-after']).toBe('30');
    expect(refused.sent.json()?.error.message).toBe('Too many failed authentication attempts; retry in 30 s');
    // Alice verified lately: still checked and served from the same address; the others' budgets are theirs.
    expect((await authenticate(auth, `Bearer ${alice}`)).principal).toBe('alice');
    expect((await authenticate(auth, undefined)).sent.status).toBe(401);
    expect((await authenticate(auth, 'Bearer bad-4', '203.0.113.9')).sent.status).toBe(401);

    // Eleven minutes on, Alice's token is no longer one that verified lately.
    clock.advance(11 * MINUTE);
    await authenticate(auth, 'Bearer bad-5');
    await authenticate(auth, 'Bearer bad-6');
    expect((await authenticate(auth, `Bearer ${alice}`)).sent.status).toBe(429);
    auth.stop();
    expect(clock.timers()).toBe(0);
  });

  it('verifies tokens for mounts and follows the endpoint when it moves', async () => {
    const auth = await HttpAuthentication.create(
      settingsWith({ mode: 'tokens', file }),
      new URL('http://127.0.0.1:0/mcp'),
      manualClock(),
    );
    const verified = await auth.verify(alice);
    expect(verified).toMatchObject({ principal: 'alice', scopes: ['read', 'run'], expiresAt: undefined });
    expect(typeof verified.credential).toBe('string');
    expect(auth.current(verified.credential as string)).toEqual({
      principal: 'alice',
      scopes: ['read', 'run'],
    });
    expect(auth.current('no-such-credential')).toBeUndefined();
    await expect(auth.verify('wlt_unknown')).rejects.toBeInstanceOf(OAuthError);

    await auth.rebind(new URL('http://127.0.0.1:41234/mcp'));
    expect(auth.publicUrl.href).toBe('http://127.0.0.1:41234/mcp');
    expect(auth.metadataUrl).toBe('http://127.0.0.1:41234/.well-known/oauth-protected-resource/mcp');
    const { req } = await authenticate(auth, `Bearer ${alice}`);
    expect(req.auth?.resource?.href).toBe('http://127.0.0.1:41234/mcp');
    auth.stop();
  });
});
