/**
 * Workflow tests: the scenarios of a test file walked through the server's own execution service (the
 * same engine, validation, contracts, context checks and loop rules), over a scratch SQLite store that is
 * thrown away after the run. The scenario plays the agent (its reports at each step) and the APIs of
 * command steps (canned answers through the real command runner: templates, repeat, output_contract);
 * a delegating step's children are real child executions in the same store, each walked by an agent the
 * scenario scripts (workflow-test-walk.ts); no server process, no network. What must follow is checked
 * against what the store recorded, and the engine's own decisions are counted as coverage.
 */
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import type { CommandFailureReason } from '../catalogs/http-runner.js';
import type { Context } from '../engine/conditions.js';
import { CoverageTally } from '../engine/coverage.js';
import { DomainFailure } from '../engine/errors.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import { enclosingLoop } from '../engine/workrail.js';
import type { Violation } from '../model/violation.js';
import type { Workflow } from '../model/workflow.js';
import type { ScratchStore } from '../store/scratch-store.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { LoadedWorkflow, RegistryEntry, WorkflowRegistry } from '../workflows/registry.js';
import {
  checkTestsAgainst,
  collectTestFiles,
  type ParsedTests,
  placed,
  readTestFile,
  salvagedFindings,
  testedWorkflowId,
} from '../workflows/test-files.js';
import {
  COMMAND_ERROR_REASONS,
  type Scenario,
  TEST_LIMITS,
  type TestFile,
} from '../workflows/test-format.js';
import { localCaller } from './execution-model.js';
import type { ExecutionDeps, ExecutionService } from './execution-service.js';
import { checkChildrenAgainst, childrenScripts, WalkEvents } from './workflow-test-children.js';
import {
  AnswerBook,
  CannedChecks,
  CannedCommands,
  errorText,
  WorkBudget,
  WorkSpent,
} from './workflow-test-doubles.js';
import { type RunFacts, unmet } from './workflow-test-expectations.js';
import type { ScenarioResult, SuiteResult, TestRun } from './workflow-test-results.js';
import { ScenarioClock, ScenarioWalk } from './workflow-test-walk.js';

// The canned failure reasons are exactly those a real call can give.
const _reasons: readonly CommandFailureReason[] = COMMAND_ERROR_REASONS;
void _reasons;

/** What a scenario brings to the execution service it runs on; the rest is the server's. */
export type ScenarioParts = Required<
  Pick<ExecutionDeps, 'store' | 'commands' | 'checks' | 'observe' | 'clock'>
>;

/**
 * What workflow tests run on, built by the composition root (app.ts, buildWorkflowTests) as the server
 * builds its own parts: nothing here constructs a registry or a service.
 */
export interface WorkflowTestDeps {
  /** The server's sources: a test file's workflow is looked up here first. */
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  /** A store for one run, thrown away after it. */
  scratchStore: () => Promise<ScratchStore>;
  /** A registry over a folder no source reads, checked as the sources are (same checks, same variant rules). */
  folderRegistry: (dir: string) => WorkflowRegistry;
  /**
   * The server's execution service for one scenario: over the run's scratch store, with the scenario's
   * canned commands and checks, telling `observe` what each walk decided (the coverage), on the
   * scenario's clock (a wait on children that must time out moves it on).
   */
  executionService: (scenario: ScenarioParts) => ExecutionService;
}

export type {
  ChildRun,
  DelegationRun,
  Rejection,
  ScenarioResult,
  SentRequest,
  SuiteResult,
  TestRun,
} from './workflow-test-results.js';

/** How a run may be cut short. */
export interface RunOptions {
  /** Stops the run between two reports (a cancelled tool call); the scenarios left fail. */
  signal?: AbortSignal | undefined;
  /**
   * The work units the run may use (default TEST_LIMITS.maxWorkPerFile), and what spending them does:
   * `stop` (the command line) fails the scenario under way and those left, saying why; `refuse` (a tool
   * call) ends the run there, with `work.spent` for the caller to refuse it whole: no partial verdict.
   */
  work?: { max: number; spent: 'stop' | 'refuse' } | undefined;
}

/** Folders outside the sources, each read once as a source of its own. */
type Folders = Map<string, Promise<WorkflowRegistry>>;

/** A definition to test given directly (a draft), with what its executions pin. */
export interface DefinitionUnderTest {
  workflow: Workflow;
  hash: string;
  file?: string;
}

/**
 * Runs workflow tests. Built by the composition root with the server's registry, personas and
 * validation engine, and its builders of a folder's registry and a scenario's execution service; every
 * run opens its own scratch store.
 */
export class WorkflowTests {
  constructor(private readonly deps: WorkflowTestDeps) {}

  /** The workflows the server serves, by id: what the children of a delegating step run. */
  private readonly served = (id: string): Workflow | undefined => {
    const entry = this.deps.registry.get(id);
    return entry?.status === 'valid' ? entry.workflow : undefined;
  };

  /**
   * Runs the test files `paths` name (test files, workflow files, directories); none: every test file in
   * the server's source directories.
   */
  async runPaths(paths: readonly string[]): Promise<TestRun> {
    const { registry } = this.deps;
    const targets =
      paths.length > 0 ? paths : registry.sources.filter((s) => s.documents === undefined).map((s) => s.dir);
    const collected = await collectTestFiles(targets);
    // Sources that do not exist name nothing to test; paths given on purpose do.
    const problems = paths.length > 0 ? collected.problems : [];
    const suites: SuiteResult[] = [];
    // Each folder outside the sources is read once for all its test files.
    const folders = new Map<string, Promise<WorkflowRegistry>>();
    for (const file of collected.files) suites.push(await this.runFile(file, { folders }));
    return {
      suites,
      passed: suites.reduce((n, s) => n + s.passed, 0),
      failed: suites.reduce((n, s) => n + s.failed, 0),
      errors: suites.filter((s) => s.errors.length > 0).length + problems.length,
      problems,
    };
  }

  /** Runs one test file against the workflow beside it (or, failing that, the one the sources serve). */
  async runFile(file: string, options: RunOptions & { folders?: Folders } = {}): Promise<SuiteResult> {
    const parsed = await readTestFile(file);
    const tests = parsed.tests ?? parsed.salvaged;
    const id = testedWorkflowId(file, tests);
    if (tests === undefined || id === undefined)
      return invalid({ file, ...(id !== undefined ? { workflow_id: id } : {}) }, 'tests', parsed.errors);
    const found = await this.workflowBeside(file, id, tests, options.folders ?? new Map());
    if (!parsed.valid && !('workflow' in found))
      return invalid({ file, workflow_id: id }, 'tests', parsed.errors);
    if (!('workflow' in found)) {
      const errors = found.invalid === 'tests' ? placed(found.errors, parsed.locate) : found.errors;
      return invalid({ file, workflow_id: id }, found.invalid, errors);
    }
    return this.runTests(
      { workflow: found.workflow, hash: found.definitionHash ?? found.hash, file: found.file },
      parsed,
      file,
      options,
    );
  }

  /** Runs parsed tests against a definition (a draft, or a saved workflow). */
  async runTests(
    definition: DefinitionUnderTest,
    parsed: ParsedTests,
    file?: string,
    options: RunOptions = {},
  ): Promise<SuiteResult> {
    const { workflow } = definition;
    const base = {
      ...(file !== undefined ? { file } : {}),
      workflow_id: workflow.id,
      ...(definition.file !== undefined ? { workflow_file: definition.file } : {}),
    };
    if (!parsed.valid || parsed.tests === undefined) {
      // The ids an invalid file names are checked too: one round of errors, not one per fix.
      const unknownIds =
        parsed.salvaged !== undefined
          ? salvagedFindings(parsed.errors, checkTestsAgainst(workflow, parsed.salvaged, parsed.locate))
          : [];
      return invalid(base, 'tests', [...parsed.errors, ...unknownIds]);
    }
    const tests = parsed.tests;
    await this.deps.registry.ready();
    const unknown = [
      ...checkTestsAgainst(workflow, tests, parsed.locate),
      ...checkChildrenAgainst(workflow, tests, parsed.locate, this.served),
    ];
    if (tests.workflow !== undefined && tests.workflow !== workflow.id) {
      unknown.unshift({
        path: '/workflow',
        rule: 'workflow',
        message: `these tests are for workflow "${tests.workflow}", not "${workflow.id}"`,
        ...parsed.locate(['/workflow']).get('/workflow'),
      });
    }
    if (unknown.length > 0) return invalid(base, 'tests', unknown);
    await Promise.all([this.deps.registry.ready(), this.deps.personas.ready()]);
    const tally = new CoverageTally(workflow);
    const scratch = await this.deps.scratchStore();
    const scenarios: ScenarioResult[] = [];
    const work = options.work ?? { max: TEST_LIMITS.maxWorkPerFile, spent: 'stop' };
    const budget = new WorkBudget(work.max, work.spent, options.signal);
    try {
      for (const scenario of tests.scenarios) {
        scenarios.push(await this.runScenario(definition, tests, scenario, scratch, tally, budget));
        // A refused run ends where its budget did; its caller reports no verdict.
        if (budget.spent && budget.onSpent === 'refuse') break;
      }
    } finally {
      await scratch.dispose();
    }
    const passed = scenarios.filter((s) => s.passed).length;
    return {
      ...base,
      errors: [],
      scenarios,
      passed,
      failed: scenarios.length - passed,
      coverage: tally.report(),
      work: { used: budget.used, max: budget.max, spent: budget.spent },
    };
  }

  /**
   * The workflow a test file tests: the file beside it that defines the id (read as the sources read
   * it), else the definition the server's sources serve under that id.
   */
  private async workflowBeside(
    file: string,
    id: string,
    tests: TestFile,
    folders: Folders,
  ): Promise<LoadedWorkflow | { invalid: 'tests' | 'workflow'; errors: Violation[] }> {
    const { registry } = this.deps;
    await registry.ready();
    const dir = dirname(file);
    const served = registry.get(id);
    let entry: RegistryEntry | undefined =
      served !== undefined && dirname(served.file) === dir ? served : undefined;
    if (entry === undefined) {
      // A folder the sources do not read, or a definition a later source overrides: read the folder as a
      // source of its own (same checks, same variant rules).
      let reading = folders.get(dir);
      if (reading === undefined) {
        const beside = this.deps.folderRegistry(dir);
        reading = beside.ready().then(() => {
          beside.close();
          return beside;
        });
        folders.set(dir, reading);
      }
      entry = (await reading).get(id) ?? served;
    }
    if (entry?.status === 'valid') return entry;
    if (entry?.status === 'broken') {
      return {
        invalid: 'workflow',
        errors: entry.violations.map((v) => ({
          ...v,
          message: `the workflow under test (${entry.file}) is broken: ${v.message}`,
        })),
      };
    }
    return {
      invalid: 'tests',
      errors: [
        {
          path: tests.workflow !== undefined ? '/workflow' : '',
          rule: 'unknownWorkflow',
          message: `no workflow "${id}" beside this file or in any source`,
          actual: id,
        },
      ],
    };
  }

  private async runScenario(
    definition: DefinitionUnderTest,
    tests: TestFile,
    scenario: Scenario,
    scratch: ScratchStore,
    tally: CoverageTally,
    budget: WorkBudget,
  ): Promise<ScenarioResult> {
    const { workflow } = definition;
    const { store } = scratch;
    const loops: Record<string, number> = {};
    const commands = new CannedCommands(
      { ...tests.commands, ...scenario.commands },
      this.deps.engine,
      budget,
    );
    // The engine tells every walk of the scenario, its children's too: only the tested workflow's count.
    const events = new WalkEvents(workflow, (event) => {
      tally.observe(event);
      if (event.kind === 'loopExit') loops[event.loop] = event.iterations;
    });
    const clock = new ScenarioClock();
    const service = this.deps.executionService({
      store,
      commands,
      checks: new CannedChecks({ ...tests.checks, ...scenario.checks }),
      observe: events.observe,
      clock: clock.now,
    });
    const caller = localCaller();
    const executionId = `exec_test_${randomBytes(12).toString('hex')}`;
    const limit = scenario.max_reports ?? TEST_LIMITS.defaultMaxReports;
    const walk = new ScenarioWalk({ service, store, caller, budget, clock, events, limit });
    let error: ScenarioResult['error'];
    try {
      // Starting is work too (the inputs, the context, command steps before the first prompt).
      if (!budget.take(1)) throw new WorkSpent(budget.why);
      await walk.run(
        executionId,
        () =>
          service.start(
            {
              workflow_id: workflow.id,
              execution_id: executionId,
              definition: { workflow, hash: definition.hash },
              context: scenario.context,
              inputs: scenario.inputs,
            },
            caller,
          ),
        { workflow, tally, scripts: childrenScripts(scenario, tests) },
        AnswerBook.of(scenario, tests),
      );
    } catch (caught) {
      // A spent budget is said once, below, rather than as the scenario's error.
      if (!(caught instanceof WorkSpent))
        error =
          caught instanceof DomainFailure
            ? { code: caught.error.code, message: errorText(caught.error) }
            : { code: 'internal', message: (caught as Error).message ?? String(caught) };
    }
    const { reports, overLimit, rejected } = walk;
    let { stopped } = walk;
    if (budget.spent && stopped === undefined) stopped = budget.why;
    const exec = await store.getExecution(executionId);
    const rows = exec ? await store.getSteps(executionId) : [];
    const path = rows.map((r) => r.step_name);
    for (const id of path) tally.entered(id);
    // A loop still going at the end has run the rounds its steps were entered in.
    const going = new Map<string, number>();
    for (const row of rows) {
      const loop = enclosingLoop(workflow, row.step_name);
      if (loop !== undefined && loops[loop.id] === undefined && row.iteration !== null)
        going.set(loop.id, Math.max(going.get(loop.id) ?? 0, row.iteration));
    }
    for (const [id, n] of going) loops[id] = n;
    const finalContext: Context = exec?.context ?? {};
    const ran: RunFacts = {
      name: scenario.name,
      path,
      state: exec?.state ?? null,
      ...(exec && exec.state !== 'completed' && exec.current_step !== null
        ? { stopped_at: exec.current_step }
        : {}),
      rejected,
      loops,
      reports,
      requests: commands.requests,
      ...(exec && 'final_output' in exec.metadata ? { final_output: exec.metadata.final_output } : {}),
      ...(error !== undefined ? { error } : {}),
      ...(walk.delegations.length > 0 ? { delegations: walk.delegations } : {}),
      finalContext,
      childContexts: walk.childContexts,
    };
    const failures = unmet(scenario.expect ?? {}, ran);
    if (overLimit)
      failures.unshift(
        `stopped after ${limit} reports (max_reports); the walk did not end: is a loop endless?`,
      );
    if (stopped !== undefined) failures.unshift(`stopped: ${stopped}`);
    const { finalContext: _context, childContexts: _children, ...result } = ran;
    return { ...result, passed: failures.length === 0, failures };
  }
}

function invalid(
  base: Pick<SuiteResult, 'file' | 'workflow_id' | 'workflow_file'>,
  what: 'tests' | 'workflow',
  errors: Violation[],
): SuiteResult {
  return { ...base, errors, invalid: what, scenarios: [], passed: 0, failed: 0 };
}
