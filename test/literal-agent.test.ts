// A literal agent: it knows nothing but the answers. After its first call it only sends `next[0]` of the
// last answer (or of error.data.next), filling exactly the paths `fill` names from a table of scenario
// values (a required path missing from the table fails the test; an optional one is left out). It walks
// every bundled workflow under several scenarios, through the durable face (workflow_start /
// workflow_next_step) and the stateless one (workflow_next), over stdio and over HTTP, and must take the
// path the scenario's values imply. A delegating step's children it does itself, one after another, as
// next[0] leads (the path counts workflow_resume's steps too: a child's first step, the parent again).
// In-process: the stdio rules over the SDK's in-memory transport, and the real Streamable HTTP server on
// 127.0.0.1.
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { loadConfig, loadHttpSettings } from '../src/config.js';
import { silentLogger } from '../src/telemetry/log.js';
import { type RunningHttp, startHttp } from '../src/transports/http.js';
import { isDefinitionFile } from '../src/workflows/parse.js';
import { httpClient } from './helpers/http-server.js';
import { inProcess } from './helpers/in-process.js';
import { FIXTURES, ROOT, type Sandbox } from './helpers/server.js';
import { apiSandbox, type TasksApi } from './helpers/tasks-api.js';
import { validationWorkerUrl } from './helpers/validation-worker.js';

type Json = Record<string, any>;
interface NextCall {
  tool: string;
  arguments: Json;
  fill?: Record<string, string>;
}
type Call = (tool: string, args: Json) => Promise<Json>;

/** A value the agent gives each time a fill names the path: one value, or one per occurrence in turn. */
type Value = unknown | { each: unknown[] };

interface Scenario {
  name: string;
  /** Context variables by name (the agent fills `output.context.<name>` and `context.<name>` from here). */
  context?: Record<string, Value>;
  inputs?: Record<string, unknown>;
  /** Loop decisions by loop id, in order of the rounds. */
  decisions?: Record<string, ('continue' | 'stop')[]>;
  /** WorkRail artifacts by kind (handoff contracts). */
  artifacts?: Record<string, Record<string, unknown>>;
  /** Summaries by step id (else the workflow's default); `{each}` for a refused first try. */
  summaries?: Record<string, Value>;
  /** The agent steps handed out, in order (a refused output hands its step out again). */
  path: string[];
  /** The stateless walk, where it differs (it checks no output, so nothing is refused). */
  statelessPath?: string[];
  /** Command steps the server ran (durable only), in order. */
  commands?: string[];
}

/** One summary that passes the criteria of every step of the bundled workflows but three. */
const SUMMARY = [
  'Goal and intent: add the export endpoint so that users can share tasks.',
  'Audience: maintainers; duration 20 min; the key message and takeaway are stated.',
  'Files: src/routes/tasks.ts and src/store/tasks.ts; sources: docs/design.md, according to the spec.',
  '- Step 1: change the route; it depends on the store change',
  '- [ ] Given a request, when exported, then a CSV is returned (acceptance criteria)',
  'Steps to reproduce: open the page; expected a list, actual an error was observed.',
  'As a user, I want exports so that I can share tasks. Out of scope: PDF export. Child tickets: none.',
  'Tests: unit, integration and end-to-end; I ran `npm test` and it passed (green); edge cases and error paths are covered.',
  'Risks: low likelihood, high impact; mitigation: a feature flag, a rollout plan and a rollback (revert) plan.',
  'Root cause: a missing index, because the query was slow.',
  'Findings: one minor nit in naming. Verdict: APPROVE with a comment. Priority: high.',
  'Slide 1 has speaker notes and a diagram; 2 min per slide; audience questions and timing were checked.',
  'Rules chosen: contains, regex, length, schema, each with a message; every context path and scenario walked.',
  'Draft: "steps", "version": "1.0.0", a prompt per step; installed in .workflowlookup; workflowlookup validate says 1 valid, 0 invalid.',
  'Limitations and follow-ups: none; next step: monitor the rollout.',
].join('\n');

/** A change described for the reviewers of review-fan-out. */
const CHANGE =
  'The checkout applies coupon codes on the server (src/checkout/coupons.ts) instead of in the browser; riskiest part: the rounding.';

const FINDINGS = JSON.stringify({
  summary: 'Small, careful change; one naming nit.',
  findings: [{ file: 'src/a.ts', line: 3, severity: 'nit', title: 'Name', detail: 'Prefer a clearer name.' }],
});

/** The scenarios, by bundled workflow: every file in workflows/ must have at least two. */
const SCENARIOS: Record<string, Scenario[]> = {
  'conditional-workflow-example': [
    {
      name: 'large task, novice, complexity 0.8',
      context: { taskScope: 'large', userExpertise: 'novice', complexity: 0.8 },
      summaries: { 'assess-task': 'Scope: large. Expertise: novice. Complexity: 0.8.' },
      path: [
        'assess-task',
        'architecture-review',
        'guided-walkthrough',
        'risk-analysis',
        'test-plan',
        'implement',
        'wrap-up',
      ],
    },
    {
      name: 'small task, expert, complexity 0.2',
      context: { taskScope: 'small', userExpertise: 'expert', complexity: 0.2 },
      // The first assessment is refused: the retry's fill must name the context variables again.
      summaries: {
        'assess-task': { each: ['Not sure yet.', 'Scope: small. Expertise: expert. Complexity: 0.2.'] },
        'expert-fast-track': 'Terse plan: change src/routes/tasks.ts; pitfall: pagination.',
      },
      path: ['assess-task', 'assess-task', 'expert-fast-track', 'implement', 'wrap-up'],
      statelessPath: ['assess-task', 'expert-fast-track', 'implement', 'wrap-up'],
    },
    {
      // Conditions compare text ignoring case and spaces (the rule the fill hint states).
      name: 'medium task, intermediate, complexity 0.6, in other cases',
      context: { taskScope: 'Medium', userExpertise: ' INTERMEDIATE ', complexity: 0.6 },
      summaries: { 'assess-task': 'Scope: medium. Expertise: intermediate. Complexity: 0.6.' },
      path: ['assess-task', 'guided-walkthrough', 'test-plan', 'implement', 'wrap-up'],
    },
  ],
  'adaptive-ticket-creation': [
    {
      name: 'a minimal bug',
      context: { ticketType: 'bug', detailLevel: 'minimal' },
      summaries: { 'classify-request': 'A bug; detail level minimal.' },
      path: ['classify-request', 'bug-investigation', 'draft-ticket', 'review-and-finalize'],
    },
    {
      name: 'a standard feature',
      context: { ticketType: 'feature', detailLevel: 'standard' },
      summaries: { 'classify-request': 'A feature; detail level standard.' },
      path: [
        'classify-request',
        'feature-definition',
        'technical-notes',
        'draft-ticket',
        'review-and-finalize',
      ],
    },
    {
      name: 'a comprehensive epic',
      context: { ticketType: 'epic', detailLevel: 'comprehensive' },
      summaries: { 'classify-request': 'An epic; detail level comprehensive.' },
      path: ['classify-request', 'epic-breakdown', 'technical-notes', 'draft-ticket', 'review-and-finalize'],
    },
  ],
  'coding-task-workflow': [
    {
      name: 'tests pass at once',
      context: { testsPassing: true },
      path: ['understand-task', 'plan-change', 'implement-change', 'run-tests', 'verify-and-summarize'],
    },
    {
      name: 'tests fail once',
      context: { testsPassing: { each: [false, true] } },
      path: [
        'understand-task',
        'plan-change',
        'implement-change',
        'run-tests',
        'fix-failures',
        'run-tests',
        'verify-and-summarize',
      ],
    },
    {
      name: 'tests never pass: the loop stops at its 5 rounds',
      context: { testsPassing: false },
      path: [
        'understand-task',
        'plan-change',
        'implement-change',
        ...Array.from({ length: 5 }, () => ['run-tests', 'fix-failures']).flat(),
        'verify-and-summarize',
      ],
    },
  ],
  'workflow-for-workflows': [
    {
      name: 'valid at the first check',
      context: { definitionValid: true },
      path: [
        'define-purpose',
        'design-steps',
        'design-validation',
        'write-definition',
        'run-validator',
        'dry-run',
        'install-workflow',
      ],
    },
    {
      name: 'one round of fixes',
      context: { definitionValid: { each: [false, true] } },
      path: [
        'define-purpose',
        'design-steps',
        'design-validation',
        'write-definition',
        'run-validator',
        'fix-violations',
        'run-validator',
        'dry-run',
        'install-workflow',
      ],
    },
  ],
  'mr-review-workflow': [
    {
      name: 'two changed files',
      context: { changedFiles: ['src/a.ts', 'src/b.ts'] },
      summaries: { 'summarize-findings': FINDINGS },
      path: [
        'gather-context',
        'review-file',
        'review-file',
        'cross-cutting-check',
        'summarize-findings',
        'review-verdict',
      ],
    },
    {
      name: 'no changed files: the loop runs no round',
      context: { changedFiles: [] },
      summaries: { 'summarize-findings': FINDINGS },
      path: ['gather-context', 'cross-cutting-check', 'summarize-findings', 'review-verdict'],
    },
  ],
  'ai-task-implementation': [
    { name: 'straight through', path: ['understand', 'plan', 'implement', 'verify'] },
    {
      name: 'a refused first answer, then a good one',
      summaries: { understand: { each: ['too short', SUMMARY] } },
      path: ['understand', 'understand', 'plan', 'implement', 'verify'],
      statelessPath: ['understand', 'plan', 'implement', 'verify'],
    },
  ],
  'presentation-creation': [
    {
      name: 'straight through',
      path: [
        'define-brief',
        'gather-material',
        'build-outline',
        'write-slides',
        'design-visuals',
        'rehearse-and-review',
      ],
    },
    {
      name: 'a refused outline, then a good one',
      summaries: { 'build-outline': { each: ['An outline.', SUMMARY] } },
      path: [
        'define-brief',
        'gather-material',
        'build-outline',
        'build-outline',
        'write-slides',
        'design-visuals',
        'rehearse-and-review',
      ],
      statelessPath: [
        'define-brief',
        'gather-material',
        'build-outline',
        'write-slides',
        'design-visuals',
        'rehearse-and-review',
      ],
    },
  ],
  // A delegating step: the agent does each child itself, one after another, as next[0] says (each child's
  // answer ends with the call back to its parent, whose answer hands out the next child, then the join).
  'review-fan-out': [
    {
      name: 'three reviewers approve, each child walked in turn',
      context: { verdict: 'approve', changesRequested: false },
      summaries: { 'describe-change': CHANGE },
      path: [
        'describe-change',
        'reviews',
        'inspect',
        'reviews',
        'inspect',
        'reviews',
        'inspect',
        'synthesis',
      ],
      // Stateless: no executions, so the agent reports the delegating step itself.
      statelessPath: ['describe-change', 'reviews', 'synthesis'],
    },
    {
      name: 'every reviewer asks for changes, and the author gets them',
      context: { verdict: 'changes', changesRequested: true },
      summaries: { 'describe-change': CHANGE },
      path: [
        'describe-change',
        'reviews',
        'inspect',
        'list-findings',
        'reviews',
        'inspect',
        'list-findings',
        'reviews',
        'inspect',
        'list-findings',
        // The last child's end joined the children: the parent is on its synthesis.
        'synthesis',
        'request-changes',
      ],
      statelessPath: ['describe-change', 'reviews', 'synthesis', 'request-changes'],
    },
  ],
  'routine-focused-review': [
    {
      name: 'on its own: nothing to fix',
      context: { verdict: 'approve' },
      path: ['inspect'],
    },
    {
      name: 'on its own: changes, with their severity',
      context: { verdict: 'changes' },
      path: ['inspect', 'list-findings'],
    },
  ],
  'export-project-tasks': [
    {
      name: 'project p1',
      inputs: { project: 'p1' },
      summaries: { review: 'Triage login bugs' },
      path: ['review'],
      commands: ['fetch-tasks', 'create-follow-up', 'export', 'wait-export'],
    },
    {
      name: 'project p2, a title too long at first',
      inputs: { project: 'p2' },
      summaries: { review: { each: [SUMMARY, 'Close stale tasks'] } },
      path: ['review', 'review'],
      statelessPath: ['review'],
      commands: ['fetch-tasks', 'create-follow-up', 'export', 'wait-export'],
    },
  ],
};

/**
 * WorkRail fixtures the agent walks too (copied into the runtime dir): loops its loop-control artifact
 * decides, and handoff contracts. Their fill names the artifact with its shape.
 */
const WORKRAIL_SCENARIOS: Record<string, Scenario[]> = {
  'wr.artifact-loop': [
    {
      name: 'nothing to tidy: the first decision stops the loop before it starts',
      decisions: { 'tidy-loop': ['stop'] },
      path: ['look-first', 'wrap-up'],
    },
    {
      name: 'two passes',
      decisions: { 'tidy-loop': ['continue', 'continue', 'stop'] },
      path: ['look-first', 'tidy-pass', 'tidy-decide', 'tidy-pass', 'tidy-decide', 'wrap-up'],
    },
  ],
  'wr.handoff-demo': [
    {
      name: 'a handoff, no verdict (optional)',
      artifacts: {
        'wr.coding_handoff': {
          kind: 'wr.coding_handoff',
          version: 1,
          keyDecisions: ['Cedar boards'],
          knownLimitations: [],
          testsAdded: [],
          filesChanged: ['birdhouse.txt'],
        },
      },
      path: ['build', 'inspect', 'hang'],
    },
    {
      name: 'a handoff and a verdict',
      artifacts: {
        'wr.coding_handoff': {
          kind: 'wr.coding_handoff',
          version: 1,
          keyDecisions: ['Pine boards'],
          knownLimitations: ['Not painted'],
          testsAdded: [],
          filesChanged: ['birdhouse.txt'],
        },
        'wr.review_verdict': {
          kind: 'wr.review_verdict',
          verdict: 'minor',
          confidence: 'high',
          findings: [{ severity: 'nit', summary: 'A rough edge' }],
          summary: 'Sturdy',
        },
      },
      path: ['build', 'inspect', 'hang'],
    },
  ],
};

function setPath(target: Json, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = target;
  for (const key of keys.slice(0, -1)) {
    at[key] ??= /^\d+$/.test(keys[keys.indexOf(key) + 1] ?? '') ? [] : {};
    at = at[key];
  }
  at[keys.at(-1) as string] = value;
}

/** The agent's memory of the table: each `{each}` value is used in turn. */
class Table {
  private used = new Map<string, number>();
  constructor(private readonly scenario: Scenario) {}

  private take(key: string, value: Value): unknown {
    if (value === null || typeof value !== 'object' || !('each' in (value as object))) return value;
    const each = (value as { each: unknown[] }).each;
    const n = this.used.get(key) ?? 0;
    this.used.set(key, n + 1);
    return each[Math.min(n, each.length - 1)];
  }

  /** The value for a fill path, or `absent` (left out when optional). */
  value(path: string, hint: string, step: string | undefined): unknown {
    const s = this.scenario;
    if (path === 'output.summary') return this.take(`summary:${step}`, s.summaries?.[step ?? ''] ?? SUMMARY);
    const context = /^(?:output\.)?context\.(.+)$/.exec(path)?.[1];
    if (context !== undefined && Object.hasOwn(s.context ?? {}, context))
      return this.take(`context:${context}`, s.context?.[context]);
    const input = /^inputs\.(.+)$/.exec(path)?.[1];
    if (input !== undefined && Object.hasOwn(s.inputs ?? {}, input)) return s.inputs?.[input];
    const loop = /^context\._loopControl\.(.+)$/.exec(path)?.[1];
    const kind = /"kind": "([^"]+)"/.exec(hint)?.[1];
    if (loop !== undefined || kind === 'wr.loop_control') {
      const id = loop ?? /leaves loop (\S+),/.exec(hint)?.[1] ?? '';
      const decision = this.take(`decision:${id}`, { each: s.decisions?.[id] ?? ['stop'] });
      return loop !== undefined ? decision : { kind, decision };
    }
    if (kind !== undefined && s.artifacts?.[kind] !== undefined) return s.artifacts[kind];
    return ABSENT;
  }
}
const ABSENT = Symbol('absent');

interface Walk {
  /** Agent steps handed out (durable: step_name; stateless: step.id of prompt steps). */
  path: string[];
  commands: string[];
  last: Json;
  turns: number;
}

/**
 * Sends `first`, then `next[0]` of each answer (or of error.data.next), filling what `fill` names
 * from the table, until `next` is empty.
 */
async function walk(call: Call, first: NextCall, scenario: Scenario, stateless: boolean): Promise<Walk> {
  const table = new Table(scenario);
  const out: Walk = { path: [], commands: [], last: {}, turns: 0 };
  let next: NextCall | undefined = first;
  let step: string | undefined;
  while (next !== undefined) {
    if (++out.turns > 60) throw new Error(`no end after 60 turns: ${JSON.stringify(out)}`);
    const args = structuredClone(next.arguments);
    for (const [path, hint] of Object.entries(next.fill ?? {})) {
      const value = table.value(path, hint, step);
      if (value === ABSENT) {
        if (hint.startsWith('optional')) continue;
        throw new Error(
          `${scenario.name}: fill names ${path} ("${hint}"), and the table has no value for it`,
        );
      }
      setPath(args, path, value);
    }
    const answer = await call(next.tool, args);
    out.last = answer;
    if (answer.error) {
      next = answer.error.data?.next?.[0];
      if (next === undefined) throw new Error(`${scenario.name}: ${JSON.stringify(answer.error)}`);
      continue;
    }
    out.commands.push(...(answer.commands ?? []).map((c: Json) => c.step_id));
    if (stateless) {
      step = answer.step?.id;
      if (answer.step && answer.step.run === undefined) out.path.push(answer.step.id);
    } else if (answer.step_name !== undefined && answer.success !== false) {
      step = answer.step_name;
      out.path.push(answer.step_name);
    } else if (answer.success === false) {
      out.path.push(answer.step_name);
    } else if (answer.step_status === 'running' || answer.step_status === 'delegated') {
      // workflow_resume: a child picked up (its first step), or its parent looked at again.
      step = answer.current_step;
      out.path.push(answer.current_step);
    }
    next = answer.next?.[0];
  }
  return out;
}

/** The workflow walks every scenario implies, through one transport. */
interface Connection {
  call: Call;
  close: () => Promise<void>;
  apiUrl: string;
}

function scenarioSuite(transport: string, connect: () => Promise<Connection>) {
  describe(`a literal agent over ${transport}`, () => {
    let call: Call;
    let close: () => Promise<void>;
    let apiUrl: string;
    beforeAll(async () => {
      ({ call, close, apiUrl } = await connect());
      const imported = await call('catalog_import_openapi', {
        source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
        catalog_title: 'Tasks API',
        base_url: apiUrl,
      });
      expect(imported.error).toBeUndefined();
    });
    afterAll(async () => close());

    it('has at least two scenarios for every bundled workflow', () => {
      const bundled = readdirSync(join(ROOT, 'workflows'))
        .filter(isDefinitionFile)
        .map((f) => f.replace(/\.(json|ya?ml)$/, ''));
      for (const id of bundled) expect(SCENARIOS[id]?.length ?? 0, id).toBeGreaterThanOrEqual(2);
    });

    for (const [workflowId, scenarios] of Object.entries({ ...SCENARIOS, ...WORKRAIL_SCENARIOS })) {
      for (const scenario of scenarios) {
        it(`durable: ${workflowId}, ${scenario.name}`, async () => {
          const first: NextCall = scenario.inputs
            ? { tool: 'workflow_start', arguments: { workflow_id: workflowId, inputs: scenario.inputs } }
            : { tool: 'workflow_start', arguments: { workflow_id: workflowId } };
          const walked = await walk(call, first, scenario, false);
          expect(walked.path).toEqual(scenario.path);
          expect(walked.commands).toEqual(scenario.commands ?? []);
          expect(walked.last).toMatchObject({ success: true, workflow_state: 'completed', next: [] });
        });
        it(`stateless: ${workflowId}, ${scenario.name}`, async () => {
          const walked = await walk(
            call,
            { tool: 'workflow_next', arguments: { workflowId, completedSteps: [] } },
            scenario,
            true,
          );
          expect(walked.path).toEqual(scenario.statelessPath ?? scenario.path);
          expect(walked.last).toMatchObject({ isComplete: true, next: [] });
        });
      }
    }
  });
}

const sandboxes: Sandbox[] = [];
const apis: TasksApi[] = [];

async function sandboxWithApi(): Promise<{ sb: Sandbox; apiUrl: string }> {
  const made = await apiSandbox();
  apis.push(made.api);
  sandboxes.push(made.sb);
  for (const file of ['artifact-loop.json', 'handoff.json'])
    copyFileSync(join(FIXTURES, 'workrail', file), join(made.sb.runtime, file));
  return { sb: made.sb, apiUrl: made.api.baseUrl };
}

afterAll(async () => {
  for (const a of apis) await a.stop();
  for (const sb of sandboxes) sb.cleanup();
});

scenarioSuite('stdio (in-process)', async () => {
  const { sb, apiUrl } = await sandboxWithApi();
  const server = await inProcess(sb);
  let id = 0;
  const request = async (method: string, params: Json): Promise<Json> => {
    const mine = ++id;
    server.send({ jsonrpc: '2.0', id: mine, method, params });
    for (;;) {
      const found = server.answers.find((a) => a.id === mine);
      if (found) return found;
      await server.read(server.answers.length + 1);
    }
  };
  await request('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'literal-agent', version: '1.0.0' },
  });
  server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return {
    call: async (tool, args) => {
      const res = await request('tools/call', { name: tool, arguments: args });
      if (res.error) throw new Error(JSON.stringify(res.error));
      return res.result.isError
        ? { error: res.result.structuredContent.error }
        : res.result.structuredContent;
    },
    close: () => server.close(),
    apiUrl,
  };
});

scenarioSuite('Streamable HTTP (127.0.0.1)', async () => {
  const { sb, apiUrl } = await sandboxWithApi();
  const config = loadConfig({ env: sb.env, cwd: sb.project });
  const app = createApp(config, {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
  });
  const http: RunningHttp = await startHttp(app, {
    ...loadHttpSettings(config, { port: '0' }),
    dashboard: false,
  });
  const client: Client = await httpClient(http.url);
  return {
    call: async (tool, args) => {
      const res = await client.callTool({ name: tool, arguments: args });
      return res.isError ? { error: (res.structuredContent as Json).error } : (res.structuredContent as Json);
    },
    close: async () => {
      await client.close();
      await http.close(0);
      await app.close();
    },
    apiUrl,
  };
});
