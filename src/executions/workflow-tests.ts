/**
 * Workflow tests: the scenarios of a test file walked through the server's own execution service (the
 * same engine, validation, contracts, context checks and loop rules), over a scratch SQLite store that is
 * thrown away after the run. The scenario plays the agent (its reports at each step) and the APIs of
 * command steps (canned answers through the real command runner: templates, repeat, output_contract);
 * no server process, no network. What must follow is checked against what the store recorded, and the
 * engine's own decisions are counted as coverage.
 */
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { LoadedCatalog } from '../catalogs/catalog-registry.js';
import { type CommandCalls, CommandStepRunner } from '../catalogs/command-steps.js';
import { CommandFailure, type CommandFailureReason } from '../catalogs/http-runner.js';
import type { CatalogCommand } from '../catalogs/openapi-plan.js';
import type { Context } from '../engine/conditions.js';
import { type CoverageReport, CoverageTally } from '../engine/coverage.js';
import { type DomainError, DomainFailure } from '../engine/errors.js';
import { findPromptStep } from '../engine/next-step.js';
import type { ExecutionState } from '../engine/state-machine.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import { enclosingLoop } from '../engine/workrail.js';
import type { Violation } from '../model/violation.js';
import type { Workflow } from '../model/workflow.js';
import type { ScratchStore } from '../store/scratch-store.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import { type LoadedWorkflow, type RegistryEntry, WorkflowRegistry } from '../workflows/registry.js';
import {
  checkTestsAgainst,
  collectTestFiles,
  type ParsedTests,
  placed,
  readTestFile,
  testedWorkflowId,
} from '../workflows/test-files.js';
import {
  type Answer,
  type CheckAnswers,
  COMMAND_ERROR_REASONS,
  type Expectation,
  reportUnits,
  type Scenario,
  TEST_LIMITS,
  type TestFile,
} from '../workflows/test-format.js';
import type { CheckResult, CheckRunner } from './checks.js';
import { localCaller, type Outcome, type StepOutput } from './execution-model.js';
import { ExecutionService } from './execution-service.js';
import { TokenService } from './tokens.js';

// The canned failure reasons are exactly those a real call can give.
const _reasons: readonly CommandFailureReason[] = COMMAND_ERROR_REASONS;
void _reasons;

export interface WorkflowTestDeps {
  /** The server's sources: a test file's workflow is looked up here first. */
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  /** Environment values templates may read (as the server allows). */
  allowedEnv: Record<string, string>;
  allowedEnvNames: ReadonlySet<string>;
  /** A store for one run, thrown away after it. */
  scratchStore: () => Promise<ScratchStore>;
}

/** A request a command step sent (to its canned API). */
export interface SentRequest {
  with: Record<string, unknown>;
  body?: unknown;
}

/** One report the engine refused. */
export interface Rejection {
  step: string;
  issues: string[];
}

export interface ScenarioResult {
  name: string;
  passed: boolean;
  /** Each expectation that did not hold, in a line. */
  failures: string[];
  /** Every step entered, in order (command steps included). */
  path: string[];
  /** The execution state at the end; null when it never started. */
  state: ExecutionState | null;
  /** The step the execution is on at the end, when it did not finish. */
  stopped_at?: string;
  rejected: Rejection[];
  /** Rounds each loop reached ran. */
  loops: Record<string, number>;
  /** Reports made for the agent. */
  reports: number;
  /** What each command step sent, call by call (`with` and `body` rendered). */
  requests: Record<string, SentRequest[]>;
  final_output?: unknown;
  /** A call that failed (a start refused, a command step that failed). */
  error?: { code: string; message: string };
}

export interface SuiteResult {
  /** The test file (absent for tests given inline). */
  file?: string;
  workflow_id?: string;
  /** The definition under test. */
  workflow_file?: string;
  /** Why nothing ran: the test file (or the workflow under test) is malformed. */
  errors: Violation[];
  /** What the errors are about. */
  invalid?: 'tests' | 'workflow';
  scenarios: ScenarioResult[];
  passed: number;
  failed: number;
  coverage?: CoverageReport;
  /** The work units the run used, of the most it could (`spent`: it needed more, and was stopped). */
  work?: { used: number; max: number; spent: boolean };
}

export interface TestRun {
  suites: SuiteResult[];
  passed: number;
  failed: number;
  /** Test files (or paths) that could not be run. */
  errors: number;
  /** Paths that name nothing to test. */
  problems: { path: string; message: string }[];
}

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

/**
 * The work units a run may still use, taken as the walk does the work (a start, a report, an API call):
 * what bounds a run is what it did, never how long it took, so a loaded machine cannot change a verdict.
 */
class WorkBudget {
  used = 0;
  spent = false;

  constructor(
    readonly max: number,
    readonly onSpent: 'stop' | 'refuse',
    readonly signal: AbortSignal | undefined,
  ) {}

  /** Takes `units`, or none when they do not fit (the budget is then spent). */
  take(units: number): boolean {
    // Once spent, always: the walks after it never start, whatever their first step would cost.
    if (this.spent || this.used + units > this.max) {
      this.spent = true;
      return false;
    }
    this.used += units;
    return true;
  }

  get why(): string {
    return `the test file's budget of ${this.max} work units is spent`;
  }
}

/** Thrown by a canned API call the budget has no unit left for: it ends the walk it is part of. */
class WorkSpent extends Error {}

/** Folders outside the sources, each read once as a source of its own. */
type Folders = Map<string, Promise<WorkflowRegistry>>;

/** A definition to test given directly (a draft), with what its executions pin. */
export interface DefinitionUnderTest {
  workflow: Workflow;
  hash: string;
  file?: string;
}

const DEFAULT_SUMMARY = 'done';
/** Longest value quoted in a failure line. */
const MAX_SHOWN = 200;

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 3)}...` : text;
}

function errorText(error: DomainError): string {
  const details = 'details' in error ? error.details : undefined;
  const violations =
    'violations' in error && Array.isArray(error.violations)
      ? error.violations.map((v: Violation) => `${v.path || '(root)'}: ${v.message}`).join('; ')
      : undefined;
  return [error.message, details, violations].filter(Boolean).join(': ');
}

/**
 * The n-th (from 0) of a list of canned answers, each standing for `times` uses (default 1); past the
 * end, the last one holds. Steps, checks and command responses all count this way.
 */
function nthOf<T extends { times?: number | undefined }>(entries: readonly T[], n: number): T | undefined {
  let seen = 0;
  for (const e of entries) {
    seen += e.times ?? 1;
    if (n < seen) return e;
  }
  return entries.at(-1);
}

/** The answers of one scenario, read in order per step (the last entry repeats). */
class AnswerBook {
  private readonly used = new Map<string, number>();

  constructor(
    private readonly scenario: Scenario,
    private readonly file: TestFile,
  ) {}

  private entries(stepId: string): (Answer & { times?: number | undefined })[] {
    const given = this.scenario.steps?.[stepId] ?? this.file.steps?.[stepId];
    if (given === undefined) return [{}];
    return Array.isArray(given) ? given : [given];
  }

  private total(stepId: string): number {
    return this.entries(stepId).reduce((n, e) => n + (e.times ?? 1), 0);
  }

  /** The step's last report used its final answer: the next one would say the same. */
  exhausted(stepId: string): boolean {
    return (this.used.get(stepId) ?? 0) >= this.total(stepId);
  }

  /** The step's n-th report (from 0) with the defaults under it: the entry whose `times` cover n, else the last. */
  private answer(stepId: string, n: number): Answer {
    const { times: _times, ...answer } = nthOf(this.entries(stepId), n) ?? {};
    return { ...this.file.defaults, ...this.scenario.defaults, ...answer };
  }

  next(stepId: string): StepOutput {
    const n = this.used.get(stepId) ?? 0;
    this.used.set(stepId, n + 1);
    const { approval: _decision, approval_reason: _reason, ...output } = this.answer(stepId, n);
    return { ...output, summary: output.summary ?? DEFAULT_SUMMARY };
  }

  /** What the person decides about the step's latest report (its answer's `approval`, default approve). */
  decision(stepId: string): { decision: 'approve' | 'reject'; reason: string | undefined } {
    const merged = this.answer(stepId, Math.max(0, (this.used.get(stepId) ?? 1) - 1));
    return { decision: merged.approval ?? 'approve', reason: merged.approval_reason };
  }
}

/** Server-run checks answered from the test file (`checks`): the n-th run gets the n-th entry; unnamed pass. */
class CannedChecks implements CheckRunner {
  readonly configured = true;
  private readonly runs = new Map<string, number>();

  constructor(private readonly table: Record<string, CheckAnswers>) {}

  known(): boolean {
    return true;
  }

  available(): void {}

  async run(name: string): Promise<CheckResult> {
    const given = this.table[name];
    type Entry = {
      passed?: boolean | undefined;
      exit_code?: number | undefined;
      output?: string | undefined;
      times?: number | undefined;
    };
    const entries: Entry[] = given === undefined ? [{}] : Array.isArray(given) ? given : [given];
    const n = this.runs.get(name) ?? 0;
    this.runs.set(name, n + 1);
    const entry: Entry = nthOf(entries, n) ?? {};
    const passed = entry.passed ?? true;
    const tail = entry.output ?? '';
    return {
      check: name,
      passed,
      exit_code: entry.exit_code ?? (passed ? 0 : 1),
      timed_out: false,
      duration_ms: 0,
      output_bytes: Buffer.byteLength(tail),
      truncated: false,
      tail,
    };
  }
}

/** The operator a workflow test's approvals are decided by. */
const TEST_DECIDER = { principal: null, name: 'workflow test', via: 'cli' as const, operator: true };

type Responses = NonNullable<TestFile['commands']>;
type ResponseEntry = Exclude<Responses[string], unknown[]> & { times?: number | undefined };

/** A catalog that exists only in a test: every catalog a workflow names is there and enabled. */
function cannedCatalog(id: string): LoadedCatalog {
  return {
    config: {
      id,
      base_url: 'http://canned.invalid',
      auth: null,
      title: id,
      vendor: null,
      enabled: true,
      source: 'workflow test',
      imported_at: '',
      manifest: '',
    },
    manifest: { catalog_id: id, commands: [], providers: [], warnings: [] },
    configPath: '',
    manifestPath: '',
  };
}

function cannedCommand(name: string): CatalogCommand {
  return {
    name,
    group: 'default',
    method: 'GET',
    path: '/',
    summary: '',
    parameters: [],
    body_required: false,
    idempotent: true,
  };
}

/**
 * Command steps answered from the test file: the real command runner (templates rendered, `repeat`
 * polled without waiting, `output_contract` checked, failures classified) over canned API answers.
 */
class CannedCommands {
  private readonly used = new Map<string, number>();
  /** What each step sent, call by call. */
  readonly requests: Record<string, SentRequest[]> = {};
  readonly catalogs = {
    get: (id: string): LoadedCatalog | undefined => cannedCatalog(id),
    ready: async (): Promise<void> => undefined,
  };
  readonly runner: Pick<CommandStepRunner, 'run'>;

  constructor(
    private readonly responses: Responses,
    engine: ValidationEngine,
    private readonly budget: WorkBudget,
  ) {
    this.runner = {
      run: (step, scope, key, options) => {
        // Virtual time: canned answers take none, and each poll's wait moves it, so `repeat.timeout`
        // gives the same verdict on any machine, however loaded.
        let virtual = 0;
        const sleep = async (ms: number) => {
          virtual += ms;
        };
        return new CommandStepRunner(this.callsFor(step.id), engine, { sleep, now: () => virtual }).run(
          step,
          scope,
          key,
          options,
        );
      },
    };
  }

  private next(stepId: string): ResponseEntry | undefined {
    const given = this.responses[stepId];
    if (given === undefined) return undefined;
    const entries: ResponseEntry[] = Array.isArray(given) ? given : [given];
    const n = this.used.get(stepId) ?? 0;
    this.used.set(stepId, n + 1);
    return nthOf(entries, n);
  }

  private callsFor(stepId: string): CommandCalls {
    return {
      ready: async () => undefined,
      resolve: async (ref) => {
        const [catalog = '', command = ''] = ref.split(' ');
        return { catalog: cannedCatalog(catalog), command: cannedCommand(command) };
      },
      call: async (_catalog, _command, options) => {
        // Each call is work (a `repeat` polls up to 1,000 times, and no report stands between them).
        if (!this.budget.take(1)) throw new WorkSpent(this.budget.why);
        this.requests[stepId] ??= [];
        this.requests[stepId].push({
          with: options.params,
          ...(options.body !== undefined ? { body: options.body } : {}),
        });
        const response = this.next(stepId);
        if (response === undefined) {
          throw new Error(
            `command step "${stepId}" has no canned API answer: add commands.${stepId} to the scenario or the file`,
          );
        }
        if (response.error !== undefined) {
          const { reason, message, status } = response.error;
          throw new CommandFailure(message ?? `canned ${reason}`, reason, status, response.output);
        }
        return {
          status: response.status ?? 200,
          output: response.output ?? null,
          attempts: 1,
          duration_ms: 0,
        };
      },
    };
  }
}

/** Whether `actual` holds everything `expected` names (objects by subset, anything else deep-equal). */
function holds(expected: unknown, actual: unknown): boolean {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const record = actual as Record<string, unknown>;
    return Object.entries(expected as Record<string, unknown>).every(([k, v]) => holds(v, record[k]));
  }
  return isDeepStrictEqual(expected, actual);
}

/** What a scenario's run left behind, for its expectations. */
type RunFacts = Omit<ScenarioResult, 'passed' | 'failures'> & { finalContext: Context };

/** What a scenario expected that did not happen, each in a line. */
function unmet(expect: Expectation, result: RunFacts): string[] {
  const out: string[] = [];
  if (expect.error !== undefined) {
    const { code, message } = expect.error;
    if (result.error === undefined) out.push(`error: expected ${code ?? 'an error'}, but no call failed`);
    else {
      if (code !== undefined && code.toLowerCase() !== result.error.code.toLowerCase())
        out.push(`error: expected ${code}, got ${result.error.code}: ${result.error.message}`);
      if (message !== undefined && !result.error.message.toLowerCase().includes(message.toLowerCase()))
        out.push(
          `error: expected a message containing ${shown(message)}, got ${shown(result.error.message)}`,
        );
    }
  } else if (result.error !== undefined) {
    out.push(`unexpected error ${result.error.code}: ${result.error.message}`);
  }
  const state =
    expect.state ?? (expect.stopped_at !== undefined || expect.error !== undefined ? undefined : 'completed');
  if (state !== undefined && result.state !== state) {
    const last = result.rejected.at(-1);
    const why =
      result.stopped_at !== undefined
        ? ` (on "${result.stopped_at}"${last?.step === result.stopped_at ? `, refused: ${last.issues.join('; ')}` : ''})`
        : '';
    out.push(`state: expected ${state}, got ${result.state ?? 'never started'}${why}`);
  }
  if (expect.stopped_at !== undefined && result.stopped_at !== expect.stopped_at)
    out.push(
      `stopped_at: expected "${expect.stopped_at}", got ${result.stopped_at ? `"${result.stopped_at}"` : 'none'}`,
    );
  if (expect.path !== undefined && !isDeepStrictEqual(expect.path, result.path)) {
    const at = expect.path.findIndex((id, i) => result.path[i] !== id);
    const where = at === -1 ? expect.path.length : at;
    out.push(
      `path: expected [${expect.path.join(', ')}], got [${result.path.join(', ')}] (first difference at position ${where + 1})`,
    );
  }
  const visits = (id: string) => result.path.filter((p) => p === id).length;
  for (const [id, n] of Object.entries(expect.visits ?? {})) {
    if (visits(id) !== n) out.push(`visits: expected "${id}" ${n} time(s), got ${visits(id)}`);
  }
  for (const id of expect.skipped ?? []) {
    if (visits(id) > 0) out.push(`skipped: expected "${id}" never entered, got ${visits(id)} time(s)`);
  }
  if (expect.rejected !== undefined) {
    const matches = (want: { step: string; message?: string | undefined }, got: Rejection | undefined) =>
      got !== undefined &&
      got.step === want.step &&
      (want.message === undefined ||
        got.issues.some((i) => i.toLowerCase().includes((want.message as string).toLowerCase())));
    const wrong = expect.rejected.findIndex((want, i) => !matches(want, result.rejected[i]));
    if (wrong !== -1 || expect.rejected.length !== result.rejected.length) {
      const got = result.rejected.map((r) => `${r.step}: ${r.issues.join('; ')}`);
      out.push(
        `rejected: expected ${expect.rejected.length} refused report(s) [${expect.rejected
          .map((r) => (r.message ? `${r.step}: ${shown(r.message)}` : r.step))
          .join(', ')}], got ${result.rejected.length}${got.length > 0 ? ` [${got.join(' | ')}]` : ''}`,
      );
    }
  }
  for (const [id, n] of Object.entries(expect.loops ?? {})) {
    const got = result.loops[id] ?? 0;
    if (got !== n) out.push(`loops: expected "${id}" to run ${n} round(s), got ${got}`);
  }
  if (expect.context !== undefined) {
    for (const [key, value] of Object.entries(expect.context)) {
      if (!holds(value, result.finalContext[key]))
        out.push(`context.${key}: expected ${shown(value)}, got ${shown(result.finalContext[key])}`);
    }
  }
  for (const [id, want] of Object.entries(expect.requests ?? {})) {
    const sent = result.requests[id] ?? [];
    const wanted = Array.isArray(want) ? want : [want];
    wanted.forEach((request, i) => {
      if (!holds(request, sent[i]))
        out.push(
          `requests.${id}[${i}]: expected ${shown(request)}, got ${sent[i] ? shown(sent[i]) : 'no request'}`,
        );
    });
    if (Array.isArray(want) && sent.length !== want.length)
      out.push(`requests.${id}: expected ${want.length} call(s), got ${sent.length}`);
  }
  if ('final_output' in expect && !isDeepStrictEqual(expect.final_output, result.final_output))
    out.push(`final_output: expected ${shown(expect.final_output)}, got ${shown(result.final_output)}`);
  return out;
}

/**
 * Runs workflow tests. Built by the composition root with the server's registry, personas and
 * validation engine; every run opens its own scratch store.
 */
export class WorkflowTests {
  private readonly tokens = new TokenService(randomBytes(32));

  constructor(private readonly deps: WorkflowTestDeps) {}

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
    const id = testedWorkflowId(file, parsed.tests);
    if (!parsed.valid || parsed.tests === undefined || id === undefined)
      return invalid({ file, ...(id !== undefined ? { workflow_id: id } : {}) }, 'tests', parsed.errors);
    const found = await this.workflowBeside(file, id, parsed.tests, options.folders ?? new Map());
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
    if (!parsed.valid || parsed.tests === undefined) return invalid(base, 'tests', parsed.errors);
    const tests = parsed.tests;
    const unknown = checkTestsAgainst(workflow, tests, parsed.locate);
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
    const { registry, engine, allowedEnvNames } = this.deps;
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
        const beside = new WorkflowRegistry([{ kind: 'runtime', dir }], {
          engine,
          allowedEnv: allowedEnvNames,
        });
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
    const service = new ExecutionService({
      store,
      registry: this.deps.registry,
      personas: this.deps.personas,
      engine: this.deps.engine,
      tokens: this.tokens,
      commands,
      checks: new CannedChecks({ ...tests.checks, ...scenario.checks }),
      allowedEnv: this.deps.allowedEnv,
      observe: (event) => {
        tally.observe(event);
        if (event.kind === 'loopExit') loops[event.loop] = event.iterations;
      },
    });
    const caller = localCaller();
    const answers = new AnswerBook(scenario, tests);
    const executionId = `exec_test_${randomBytes(12).toString('hex')}`;
    const rejected: Rejection[] = [];
    const limit = scenario.max_reports ?? TEST_LIMITS.defaultMaxReports;
    let reports = 0;
    let error: ScenarioResult['error'];
    let overLimit = false;
    let stopped: string | undefined;
    try {
      // Starting is work too (the inputs, the context, command steps before the first prompt).
      if (!budget.take(1)) throw new WorkSpent(budget.why);
      let outcome: Outcome = await service.start(
        {
          workflow_id: workflow.id,
          execution_id: executionId,
          definition: { workflow, hash: definition.hash },
          context: scenario.context,
          inputs: scenario.inputs,
        },
        caller,
      );
      for (;;) {
        if (outcome.kind !== 'step' && outcome.kind !== 'rejected') break;
        const stepId = outcome.kind === 'step' ? outcome.view.step_name : outcome.step_name;
        const step = findPromptStep(workflow, stepId);
        const context = (await store.getExecution(executionId))?.context ?? {};
        if (step === undefined || outcome.token === null) break;
        if (outcome.kind === 'step') tally.handedOut(step, context);
        else {
          rejected.push({ step: stepId, issues: outcome.validation.issues });
          // The agent has nothing else to say at this step: the execution stays on it.
          if (answers.exhausted(stepId)) break;
        }
        if (reports >= limit) {
          overLimit = true;
          break;
        }
        if (budget.signal?.aborted) {
          stopped = 'the run was cancelled';
          break;
        }
        const output = answers.next(stepId);
        if (!budget.take(reportUnits(output))) break;
        // Each report is a few synchronous SQLite transactions: let other requests in between them.
        await new Promise((resolve) => setImmediate(resolve));
        tally.reported(step, { ...context, ...(output.context ?? {}) });
        reports += 1;
        outcome = await service.nextStep(outcome.token, output, caller);
        if (outcome.kind === 'awaiting_approval' && outcome.token !== null) {
          // A person decides, as the test says; the agent's poll then gets the decision.
          if (!budget.take(1)) break;
          const { decision, reason } = answers.decision(stepId);
          await service.decide(executionId, decision, TEST_DECIDER, reason, {
            approval_id: outcome.approval.approval_id,
          });
          outcome = await service.nextStep(outcome.token, { summary: 'waiting for approval' }, caller);
        }
      }
    } catch (caught) {
      // A spent budget is said once, below, rather than as the scenario's error.
      if (!(caught instanceof WorkSpent))
        error =
          caught instanceof DomainFailure
            ? { code: caught.error.code, message: errorText(caught.error) }
            : { code: 'internal', message: (caught as Error).message ?? String(caught) };
    }
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
      finalContext,
    };
    const failures = unmet(scenario.expect ?? {}, ran);
    if (overLimit)
      failures.unshift(
        `stopped after ${limit} reports (max_reports); the walk did not end: is a loop endless?`,
      );
    if (stopped !== undefined) failures.unshift(`stopped: ${stopped}`);
    const { finalContext: _context, ...result } = ran;
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
