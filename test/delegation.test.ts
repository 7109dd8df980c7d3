import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { callTool, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

const REVIEW = `id: review-routine
name: Review routine
description: One reviewer looks at one angle of a change
version: 1.0.0
steps:
  - id: review
    title: Review
    prompt: Review the change for {{focus}}; report what you found.
`;

const PARENT = `id: fan-out
name: Fan-out review
description: Plan, three reviewers side by side, then a synthesis
version: 1.0.0
steps:
  - id: plan
    title: Plan
    prompt: Say what changed.
  - id: reviews
    title: Reviews
    prompt: Reviewers look at the change from three angles.
    delegate:
      workflow: review-routine
      children:
        - { name: security, context: { focus: security } }
        - { name: performance, context: { focus: performance } }
        - { name: readability, context: { focus: readability } }
  - id: synthesis
    title: Synthesis
    prompt: Combine the reviews in context.reviews.
`;

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

async function setup() {
  const sb = sandbox();
  boxes.push(sb);
  writeFileSync(join(sb.runtime, 'review-routine.yaml'), REVIEW);
  writeFileSync(join(sb.runtime, 'fan-out.yaml'), PARENT);
  const conn = await inProcessClient(sb, { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data') });
  open.push(conn);
  return (name: string, args: Json) => callTool(conn.client, name, args);
}

describe('delegation', () => {
  it('one agent walks the children one after another, then the join hands out the synthesis', async () => {
    const call = await setup();
    const started = await call('workflow_start', { workflow_id: 'fan-out' });
    let answer = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'changed the parser' },
    });
    expect(answer.step_status).toBe('delegated');
    expect(answer.delegation.children.map((c: Json) => c.name)).toEqual([
      'security',
      'performance',
      'readability',
    ]);
    expect(answer.next).toHaveLength(4);
    // Only what next says: the first call each time (the children one after another, then the wait).
    const seen: string[] = [];
    for (let i = 0; i < 20 && (answer.current_step ?? answer.step_name) !== 'synthesis'; i++) {
      const [first] = answer.next ?? [];
      if (first === undefined) throw new Error(`${seen.join(' ')} ${JSON.stringify(answer).slice(0, 1500)}`);
      const reply = await call(first.tool, first.arguments);
      const at = reply.current_step ?? reply.step_name;
      seen.push(`${first.tool}:${at}`);
      const submit = reply.next?.[0];
      answer =
        at !== 'synthesis' && submit?.tool === 'workflow_next_step' && submit.fill
          ? await call('workflow_next_step', { ...submit.arguments, output: { summary: `reviewed ${i}` } })
          : reply;
    }
    expect(seen).toEqual([
      'workflow_resume:review',
      'workflow_resume:reviews',
      'workflow_resume:review',
      'workflow_resume:reviews',
      'workflow_resume:review',
      'workflow_resume:synthesis',
    ]);
    expect(answer.current_step).toBe('synthesis');
    expect(answer.error).toBeUndefined();
  });
});

/** A worker: a subagent handed one call, doing only what the answers' next and fill say until its child ends. */
async function work(
  call: (name: string, args: Json) => Promise<Json>,
  handed: Json,
  label: string,
): Promise<Json> {
  let answer = await call(handed.tool, handed.arguments);
  for (let i = 0; i < 20; i++) {
    const [first] = answer.next ?? [];
    // The child ended: its answer points back at the parent, which is the orchestrator's, not the worker's.
    if (first === undefined || first.tool !== 'workflow_next_step' || first.fill === undefined) return answer;
    answer = await call(first.tool, {
      ...first.arguments,
      output: { summary: `${label}: looked at it, all fine` },
    });
  }
  throw new Error(`${label} did not finish`);
}

describe('an orchestrator and its workers, each on a session of its own', () => {
  it('over HTTP: three workers run the children at once; the orchestrator waits, then gets the synthesis with their results', async () => {
    const sb = sandbox();
    boxes.push(sb);
    writeFileSync(join(sb.runtime, 'review-routine.yaml'), REVIEW);
    writeFileSync(join(sb.runtime, 'fan-out.yaml'), PARENT);
    const server = await inProcessHttp(sb);
    open.push(server);
    const connect = async () => {
      const client = new Client({ name: 'agent', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      open.push(client);
      return (name: string, args: Json) => callTool(client, name, args);
    };
    const orchestrator = await connect();
    const started = await orchestrator('workflow_start', { workflow_id: 'fan-out' });
    const delegated = await orchestrator('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'changed the parser' },
    });
    const calls = delegated.next as Json[];
    const wait = calls.at(-1) as Json;
    // The wait answers the same while the children run: it never moves the step by itself.
    const early = await orchestrator(wait.tool, wait.arguments);
    expect(early).toMatchObject({ step_status: 'delegated', step_name: 'reviews' });
    const workers = await Promise.all(calls.slice(0, -1).map(() => connect()));
    const ended = await Promise.all(
      calls.slice(0, -1).map((handed, i) => work(workers[i] as never, handed, `worker ${i}`)),
    );
    for (const answer of ended) expect(answer).toMatchObject({ workflow_state: 'completed' });
    const after = await orchestrator(wait.tool, wait.arguments);
    expect(after).toMatchObject({ success: true, step_name: 'synthesis' });
    // The children's results are in the parent's context, under the step id.
    const svc = await server.app.services.executions();
    const page = await svc.queries.executionPage(
      started.execution_id,
      { principal: 'local' },
      { telemetry: 10 },
    );
    const reviews = page.detail.context.reviews as Json;
    expect(Object.keys(reviews)).toEqual(['security', 'performance', 'readability']);
    expect(reviews.security).toMatchObject({
      state: 'completed',
      summary: expect.stringMatching(/all fine/),
    });
    // workflow_executions lists the parent's children, with their parent.
    const children = await orchestrator('workflow_executions', { parent_id: started.execution_id });
    expect(children.executions).toHaveLength(3);
    for (const child of children.executions)
      expect(child).toMatchObject({ state: 'completed', parent_id: started.execution_id });
  });
});

describe('an orchestrator and its workers over stdio (each its own server process on the data dir)', () => {
  it('three worker sessions run the children at once; one join', async () => {
    const sb = sandbox();
    boxes.push(sb);
    writeFileSync(join(sb.runtime, 'review-routine.yaml'), REVIEW);
    writeFileSync(join(sb.runtime, 'fan-out.yaml'), PARENT);
    const env = { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data') };
    const connect = async () => {
      const conn = await inProcessClient(sb, env);
      open.push(conn);
      return (name: string, args: Json) => callTool(conn.client, name, args);
    };
    const orchestrator = await connect();
    const started = await orchestrator('workflow_start', { workflow_id: 'fan-out' });
    const delegated = await orchestrator('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'x' },
    });
    const calls = delegated.next as Json[];
    const workers = await Promise.all(calls.slice(0, -1).map(() => connect()));
    await Promise.all(
      calls.slice(0, -1).map((handed, i) => work(workers[i] as never, handed, `worker ${i}`)),
    );
    const wait = calls.at(-1) as Json;
    const after = await orchestrator(wait.tool, wait.arguments);
    expect(after).toMatchObject({ success: true, step_name: 'synthesis' });
    // The wait's token, sent again, replays the join's answer.
    expect(await orchestrator(wait.tool, wait.arguments)).toMatchObject({ step_name: 'synthesis' });
  });
});

const JOIN = (join: string, extra = '') => `id: join-${join.replace(/\W/g, '')}
name: Join
description: Two children and a join rule
version: 1.0.0
steps:
  - id: fan
    title: Fan out
    prompt: Two reviewers.
    delegate:
      workflow: review-routine
      join: ${join}
${extra}      children:
        - { name: a, context: { focus: a } }
        - { name: b, context: { focus: b } }
  - id: after
    title: After
    prompt: Go on.
`;

async function lifecycle(workflow: string, options: { clock?: () => number } = {}) {
  const sb = sandbox();
  boxes.push(sb);
  writeFileSync(join(sb.runtime, 'review-routine.yaml'), REVIEW);
  writeFileSync(join(sb.runtime, 'under-test.yaml'), workflow);
  const conn = await inProcessClient(
    sb,
    { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data') },
    {
      app: options.clock ? { clock: options.clock } : {},
    },
  );
  open.push(conn);
  const call = (name: string, args: Json) => callTool(conn.client, name, args);
  const id = /^id: (\S+)/m.exec(workflow)?.[1] as string;
  const started = await call('workflow_start', { workflow_id: id });
  const children = () =>
    call('workflow_executions', { parent_id: started.execution_id }).then((r) => r.executions as Json[]);
  const byName = async () => {
    const listed = await call('workflow_resume', { execution_id: started.execution_id });
    return Object.fromEntries((listed.delegation?.children ?? []).map((c: Json) => [c.name, c]));
  };
  return { call, started, children, byName };
}

describe('the join and the lifecycle', () => {
  it('any: the first child that completes joins; the others stop', async () => {
    const { call, started, children } = await lifecycle(JOIN('any'));
    expect(started.step_status).toBe('delegated');
    const [a] = started.next as Json[];
    const resumed = await call(a?.tool, a?.arguments);
    await call('workflow_next_step', { token: tokenOf(resumed), output: { summary: 'a done' } });
    const wait = (started.next as Json[]).at(-1) as Json;
    expect(await call(wait.tool, wait.arguments)).toMatchObject({ step_name: 'after' });
    expect((await children()).map((c) => c.state).sort()).toEqual(['abandoned', 'completed']);
  });

  it('all, failing: an abandoned child fails the parent; with continue it moves on with what completed', async () => {
    const failing = await lifecycle(JOIN('all'));
    const [a, b] = failing.started.next as Json[];
    await failing.call('workflow_set_state', { execution_id: b?.arguments.execution_id, state: 'abandoned' });
    const parent = await failing.call('workflow_resume', { execution_id: failing.started.execution_id });
    expect(parent.workflow_state).toBe('failed');
    // The other child stopped with it.
    const child = await failing.call('workflow_resume', { execution_id: a?.arguments.execution_id });
    expect(child.workflow_state).toBe('abandoned');

    const going = await lifecycle(JOIN('all', '      onChildFailure: continue\n'));
    const [c, d] = going.started.next as Json[];
    await going.call('workflow_set_state', { execution_id: d?.arguments.execution_id, state: 'abandoned' });
    const resumed = await going.call(c?.tool, c?.arguments);
    await going.call('workflow_next_step', { token: tokenOf(resumed), output: { summary: 'c done' } });
    const moved = await going.call('workflow_resume', { execution_id: going.started.execution_id });
    expect(moved.current_step).toBe('after');
  });

  it('pausing the parent pauses its children (their workers wait); resuming it resumes them; abandoning it ends them', async () => {
    const { call, started, byName } = await lifecycle(JOIN('all'));
    await call('workflow_set_state', {
      execution_id: started.execution_id,
      state: 'paused',
      reason: 'hold on',
    });
    const [a] = started.next as Json[];
    const child = await call(a?.tool, a?.arguments);
    expect(child).toMatchObject({ workflow_state: 'paused', paused_by: { via: 'parent' } });
    // A worker cannot lift its parent's pause by setting its child running.
    const lifted = await call('workflow_set_state', {
      execution_id: a?.arguments.execution_id,
      state: 'running',
    });
    expect(lifted.error.data.error_code).toBe('EXECUTION_STATE_CONFLICT');
    await call('workflow_set_state', { execution_id: started.execution_id, state: 'running' });
    expect((await byName()).a.state).toBe('running');
    await call('workflow_set_state', { execution_id: started.execution_id, state: 'abandoned' });
    const after = await call('workflow_resume', { execution_id: a?.arguments.execution_id });
    expect(after.workflow_state).toBe('abandoned');
  });

  it('a wait past its timeout is recorded and answered with a fresh token that waits again (injected clock)', async () => {
    let now = Date.parse('2026-12-07T10:00:00.000Z');
    const { call, started } = await lifecycle(JOIN('all', '      timeout: 10m\n'), { clock: () => now });
    const wait = (started.next as Json[]).at(-1) as Json;
    expect(await call(wait.tool, wait.arguments)).toMatchObject({ step_status: 'delegated' });
    now += 11 * 60_000;
    const timedOut = await call(wait.tool, wait.arguments);
    expect(timedOut).toMatchObject({ success: false, step_name: 'fan' });
    expect(timedOut.validation.issues[0]).toMatch(/^DELEGATION_TIMEOUT: 2 of 2 children not done in time/);
    const again = (timedOut.next as Json[]).at(-1) as Json;
    expect(again.arguments.token).not.toBe(wait.arguments.token);
    expect(await call(again.tool, again.arguments)).toMatchObject({ step_status: 'delegated' });
  });
});

describe('bad input gets a clear error and loses nothing', () => {
  const FOR_EACH = `id: per-file
name: Per file
description: One child per file the plan lists
version: 1.0.0
steps:
  - id: plan
    title: Plan
    prompt: List the files to change in context.files.
  - id: edits
    title: Edit each file
    prompt: One editor per file.
    delegate:
      workflow: review-routine
      forEach: files
      as: focus
`;

  it('a fan-out over a list that is not set refuses the step before it (PRECONDITION_FAILED), then one child per item', async () => {
    const { call, started, children } = await lifecycle(FOR_EACH);
    const refused = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'planned' },
    });
    expect(refused.success).toBe(false);
    expect(refused.validation.issues[0]).toMatch(
      /^PRECONDITION_FAILED: step 'edits' hands one child per item of context\['files'\]/,
    );
    expect(refused.next[0].fill['output.context.files']).toBeDefined();
    expect(await children()).toEqual([]);
    const delegated = await call('workflow_next_step', {
      token: tokenOf(refused),
      output: { summary: 'planned', context: { files: ['a.ts', 'b.ts', 'c.ts'] } },
    });
    expect(delegated.delegation.children.map((c: Json) => c.name)).toEqual(['1', '2', '3']);
    const first = await call(delegated.next[0].tool, delegated.next[0].arguments);
    expect(first.agent_content).toContain('`a.ts`');
  });

  it('too deep, too many open: DELEGATION_REFUSED, nothing created, the step not moved', async () => {
    const NESTED = `id: nested
name: Nested
description: A child that delegates again
version: 1.0.0
steps:
  - id: again
    title: Again
    prompt: Delegate once more.
    delegate: { workflow: review-routine, count: 2 }
`;
    const sb = sandbox();
    boxes.push(sb);
    writeFileSync(join(sb.runtime, 'review-routine.yaml'), REVIEW);
    writeFileSync(join(sb.runtime, 'nested.yaml'), NESTED);
    writeFileSync(
      join(sb.runtime, 'outer.yaml'),
      NESTED.replace('id: nested', 'id: outer').replace('review-routine, count: 2', 'nested, count: 1'),
    );
    const conn = await inProcessClient(sb, {
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'),
      WORKFLOWLOOKUP_MAX_DELEGATION_DEPTH: '1',
      WORKFLOWLOOKUP_MAX_OPEN_CHILDREN: '2',
    });
    open.push(conn);
    const call = (name: string, args: Json) => callTool(conn.client, name, args);
    const deep = await call('workflow_start', { workflow_id: 'outer' });
    expect(deep.error.data).toMatchObject({ error_code: 'DELEGATION_REFUSED', retryable: false });
    expect(deep.error.data.message).toContain('2 levels deep; this server allows 1');
    expect((await call('workflow_executions', { states: ['running'] })).executions).toEqual([]);
    // Two open children are the most: a second delegating execution is refused while the first's are open.
    const first = await call('workflow_start', { workflow_id: 'nested' });
    expect(first.step_status).toBe('delegated');
    const wide = await call('workflow_start', { workflow_id: 'nested' });
    expect(wide.error.data.error_code).toBe('DELEGATION_REFUSED');
    expect(wide.error.data.message).toContain('at most 2 may be open at once');
    expect(wide.error.data.next).toEqual([{ tool: 'workflow_executions', arguments: {} }]);
  });

  it("a child's token moves only its child, never its parent", async () => {
    const { call, started } = await lifecycle(JOIN('all'));
    const [a] = started.next as Json[];
    const child = await call(a?.tool, a?.arguments);
    const childToken = tokenOf(child);
    // Sent as the parent's wait, it is still the child's: it submits the child's step, never the parent's.
    const moved = await call('workflow_next_step', { token: childToken, output: { summary: 'child only' } });
    expect(moved.execution_id).toBe(a?.arguments.execution_id);
    const parent = await call('workflow_resume', { execution_id: started.execution_id });
    expect(parent).toMatchObject({ step_status: 'delegated', current_step: 'fan' });
  });
});

describe('the stateless face', () => {
  it('hands out a delegating step saying plainly that the client does the children', async () => {
    const call = await setup();
    const answer = await call('workflow_next', {
      workflowId: 'fan-out',
      completedSteps: ['plan'],
      context: {},
    });
    expect(answer.step.id).toBe('reviews');
    expect(answer.guidance.prompt).toContain('This stateless session keeps no executions');
    expect(answer.guidance.prompt).toContain('- security: the workflow "review-routine"');
    expect(answer.guidance.prompt).toContain('context.reviews');
  });
});
