// An agent-like client that knows no tool sequence: after its first call it only ever sends the `next`
// of the last answer (or, after a failure, the `next` in error.data), filling each `fill` path with a
// canned value. It must get bundled workflows from start to completed that way.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, connectClient, FIXTURES, type Sandbox } from './helpers/server.js';
import { apiSandbox, type TasksApi } from './helpers/tasks-api.js';

type Json = Record<string, any>;
interface NextCall {
  tool: string;
  arguments: Json;
  fill?: Record<string, string>;
}

/** Canned values by fill path: one value, or several tried in turn when the last one was refused. */
type Canned = Record<string, unknown | { tries: unknown[] }>;

function setPath(target: Json, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = target;
  for (const key of keys.slice(0, -1)) {
    at[key] ??= {};
    at = at[key];
  }
  at[keys.at(-1) as string] = value;
}

interface Turn {
  tool: string;
  arguments: Json;
  error?: Json;
  answer?: Json;
}

/**
 * Sends `first`, then whatever each answer's `next` (or error.data.next) says, first choice first,
 * until a `next` is empty. Returns the transcript. A fill path without a canned value fails the test.
 */
async function drive(client: Client, first: NextCall, canned: Canned, maxTurns = 40): Promise<Turn[]> {
  const turns: Turn[] = [];
  const tried = new Map<string, number>();
  let call: NextCall | undefined = first;
  while (call !== undefined) {
    if (turns.length >= maxTurns) throw new Error(`no end after ${maxTurns} turns: ${JSON.stringify(turns)}`);
    const args = structuredClone(call.arguments);
    for (const path of Object.keys(call.fill ?? {})) {
      if (!(path in canned)) throw new Error(`no canned value for ${path} (${call.fill?.[path]})`);
      const value = canned[path] as { tries?: unknown[] };
      const index = tried.get(path) ?? 0;
      setPath(
        args,
        path,
        Array.isArray(value?.tries) ? value.tries[Math.min(index, value.tries.length - 1)] : value,
      );
    }
    const res = await callTool(client, call.tool, args);
    const turn: Turn = {
      tool: call.tool,
      arguments: args,
      ...(res.error ? { error: res.error } : { answer: res }),
    };
    turns.push(turn);
    // A refused output: the next try of the canned values (the answer says why, a person would adapt).
    if (res.success === false && res.validation) {
      for (const path of Object.keys(call.fill ?? {})) tried.set(path, (tried.get(path) ?? 0) + 1);
    }
    const next: NextCall[] = (res.error ? res.error.data?.next : res.next) ?? [];
    call = next[0];
  }
  return turns;
}

const tools = (turns: Turn[]) => turns.map((t) => (t.error ? `${t.tool}!` : t.tool));

const SUMMARY =
  'Goal: add the endpoint. Relevant code: src/routes/tasks.ts (routing) and src/store/tasks.ts (queries). ' +
  'Existing tests: test/tasks.test.ts; I ran `npm test` and all tests pass. Risks: an edge case in backwards ' +
  'compatibility of the list format, caught because the root cause was found. Limitations and follow-ups: none.';

let sb: Sandbox;
let api: TasksApi;
let client: Client;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ api, sb } = await apiSandbox());
  ({ client, close } = await connectClient(sb));
});

afterAll(async () => {
  await close();
  await api.stop();
  sb.cleanup();
});

describe('an agent that only follows next', () => {
  it('runs coding-task-workflow, loop included, from workflow_start to completed', async () => {
    const turns = await drive(
      client,
      { tool: 'workflow_start', arguments: { workflow_id: 'coding-task-workflow' } },
      { 'output.summary': SUMMARY, 'output.context.testsPassing': true },
    );
    const last = turns.at(-1)?.answer as Json;
    expect(last, JSON.stringify(turns.at(-1))).toMatchObject({
      success: true,
      workflow_state: 'completed',
      next: [],
    });
    expect(turns.every((t) => t.error === undefined)).toBe(true);
    // The loop ran once: the tests passed (the agent said so through the fill the loop asked for), so the
    // fix step was skipped and the loop ended.
    const steps = turns.flatMap((t) => (t.answer?.step_name ? [t.answer.step_name] : []));
    expect(steps).toEqual([
      'understand-task',
      'plan-change',
      'implement-change',
      'run-tests',
      'verify-and-summarize',
    ]);
    const runTests = turns.find((t) => t.answer?.step_name === 'run-tests')?.answer as Json;
    expect(runTests.loop).toMatchObject({ loopId: 'test-fix-loop', iteration: 1 });
    expect(Object.keys(runTests.next[0].fill)).toEqual(['output.summary', 'output.context.testsPassing']);
    // A durable run is never told to report with the stateless tool.
    for (const t of turns) expect(t.answer?.agent_content ?? '').not.toMatch(/\bworkflow_next\b/);
  });

  it('runs export-project-tasks against a real API: inputs, command steps, a refused output, completion', async () => {
    // The catalog is set up by a person, as in the walkthrough of docs/automation.md; from then on the agent follows next.
    const imported = await callTool(client, 'catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(imported.next).toEqual([{ tool: 'command_list', arguments: { catalog_id: 'tasks-api' } }]);
    const before = api.requests.length;
    const turns = await drive(
      client,
      { tool: 'workflow_start', arguments: { workflow_id: 'export-project-tasks' } },
      {
        'inputs.project': 'p1',
        // The first summary is too long for the review's one-line rule: refused, then the second.
        'output.summary': { tries: [SUMMARY, 'Triage login bugs'] },
      },
    );
    expect(tools(turns)).toEqual([
      'workflow_start!', // no project yet: INPUTS_NOT_READY names the inputs call
      'workflow_resolve_inputs', // with the project: ready, and names the start
      'workflow_start', // runs fetch-tasks, hands out review
      'workflow_next_step', // refused: over 120 characters
      'workflow_next_step', // accepted: the server files the task, exports, polls, completes
    ]);
    expect(turns[0]?.error?.data).toMatchObject({
      error_code: 'INPUTS_NOT_READY',
      next: [
        {
          tool: 'workflow_resolve_inputs',
          arguments: { workflow_id: 'export-project-tasks', inputs: {} },
          fill: { 'inputs.project': 'choose one of the listed values' },
        },
      ],
    });
    expect(turns[2]?.arguments).toEqual({
      workflow_id: 'export-project-tasks',
      inputs: { project: 'p1', title_prefix: 'Follow-up' },
    });
    const review = turns[2]?.answer as Json;
    expect(review.commands.map((c: Json) => c.step_id)).toEqual(['fetch-tasks']);
    // The heading and the title are rendered: the project is shown as data, never a raw template.
    expect(review.agent_content).toContain('Review the tasks of [inputs.project: `p1`]');
    expect(review.agent_content).not.toContain('${{');
    expect(turns[3]?.answer).toMatchObject({ success: false, validation: { valid: false } });
    const done = turns[4]?.answer as Json;
    expect(done).toMatchObject({ success: true, workflow_state: 'completed', next: [] });
    expect(done.final_output).toEqual({
      task: expect.objectContaining({ title: 'Follow-up: Triage login bugs', project: 'p1' }),
      export_url: `${api.baseUrl}/downloads/job-1.csv`,
    });
    expect(api.requests.slice(before).some((r) => r.method === 'POST' && r.url === '/api/exports')).toBe(
      true,
    );
  });
});
