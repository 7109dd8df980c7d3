import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WorkflowTests } from '../src/executions/workflow-tests.js';
import { httpClient } from './helpers/http-server.js';
import { inProcessHttp, staticTokens } from './helpers/in-process-http.js';
import { callTool, type Sandbox, sandbox } from './helpers/server.js';

// workflow_test needs only a `read` token, so what one call may make the server do is bounded: the
// tests' size before anything runs, the work units a run uses while it runs (counted, never timed),
// and the calls a principal has running at once. What ran is witnessed by counting the walks the
// server's own WorkflowTests starts (a spy on it), never by time.

/** Two steps and a command step: a scenario of it is a start, one report and one API call. */
const DEMO = `id: demo
name: Demo
description: Triage, then a ticket
version: 1.0.0
steps:
  - id: triage
    title: Triage
    prompt: Name the severity.
    validationCriteria:
      - { type: contains, value: severity, message: Name the severity }
  - id: file-ticket
    title: File the ticket
    run: tracker create-ticket
`;

const scenario = (name: string, summary = 'severity low') => ({
  name,
  steps: { triage: { summary } },
  commands: { 'file-ticket': { status: 201, output: { id: 'T-1' } } },
  expect: { path: ['triage', 'file-ticket'] },
});

/** A loop that never ends by its own rule: each scenario walks until its max_reports. */
const SPIN = `id: spin
name: Spin
description: Rounds for as long as the agent asks for another
version: 1.0.0
steps:
  - id: rounds
    type: loop
    title: Rounds
    loop: { type: while, condition: { var: again, equals: true }, maxIterations: 10000 }
    body:
      - id: round
        title: Round
        prompt: Do a round; say again to go on.
`;
const endless = (name: string) => ({
  name,
  context: { again: true },
  steps: { round: { context: { again: true } } },
});

let sb: Sandbox;
let server: Awaited<ReturnType<typeof inProcessHttp>>;
let token: Record<string, string>;
let service: WorkflowTests;
const clients: Client[] = [];

/** The walks (scenarios started) of the server's WorkflowTests: what a call made it do. */
type Walk = (...args: unknown[]) => Promise<unknown>;
let walks: { name: string }[] = [];
/** While set, a walk whose scenario name starts with "hold" waits for it before it starts. */
let gate: Promise<void> | undefined;

async function as(who: string): Promise<Client> {
  const client = await httpClient(server.url, { token: token[who] as string });
  clients.push(client);
  return client;
}

beforeAll(async () => {
  sb = sandbox();
  const tokens = await staticTokens(sb, { alice: { scopes: ['read'] }, bob: { scopes: ['read'] } });
  token = tokens.token;
  server = await inProcessHttp(sb, tokens.env);
  service = await server.app.services.tests();
  const target = service as unknown as { runScenario: Walk };
  const original = target.runScenario.bind(service) as Walk;
  vi.spyOn(target, 'runScenario').mockImplementation(async (...args: unknown[]) => {
    const walked = args[2] as { name: string };
    walks.push(walked);
    if (gate !== undefined && walked.name.startsWith('hold')) await gate;
    return original(...args);
  });
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  walks = [];
});

afterAll(async () => {
  vi.restoreAllMocks();
  await server.close();
  sb.cleanup();
});

describe('one workflow_test call does a bounded amount of work', () => {
  it('counts its work units: a start, each report by its size, each API call', async () => {
    const alice = await as('alice');
    const small = await callTool(alice, 'workflow_test', {
      content: DEMO,
      tests: { scenarios: [scenario('small')] },
    });
    expect(small).toMatchObject({ valid: true, passed: 1, work: { used: 3, max: 2000 } });
    // A report of 40 KB is ten units (one per started 4 KiB): it is checked and stored as text.
    const large = await callTool(alice, 'workflow_test', {
      content: DEMO,
      tests: { scenarios: [scenario('large', `severity low ${'x'.repeat(40_000)}`)] },
    });
    expect(large).toMatchObject({ valid: true, passed: 1, work: { used: 12, max: 2000 } });
  });

  it('refuses tests larger than a call runs before any walk starts, naming the limit and the command line', async () => {
    const alice = await as('alice');
    const many = { scenarios: Array.from({ length: 51 }, (_, i) => scenario(`s${i}`)) };
    const refused = await callTool(alice, 'workflow_test', { content: DEMO, tests: many });
    expect(refused.error).toMatchObject({
      code: -32602,
      message: 'Tests too large',
      data: {
        error_code: 'TESTS_TOO_LARGE',
        retryable: false,
        limit: 'scenarios',
        max: 50,
        context: { workflow_id: 'demo' },
      },
    });
    expect(refused.error.data.message).toContain(
      '51 scenarios are more than one workflow test call runs (50)',
    );
    expect(refused.error.data.details).toContain('workflowlookup test <test file>');
    const long = await callTool(alice, 'workflow_test', {
      content: DEMO,
      tests: { scenarios: [{ ...scenario('long'), max_reports: 1001 }] },
    });
    expect(long.error.data).toMatchObject({ error_code: 'TESTS_TOO_LARGE', limit: 'max_reports', max: 1000 });
    // The manifest check that workflow_validate_manifest answers stands; its test hint says why none ran.
    const hinted = await callTool(alice, 'workflow_validate_manifest', { content: DEMO, tests: many });
    expect(hinted.valid).toBe(true);
    expect(hinted.tests).toMatchObject({ passed: 0, failed: 0 });
    expect(hinted.tests.errors[0]).toMatch(
      /^not run: 51 scenarios are more than one workflow test call runs/,
    );
    expect(walks).toEqual([]);
  });

  it('a run that needs more work than a call may use stops at the bound and gets no verdict', async () => {
    const alice = await as('alice');
    const spin = { scenarios: [endless('first'), endless('second'), endless('third')] };
    const refused = await callTool(alice, 'workflow_test', { content: SPIN, tests: spin });
    expect(refused.error).toMatchObject({
      code: -32602,
      data: { error_code: 'TESTS_TOO_LARGE', limit: 'work', max: 2000 },
    });
    expect(refused.error.data.message).toContain(
      'more than the 2000 work units one workflow test call may use',
    );
    expect(refused.error.data.message).toContain('no verdict is given');
    expect(refused.error.data.details).toContain('workflowlookup test <test file>');
    // The first walk ran to its 1,000 reports (1,001 units with its start), the second to the bound;
    // the third never started.
    expect(walks.map((w) => w.name)).toEqual(['first', 'second']);
  });
});

describe('a principal runs a few workflow tests at once', () => {
  it('one more is refused retryably, while another principal goes on; a slot frees when a run ends', async () => {
    let open: () => void = () => undefined;
    gate = new Promise<void>((resolve) => (open = resolve));
    const held = { scenarios: [scenario('hold the slot')] };
    try {
      // Each in its own session: a session's requests may be answered in order.
      const running = [
        callTool(await as('alice'), 'workflow_test', { content: DEMO, tests: held }),
        callTool(await as('alice'), 'workflow_test', { content: DEMO, tests: held }),
      ];
      await expect.poll(() => walks.length).toBe(2);
      const busy = await callTool(await as('alice'), 'workflow_test', {
        content: DEMO,
        tests: { scenarios: [scenario('one more')] },
      });
      expect(busy.error).toMatchObject({
        code: -32000,
        message: 'Tests busy',
        data: { error_code: 'TESTS_BUSY', retryable: true, principal: 'alice', running: 2, limit: 2 },
      });
      expect(busy.error.data.suggested_action).toContain('Send the same call again');
      const bob = await callTool(await as('bob'), 'workflow_test', {
        content: DEMO,
        tests: { scenarios: [scenario('bob goes on')] },
      });
      expect(bob).toMatchObject({ valid: true, passed: 1 });
      expect(walks.map((w) => w.name)).toEqual(['hold the slot', 'hold the slot', 'bob goes on']);
      open();
      for (const done of await Promise.all(running)) expect(done).toMatchObject({ valid: true, passed: 1 });
    } finally {
      open();
      gate = undefined;
    }
    // Both slots are free again, refusals included (a refusal never holds one).
    const again = await as('alice');
    for (const name of ['after', 'and again'])
      expect(
        await callTool(again, 'workflow_test', { content: DEMO, tests: { scenarios: [scenario(name)] } }),
      ).toMatchObject({ valid: true, passed: 1 });
    const oversized = { scenarios: Array.from({ length: 51 }, (_, i) => scenario(`s${i}`)) };
    for (let i = 0; i < 3; i++)
      expect(
        (await callTool(again, 'workflow_test', { content: DEMO, tests: oversized })).error.data.error_code,
      ).toBe('TESTS_TOO_LARGE');
    expect(
      await callTool(again, 'workflow_test', { content: DEMO, tests: { scenarios: [scenario('last')] } }),
    ).toMatchObject({ valid: true, passed: 1 });
  });
});
