import * as z from 'zod';
import { DomainFailure, fail } from '../../engine/errors.js';
import type { DefinitionUnderTest, SuiteResult, WorkflowTests } from '../../executions/workflow-tests.js';
import type { Violation } from '../../model/violation.js';
import { IdSchema, type Workflow } from '../../model/workflow.js';
import { type CheckReport, DEFINITION_LIMITS } from '../../workflows/check.js';
import { contentVersion, type LoadedWorkflow } from '../../workflows/entry.js';
import { detectFormat } from '../../workflows/manifest-check.js';
import type { DefinitionFormat } from '../../workflows/parse.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { type ParsedTests, parseTests, readTestFile, testFilesBeside } from '../../workflows/test-files.js';
import { TEST_LIMITS, TOOL_TEST_LIMITS, WORK_UNIT_BYTES } from '../../workflows/test-format.js';
import { NextSchema, next } from '../next.js';
import { refuseUncheckedScenarios, retryingNotChecked, type SameCall } from '../not-checked.js';
import { ViolationSchema } from '../schemas.js';
import { defineTool, READ_ONLY, type ToolDefinition } from '../tool.js';

/** Tests as a tool takes them: test-file text (YAML or JSON), or the same as an object. */
export const TestsSchema = z
  .union([
    z.string().min(1).describe(`Test-file text, YAML or JSON (at most ${DEFINITION_LIMITS.maxBytes} bytes)`),
    z.record(z.string(), z.unknown()).describe('The test file as an object'),
  ])
  .describe(
    'Workflow tests (the format of <id>.test.yaml, schema resource workflowlookup://authoring/test-schema): {scenarios: [{name, context?, inputs?, steps?: {<step id>: answer or [answers]}, commands?, expect?}]}',
  );

export type TestsInput = z.infer<typeof TestsSchema>;

export function parseTestsInput(tests: TestsInput): Promise<ParsedTests> {
  return typeof tests === 'string'
    ? parseTests({ text: tests, format: detectFormat(tests) })
    : parseTests({ data: tests });
}

/** A violation in one line: "where path (line:column): message". */
export function violationLine(v: Violation, where?: string): string {
  const at = `${v.path || '(root)'}${v.line !== undefined ? ` (${v.line}:${v.column ?? 0})` : ''}`;
  return `${where ? `${where} ` : ''}${at}: ${v.message}`;
}

/** The tests of a saved workflow: the test file beside its file, or undefined when it has none. */
export async function savedTests(
  entry: LoadedWorkflow,
): Promise<{ file: string; parsed: ParsedTests } | undefined> {
  const [file] = await testFilesBeside(entry.file, entry.workflow.id);
  return file === undefined ? undefined : { file, parsed: await readTestFile(file) };
}

/** How larger suites run: what every refusal of a too-large suite ends with. */
const ELSEWHERE = `run them on the command line instead, \`workflowlookup test <test file>\` (up to ${TEST_LIMITS.maxScenarios} scenarios and ${TEST_LIMITS.maxWorkPerFile} work units per file), or split the scenarios over several calls`;

/**
 * Refuses, before anything runs, tests one call may not run: more scenarios, or a scenario allowed more
 * reports, than TOOL_TEST_LIMITS allow. What the walks then do is bounded by the run's work units.
 */
function refuseOversized(parsed: ParsedTests, workflowId: string): void {
  const scenarios = parsed.tests?.scenarios;
  if (!parsed.valid || scenarios === undefined) return; // runTests says what is wrong with them
  const { maxScenarios, maxReports } = TOOL_TEST_LIMITS;
  if (scenarios.length > maxScenarios) {
    fail({
      code: 'tests_too_large',
      message: `${scenarios.length} scenarios are more than one workflow test call runs (${maxScenarios}); nothing ran`,
      workflowId,
      limit: 'scenarios',
      max: maxScenarios,
      details: ELSEWHERE,
    });
  }
  const long = scenarios.find((s) => (s.max_reports ?? 0) > maxReports);
  if (long !== undefined) {
    fail({
      code: 'tests_too_large',
      message: `scenario "${long.name}" allows ${long.max_reports} reports (max_reports); a workflow test call allows at most ${maxReports} per scenario; nothing ran`,
      workflowId,
      limit: 'max_reports',
      max: maxReports,
      details: `lower its max_reports, or ${ELSEWHERE}`,
    });
  }
}

/**
 * The workflow test runs going now, per principal, for each app (keyed by its one WorkflowTests):
 * workflow_test and the tests of workflow_validate_manifest share the count; the command line, which
 * the owner runs on their own files, never takes part.
 */
const running = new WeakMap<WorkflowTests, Map<string, number>>();

/** Counts one more run of `principal`, or refuses it (`tests_busy`); the function returned ends it. */
function admit(service: WorkflowTests, principal: string): () => void {
  const held = running.get(service) ?? new Map<string, number>();
  running.set(service, held);
  const mine = held.get(principal) ?? 0;
  const max = TOOL_TEST_LIMITS.callsPerPrincipal;
  if (mine >= max) {
    fail({
      code: 'tests_busy',
      message: `${principal} has ${mine} workflow test run(s) going, the most one principal may have at once (${max}); nothing ran`,
      principal,
      running: mine,
      max,
    });
  }
  held.set(principal, mine + 1);
  return () => {
    const left = (held.get(principal) ?? 1) - 1;
    if (left > 0) held.set(principal, left);
    else held.delete(principal);
  };
}

/**
 * Runs `definition`'s tests for a tool call: refused before anything runs when they are larger than a
 * call may run, or when the principal already has TOOL_TEST_LIMITS.callsPerPrincipal runs going; bounded
 * by the call's work units while they run, and refused whole (no verdict) when those run out.
 */
async function runForCall(
  service: WorkflowTests,
  definition: DefinitionUnderTest,
  parsed: ParsedTests,
  file: string | undefined,
  caller: { principal?: string | undefined; signal?: AbortSignal | undefined },
): Promise<SuiteResult> {
  const id = definition.workflow.id;
  refuseOversized(parsed, id);
  const release = caller.principal === undefined ? () => {} : admit(service, caller.principal);
  let result: SuiteResult;
  try {
    result = await service.runTests(definition, parsed, file, {
      signal: caller.signal,
      work: { max: TOOL_TEST_LIMITS.maxWork, spent: 'refuse' },
    });
  } finally {
    release();
  }
  if (result.work?.spent) {
    fail({
      code: 'tests_too_large',
      message: `these tests need more than the ${result.work.max} work units one workflow test call may use (one for each scenario's start, each report of up to ${WORK_UNIT_BYTES / 1024} KiB and each canned API call); they were stopped there and no verdict is given`,
      workflowId: id,
      limit: 'work',
      max: result.work.max,
      details: ELSEWHERE,
    });
  }
  return result;
}

const CountSchema = z.object({ covered: z.number(), total: z.number() });

const ScenarioSchema = z.object({
  name: z.string(),
  passed: z.boolean(),
  failures: z.array(z.string()).describe('Each expectation that did not hold'),
  path: z.array(z.string()).describe('Every step entered, in order'),
  state: z.string().nullable().describe('Execution state at the end (null: never started)'),
  stopped_at: z.string().optional().describe('The step it ended on, when it did not finish'),
  rejected: z
    .array(z.object({ step: z.string(), issues: z.array(z.string()) }))
    .describe('Reports the engine refused, in order'),
  loops: z.record(z.string(), z.number()).describe('Rounds each loop ran'),
  reports: z.number().describe('Reports made for the agent'),
  final_output: z.unknown().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional().describe('A call that failed'),
});

export interface WorkflowTestDeps {
  registry: WorkflowRegistry;
  tests: () => Promise<WorkflowTests>;
  /** The `authoring` check of a manifest text (the one every authoring tool shares). */
  check: (content: string, format: DefinitionFormat | undefined) => Promise<CheckReport>;
}

/**
 * workflow_test: a draft's (or a saved workflow's) tests, run through the server's engine in a scratch
 * store, with their coverage; nothing is saved and no execution is left behind.
 */
export function workflowTestTool(deps: WorkflowTestDeps): ToolDefinition {
  const { registry } = deps;
  return defineTool({
    name: 'workflow_test',
    scope: 'read',
    title: 'Run a workflow’s tests',
    description: `Runs workflow tests through the server's engine without saving anything: scenarios that report what an agent would at each step (and canned API answers for command steps), checked against what must follow (step path, refused reports and their messages, loop rounds, final output, end state). Test a draft (content + tests) before workflow_save, or a saved workflow (workflow_id; default tests: its <id>.test.yaml). Reports each scenario and the coverage: steps entered, conditions taken both ways, loop exits, and the paths no scenario walks. One call runs at most ${TOOL_TEST_LIMITS.maxScenarios} scenarios and ${TOOL_TEST_LIMITS.maxWork} work units (larger suites: \`workflowlookup test\` on the command line).`,
    inputSchema: z
      .strictObject({
        content: z
          .string()
          .min(1)
          .optional()
          .describe('A draft manifest, JSON or YAML text (tested as it would be saved)'),
        format: z.enum(['json', 'yaml']).optional().describe('Format of content (default: detected)'),
        workflow_id: IdSchema.optional().describe('A saved workflow to test instead of a draft'),
        tests: TestsSchema.optional().describe(
          'The tests (test-file text or object); default: the test file beside the saved workflow of that id',
        ),
      })
      .refine((v) => (v.content === undefined) !== (v.workflow_id === undefined), {
        message: 'give exactly one of content (a draft) or workflow_id (a saved workflow)',
        path: ['content'],
      }),
    outputSchema: z.object({
      workflow_id: z.string().optional().describe('The workflow tested'),
      valid: z.boolean().describe('The manifest and the tests are well-formed, so the scenarios ran'),
      passed: z.number().describe('Scenarios that passed'),
      failed: z.number().describe('Scenarios that failed'),
      scenarios: z.array(ScenarioSchema),
      coverage: z
        .object({
          steps: CountSchema,
          branches: CountSchema,
          loop_exits: CountSchema,
          join_outcomes: CountSchema.optional(),
        })
        .optional()
        .describe(
          'Steps entered, condition outcomes seen (two per condition), loop exits taken, and for a delegating workflow the join outcomes seen',
        ),
      untested: z.array(z.string()).describe('The paths no scenario walks'),
      test_file: z.string().optional().describe('The test file that ran, when it came from one'),
      work: z
        .object({ used: z.number(), max: z.number() })
        .optional()
        .describe(
          `Work units the run used, of the most one call may use (a scenario's start, a report of up to ${WORK_UNIT_BYTES / 1024} KiB, a canned API call: one each); past them the call is refused as TESTS_TOO_LARGE`,
        ),
      errors: z.array(z.string()).describe('Why nothing ran: "manifest|tests path (line:column): message"'),
      violations: z.array(ViolationSchema).describe('The errors, structured'),
      next: NextSchema,
    }),
    annotations: READ_ONLY,
    summarize: (r) =>
      r.valid
        ? `${r.passed} passed, ${r.failed} failed${r.untested.length > 0 ? `; ${r.untested.length} untested path(s)` : ''}.`
        : `${r.errors.length} error(s); nothing ran.`,
    handler: async ({ content, format, workflow_id, tests }, ctx) => {
      const empty = { passed: 0, failed: 0, scenarios: [], untested: [] };
      const again: SameCall = {
        tool: 'workflow_test',
        arguments: {
          ...(format !== undefined ? { format } : {}),
          ...(workflow_id !== undefined ? { workflow_id } : {}),
        },
        fill: {
          ...(content !== undefined ? { content: 'the same draft, unchanged' } : {}),
          ...(tests !== undefined ? { tests: 'the same tests, unchanged' } : {}),
        },
      };
      let definition: { workflow: Workflow; hash: string; file?: string };
      if (content !== undefined) {
        const report = await retryingNotChecked(again, () => deps.check(content, format));
        if (!report.valid || report.workflow === undefined) {
          return {
            ...(report.id !== undefined ? { workflow_id: report.id } : {}),
            valid: false,
            ...empty,
            errors: report.errors.map((v) => violationLine(v, 'manifest')),
            violations: report.errors,
            next: [
              next('workflow_validate_manifest', {}, { content: 'the manifest with these errors fixed' }),
            ],
          };
        }
        definition = { workflow: report.workflow, hash: contentVersion(content) };
      } else {
        await registry.ready();
        const id = workflow_id as string;
        const entry = registry.require(id);
        definition = { workflow: entry.workflow, hash: entry.definitionHash ?? entry.hash, file: entry.file };
      }
      const id = definition.workflow.id;
      let parsed: ParsedTests;
      let testFile: string | undefined;
      if (tests !== undefined) parsed = await parseTestsInput(tests);
      else {
        await registry.ready();
        const saved = registry.get(id);
        const found = saved?.status === 'valid' ? await savedTests(saved) : undefined;
        if (found === undefined) {
          fail({
            code: 'invalid_params',
            message: 'Invalid params',
            details: `no tests to run: ${saved === undefined ? `no saved workflow "${id}"` : `no test file beside ${saved.file} (${id}.test.yaml or ${id}.test.json)`}; give the tests in "tests"`,
          });
        }
        parsed = found.parsed;
        testFile = found.file;
      }
      const result = await retryingNotChecked(again, async () =>
        runForCall(await deps.tests(), definition, parsed, testFile, ctx.caller),
      );
      refuseUncheckedScenarios(result, again);
      return toolResult(result, content !== undefined);
    },
  });
}

function toolResult(result: SuiteResult, draft: boolean) {
  const base = {
    ...(result.workflow_id !== undefined ? { workflow_id: result.workflow_id } : {}),
    ...(result.file !== undefined ? { test_file: result.file } : {}),
    ...(result.work !== undefined ? { work: { used: result.work.used, max: result.work.max } } : {}),
  };
  if (result.errors.length > 0) {
    return {
      ...base,
      valid: false,
      passed: 0,
      failed: 0,
      scenarios: [],
      untested: [],
      errors: result.errors.map((v) =>
        violationLine(v, result.invalid === 'workflow' ? 'manifest' : 'tests'),
      ),
      violations: result.errors,
      next: [
        next('workflow_test', {}, { tests: 'the tests with these errors fixed', content: 'the same draft' }),
      ],
    };
  }
  const coverage = result.coverage;
  const untested = coverage?.untested ?? [];
  const failedNext = [
    next(
      'workflow_test',
      {},
      {
        [draft ? 'content' : 'tests']: draft
          ? 'the draft, changed so the failing scenarios pass (or the tests, if they expect the wrong thing)'
          : 'the tests, changed where they expect the wrong thing',
      },
    ),
  ];
  return {
    ...base,
    valid: true,
    passed: result.passed,
    failed: result.failed,
    scenarios: result.scenarios,
    ...(coverage
      ? {
          coverage: {
            steps: { covered: coverage.steps.covered, total: coverage.steps.total },
            branches: { covered: coverage.branches.covered, total: coverage.branches.total },
            loop_exits: { covered: coverage.loops.covered, total: coverage.loops.total },
            // Only for a workflow that delegates: held, failed or continued, timed out, per delegating step.
            ...(coverage.joins.total > 0
              ? { join_outcomes: { covered: coverage.joins.covered, total: coverage.joins.total } }
              : {}),
          },
        }
      : {}),
    untested,
    errors: [],
    violations: [],
    next:
      result.failed > 0
        ? failedNext
        : draft
          ? [next('workflow_save', {}, { content: 'the draft you just tested' })]
          : [],
  };
}

/**
 * The hint workflow_validate_manifest gives a valid manifest that has tests (given, or beside the saved
 * workflow of its id): how its scenarios fare against it, and the paths none walks.
 */
export async function testHint(
  deps: Pick<WorkflowTestDeps, 'registry' | 'tests'>,
  workflow: Workflow,
  hash: string,
  tests: TestsInput | undefined,
  signal?: AbortSignal,
  /** The call to send again when a scenario's rules were not checked in time. */
  again?: SameCall,
  /** Who calls: its runs count against TOOL_TEST_LIMITS.callsPerPrincipal (not counted when absent). */
  principal?: string,
): Promise<
  | { tests: { passed: number; failed: number; file?: string; errors: string[] }; untested: string[] }
  | undefined
> {
  let parsed: ParsedTests;
  let file: string | undefined;
  if (tests !== undefined) parsed = await parseTestsInput(tests);
  else {
    await deps.registry.ready();
    const saved = deps.registry.get(workflow.id);
    const found = saved?.status === 'valid' ? await savedTests(saved) : undefined;
    if (found === undefined) return undefined;
    ({ parsed, file } = found);
  }
  let result: SuiteResult;
  try {
    result = await runForCall(await deps.tests(), { workflow, hash }, parsed, file, { principal, signal });
  } catch (error) {
    // Tests too large, or all the principal's runs going: the hint says so, and the manifest's answer stands.
    const refused = error instanceof DomainFailure ? error.error : undefined;
    if (refused?.code !== 'tests_too_large' && refused?.code !== 'tests_busy') throw error;
    const why = `not run: ${refused.message}${refused.code === 'tests_too_large' ? `; ${refused.details}` : ''}`;
    return {
      tests: { passed: 0, failed: 0, ...(file !== undefined ? { file } : {}), errors: [why] },
      untested: [],
    };
  }
  if (again !== undefined) refuseUncheckedScenarios(result, again);
  return {
    tests: {
      passed: result.passed,
      failed: result.failed,
      ...(file !== undefined ? { file } : {}),
      errors: result.errors.map((v) => violationLine(v, 'tests')),
    },
    untested: result.coverage?.untested ?? [],
  };
}
