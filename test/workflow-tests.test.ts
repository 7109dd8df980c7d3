import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { localCaller } from '../src/executions/execution-model.js';
import type { SuiteResult, TestRun } from '../src/executions/workflow-tests.js';
import { silentLogger } from '../src/telemetry/log.js';
import { isDefinitionFile, isTestFile } from '../src/workflows/parse.js';
import { httpClient } from './helpers/http-server.js';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { CLI, callTool, FIXTURES, ROOT, type Sandbox, sandbox } from './helpers/server.js';
import { validationWorkerUrl } from './helpers/validation-worker.js';

type Json = Record<string, any>;

const BUNDLED = join(ROOT, 'workflows');
const WORKRAIL_PARALLEL = join(FIXTURES, 'workrail-parallel');

/** A small workflow with a condition, a while loop, a command step and a final output. */
const DEMO = `id: demo
name: Demo
description: Triage, an optional hotfix, rounds while asked, then a ticket
version: 1.0.0
steps:
  - id: triage
    title: Triage
    prompt: Name the severity (low or high) in the context as severity.
    validationCriteria:
      - { type: contains, value: severity, message: Name the severity }
  - id: hotfix
    title: Hotfix
    prompt: Ship a hotfix.
    runCondition: { var: severity, equals: high }
  - id: rounds
    type: loop
    title: Rounds
    loop: { type: while, condition: { var: again, equals: true }, maxIterations: 3 }
    body:
      - id: round
        title: Round
        prompt: Do a round; set again to true for another one.
  - id: file-ticket
    title: File the ticket
    run: tracker create-ticket
    body: { title: "\${{ steps.triage.output.summary }}" }
final_output:
  ticket: \${{ steps.file-ticket.output.id }}
`;

const DEMO_TESTS = `commands:
  file-ticket: { status: 201, output: { id: T-1 } }
scenarios:
  - name: a low severity skips the hotfix
    steps:
      triage: { summary: severity low, context: { severity: low } }
    expect:
      path: [triage, file-ticket]
      loops: { rounds: 0 }
      requests: { file-ticket: { body: { title: severity low } } }
      final_output: { ticket: T-1 }
`;

/** A routine the children run, and workflows that delegate to it (served from the sandbox's runtime dir). */
const DELEGATING: Record<string, string> = {
  'check-routine.yaml': `id: check-routine
name: 'Routine: check one angle'
description: One reviewer checks a change from one angle and says whether it passes
version: 1.0.0
steps:
  - id: look
    title: Look
    prompt: Check the change for {{focus}}; report verdict (pass or fail).
    validationCriteria:
      - { type: contains, value: verdict, message: Say the verdict }
  - id: explain
    title: Explain
    prompt: Say what fails and where.
    runCondition: { var: verdict, equals: fail }
`,
  'fan-out.yaml': `id: fan-out
name: Fan-out
description: A plan, three checks side by side, then a synthesis of their results
version: 1.0.0
steps:
  - id: plan
    title: Plan
    prompt: Say what changed.
  - id: checks
    title: Checks
    prompt: Three reviewers check the change.
    delegate:
      workflow: check-routine
      timeout: 30m
      children:
        - { name: security, context: { focus: security } }
        - { name: speed, context: { focus: speed } }
        - { name: style, context: { focus: style } }
  - id: synthesis
    title: Synthesis
    prompt: Combine the results in context.checks; report failing (true or false).
  - id: fix
    title: Fix
    prompt: Fix what failed.
    runCondition: { var: failing, equals: true }
`,
  'quorum.yaml': `id: quorum
name: Quorum
description: Three identical checks, two of which must complete; the rest may fail
version: 1.0.0
steps:
  - id: vote
    title: Vote
    prompt: Three reviewers each check the change.
    delegate: { workflow: check-routine, count: 3, join: { atLeast: 2 }, onChildFailure: continue, into: votes }
  - id: tally
    title: Tally
    prompt: Count the votes in context.votes.
`,
  'per-file.yaml': `id: per-file
name: Per file
description: One check per file the plan lists
version: 1.0.0
steps:
  - id: list
    title: List the files
    prompt: Put the files to check in context.files (a list of paths).
  - id: each-file
    title: Check each file
    prompt: One reviewer per file.
    delegate: { workflow: check-routine, forEach: files, as: focus, join: any }
`,
};

let sb: Sandbox;
let app: App;
let tests: Awaited<ReturnType<App['services']['tests']>>;
let dir: string;

/** Writes files into a fresh folder of the sandbox; returns its path. */
function folder(name: string, files: Record<string, string>): string {
  const path = join(sb.root, name);
  mkdirSync(path, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(path, file), text);
  return path;
}

beforeAll(async () => {
  sb = sandbox();
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  // Delegating workflows and the routines their children run: served, so the children can start; and
  // a WorkRail workflow whose parallel step names routines (read with its routines/ folder).
  for (const [file, text] of Object.entries(DELEGATING)) writeFileSync(join(sb.runtime, file), text);
  sb.env.WORKFLOW_STORAGE_PATH = WORKRAIL_PARALLEL;
  app = createApp(loadConfig({ env: sb.env, cwd: sb.project }), {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
  });
  tests = await app.services.tests();
  dir = folder('demo', { 'demo.yaml': DEMO });
});

afterAll(async () => {
  await app.close();
  sb.cleanup();
});

/** Runs test-file text against the demo workflow (beside it, as demo.test.yaml). */
async function runDemo(text: string, name = 'demo.test.yaml'): Promise<SuiteResult> {
  writeFileSync(join(dir, name), text);
  return tests.runFile(join(dir, name));
}

describe('the bundled workflows ship with tests, and npm test runs them', () => {
  let run: TestRun;
  beforeAll(async () => {
    run = await tests.runPaths([BUNDLED]);
  });

  it('every bundled workflow has a test file, and every scenario passes', () => {
    const workflows = readdirSync(BUNDLED).filter(isDefinitionFile);
    expect(run.suites.map((s) => s.workflow_id).sort()).toEqual(
      workflows.map((f) => f.replace(/\.(json|ya?ml)$/, '')).sort(),
    );
    const failures = run.suites.flatMap((s) =>
      s.scenarios
        .filter((c) => !c.passed)
        .map((c) => `${s.workflow_id}: ${c.name}: ${c.failures.join('; ')}`),
    );
    expect(failures).toEqual([]);
    expect(run.errors).toBe(0);
    expect(run.passed).toBeGreaterThanOrEqual(30);
  });

  it('every step, every branch and every loop exit of every bundled workflow is walked by some scenario', () => {
    for (const suite of run.suites) {
      const c = suite.coverage;
      expect(c?.untested, suite.workflow_id).toEqual([]);
      expect(c?.steps.covered, suite.workflow_id).toBe(c?.steps.total);
    }
    const branches = run.suites.reduce((n, s) => n + (s.coverage?.branches.total ?? 0), 0);
    const exits = run.suites.reduce((n, s) => n + (s.coverage?.loops.total ?? 0), 0);
    expect(branches).toBeGreaterThanOrEqual(40);
    expect(exits).toBeGreaterThanOrEqual(7);
  });

  it('the sources never load a test file as a workflow, and list none as broken', async () => {
    await app.services.registry.ready();
    const listing = app.services.registry.list();
    expect(listing.broken).toEqual([]);
    expect(app.services.registry.filesOf().filter((e) => isTestFile(e.file))).toEqual([]);
    expect(listing.workflows.map((w) => w.id)).toContain('conditional-workflow-example');
  });
});

describe('a scenario is walked through the server engine', () => {
  it('runs the command step from canned answers, renders its request and the final output', async () => {
    const suite = await runDemo(DEMO_TESTS);
    expect(suite.errors).toEqual([]);
    expect(suite.scenarios[0]).toMatchObject({
      passed: true,
      path: ['triage', 'file-ticket'],
      state: 'completed',
      requests: { 'file-ticket': [{ with: {}, body: { title: 'severity low' } }] },
      final_output: { ticket: 'T-1' },
    });
    expect(suite.coverage?.untested).toEqual(
      expect.arrayContaining([
        'step "hotfix" is never entered',
        'runCondition of "hotfix" (severity == "high") is never true',
        'loop "rounds" never ends by its own rule',
        'loop "rounds" never stops at its maxIterations (3)',
      ]),
    );
  });

  it('says which expectation did not hold: path, refusals, loops, context, final output, requests', async () => {
    const suite = await runDemo(`commands:
  file-ticket: { output: { id: T-2 } }
scenarios:
  - name: wrong on every count
    steps:
      triage: { summary: severity high, context: { severity: high, again: true } }
      round:
        - { context: { again: true }, times: 1 }
        - { context: { again: false } }
    expect:
      path: [triage, file-ticket]
      rejected: [{ step: triage, message: severity }]
      loops: { rounds: 1 }
      context: { severity: low }
      final_output: { ticket: T-1 }
      requests: { file-ticket: { body: { title: nope } } }
      visits: { hotfix: 0 }
      skipped: [round]
`);
    const [scenario] = suite.scenarios;
    expect(scenario?.passed).toBe(false);
    expect(scenario?.path).toEqual(['triage', 'hotfix', 'round', 'round', 'file-ticket']);
    expect(scenario?.loops).toEqual({ rounds: 2 });
    expect(scenario?.failures).toEqual([
      'path: expected [triage, file-ticket], got [triage, hotfix, round, round, file-ticket] (first difference at position 2)',
      'visits: expected "hotfix" 0 time(s), got 1',
      'skipped: expected "round" never entered, got 2 time(s)',
      'rejected: expected 1 refused report(s) [triage: "severity"], got 0',
      'loops: expected "rounds" to run 1 round(s), got 2',
      'context.severity: expected "low", got "high"',
      'requests.file-ticket[0]: expected {"body":{"title":"nope"}}, got {"with":{},"body":{"title":"severity high"}}',
      'final_output: expected {"ticket":"T-1"}, got {"ticket":"T-2"}',
    ]);
  });

  it('stops where the agent has nothing else to say, and names the refusal', async () => {
    const suite = await runDemo(`scenarios:
  - name: never names the severity
    steps: { triage: { summary: no idea } }
  - name: expects the stop
    steps: { triage: [{ summary: still no idea }, { summary: "severity low", context: { severity: low } }] }
    commands: { file-ticket: { output: { id: T-3 } } }
    expect:
      rejected: [{ step: triage, message: name the SEVERITY }]
      state: completed
`);
    expect(suite.scenarios[0]).toMatchObject({
      passed: false,
      state: 'running',
      stopped_at: 'triage',
      reports: 1,
      rejected: [{ step: 'triage', issues: ['Name the severity'] }],
      failures: ['state: expected completed, got running (on "triage", refused: Name the severity)'],
    });
    expect(suite.scenarios[1]).toMatchObject({ passed: true, reports: 2 });
  });

  it('stops an endless walk at max_reports, and a command step without a canned answer fails the scenario', async () => {
    const suite = await runDemo(`scenarios:
  - name: rounds forever
    max_reports: 2
    steps:
      triage: { summary: severity low, context: { severity: low, again: true } }
      round: { context: { again: true } }
  - name: no canned answer
    steps:
      triage: { summary: severity low, context: { severity: low } }
    expect:
      path: [triage, file-ticket]
`);
    expect(suite.scenarios[0]?.failures[0]).toBe(
      'stopped after 2 reports (max_reports); the walk did not end: is a loop endless?',
    );
    expect(suite.scenarios[1]?.passed).toBe(false);
    expect(suite.scenarios[1]?.failures.join('\n')).toContain(
      'command step "file-ticket" has no canned API answer: add commands.file-ticket',
    );
  });

  it('a cancelled run stops between two reports; the scenarios left fail and say why', async () => {
    writeFileSync(join(dir, 'demo.test.yaml'), DEMO_TESTS);
    const suite = await tests.runFile(join(dir, 'demo.test.yaml'), { signal: AbortSignal.abort() });
    expect(suite.scenarios).toHaveLength(1);
    expect(suite.scenarios[0]).toMatchObject({ passed: false, reports: 0 });
    expect(suite.scenarios[0]?.failures[0]).toBe('stopped: the run was cancelled');
  });

  it('expects a start that is refused, and a failing API call', async () => {
    const suite = await runDemo(`scenarios:
  - name: a value no condition can match is refused at the start
    context: { severity: [1, 2] }
    expect:
      error: { code: precondition_failed, message: severity }
      path: []
  - name: the tracker is down
    steps: { triage: { summary: severity low, context: { severity: low } } }
    commands: { file-ticket: { error: { reason: http_status, status: 503, message: unavailable } } }
    expect:
      error: { code: command_failed, message: unavailable }
      stopped_at: file-ticket
      state: running
`);
    expect(suite.scenarios.map((s) => [s.passed, s.failures])).toEqual([
      [true, []],
      [true, []],
    ]);
    expect(suite.scenarios[0]?.state).toBeNull();
  });

  it("a repeat's timeout is measured in the test's own time: the same verdict on any machine", async () => {
    // 10 s between polls and a 30 s timeout: the third wait would pass it, whatever the wall clock did
    // (the tests never sleep; their waits move a virtual clock).
    const polling = folder('polling', {
      'polling.yaml': `id: polling
name: Polling
description: Waits for a job
version: 1.0.0
steps:
  - id: wait-job
    title: Wait for the job
    run: jobs get-job
    repeat: { until: { var: output.status, equals: done }, every: 10s, max_attempts: 50, timeout: 30s }
`,
      'polling.test.yaml': `scenarios:
  - name: a job that never finishes times out after three polls
    commands: { wait-job: { status: 200, output: { status: running } } }
    expect:
      error: { code: command_failed, message: repeat timed out after 30000 ms }
      requests: { wait-job: [{}, {}, {}] }
      stopped_at: wait-job
      state: running
`,
    });
    const suite = await tests.runFile(join(polling, 'polling.test.yaml'));
    expect(suite.scenarios.map((s) => [s.passed, s.failures])).toEqual([[true, []]]);
  });

  it('scenarios never share state, and nothing is left in the server store', async () => {
    const suite = await runDemo(
      DEMO_TESTS.replace(
        'scenarios:',
        'scenarios:\n  - name: first\n    steps: { triage: { summary: severity low, context: { severity: low } } }\n    commands: { file-ticket: { output: { id: T-1 } } }\n    expect: { final_output: { ticket: T-1 } }',
      ),
    );
    expect(suite.scenarios.every((s) => s.passed)).toBe(true);
    const service = await app.services.executions();
    const counts = await service.queries.counts({}, localCaller());
    expect(Object.values(counts).reduce((n, c) => n + c, 0)).toBe(0);
  });
});

/** Runs test-file text against a delegating workflow of the runtime dir (beside it, as <id>.test.yaml). */
async function runDelegating(id: string, text: string): Promise<SuiteResult> {
  const file = join(sb.runtime, `${id}.test.yaml`);
  writeFileSync(file, text);
  return tests.runFile(file);
}

describe('delegating steps: the children are walked, each by an agent the test scripts', () => {
  it('walks each child in the delegation order, then the wait; expect names the join and the context after it', async () => {
    const suite = await runDelegating(
      'fan-out',
      `children:
  checks:
    defaults: { summary: "verdict: pass", context: { verdict: pass } }
scenarios:
  - name: every check passes
    expect:
      path: [plan, checks, synthesis]
      children:
        checks:
          completed: [security, speed, style]
          abandoned: []
          join: held
          timeouts: 0
          each:
            security: { state: completed, path: [look], rejected: [], context: { verdict: pass } }
      context:
        checks:
          security: { state: completed, summary: "verdict: pass", context: { focus: security, verdict: pass } }
  - name: one check fails, explains, and the synthesis asks for a fix
    steps:
      synthesis: { context: { failing: true } }
    children:
      checks:
        defaults: { summary: "verdict: pass", context: { verdict: pass } }
        each:
          speed:
            steps:
              look: [{ summary: slow }, { summary: "verdict: fail", context: { verdict: fail } }]
              explain: { summary: the loop in parse() is quadratic }
    expect:
      path: [plan, checks, synthesis, fix]
      children:
        checks:
          completed: [security, speed, style]
          each:
            speed: { path: [look, explain], rejected: [{ step: look, message: say the verdict }] }
      context: { checks: { speed: { summary: the loop in parse() is quadratic } } }
`,
    );
    expect(suite.errors).toEqual([]);
    expect(suite.scenarios.map((s) => [s.name, s.failures])).toEqual([
      ['every check passes', []],
      ['one check fails, explains, and the synthesis asks for a fix', []],
    ]);
    const [first, second] = suite.scenarios;
    expect(first?.delegations).toEqual([
      {
        step: 'checks',
        join: 'held',
        timeouts: 0,
        children: ['security', 'speed', 'style'].map((name) => ({
          name,
          workflow_id: 'check-routine',
          state: 'completed',
          path: ['look'],
          rejected: [],
          reports: 1,
        })),
      },
    ]);
    // Child reports are reports (and work): plan, three children, synthesis; the second adds the refused
    // look, the explanation and the fix.
    expect(first?.reports).toBe(5);
    expect(second?.reports).toBe(8);
    expect(suite.coverage?.joins).toMatchObject({ covered: 1, total: 3 });
    expect(suite.coverage?.untested).toEqual([
      'the join of "checks" never fails (a child that does not complete fails the execution)',
      'the wait on the children of "checks" never times out (timeout: 30m)',
    ]);
  });
});

describe('delegating steps: how the join ends, and its coverage', () => {
  it('a child that ends without completing fails the parent; a late child makes the wait time out; every join outcome is covered', async () => {
    const suite = await runDelegating(
      'fan-out',
      `children:
  checks:
    defaults: { summary: "verdict: pass", context: { verdict: pass } }
steps:
  synthesis: { context: { failing: false } }
scenarios:
  - name: all pass
    expect: { path: [plan, checks, synthesis], children: { checks: { join: held } } }
  - name: a fix is asked for
    steps: { synthesis: { context: { failing: true } } }
    expect: { path: [plan, checks, synthesis, fix] }
  - name: the speed reviewer is abandoned, which fails the review
    children:
      checks:
        defaults: { summary: "verdict: pass", context: { verdict: pass } }
        each: { speed: { end: abandoned, reason: the reviewer left } }
    expect:
      state: failed
      stopped_at: checks
      path: [plan, checks]
      children:
        checks:
          completed: [security]
          abandoned: [speed, style]
          join: failed
          each: { speed: { state: abandoned, path: [look] }, style: { state: abandoned, path: [look] } }
  - name: the security reviewer fails
    children:
      checks: { each: { security: { end: failed } } }
    expect:
      state: failed
      children: { checks: { failed: [security], abandoned: [speed, style], join: failed } }
  - name: the style reviewer reports only after the wait timed out
    children:
      checks:
        defaults: { summary: "verdict: pass", context: { verdict: pass } }
        each: { style: { late: true } }
    expect:
      path: [plan, checks, synthesis]
      rejected: [{ step: checks, message: "DELEGATION_TIMEOUT: 1 of 3 children not done in time (style)" }]
      children: { checks: { completed: [security, speed, style], join: held, timeouts: 1 } }
`,
    );
    expect(suite.errors).toEqual([]);
    expect(suite.scenarios.map((s) => [s.name, s.failures])).toEqual(
      suite.scenarios.map((s) => [s.name, []]),
    );
    expect(suite.coverage?.untested).toEqual([]);
    expect(suite.coverage?.joins.items).toEqual([
      {
        id: 'checks',
        title: 'Checks',
        outcomes: { held: 3, continued: 0, failed: 2, timed_out: 1 },
        possible: ['held', 'failed', 'timed_out'],
      },
    ]);
  });

  it('count children by number: at least two of three, going on without the ones that failed', async () => {
    const suite = await runDelegating(
      'quorum',
      `scenarios:
  - name: two complete, and the third is stopped by the join that no longer needs it
    children: { vote: { defaults: { summary: "verdict: pass" } } }
    expect:
      path: [vote, tally]
      children: { vote: { completed: ["1", "2"], abandoned: ["3"], join: held } }
      context: { votes: { "1": { state: completed }, "3": { state: abandoned } } }
  - name: two fail, so the join goes on with what completed
    children:
      vote:
        end: failed
        each: { "3": { defaults: { summary: "verdict: pass" } } }
    expect:
      path: [vote, tally]
      children: { vote: { completed: [], failed: ["1", "2"], abandoned: ["3"], join: continued } }
`,
    );
    expect(suite.errors).toEqual([]);
    expect(suite.scenarios.map((s) => [s.name, s.failures])).toEqual(
      suite.scenarios.map((s) => [s.name, []]),
    );
    expect(suite.coverage?.joins).toMatchObject({ covered: 2, total: 2 });
  });

  it('forEach children by item number: any one joins, the others are stopped', async () => {
    const suite = await runDelegating(
      'per-file',
      `steps:
  list: { context: { files: [a.ts, b.ts] } }
scenarios:
  - name: the first child completes and joins
    children: { each-file: { defaults: { summary: "verdict: pass" } } }
    expect:
      path: [list, each-file]
      children: { each-file: { completed: ["1"], abandoned: ["2"], join: held } }
  - name: the first child never says its verdict; the second joins, and the first is stopped
    children:
      each-file:
        defaults: { summary: "verdict: pass" }
        each: { "1": { steps: { look: { summary: no idea } } } }
    expect:
      children:
        each-file:
          completed: ["2"]
          abandoned: ["1"]
          each: { "1": { rejected: [{ step: look, message: verdict }], context: { focus: a.ts } } }
`,
    );
    expect(suite.errors).toEqual([]);
    expect(suite.scenarios.map((s) => [s.name, s.failures])).toEqual(
      suite.scenarios.map((s) => [s.name, []]),
    );
  });

  it('a child with nothing else to say leaves the parent waiting on the step, and the failures say so', async () => {
    // Two scenarios: a child that stops short, and expectations that are wrong; with `unknown`, they
    // also name a child and a step that do not exist, which the file's check refuses before anything runs.
    const scenarios = (unknown: boolean) => `scenarios:
  - name: the speed reviewer never says its verdict
    children:
      checks:
        defaults: { summary: "verdict: pass" }
        each: { speed: { steps: { look: { summary: fast enough } } } }
    expect:
      state: running
      stopped_at: checks
      children: { checks: { completed: [security, style], open: [speed], join: waiting } }
  - name: expecting the wrong things
    children: { checks: { defaults: { summary: "verdict: pass" }, each: { style: { end: abandoned } } } }
    expect:
      state: failed
      children:
        checks:
          completed: [security, speed, style]
          join: held
          timeouts: 1
          each: { style: { state: completed, path: [look, explain], context: { verdict: pass } }${unknown ? ', nobody: {}' : ''} }${unknown ? '\n        plan: {}' : ''}
`;
    const suite = await runDelegating('fan-out', scenarios(true));
    expect(suite.errors).toEqual([
      expect.objectContaining({
        path: '/scenarios/1/expect/children/checks/each/nobody',
        rule: 'unknownChild',
        message: 'step "checks" has no child "nobody"; its children are security, speed, style',
      }),
      expect.objectContaining({
        path: '/scenarios/1/expect/children/plan',
        rule: 'unknownStep',
        message:
          'workflow "fan-out" has no step "plan" that hands its work to children; its delegating steps are checks',
      }),
    ]);
    const fixed = await runDelegating('fan-out', scenarios(false));
    expect(fixed.scenarios[0]).toMatchObject({ passed: true, state: 'running', stopped_at: 'checks' });
    expect(fixed.scenarios[1]?.failures).toEqual([
      'children.checks.completed: expected [security, speed, style], got [security, speed]',
      'children.checks.join: expected held, got failed',
      'children.checks.timeouts: expected 1, got 0',
      'children.checks.each.style.state: expected completed, got abandoned',
      'children.checks.each.style.path: expected [look, explain], got [look]',
      'children.checks.each.style.context.verdict: expected "pass", got undefined',
    ]);
  });
});

describe('delegating steps: a WorkRail parallel step', () => {
  it('runs as child executions named after their routines, scripted and expected by those names', async () => {
    const suite = await tests.runFile(join(WORKRAIL_PARALLEL, 'release-readiness.test.yaml'));
    expect(suite.errors).toEqual([]);
    expect(suite.scenarios.map((s) => [s.name, s.failures])).toEqual(
      suite.scenarios.map((s) => [s.name, []]),
    );
    expect(suite.coverage?.untested).toEqual([]);
    expect(suite.coverage?.joins.items.map((j) => [j.id, j.possible])).toEqual([
      ['readiness-checks', ['held', 'failed']],
    ]);
  });
});

describe('delegating steps: bad scripts are clear errors, and children count as work', () => {
  it('names steps that do not delegate, children and child steps that do not exist, and a late child with no timeout', async () => {
    const suite = await runDelegating(
      'quorum',
      `children:
  tally: { defaults: { summary: x } }
scenarios:
  - name: wrong names
    children:
      vote:
        late: true
        steps: { lok: { summary: x } }
        each: { "4": {}, "2": { steps: { explain: { summary: x }, nope: { summary: y } } } }
`,
    );
    expect(suite.invalid).toBe('tests');
    expect(suite.errors.map((e) => [e.path, e.rule, e.message, e.line])).toEqual([
      [
        '/children/tally',
        'unknownStep',
        'workflow "quorum" has no step "tally" that hands its work to children; its delegating steps are vote',
        2,
      ],
      [
        '/scenarios/0/children/vote/late',
        'lateChild',
        'step "vote" has no delegate.timeout, so its wait on the children never times out: a late child would never report',
        7,
      ],
      [
        '/scenarios/0/children/vote/steps/lok',
        'unknownStep',
        'the children of step "vote" run check-routine, which has no step "lok" its agent carries out; those steps are look, explain',
        8,
      ],
      // (YAML keys that are numbers come in numeric order)
      [
        '/scenarios/0/children/vote/each/2/steps/nope',
        'unknownStep',
        'the children of step "vote" (child "2") run check-routine, which has no step "nope" its agent carries out; those steps are look, explain',
        9,
      ],
      [
        '/scenarios/0/children/vote/each/4',
        'unknownChild',
        'step "vote" has no child "4"; its children are 1 to 3',
        9,
      ],
    ]);
  });

  it("max_reports and the work budget count the children's reports too", async () => {
    const text = `children:
  checks: { defaults: { summary: "verdict: pass" } }
scenarios:
  - name: stopped among the children
    max_reports: 3
  - name: never starts
`;
    const limited = await runDelegating('fan-out', text);
    expect(limited.scenarios[0]?.failures[0]).toBe(
      'stopped after 3 reports (max_reports); the walk did not end: is a loop endless?',
    );
    expect(limited.scenarios[0]).toMatchObject({ reports: 3, stopped_at: 'checks' });
    expect(limited.scenarios[0]?.delegations?.[0]?.children.map((c) => c.state)).toEqual([
      'completed',
      'completed',
      'running',
    ]);
    // Start 1, plan 1, then per child a pick-up and a report: the budget runs out at the second child's report.
    const file = join(sb.runtime, 'fan-out.test.yaml');
    const spent = await tests.runFile(file, { work: { max: 5, spent: 'stop' } });
    expect(spent.work).toEqual({ used: 5, max: 5, spent: true });
    expect(spent.scenarios.map((c) => c.failures[0])).toEqual([
      "stopped: the test file's budget of 5 work units is spent",
      "stopped: the test file's budget of 5 work units is spent",
    ]);
    expect(spent.scenarios[0]?.reports).toBe(2);
  });
});

describe('bad test files are clear errors that affect nothing else', () => {
  it('YAML and JSON syntax errors, with line and column', async () => {
    const yaml = await runDemo('scenarios:\n  - name: x\n    steps: {triage: 1\n');
    expect(yaml.invalid).toBe('tests');
    expect(yaml.errors[0]).toMatchObject({
      rule: 'syntax',
      line: expect.any(Number),
      column: expect.any(Number),
    });
    const json = await runDemo('{"scenarios": [}', 'demo.test.json');
    expect(json.errors[0]).toMatchObject({ rule: 'syntax', line: 1, column: 16 });
    expect(json.errors[0]?.message).toMatch(/^invalid JSON/);
  });

  it('schema errors, at the line and column of the offending key', async () => {
    const suite = await runDemo(`scenarios:
  - name: x
    expect:
      state: done
      surprise: 1
`);
    expect(suite.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/scenarios/0/expect/state', rule: 'enum', line: 4, column: 7 }),
        expect.objectContaining({
          path: '/scenarios/0/expect/surprise',
          line: 5,
          column: 7,
          message: 'unknown property "surprise"',
        }),
      ]),
    );
  });

  it('a file with schema errors and unknown ids reports all of them in one pass, with did-you-mean (CLI)', () => {
    const path = folder('one-pass', {
      'demo.yaml': DEMO,
      'demo.test.yaml': `scenarios:
  - name: x
    stesp:
      triage: { summary: a }
    steps:
      triaje: { summary: a }
    expect:
      stat: completed
      path: [triage, 3]
`,
    });
    const run = spawnSync(process.execPath, [CLI, 'test', path], {
      env: sb.env,
      cwd: sb.project,
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    const said = run.stderr
      .split('\n')
      .filter(Boolean)
      .map((l) => l.replace(`${path}/`, ''));
    // Each line once, in any order: the schema's findings and the ids the workflow does not have.
    expect(said.sort()).toEqual(
      [
        'workflowlookup test: demo.test.yaml:3:5: /scenarios/0/stesp: unknown property "stesp"; did you mean "steps"?',
        'workflowlookup test: demo.test.yaml:6:7: /scenarios/0/steps/triaje: workflow "demo" has no step "triaje"; its steps are triage, hotfix, round, file-ticket',
        'workflowlookup test: demo.test.yaml:8:7: /scenarios/0/expect/stat: unknown property "stat"; did you mean "state"?',
        'workflowlookup test: demo.test.yaml:9:22: /scenarios/0/expect/path/1: must be a string, not a number',
      ].sort(),
    );
  });

  it('step and loop ids the workflow does not have, and answers given to the wrong kind of step', async () => {
    const suite = await runDemo(`scenarios:
  - name: x
    steps:
      triaje: { summary: a }
      file-ticket: { summary: b }
    commands:
      triage: { output: 1 }
    expect:
      path: [triage, nowhere]
      loops: { round: 1 }
`);
    expect(suite.errors.map((e) => [e.path, e.line, e.message])).toEqual([
      [
        '/scenarios/0/steps/triaje',
        4,
        'workflow "demo" has no step "triaje"; its steps are triage, hotfix, round, file-ticket',
      ],
      [
        '/scenarios/0/steps/file-ticket',
        5,
        '"file-ticket" is a command step: give its canned API answers under commands, not steps',
      ],
      [
        '/scenarios/0/commands/triage',
        7,
        '"triage" is a step the agent carries out: give what it reports under steps, not commands',
      ],
      [
        '/scenarios/0/expect/path/1',
        9,
        'workflow "demo" has no step "nowhere"; its steps are triage, hotfix, round, file-ticket',
      ],
      ['/scenarios/0/expect/loops/round', 10, 'workflow "demo" has no loop "round"; its loops are rounds'],
    ]);
  });

  it('an unknown workflow, a broken one, and a folder where a bad file sits beside good ones', async () => {
    const place = folder('mixed', {
      'demo.yaml': DEMO,
      'demo.test.yaml': DEMO_TESTS,
      'ghost.test.yaml': 'scenarios: [{ name: x }]\n',
      'broken.yaml': 'id: broken\nname: Broken\nversion: 1\nsteps: []\n',
      'broken.test.yaml': 'scenarios: [{ name: x }]\n',
      'other.test.yaml': 'workflow: nope-flow\nscenarios: [{ name: x }]\n',
    });
    const run = await tests.runPaths([place]);
    const by = Object.fromEntries(run.suites.map((s) => [s.file?.split('/').at(-1), s]));
    expect(by['ghost.test.yaml']?.errors[0]?.message).toBe(
      'no workflow "ghost" beside this file or in any source',
    );
    expect(by['other.test.yaml']?.errors[0]).toMatchObject({ path: '/workflow', line: 1 });
    expect(by['broken.test.yaml']?.invalid).toBe('workflow');
    expect(by['broken.test.yaml']?.errors[0]?.message).toMatch(
      /^the workflow under test \(.*broken\.yaml\) is broken: /,
    );
    expect(by['demo.test.yaml']).toMatchObject({ passed: 1, failed: 0, errors: [] });
    expect(run).toMatchObject({ passed: 1, failed: 0, errors: 3 });
  });

  it('a path that names nothing to test', async () => {
    const place = folder('paths', { 'demo.yaml': DEMO, 'demo.test.yaml': DEMO_TESTS });
    const run = await tests.runPaths([
      join(sb.root, 'missing'),
      join(place, 'demo.yaml'),
      join(ROOT, 'README.md'),
    ]);
    expect(run.suites.map((s) => [s.workflow_id, s.passed])).toEqual([['demo', 1]]);
    expect(run.problems.map((p) => p.message)).toEqual([
      'not found',
      'not a test file (<id>.test.yaml, .test.yml or .test.json), a workflow file or a directory',
    ]);
    expect(run.errors).toBe(2);
  });
});

describe('workflow_test and the hint of workflow_validate_manifest, through MCP', () => {
  let client: Client;
  let close: () => Promise<void>;
  const call = (name: string, args: Json) => callTool(client, name, args);
  beforeAll(async () => {
    ({ client, close } = await inProcessClient(sb));
  });
  afterAll(async () => close());

  it('is in the authoring group, read-only, with the scope read', async () => {
    const groups = (await call('workflow_tools', {})).groups as { group: string; tools: string[] }[];
    expect(groups.find((g) => g.group === 'authoring')?.tools).toContain('workflow_test');
    expect(app.runner.tools.find((t) => t.name === 'workflow_test')?.scope).toBe('read');
    await call('workflow_tools', { enable: ['authoring'] });
    const listed = (await client.listTools()).tools.find((t) => t.name === 'workflow_test');
    expect(listed?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(listed?.inputSchema.properties).toHaveProperty('tests');
  });

  it("runs a draft's tests before it is saved, and offers workflow_save when they pass", async () => {
    const result = await call('workflow_test', { content: DEMO, tests: DEMO_TESTS });
    expect(result).toMatchObject({ workflow_id: 'demo', valid: true, passed: 1, failed: 0, errors: [] });
    expect(result.coverage).toEqual({
      steps: { covered: 2, total: 4 },
      branches: { covered: 2, total: 4 },
      loop_exits: { covered: 1, total: 3 },
    });
    expect(result.untested).toContain('step "hotfix" is never entered');
    expect(result.next).toEqual([
      { tool: 'workflow_save', arguments: {}, fill: { content: 'the draft you just tested' } },
    ]);
    // Tests as an object, and a failing scenario: the next call is another test run.
    const failing = await call('workflow_test', {
      content: DEMO,
      tests: { scenarios: [{ name: 'expects a hotfix', expect: { visits: { hotfix: 1 } } }] },
    });
    expect(failing).toMatchObject({ valid: true, passed: 0, failed: 1 });
    expect(failing.scenarios[0].failures).toContain('visits: expected "hotfix" 1 time(s), got 0');
    expect(failing.next[0].tool).toBe('workflow_test');
  });

  it("runs a delegating draft's tests: its children are walked, and their reports are work", async () => {
    const draft = (DELEGATING['fan-out.yaml'] as string).replace('id: fan-out', 'id: fan-out-draft');
    const result = await call('workflow_test', {
      content: draft,
      tests: {
        children: { checks: { defaults: { summary: 'verdict: pass' } } },
        scenarios: [
          {
            name: 'all pass',
            expect: {
              path: ['plan', 'checks', 'synthesis'],
              children: { checks: { completed: ['security', 'speed', 'style'], join: 'held' } },
            },
          },
        ],
      },
    });
    expect(result).toMatchObject({ workflow_id: 'fan-out-draft', valid: true, passed: 1, failed: 0 });
    expect(result.scenarios[0].delegations[0]).toMatchObject({ step: 'checks', join: 'held' });
    // The start, the plan, each child picked up and its report, the wait, the synthesis.
    expect(result.work.used).toBe(10);
    expect(result.untested).toContain('the wait on the children of "checks" never times out (timeout: 30m)');
  });

  it("runs a saved workflow's own test file by default", async () => {
    const result = await call('workflow_test', { workflow_id: 'coding-task-workflow' });
    expect(result).toMatchObject({ valid: true, failed: 0, untested: [] });
    expect(result.passed).toBeGreaterThanOrEqual(3);
    expect(result.test_file).toMatch(/workflows\/coding-task-workflow\.test\.yaml$/);
  });

  it('bad input: malformed tests and drafts, no tests, unknown workflows, both or neither target', async () => {
    const tests = await call('workflow_test', {
      content: DEMO,
      tests: 'scenarios:\n  - name: x\n    expect: { state: done }\n',
    });
    expect(tests).toMatchObject({ valid: false, passed: 0, scenarios: [] });
    expect(tests.errors[0]).toMatch(/^tests \/scenarios\/0\/expect\/state \(3:\d+\): /);
    const draft = await call('workflow_test', { content: 'id: x\n', tests: DEMO_TESTS });
    expect(draft.valid).toBe(false);
    expect(draft.errors[0]).toMatch(/^manifest /);
    const none = await call('workflow_test', { content: DEMO });
    expect(none.error.data).toMatchObject({ error_code: 'INVALID_PARAMS' });
    expect(JSON.stringify(none.error)).toContain('no saved workflow \\"demo\\"');
    expect((await call('workflow_test', { workflow_id: 'no-such-flow' })).error.code).toBe(-32001);
    expect((await call('workflow_test', {})).error.data.error_code).toBe('INVALID_PARAMS');
    expect((await call('workflow_test', { content: DEMO, workflow_id: 'demo' })).error.data.error_code).toBe(
      'INVALID_PARAMS',
    );
    const saved = await call('workflow_save', { content: DEMO });
    expect(saved.workflow_id).toBe('demo');
    const untested = await call('workflow_test', { workflow_id: 'demo' });
    expect(untested.error.data.details).toContain('no test file beside');
  });

  it('runs calls side by side, each in a store of its own', async () => {
    const results = await Promise.all(
      [1, 2, 3].map(() => call('workflow_test', { content: DEMO, tests: DEMO_TESTS })),
    );
    expect(results.map((r) => [r.passed, r.failed])).toEqual([
      [1, 0],
      [1, 0],
      [1, 0],
    ]);
  });

  it('workflow_validate_manifest names the untested paths of a valid manifest with tests', async () => {
    const hinted = await call('workflow_validate_manifest', { content: DEMO, tests: DEMO_TESTS });
    expect(hinted.valid).toBe(true);
    expect(hinted.tests).toEqual({ passed: 1, failed: 0, errors: [] });
    expect(hinted.untested).toContain('runCondition of "hotfix" (severity == "high") is never true');
    // A bundled workflow's own test file beside it: every path walked.
    const text = readFileSync(join(BUNDLED, 'conditional-workflow-example.json'), 'utf8');
    const bundled = await call('workflow_validate_manifest', { content: text });
    expect(bundled.tests).toMatchObject({ failed: 0, errors: [] });
    expect(bundled.tests.file).toMatch(/conditional-workflow-example\.test\.yaml$/);
    expect(bundled.untested).toEqual([]);
    // No tests anywhere: no hint at all.
    const plain = await call('workflow_validate_manifest', {
      content: DEMO.replace('id: demo', 'id: demo-two'),
    });
    expect(plain).not.toHaveProperty('tests');
    expect(plain).not.toHaveProperty('untested');
  });

  it('publishes the test-file schema as a resource, and refuses to save a workflow under a test-file name', async () => {
    const schema = await client.readResource({ uri: 'workflowlookup://authoring/test-schema' });
    const text = (schema.contents[0] as { text: string }).text;
    expect(JSON.parse(text)).toEqual(
      JSON.parse(readFileSync(join(ROOT, 'schema', 'workflow-test.schema.json'), 'utf8')),
    );
    const refused = await call('workflow_save', { content: DEMO, file_name: 'demo.test.yaml' });
    expect(JSON.stringify(refused.error)).toContain('hold workflow tests, never a workflow');
  });
});

describe('workflow_test over Streamable HTTP', () => {
  it('runs a draft and a bundled workflow', async () => {
    const server = await inProcessHttp(sb);
    try {
      const client = await httpClient(server.url);
      const draft = await callTool(client, 'workflow_test', { content: DEMO, tests: DEMO_TESTS });
      expect(draft).toMatchObject({ valid: true, passed: 1, failed: 0 });
      const bundled = await callTool(client, 'workflow_test', { workflow_id: 'mr-review-workflow' });
      expect(bundled).toMatchObject({ valid: true, failed: 0, untested: [] });
      await client.close();
    } finally {
      await server.close();
    }
  });
});

describe('workflowlookup test (the built CLI)', () => {
  const cli = (args: string[]) => {
    const res = spawnSync(process.execPath, [CLI, 'test', ...args], {
      env: sb.env,
      cwd: sb.project,
      encoding: 'utf8',
    });
    return { code: res.status, stdout: res.stdout, stderr: res.stderr };
  };

  it('prints one line per scenario and the closing count; exit 0, 1 on a failure, 2 on a malformed file', () => {
    const ok = cli([BUNDLED]);
    expect(ok.code).toBe(0);
    const lines = ok.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^\d+ passed, 0 failed$/);
    expect(lines.filter((l) => l.startsWith('ok    ')).length).toBe(Number(lines.at(-1)?.split(' ')[0]));
    expect(ok.stdout).toContain('coverage conditional-workflow-example');

    const failing = folder('cli-failing', {
      'demo.yaml': DEMO,
      'demo.test.yaml': `${DEMO_TESTS}      visits: { hotfix: 1 }\n`,
    });
    const failed = cli([failing]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain(
      'FAIL  demo: a low severity skips the hotfix\n        visits: expected "hotfix" 1 time(s), got 0',
    );
    expect(failed.stdout).toContain('  untested: step "hotfix" is never entered');
    expect(failed.stdout.trim().split('\n').at(-1)).toBe('0 passed, 1 failed');

    const malformed = folder('cli-malformed', {
      'demo.yaml': DEMO,
      'demo.test.yaml': 'scenarios:\n  - name: [\n',
    });
    const bad = cli([malformed]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/workflowlookup test: .*demo\.test\.yaml:\d+:\d+: invalid YAML/);

    const json = cli(['--json', failing]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ passed: 0, failed: 1, errors: 0 });
    expect(cli(['--nope']).code).toBe(2);
    expect(cli([join(sb.root, 'missing')]).code).toBe(2);
  });

  it("the authoring guide's worked example prints what the guide shows, and its fourth scenario closes the gap", () => {
    const guide = readFileSync(join(ROOT, 'docs', 'authoring-guide.md'), 'utf8');
    const section = guide.slice(guide.indexOf('## 14a.'), guide.indexOf('## 15.'));
    const blocks = [...section.matchAll(/```(yaml|text)\n([\s\S]*?)```/g)].map((m) => m[2] as string);
    const workflow = blocks.find((b) => b.startsWith('id: release-notes')) as string;
    const testFile = blocks.find((b) => b.startsWith('# release-notes.test.yaml')) as string;
    const [command, ...shown] = (blocks.find((b) => b.startsWith('$ workflowlookup test')) as string)
      .trimEnd()
      .split('\n');
    const place = folder('guide-example', {
      'release-notes.yaml': workflow,
      'release-notes.test.yaml': testFile,
    });
    const res = spawnSync(process.execPath, [CLI, ...(command as string).split(' ').slice(2)], {
      env: sb.env,
      cwd: place,
      encoding: 'utf8',
    });
    expect(res.status).toBe(0);
    expect(res.stdout.trimEnd().split('\n')).toEqual(shown);
    writeFileSync(
      join(place, 'release-notes.test.yaml'),
      `${testFile}  - name: reviews that never approve stop after three rounds
    steps: { revise: { context: { approved: false } } }
    expect: { visits: { revise: 3 }, state: completed }
`,
    );
    const closed = spawnSync(process.execPath, [CLI, 'test', '--json', place], {
      env: sb.env,
      encoding: 'utf8',
    });
    const run = JSON.parse(closed.stdout) as TestRun;
    expect(run).toMatchObject({ passed: 4, failed: 0 });
    expect(run.suites[0]?.coverage?.untested).toEqual([]);
  });
});
