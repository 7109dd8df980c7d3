import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Client, specTypeSchemas } from '@modelcontextprotocol/client';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Decider } from '../src/executions/execution-service.js';
import { startTracing, type Tracing } from '../src/telemetry/otel.js';
import { ATTR } from '../src/telemetry/trace.js';
import { inProcessClient } from './helpers/in-process.js';
import { callTool, FIXTURES, type Sandbox, sandbox, tokenOf, twoSteps } from './helpers/server.js';
import { apiSandbox, type TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;

/** A W3C trace context as a client would send it in `_meta` (trace id, parent span id, sampled). */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const traceparent = `00-${TRACE_ID}-${PARENT_ID}-01`;

const DURABLE = twoSteps('traced-durable', 'Traced durable');

const COMMAND = `id: traced-command
name: Traced command
description: An agent step, then a command step against the API
version: 1.0.0
steps:
  - id: ask
    title: Ask
    prompt: Say go.
  - id: fetch-task
    title: Fetch the task
    run: tasks-api get-task
    with: { taskId: t1 }
`;

const ROUTINE = `id: traced-routine
name: Traced routine
description: What one child does
version: 1.0.0
steps:
  - id: look
    title: Look
    prompt: Look at {{focus}}.
`;

const FAN_OUT = `id: traced-fan-out
name: Traced fan-out
description: Plan, two children, then a synthesis
version: 1.0.0
steps:
  - id: plan
    title: Plan
    prompt: Say what changed.
  - id: reviews
    title: Reviews
    prompt: Two reviewers.
    delegate:
      workflow: traced-routine
      children:
        - { name: security, context: { focus: security } }
        - { name: speed, context: { focus: speed } }
  - id: synthesis
    title: Synthesis
    prompt: Combine.
`;

let exporter: InMemorySpanExporter;
let tracing: Tracing;
let api: TasksApi;
let sb: Sandbox;
let client: Client;
let close: () => Promise<void>;

beforeAll(async () => {
  exporter = new InMemorySpanExporter();
  tracing = startTracing({}, { version: 'test', exporter, immediate: true });
  ({ api, sb } = await apiSandbox());
  writeFileSync(join(sb.runtime, 'traced-durable.yaml'), DURABLE);
  writeFileSync(join(sb.runtime, 'traced-command.yaml'), COMMAND);
  writeFileSync(join(sb.runtime, 'traced-routine.yaml'), ROUTINE);
  writeFileSync(join(sb.runtime, 'traced-fan-out.yaml'), FAN_OUT);
  ({ client, close } = await inProcessClient(sb));
  const imported = await callTool(client, 'catalog_import_openapi', {
    source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
    catalog_title: 'Tasks API',
    base_url: api.baseUrl,
  });
  expect(imported.catalog_id).toBe('tasks-api');
});

afterAll(async () => {
  await close();
  await tracing.shutdown();
  await api.stop();
  sb.cleanup();
});

beforeEach(() => exporter.reset());

/** Submits a step's output with a trace context in `_meta`, as a traced client does. */
async function submit(token: string): Promise<Json> {
  const res = await client.callTool({
    name: 'workflow_next_step',
    arguments: { token, output: { summary: 'done' } },
    _meta: { traceparent },
  });
  expect(res.isError).toBeFalsy();
  return res.structuredContent as Json;
}

const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const childrenOf = (spans: ReadableSpan[], parent: ReadableSpan) =>
  spans.filter((s) => s.parentSpanContext?.spanId === idOf(parent));
const one = (spans: ReadableSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0] as ReadableSpan;
};

describe('traces (OpenTelemetry, in-memory exporter)', () => {
  it('a durable step: request span under the client trace, tool span, step span with ids, store transactions', async () => {
    const started = await callTool(client, 'workflow_start', { workflow_name: 'traced-durable' });
    const token = tokenOf(started);
    exporter.reset();
    await submit(token);
    const spans = exporter.getFinishedSpans();
    // Every span of the call is in the client's trace.
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([TRACE_ID]));

    const request = one(spans, 'tools/call workflow_next_step');
    expect(request.parentSpanContext?.spanId).toBe(PARENT_ID);
    expect(request.attributes).toMatchObject({
      [ATTR.method]: 'tools/call',
      [ATTR.tool]: 'workflow_next_step',
    });
    const [tool] = childrenOf(spans, request);
    expect(tool?.name).toBe('tool workflow_next_step');
    expect(tool?.attributes[ATTR.principal]).toBe('local');
    const [step] = childrenOf(spans, tool as ReadableSpan);
    expect(step?.name).toBe('workflow step');
    expect(step?.attributes).toEqual({
      [ATTR.principal]: 'local',
      [ATTR.execution]: started.execution_id,
      [ATTR.step]: 'first',
      [ATTR.workflow]: 'traced-durable',
    });
    const transactions = childrenOf(spans, step as ReadableSpan);
    expect(transactions.length).toBeGreaterThan(0);
    expect(new Set(transactions.map((s) => s.name))).toEqual(new Set(['store transaction']));
    expect(transactions[0]?.attributes['db.system.name']).toBe('sqlite');
    // The step's output check, inside the transaction that records it.
    const check = one(spans, 'validation check');
    expect(transactions.map(idOf)).toContain(check.parentSpanContext?.spanId);
    expect(check.attributes).toEqual({
      [ATTR.workflow]: 'traced-durable',
      [ATTR.step]: 'first',
      'workflowlookup.validation.valid': true,
    });
    // Never a token or an output in a span.
    const recorded = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events]));
    expect(recorded).not.toContain(token);
    expect(recorded).not.toContain('done');
  });

  it('a command step: a client span under the step span, its trace context sent to the API', async () => {
    const started = await callTool(client, 'workflow_start', { workflow_name: 'traced-command' });
    const before = api.requests.length;
    exporter.reset();
    const answer = await submit(tokenOf(started));
    expect(answer.workflow_state).toBe('completed');
    const spans = exporter.getFinishedSpans();
    const step = one(spans, 'workflow step');
    const call = one(spans, 'GET /tasks/{taskId}');
    expect(call.kind).toBe(2); // SpanKind.CLIENT
    // The call is the step's descendant (through the command phase), in the client's trace.
    let cursor: ReadableSpan | undefined = call;
    while (cursor !== undefined && idOf(cursor) !== idOf(step)) {
      const parent: string | undefined = cursor.parentSpanContext?.spanId;
      cursor = spans.find((s) => idOf(s) === parent);
    }
    expect(cursor).toBe(step);
    expect(call.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
      'workflowlookup.command': 'tasks-api get-task',
    });
    // The API received the W3C trace context of the client span (and the credential stays out of spans).
    const sent = api.requests.slice(before).find((r) => r.url.endsWith('/tasks/t1'));
    expect(sent?.headers.traceparent).toBe(`00-${TRACE_ID}-${idOf(call)}-01`);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('Bearer');
  });

  it('a failed tool call marks its spans failed, with the error message and no stack', async () => {
    const res = await client.callTool({
      name: 'workflow_next_step',
      arguments: { token: 'not-a-token', output: { summary: 'x' } },
      _meta: { traceparent },
    });
    expect(res.isError).toBe(true);
    const spans = exporter.getFinishedSpans();
    // The request span says what went wrong, as the tool span does (docs/operations.md), not "isError".
    const request = one(spans, 'tools/call workflow_next_step');
    expect(request.status).toEqual({ code: 2, message: 'Security error' }); // SpanStatusCode.ERROR
    const tool = one(spans, 'tool workflow_next_step');
    expect(tool.status).toMatchObject({ code: 2, message: 'Security error' });
    // Called as a method of its own, the same failure is a JSON-RPC error with the same message.
    exporter.reset();
    await expect(
      client.request(
        { method: 'workflow_next_step', params: { token: 'not-a-token', output: { summary: 'x' } } },
        specTypeSchemas.EmptyResult,
      ),
    ).rejects.toMatchObject({ code: -32007 });
    expect(one(exporter.getFinishedSpans(), 'tools/call workflow_next_step').status).toEqual({
      code: 2,
      message: 'Security error',
    });
  });

  it('a made-up method names its span with what an error would quote of it, not megabytes', async () => {
    const method = `${'x'.repeat(100_000)}-method`;
    await expect(client.request({ method }, specTypeSchemas.EmptyResult)).rejects.toMatchObject({
      code: -32601,
    });
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe(`${'x'.repeat(200)}…`);
    expect(span?.attributes[ATTR.method]).toBe(`${'x'.repeat(200)}…`);
    expect(span?.status).toMatchObject({ code: 2, message: 'Method not found' });
  });
});

describe('traces of delegation', () => {
  it("a child's step spans link to the parent's delegating step (its trace, execution and step), across traces", async () => {
    const started = await callTool(client, 'workflow_start', { workflow_id: 'traced-fan-out' });
    exporter.reset();
    // The parent's step, in the client's trace: it enters the delegating step, which creates the children.
    const delegated = await submit(tokenOf(started));
    expect(delegated.step_status).toBe('delegated');
    const parentSpans = exporter.getFinishedSpans();
    const parentStep = one(parentSpans, 'workflow step');
    expect(parentStep.links).toEqual([]);
    const [security] = delegated.next as Json[];
    const child = await callTool(client, security?.tool, security?.arguments);
    // The worker's step, later, in a trace of its own (another subagent, another client).
    exporter.reset();
    const other = '0af7651916cd43dd8448eb211c80319c';
    const res = await client.callTool({
      name: 'workflow_next_step',
      arguments: { token: tokenOf(child), output: { summary: 'looked' } },
      _meta: { traceparent: `00-${other}-b7ad6b7169203331-01` },
    });
    expect(res.isError).toBeFalsy();
    const spans = exporter.getFinishedSpans();
    const childStep = one(spans, 'workflow step');
    expect(childStep.spanContext().traceId).toBe(other);
    expect(childStep.attributes[ATTR.execution]).toBe(security?.arguments.execution_id);
    expect(childStep.links).toHaveLength(1);
    const [link] = childStep.links;
    // The span that created the children: in the parent step's trace, under its workflow step span.
    expect(link?.context.traceId).toBe(TRACE_ID);
    expect(childrenOf(parentSpans, parentStep).map(idOf)).toContain(link?.context.spanId);
    expect(link?.attributes).toEqual({
      [ATTR.execution]: started.execution_id,
      [ATTR.step]: 'reviews',
      [ATTR.child]: 'security',
    });
    // A step of an execution that is no child links to nothing.
    const plain = await callTool(client, 'workflow_start', { workflow_name: 'traced-durable' });
    exporter.reset();
    await submit(tokenOf(plain));
    expect(one(exporter.getFinishedSpans(), 'workflow step').links).toEqual([]);
  });
});

const GATED = (id: string, check: string) => `id: ${id}
name: ${id}
description: A step the server verifies, then a person approves
version: 1.0.0
steps:
  - id: fix
    title: Fix
    prompt: Fix it.
    verify:
      check: ${check}
    approval:
      prompt: Ship it?
  - id: done
    title: Done
    prompt: Summarize.
`;

describe('traces of server-run checks and approvals', () => {
  const SECRET = 'tok-0123456789abcdef';
  const OUTPUT = 'OUTPUT-MARKER-7f3a';
  const OPERATOR: Decider = { principal: null, name: 'cli:tester', via: 'cli', operator: true };

  it('a check is a span under the step (name, kind, exit status, duration; never output, env or paths); approval requested and decided are events', async () => {
    const box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    const script = (code: number) => ({
      command: process.execPath,
      args: ['-e', `console.log(${JSON.stringify(OUTPUT)}, process.env.DEPLOY_TOKEN); process.exit(${code})`],
      cwd: 'directory',
      directory: work,
      env: ['DEPLOY_TOKEN'],
    });
    const checksFile = join(box.root, 'checks.json');
    writeFileSync(checksFile, JSON.stringify({ checks: { tests: script(0), lint: script(3) } }));
    writeFileSync(join(box.runtime, 'gated.yaml'), GATED('gated', 'tests'));
    writeFileSync(join(box.runtime, 'gated-lint.yaml'), GATED('gated-lint', 'lint'));
    box.env.WORKFLOWLOOKUP_DATA_DIR = join(box.root, 'data');
    box.env.WORKFLOWLOOKUP_CHECKS_FILE = checksFile;
    const conn = await inProcessClient(box, { DEPLOY_TOKEN: SECRET });
    const seen: ReadableSpan[] = [];
    /** The spans finished since the last take (all are kept for the leak check at the end). */
    const take = () => {
      const spans = exporter.getFinishedSpans();
      seen.push(...spans);
      exporter.reset();
      return spans;
    };
    try {
      const call = (name: string, args: Json) => callTool(conn.client, name, args);
      const started = await call('workflow_start', { workflow_id: 'gated' });
      take();
      const waiting = await call('workflow_next_step', {
        token: tokenOf(started),
        output: { summary: 'fixed' },
      });
      expect(waiting.approval).toMatchObject({ status: 'pending' });
      let spans = take();
      const step = one(spans, 'workflow step');
      const check = one(spans, 'check tests');
      expect(check.parentSpanContext?.spanId).toBe(idOf(step));
      expect(check.attributes).toEqual({
        [ATTR.check]: 'tests',
        'workflowlookup.check.kind': 'command',
        'workflowlookup.check.passed': true,
        'workflowlookup.check.timed_out': false,
        'workflowlookup.check.duration_ms': expect.any(Number),
        'process.exit.code': 0,
      });
      expect(check.status.code).toBe(0); // UNSET
      // The approval the output now waits on, on the step's trace.
      expect(step.attributes['workflowlookup.approval.status']).toBe('pending');
      const requested = step.events.find((e) => e.name === 'approval requested');
      expect(requested?.attributes).toMatchObject({
        [ATTR.execution]: started.execution_id,
        [ATTR.step]: 'fix',
        [ATTR.approval]: waiting.approval.approval_id,
      });

      const svc = await conn.app.services.executions();
      await svc.decide(started.execution_id, 'approve', OPERATOR, 'ok by me', {
        approval_id: waiting.approval.approval_id,
      });
      spans = take();
      const decision = one(spans, 'approval decision');
      expect(decision.attributes).toMatchObject({
        [ATTR.execution]: started.execution_id,
        'workflowlookup.approval.decision': 'approve',
        'workflowlookup.approval.decided_via': 'cli',
      });
      const decided = decision.events.find((e) => e.name === 'approval decided');
      expect(decided?.attributes).toEqual({
        [ATTR.approval]: waiting.approval.approval_id,
        [ATTR.execution]: started.execution_id,
        'workflowlookup.approval.status': 'approved',
        'workflowlookup.approval.decided_via': 'cli',
      });
      // The decision's events are in the decision's trace.
      expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(
        new Set([decision.spanContext().traceId]),
      );

      // A failing check: its exit status, and the span is not an error (the check answered).
      const other = await call('workflow_start', { workflow_id: 'gated-lint' });
      take();
      const refused = await call('workflow_next_step', {
        token: tokenOf(other),
        output: { summary: 'fixed' },
      });
      expect(refused.success).toBe(false);
      spans = take();
      const lint = one(spans, 'check lint');
      expect(lint.attributes).toMatchObject({ 'workflowlookup.check.passed': false, 'process.exit.code': 3 });
      expect(lint.status.code).toBe(0);

      // Never the output, the environment, the command line, the directory or the decision's reason.
      const recorded = JSON.stringify(seen.map((s) => [s.name, s.attributes, s.events]));
      for (const secret of [OUTPUT, SECRET, work, process.execPath, 'ok by me']) {
        expect(recorded).not.toContain(secret);
      }
    } finally {
      await conn.close();
      box.cleanup();
    }
  });
});
