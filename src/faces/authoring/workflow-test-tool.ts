import * as z from 'zod';
import { fail } from '../../engine/errors.js';
import type { SuiteResult, WorkflowTests } from '../../executions/workflow-tests.js';
import type { Violation } from '../../model/violation.js';
import { IdSchema, type Workflow } from '../../model/workflow.js';
import { type CheckReport, DEFINITION_LIMITS } from '../../workflows/check.js';
import { detectFormat } from '../../workflows/manifest-check.js';
import type { DefinitionFormat } from '../../workflows/parse.js';
import { contentVersion, type LoadedWorkflow, type WorkflowRegistry } from '../../workflows/registry.js';
import { type ParsedTests, parseTests, readTestFile, testFilesBeside } from '../../workflows/test-files.js';
import { NextSchema, next } from '../next.js';
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
    description:
      "Runs workflow tests through the server's engine without saving anything: scenarios that report what an agent would at each step (and canned API answers for command steps), checked against what must follow (step path, refused reports and their messages, loop rounds, final output, end state). Test a draft (content + tests) before workflow_save, or a saved workflow (workflow_id; default tests: its <id>.test.yaml). Reports each scenario and the coverage: steps entered, conditions taken both ways, loop exits, and the paths no scenario walks.",
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
        .object({ steps: CountSchema, branches: CountSchema, loop_exits: CountSchema })
        .optional()
        .describe('Steps entered, condition outcomes seen (two per condition), loop exits taken'),
      untested: z.array(z.string()).describe('The paths no scenario walks'),
      test_file: z.string().optional().describe('The test file that ran, when it came from one'),
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
      let definition: { workflow: Workflow; hash: string; file?: string };
      if (content !== undefined) {
        const report = await deps.check(content, format);
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
      const result = await (await deps.tests()).runTests(definition, parsed, testFile, {
        signal: ctx.caller.signal,
      });
      return toolResult(result, content !== undefined);
    },
  });
}

function toolResult(result: SuiteResult, draft: boolean) {
  const base = {
    ...(result.workflow_id !== undefined ? { workflow_id: result.workflow_id } : {}),
    ...(result.file !== undefined ? { test_file: result.file } : {}),
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
  const result = await (await deps.tests()).runTests({ workflow, hash }, parsed, file, { signal });
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
