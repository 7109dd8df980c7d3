import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addToken } from '../src/transports/http-auth.js';
import { csrfOf, decisionFieldsOf, raw } from './helpers/dashboard.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { callTool, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

// The dashboard's Approvals page over real HTTP (`serve --http` built in-process, static tokens): only a
// signed-in principal with the approve scope decides, only its own executions' approvals, and only
// with a same-site POST carrying its form token. The agent's token (read, run) cannot.

const EXAMPLE = join(import.meta.dirname, '..', 'examples', 'approvals', 'release-approval.yaml');
const NAVIGATE = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none', accept: 'text/html' };

let sb: Sandbox;
let server: Awaited<ReturnType<typeof inProcessHttp>>;
let agent: Client;
const tokens: Record<string, string> = {};
let execution: string;
let pollToken: string;

const formHeaders = (cookie?: string) => ({
  'content-type': 'application/x-www-form-urlencoded',
  origin: `http://127.0.0.1:${server.port}`,
  'sec-fetch-site': 'same-origin',
  ...(cookie ? { cookie } : {}),
});
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const page = (path: string, cookie: string) => raw(server.port, path, { headers: { ...NAVIGATE, cookie } });
const decide = (cookie: string, fields: Record<string, string>, headers = formHeaders(cookie)) =>
  raw(server.port, `/dashboard/approvals/${execution}/decide`, {
    method: 'POST',
    headers,
    body: form(fields),
  });

async function signIn(token: string): Promise<string> {
  const res = await raw(server.port, '/dashboard/login', {
    method: 'POST',
    headers: formHeaders(),
    body: form({ token, next: '/dashboard/' }),
  });
  expect(res.status).toBe(303);
  const header = res.headers['set-cookie'];
  return ((Array.isArray(header) ? header[0] : header) as string).split(';')[0] as string;
}

beforeAll(async () => {
  sb = sandbox();
  copyFileSync(EXAMPLE, join(sb.runtime, 'release-approval.yaml'));
  const file = join(sb.root, 'tokens.json');
  writeFileSync(file, JSON.stringify({ tokens: [] }));
  tokens.agent = await addToken(file, 'agent', ['read', 'run'], 'alice');
  tokens.alice = await addToken(file, 'alice-person', ['read', 'approve'], 'alice');
  tokens.bob = await addToken(file, 'bob-person', ['read', 'run', 'approve'], 'bob');
  server = await inProcessHttp(
    sb,
    { WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: file },
    { dashboard: true },
  );
  agent = new Client({ name: 'agent', version: '1.0.0' });
  await agent.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { authorization: `Bearer ${tokens.agent}` } },
    }),
  );
  const started = await callTool(agent, 'workflow_start', { workflow_id: 'release-approval' });
  execution = started.execution_id;
  const waiting = await callTool(agent, 'workflow_next_step', {
    token: tokenOf(started),
    output: { summary: 'release notes: faster start-up' },
  });
  expect(waiting.approval.status).toBe('pending');
  pollToken = tokenOf(waiting);
});

afterAll(async () => {
  await agent?.close();
  await server?.close();
  sb?.cleanup();
});

describe('the Approvals page', () => {
  it("refuses the agent's session (no approve scope), other principals, and forged or missing form tokens", async () => {
    const alice = await signIn(tokens.alice as string);
    const list = await page('/dashboard/approvals', alice);
    expect(list.status).toBe(200);
    expect(list.body).toContain('Ship these release notes?');
    expect(list.body).toContain('release notes: faster start-up');
    const csrf = csrfOf(list.body);
    const shown = decisionFieldsOf(list.body);

    // The agent's own credential signs in (it has read) but may not decide, even with a valid form token.
    const agentSession = await signIn(tokens.agent as string);
    const asAgent = await page('/dashboard/approvals', agentSession);
    expect(asAgent.body).toContain('need the approve scope');
    expect(asAgent.body).not.toContain('name="decision"');
    const refused = await decide(agentSession, { csrf, ...shown, decision: 'approve' });
    expect(refused.status).toBe(403);

    // Forged, missing and cross-site.
    expect((await decide(alice, { csrf: `${csrf}x`, ...shown, decision: 'approve' })).status).toBe(403);
    expect((await decide(alice, { ...shown, decision: 'approve' })).status).toBe(403);
    // A form that does not name what it decides decides nothing.
    expect((await decide(alice, { csrf, decision: 'approve' })).status).toBe(400);
    const crossSite = await decide(
      alice,
      { csrf, ...shown, decision: 'approve' },
      {
        ...formHeaders(alice),
        'sec-fetch-site': 'cross-site',
      },
    );
    expect(crossSite.status).toBe(403);

    // Bob (approve scope, another principal) sees nothing of alice's and cannot decide it.
    const bob = await signIn(tokens.bob as string);
    expect((await page('/dashboard/approvals', bob)).body).toContain('No approvals pending');
    // Bob's own approval gives him a form token of his own.
    const bobAgent = new Client({ name: 'bob-agent', version: '1.0.0' });
    await bobAgent.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { authorization: `Bearer ${tokens.bob}` } },
      }),
    );
    const bobStarted = await callTool(bobAgent, 'workflow_start', { workflow_id: 'release-approval' });
    await callTool(bobAgent, 'workflow_next_step', {
      token: tokenOf(bobStarted),
      output: { summary: 'release notes: bob' },
    });
    await bobAgent.close();
    const bobPage = (await page('/dashboard/approvals', bob)).body;
    expect(bobPage).toContain(bobStarted.execution_id);
    expect(bobPage).not.toContain(execution);
    const bobCsrf = csrfOf(bobPage);
    expect((await decide(bob, { csrf, ...shown, decision: 'approve' })).status).toBe(403); // alice's form token
    const asBob = await decide(bob, { csrf: bobCsrf, ...shown, decision: 'approve' });
    expect(asBob.status).toBe(404);
    expect((await page(`/dashboard/approvals?execution=${execution}`, bob)).status).toBe(404);

    // Nothing moved.
    const poll = await callTool(agent, 'workflow_next_step', {
      token: pollToken,
      output: { summary: 'poll' },
    });
    expect(poll.approval.status).toBe('pending');
  });

  it('an approver decides with a reason; the agent moves on; who, when and why are shown', async () => {
    const alice = await signIn(tokens.alice as string);
    const body = (await page('/dashboard/approvals', alice)).body;
    const csrf = csrfOf(body);
    const shown = decisionFieldsOf(body);
    const approved = await decide(alice, { csrf, ...shown, decision: 'approve', reason: 'notes read, fine' });
    expect(approved.status).toBe(303);
    expect(approved.headers.location).toBe('/dashboard/approvals?notice=approved');
    const poll = await callTool(agent, 'workflow_next_step', {
      token: pollToken,
      output: { summary: 'poll' },
    });
    expect(poll).toMatchObject({ success: true, step_name: 'publish' });

    const history = await page(`/dashboard/approvals?execution=${execution}`, alice);
    expect(history.status).toBe(200);
    expect(history.body).toMatch(/approved<\/td><td>alice<\/td><td>dashboard<\/td>/);
    expect(history.body).toContain('notes read, fine');
    const detail = await page(`/dashboard/executions/${execution}`, alice);
    expect(detail.body).toContain('approval_decided');
    expect(detail.body).toContain('notes read, fine');
    // Deciding again: nothing pending any more.
    const again = await decide(alice, { csrf, ...shown, decision: 'reject' });
    expect(again.headers.location).toBe('/dashboard/approvals?notice=conflict');
  });

  it("renders the agent's report as Markdown, safely; the sign-in page names the approve scope", async () => {
    const started = await callTool(agent, 'workflow_start', { workflow_id: 'release-approval' });
    const waiting = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(started),
      output: {
        summary:
          '## Release 2.1\n\nThe release notes:\n\n- **faster** start-up\n- fixed `--port`\n\n<script>alert(1)</script> [x](javascript:alert(1))',
      },
    });
    expect(waiting.approval.status).toBe('pending');
    const alice = await signIn(tokens.alice as string);
    const body = (await page('/dashboard/approvals', alice)).body;
    const card = body.slice(body.indexOf(`data-approval="${waiting.approval.approval_id}"`));
    expect(card).toContain('<h2>Release 2.1</h2>');
    expect(card).toContain('<li><strong>faster</strong> start-up</li>');
    expect(card).toContain('<code>--port</code>');
    expect(card).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(card).not.toContain('<script>');
    expect(card).not.toContain('href="javascript:');
    const login = await raw(server.port, '/dashboard/login', { headers: NAVIGATE });
    expect(login.body).toMatch(/<code>read<\/code>[\s\S]*<code>run<\/code>[\s\S]*<code>approve<\/code>/);
  });

  it("hides a server bearer token (wlt_…) and strips terminal controls from an agent's summary", async () => {
    // An agent pastes a credential of this server into its summary, with escapes and a bidi override.
    const leaked = tokens.bob as string;
    const started = await callTool(agent, 'workflow_start', { workflow_id: 'release-approval' });
    const waiting = await callTool(agent, 'workflow_next_step', {
      token: tokenOf(started),
      output: {
        summary: `release notes: set TOKEN=${leaked}\x1b]0;owned\x07 \x1b[2Jdone \u202egnp.exe`,
      },
    });
    expect(waiting.approval.status).toBe('pending');
    const alice = await signIn(tokens.alice as string);
    const body = (await page('/dashboard/approvals', alice)).body;
    expect(body).toContain(started.execution_id);
    expect(body).toContain('release notes: set TOKEN=[hidden]');
    expect(body).not.toContain(leaked.slice(4, 24));
    expect(body).not.toContain('owned');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is looked for
    expect(body).not.toMatch(/[\x00-\x08\x0b\x0c\x0e-\x1f\u202a-\u202e]/);
    expect(body).toContain('done gnp.exe');
  });
});
