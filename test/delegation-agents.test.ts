// An orchestrator and its workers as agents use delegation: each its own MCP session (over stdio: an
// in-process server of its own on one data dir, as separate server processes would be; over HTTP: one
// server, a session each), all at once, each doing only what the answers' `next` and `fill` say. The
// orchestrator hands every call of a delegated answer's `next` but the last to a worker and sends the
// last, the wait, until the join hands out the next step; a worker sends what it was handed, then each
// answer's `next[0]`, until its child has ended. Walked: the bundled review-fan-out, and a WorkRail-style
// `type: parallel` step whose parallelDelegations name routines (test/fixtures/workrail-parallel).
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { callTool, FIXTURES, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;
type Call = (tool: string, args: Json) => Promise<Json>;
interface NextCall {
  tool: string;
  arguments: Json;
  fill?: Record<string, string>;
}

/** What the agents report for the context variables fills name (anything else required fails the test). */
const VALUES: Record<string, unknown> = {
  verdict: 'approve',
  changesRequested: false,
  riskRating: 'low',
  goNoGo: 'go',
};

/** A summary every step of the walked workflows accepts. */
const summary = (who: string) =>
  `Verdict: approve. ${who} read src/checkout/coupons.ts and its callers, and the release notes; nothing to fix.`;

/** The arguments of a call with every path its fill names filled in. */
function filled(call: NextCall, who: string): Json {
  const args = structuredClone(call.arguments);
  for (const [path, hint] of Object.entries(call.fill ?? {})) {
    let value: unknown;
    if (path === 'output.summary') value = summary(who);
    else {
      const name = /^output\.context\.(.+)$/.exec(path)?.[1];
      if (name !== undefined && Object.hasOwn(VALUES, name)) value = VALUES[name];
      else if (hint.startsWith('optional')) continue;
      else throw new Error(`${who}: fill names ${path} ("${hint}"), and the agent has no value for it`);
    }
    const keys = path.split('.');
    let at = args;
    for (const key of keys.slice(0, -1)) at = at[key] ??= {};
    at[keys.at(-1) as string] = value;
  }
  return args;
}

/** A worker: sends the call it was handed, then each answer's next[0], until its child has ended. */
async function worker(call: Call, handed: NextCall, who: string): Promise<Json> {
  let answer = await call(handed.tool, filled(handed, who));
  for (let turn = 0; turn < 30; turn++) {
    if (answer.error) throw new Error(`${who}: ${JSON.stringify(answer.error)}`);
    // The child ended: its next goes back to the parent, which is the orchestrator's, not the worker's.
    if (answer.workflow_state !== 'running') return answer;
    const [next] = (answer.next ?? []) as NextCall[];
    if (next === undefined) return answer;
    answer = await call(next.tool, filled(next, who));
  }
  throw new Error(`${who} did not finish`);
}

/**
 * The orchestrator: walks the workflow by next[0]; at a delegated answer it hands the children's calls to
 * workers and polls the wait (the last call) while they work, then goes on from the join's answer.
 */
async function orchestrate(
  orchestrator: Call,
  connect: () => Promise<Call>,
  workflowId: string,
): Promise<{ steps: string[]; children: string[][]; last: Json; executionId: string }> {
  const steps: string[] = [];
  const children: string[][] = [];
  let answer = await orchestrator('workflow_start', { workflow_id: workflowId });
  const executionId = answer.execution_id as string;
  for (let turn = 0; turn < 30; turn++) {
    if (answer.error) throw new Error(`orchestrator: ${JSON.stringify(answer.error)}`);
    if (answer.step_name !== undefined) steps.push(answer.step_name);
    const calls = (answer.next ?? []) as NextCall[];
    if (calls.length === 0) return { steps, children, last: answer, executionId };
    if (answer.step_status !== 'delegated') {
      const [next] = calls as [NextCall];
      answer = await orchestrator(next.tool, filled(next, 'The orchestrator'));
      continue;
    }
    // One worker per child, each a session of its own; the last call is the wait.
    const handed = calls.slice(0, -1);
    const wait = calls.at(-1) as NextCall;
    expect(wait.tool).toBe('workflow_next_step');
    children.push(answer.delegation.children.map((c: Json) => c.name));
    // Before any worker starts, the wait answers the same: it never moves the step by itself.
    expect(await orchestrator(wait.tool, filled(wait, 'The orchestrator'))).toMatchObject({
      step_status: 'delegated',
      step_name: answer.step_name,
    });
    const workers = await Promise.all(handed.map(() => connect()));
    const polling = (async () => {
      for (let poll = 0; poll < 3000; poll++) {
        const waited = await orchestrator(wait.tool, filled(wait, 'The orchestrator'));
        if (waited.step_status !== 'delegated') return waited;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      throw new Error('the join never came');
    })();
    const [joined, ...ended] = await Promise.all([
      polling,
      ...handed.map((h, i) => worker(workers[i] as Call, h, `Worker ${i + 1}`)),
    ]);
    for (const end of ended) expect(end).toMatchObject({ success: true, workflow_state: 'completed' });
    answer = joined as Json;
  }
  throw new Error(`no end after 30 turns: ${steps.join(', ')}`);
}

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

/** A sandbox that also serves the WorkRail fixture (read with its routines/ subfolder). */
function withFixtures(): { sb: Sandbox; env: Record<string, string> } {
  const sb = sandbox();
  boxes.push(sb);
  return {
    sb,
    env: {
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'),
      WORKFLOW_STORAGE_PATH: join(FIXTURES, 'workrail-parallel'),
    },
  };
}

/** Over stdio: every agent its own in-process server on the one data dir. */
async function stdioAgents(): Promise<() => Promise<Call>> {
  const { sb, env } = withFixtures();
  return async () => {
    const conn = await inProcessClient(sb, env);
    open.push(conn);
    return (tool, args) => callTool(conn.client, tool, args);
  };
}

/** Over HTTP: one server, every agent a session of its own. */
async function httpAgents(): Promise<() => Promise<Call>> {
  const { sb, env } = withFixtures();
  const server = await inProcessHttp(sb, env);
  open.push(server);
  return async () => {
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    open.push(client);
    return (tool, args) => callTool(client, tool, args);
  };
}

for (const [transport, agents] of [
  ['stdio', stdioAgents],
  ['Streamable HTTP', httpAgents],
] as const) {
  describe(`an orchestrator and three workers at once, over ${transport}`, () => {
    it('walk the bundled review-fan-out to completion; the synthesis has the three reviews', async () => {
      const connect = await agents();
      const orchestrator = await connect();
      const walked = await orchestrate(orchestrator, connect, 'review-fan-out');
      expect(walked.steps).toEqual(['describe-change', 'reviews', 'synthesis']);
      expect(walked.children).toEqual([['security', 'performance', 'readability']]);
      expect(walked.last).toMatchObject({ success: true, workflow_state: 'completed', next: [] });
      const listed = await orchestrator('workflow_executions', { parent_id: walked.executionId });
      expect(listed.executions.map((e: Json) => [e.workflow_id, e.state])).toEqual(
        Array.from({ length: 3 }, () => ['routine-focused-review', 'completed']),
      );
    });

    it('walk a WorkRail parallel step whose parallelDelegations name routines, then its synthesis', async () => {
      const connect = await agents();
      const orchestrator = await connect();
      const walked = await orchestrate(orchestrator, connect, 'wr.release-readiness');
      expect(walked.steps).toEqual([
        'scope-release',
        'readiness-checks',
        'readiness-checks-synthesis',
        'announce',
      ]);
      expect(walked.children).toEqual([
        ['routine-risk-scan-1', 'routine-risk-scan-2', 'routine-test-gaps-3'],
      ]);
      expect(walked.last).toMatchObject({ success: true, workflow_state: 'completed', next: [] });
      const listed = await orchestrator('workflow_executions', { parent_id: walked.executionId });
      expect(listed.executions.map((e: Json) => e.workflow_id).sort()).toEqual([
        'wr.routine-risk-scan',
        'wr.routine-risk-scan',
        'wr.routine-test-gaps',
      ]);
      expect(listed.executions.every((e: Json) => e.state === 'completed')).toBe(true);
    });
  });
}
