import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuthError, OAuthErrorCode } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import { type App, createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { silentLogger } from '../telemetry/log.js';
import type { MountContext, VerifiedToken } from '../transports/http.js';
import { type DashboardMount, dashboardMount, SessionCookies, safeNext } from './sign-in.js';

const HOUR = 3_600_000;

describe('session cookies', () => {
  const cookies = new SessionCookies(Buffer.from('a-secret-of-at-least-32-characters-0123'));
  const session = { principal: 'alice', scopes: ['read', 'run'], expiresAt: Date.now() + HOUR };

  it('open what they sealed, to the second', () => {
    const opened = cookies.open(cookies.seal({ ...session, credential: 'c1' }));
    expect(opened).toEqual({
      ...session,
      expiresAt: Math.floor(session.expiresAt / 1000) * 1000,
      credential: 'c1',
    });
  });

  it('refuse anything altered, forged, malformed, expired or too long-lived', () => {
    const sealed = cookies.seal(session);
    const [v, payload, mac] = sealed.split('.') as [string, string, string];
    const other = new SessionCookies(Buffer.from('another-secret-of-32-characters-and-more'));
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const bad = [
      `${v}.${encode({ p: 'bob', s: ['read'], x: 9e9 })}.${mac}`,
      `${v}.${payload}.${mac.slice(1)}`,
      `${v}.${payload}.${mac}x`,
      `${v}.${payload}`,
      `${v}.${payload}.${mac}.extra`,
      `v2.${payload}.${mac}`,
      other.seal(session),
      cookies.seal({ ...session, expiresAt: Date.now() - 1000 }),
      cookies.seal({ ...session, expiresAt: Date.now() + 48 * HOUR }),
      cookies.seal({ ...session, principal: '' }),
      `${'x'.repeat(5000)}`,
      '',
    ];
    for (const value of bad) expect(cookies.open(value), value.slice(0, 60)).toBeUndefined();
    expect(cookies.open(sealed, Date.now() + 2 * HOUR)).toBeUndefined();
  });
});

describe('safeNext', () => {
  it('keeps dashboard paths of this server, and nothing else', () => {
    expect(safeNext('/dashboard/executions/e1?principal=x')).toBe('/dashboard/executions/e1?principal=x');
    expect(safeNext('/dashboard/tasks')).toBe('/dashboard/tasks');
    for (const value of [
      null,
      '',
      'https://evil.example/dashboard/',
      '//evil.example/dashboard/',
      '/dashboard//evil.example',
      '/mcp',
      '/dashboardx/',
      '/dashboard/login',
      '/dashboard/logout',
      '/dashboard/events',
      '/dashboard/assets/dashboard.js',
      `/dashboard/${'x'.repeat(3000)}`,
    ]) {
      expect(safeNext(value), String(value)).toBe('/dashboard/');
    }
    // Whatever the browser would do with backslashes and controls, the answer stays under /dashboard/.
    expect(safeNext('/dashboard/\\evil.example')).toMatch(/^\/dashboard\//);
    expect(safeNext('/dashboard/a\r\nSet-Cookie: x=1')).toBe('/dashboard/aSet-Cookie:%20x=1');
  });
});

// The mount with a stand-in for the transport: what JWT sign-ins and links from other sites do.
describe('the dashboard mount', () => {
  let root: string;
  let app: App;
  let mount: DashboardMount;
  let server: Server;
  let port: number;
  let verified: (token: string) => VerifiedToken;

  const context = (): MountContext => ({
    caller: undefined,
    authRequired: true,
    verify: async (token) => verified(token),
    current: () => undefined,
    take: () => 0,
    publicUrl: new URL(`http://127.0.0.1:${port}/mcp`),
  });

  function send(path: string, init: { method?: string; body?: string; headers?: Record<string, string> }) {
    return new Promise<{ status: number; body: string; headers: Record<string, unknown> }>(
      (resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path, method: init.method ?? 'GET', headers: init.headers ?? {} },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (c: string) => {
              body += c;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
          },
        );
        req.on('error', reject);
        req.end(init.body);
      },
    );
  }
  const signIn = (token: string) =>
    send('/dashboard/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'wl-signin-'));
    const config = loadConfig({
      cwd: root,
      env: {
        HOME: join(root, 'home'),
        XDG_CONFIG_HOME: join(root, 'config'),
        WORKFLOWLOOKUP_DATA_DIR: join(root, 'data'),
        WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false',
      },
    });
    app = createApp(config, {
      watch: false,
      log: silentLogger,
      validationWorker: await validationWorkerUrl(),
    });
    mount = dashboardMount(app);
    server = createServer((req, res) => void mount.handle(req, res, context()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    mount.close?.();
    await new Promise((r) => server.close(r));
    await app.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('ends a JWT session when the JWT expires, if that is sooner than 12 hours', async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    verified = () => ({ principal: 'dana', scopes: ['read'], expiresAt: exp, credential: undefined });
    const res = await signIn('eyJ.a.jwt');
    expect(res.status).toBe(303);
    const maxAge = Number(/Max-Age=(\d+)/.exec(String(res.headers['set-cookie']))?.[1]);
    expect(maxAge).toBeGreaterThan(590);
    expect(maxAge).toBeLessThanOrEqual(600);
    const cookie = String(res.headers['set-cookie']).split(';')[0] as string;
    expect(mount.sessions().open(cookie.slice('wl_dashboard='.length))?.expiresAt).toBe(exp * 1000);

    verified = () => ({ principal: 'dana', scopes: ['read'], expiresAt: exp - 570, credential: undefined });
    const soon = await signIn('eyJ.b.jwt');
    expect(soon.status).toBe(401);
    expect(soon.body).toContain('expires within a minute');
    expect(soon.headers['set-cookie']).toBeUndefined();

    verified = () => {
      throw new OAuthError(OAuthErrorCode.InvalidToken, 'the token has expired');
    };
    const expired = await signIn('eyJ.c.jwt');
    expect(expired.status).toBe(401);
    expect(expired.body).toContain('That token was not accepted: the token has expired.');
    expect(expired.body).not.toContain('eyJ.c.jwt');
  });

  it('a link followed from another site gets one same-site hop (a meta refresh, no script)', async () => {
    const res = await send('/dashboard/tasks?status=failed', {
      headers: { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'cross-site' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toContain('<meta http-equiv="refresh" content="0; url=/dashboard/tasks?status=failed">');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    const same = await send('/dashboard/tasks', {
      headers: { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'same-origin' },
    });
    expect(same.status).toBe(303);
    expect(same.headers.location).toBe('/dashboard/login?next=%2Fdashboard%2Ftasks');
  });
});
