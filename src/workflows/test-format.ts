/**
 * The format of a workflow test file (`<id>.test.yaml`, `.test.yml` or `.test.json` beside the workflow):
 * scenarios that play the agent (and the APIs of command steps) and say what must follow. These zod
 * schemas are the single source of truth: the types are inferred from them, and
 * `schema/workflow-test.schema.json` is generated from them (a test fails when the committed file drifts).
 */
import * as z from 'zod';
import { EXECUTION_STATES } from '../engine/state-machine.js';
import { IdSchema } from '../model/workflow.js';

/**
 * What a test file may hold, and what a run of it may do. These bound `workflowlookup test`, which the
 * owner runs on their own files; a tool call runs under the tighter TOOL_TEST_LIMITS.
 */
export const TEST_LIMITS = {
  /** Most scenarios a file may hold. */
  maxScenarios: 200,
  /** Reports a scenario makes before it is stopped (`max_reports`): by default, and at most. */
  defaultMaxReports: 1000,
  maxReports: 10_000,
  /**
   * Work units (see reportUnits) all the scenarios of one file may use together, so a run stays bounded
   * whatever the file says; past them the run stops and the scenarios left fail.
   */
  maxWorkPerFile: 20_000,
  /** Copies one list entry may stand for (`times`). */
  maxTimes: 10_000,
} as const;

/**
 * What one `workflow_test` call (or the tests `workflow_validate_manifest` runs for its hint) may do.
 * A `read` token can make these calls, and under TEST_LIMITS one call of 20 scenarios of 1,000 reports
 * each cost 18-26 s of server CPU: so a call is bounded by work it counts (never by time, which a
 * loaded machine would let flip a verdict), a call over the bound gets no verdict at all, and a
 * principal runs only a few at once. 2,000 units measured 2-4 s of CPU at worst (a 2-core machine,
 * shared), and are nine times what the largest bundled suite uses (230).
 */
export const TOOL_TEST_LIMITS = {
  /** Most scenarios one call runs (checked before anything runs). */
  maxScenarios: 50,
  /** Largest `max_reports` a scenario may give (the default: a longer walk is the command line's). */
  maxReports: 1000,
  /** Work units one call may use (a scenario of `maxReports` reports fits, with room to spare). */
  maxWork: 2_000,
  /** Calls one principal may have running at once; one more is refused, retryably (`tests_busy`). */
  callsPerPrincipal: 2,
} as const;

/**
 * Bytes of one report that one work unit covers: a report costs a unit for each started 4 KiB of what it
 * says, since its text is checked against the rules and written to the store (a 1 MiB summary is 256
 * units, a short one 1). Measured: a short report is about 1 ms of CPU, and each KiB more about 0.1 ms,
 * so no unit costs much more than another.
 */
export const WORK_UNIT_BYTES = 4096;

/**
 * The work units of one report (`output`, as workflow_next_step takes it; a child's agent's reports
 * count alike). The other things a run counts are one unit each: a scenario's start, a canned API call
 * (each poll of `repeat` is a call), an approval's poll, a child picked up (workflow_resume) or ended,
 * and a poll of the wait on the children.
 */
export function reportUnits(output: unknown): number {
  const bytes = Buffer.byteLength(JSON.stringify(output) ?? '');
  return Math.max(1, Math.ceil(bytes / WORK_UNIT_BYTES));
}

const ContextSchema = z
  .record(z.string(), z.unknown())
  .describe('Context variables, as an agent reports them (taskScope, testsPassing, ...)');

/** The artifact shapes workflow_next_step takes. */
const ArtifactSchema = z.union([
  z.string().min(1).max(256).describe('An artifact id'),
  z
    .strictObject({
      type: z.enum(['file', 'data', 'report', 'finding']),
      name: z.string().min(1).max(256),
      content: z.string(),
      content_type: z.string().min(1).max(128).optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
    })
    .describe('A file, data, report or finding {type, name, content}'),
  z.looseObject({ kind: z.string().min(1).max(128) }).describe('A WorkRail artifact {kind, ...}'),
]);

const answerShape = {
  summary: z
    .string()
    .min(1)
    .max(1_048_576)
    .optional()
    .describe('The summary the agent reports (checked against the validation rules); default "done"'),
  context: ContextSchema.optional(),
  artifacts: z
    .array(ArtifactSchema)
    .max(100)
    .optional()
    .describe('Artifacts the agent reports (loop decisions, handoffs, files)'),
  findings: z.array(z.string().max(10_000)).max(1000).optional(),
  next_step_recommendation: z.string().max(10_000).optional(),
  approval: z
    .enum(['approve', 'reject'])
    .optional()
    .describe('A step with `approval`: what the person decides about this report (default approve)'),
  approval_reason: z.string().min(1).max(2000).optional().describe("The person's reason"),
};

/** What the agent reports at a step: what workflow_next_step's `output` carries. */
export const AnswerSchema = z
  .strictObject(answerShape)
  .describe('What the agent reports at a step: summary, context, artifacts (workflow_next_step output)');
export type Answer = z.infer<typeof AnswerSchema>;

const TimesSchema = z
  .int()
  .min(1)
  .max(TEST_LIMITS.maxTimes)
  .optional()
  .describe('This entry stands for that many reports in a row (default 1)');

const AnswerEntrySchema = z.strictObject({ ...answerShape, times: TimesSchema });

/**
 * A step's answers: one for every report, or a list read in order (the n-th report at the step uses the
 * n-th entry, refused reports included; the last entry repeats).
 */
const StepAnswersSchema = z.union([AnswerSchema, z.array(AnswerEntrySchema).min(1).max(1000)]).meta({
  id: 'StepAnswers',
  description: 'One answer for every report at this step, or a list: the n-th report uses the n-th entry',
});

/** Failure reasons a canned API answer may give (those of a real call, see the command runner). */
export const COMMAND_ERROR_REASONS = [
  'missing_parameter',
  'missing_credential',
  'http_status',
  'timeout',
  'network',
  'invalid_json',
  'redirect',
  'host',
  'response_too_large',
  'cancelled',
] as const;

const responseShape = {
  status: z.int().min(100).max(599).optional().describe('HTTP status (default 200)'),
  output: z.unknown().optional().describe('The response body the API returns'),
  error: z
    .strictObject({
      reason: z.enum(COMMAND_ERROR_REASONS).describe('Why the call failed'),
      message: z.string().max(10_000).optional(),
      status: z.int().min(100).max(599).optional(),
    })
    .optional()
    .describe('The call fails instead (a retryable failure leaves the execution waiting on the step)'),
};

const ResponseSchema = z
  .strictObject(responseShape)
  .describe('A canned API answer for a command step: {status, output} or {error}');
const ResponseEntrySchema = z.strictObject({ ...responseShape, times: TimesSchema });

/** A command step's canned answers: one for every call, or a list read in order (polls are calls). */
const StepResponsesSchema = z
  .union([ResponseSchema, z.array(ResponseEntrySchema).min(1).max(1000)])
  .describe(
    'One canned answer for every call of this command step, or a list read in order (each poll is a call)',
  );

const checkShape = {
  passed: z.boolean().optional().describe('Whether the check passes (default true)'),
  exit_code: z.int().min(0).max(255).optional().describe('Its exit code (default 0, or 1 when it fails)'),
  output: z.string().max(100_000).optional().describe('The output tail the agent is shown'),
};
const CheckAnswerSchema = z
  .strictObject(checkShape)
  .describe('A canned result of a server-run check (verify: {check})');
const CheckAnswerEntrySchema = z.strictObject({ ...checkShape, times: TimesSchema });
/** A check's canned results: one for every run, or a list read in order. Unnamed checks pass. */
const CheckAnswersSchema = z
  .union([CheckAnswerSchema, z.array(CheckAnswerEntrySchema).min(1).max(1000)])
  .describe('One canned result for every run of this check, or a list read in order (unnamed checks pass)');

/** A child's name as a test names it (checked against the delegating step by the runner, with the names it has). */
const ChildRef = z.string().min(1).max(64);

const childScriptShape = {
  defaults: AnswerSchema.optional().describe(
    'The answer at every step of the child\'s workflow that steps does not name (default: summary "done")',
  ),
  steps: z
    .record(z.string().min(1).max(64), StepAnswersSchema)
    .optional()
    .describe("What the child's agent reports at each step of the child's workflow, by step id"),
  end: z
    .enum(['abandoned', 'failed'])
    .optional()
    .describe(
      "The child ends this way before its agent reports anything: abandoned (as workflow_set_state does) or failed (the server's verdict)",
    ),
  reason: z.string().min(1).max(2000).optional().describe('Why it ends (with end)'),
  late: z
    .boolean()
    .optional()
    .describe(
      "The child's agent reports only after the wait on the children timed out once (the step needs delegate.timeout)",
    ),
};

/** What one child's agent does. */
const ChildScriptSchema = z.strictObject(childScriptShape).describe("What one child's agent does");

/**
 * What the children of one delegating step do: what every child does, and what each does by name (its
 * own entry wins, field by field; its steps and defaults over those for every child).
 */
const DelegationScriptSchema = z
  .strictObject({
    ...childScriptShape,
    each: z
      .record(ChildRef, ChildScriptSchema)
      .optional()
      .describe(
        'What one child does, by name (count and forEach children: 1, 2, ...); it wins over the rest',
      ),
  })
  .meta({
    id: 'DelegationScript',
    description:
      'What the children of one delegating step do: for every child (defaults, steps, end, late) and for each by name (each)',
  });
export type DelegationScript = z.infer<typeof DelegationScriptSchema>;
export type ChildScript = z.infer<typeof ChildScriptSchema>;

const ChildrenScriptsSchema = z
  .record(z.string().min(1).max(64), DelegationScriptSchema)
  .describe("What the children of each delegating step do, by the step's id");

/**
 * A step or loop id as a test names it: any short text here, so an id the workflow does not have is
 * reported as such (with the ids it has) by the check against the workflow, not as a pattern mismatch.
 */
const StepRef = z.string().min(1).max(64);
const StepIdList = z.array(StepRef).max(10_000);

const RejectionSchema = z
  .strictObject({
    step: StepRef.describe('The step whose report was refused'),
    message: z
      .string()
      .min(1)
      .max(10_000)
      .optional()
      .describe('Text one of the refusal issues contains (case-insensitive)'),
  })
  .describe('One refused report');

const RequestSchema = z
  .strictObject({
    with: z.record(z.string(), z.unknown()).optional().describe('The parameters, `with` rendered'),
    body: z.unknown().optional().describe('The request body, `body` rendered'),
  })
  .describe('A request a command step sent');

/** How a delegating step's join ended. */
export const JOIN_ENDS = ['held', 'continued', 'failed', 'waiting'] as const;

const ChildExpectSchema = z
  .strictObject({
    state: z.enum(EXECUTION_STATES).optional().describe("The child's state at the end"),
    path: StepIdList.optional().describe("Every step of the child's workflow entered, in order"),
    rejected: z
      .array(RejectionSchema)
      .max(10_000)
      .optional()
      .describe("Every refused report of the child's agent, in order ([] when none may be refused)"),
    context: ContextSchema.optional().describe("Values the child's context holds at the end (by subset)"),
  })
  .describe('What must follow for one child');

const JoinExpectSchema = z
  .strictObject({
    completed: z
      .array(ChildRef)
      .max(10_000)
      .optional()
      .describe('Exactly these children completed (any order)'),
    failed: z.array(ChildRef).max(10_000).optional().describe('Exactly these children failed (any order)'),
    abandoned: z
      .array(ChildRef)
      .max(10_000)
      .optional()
      .describe(
        'Exactly these children were abandoned (by the test, or by the join that no longer needed them)',
      ),
    open: z
      .array(ChildRef)
      .max(10_000)
      .optional()
      .describe('Exactly these children are still open at the end (running or paused)'),
    join: z
      .enum(JOIN_ENDS)
      .optional()
      .describe(
        'How the join ended: held (enough completed), continued (onChildFailure: continue, with what completed), failed (the parent failed), waiting (never joined)',
      ),
    timeouts: z.int().min(0).optional().describe('How many times the wait on the children timed out'),
    each: z.record(ChildRef, ChildExpectSchema).optional().describe('What must follow for each named child'),
  })
  .describe(
    "What must follow for a delegating step's children (a step entered more than once: the lists count every round, join and each the last)",
  );

const ExpectSchema = z
  .strictObject({
    path: StepIdList.optional().describe('Every step entered, in order (loop rounds repeat their steps)'),
    visits: z
      .record(StepRef, z.int().min(0))
      .optional()
      .describe('How many times each named step is entered (0: never)'),
    skipped: StepIdList.optional().describe('Steps never entered'),
    rejected: z
      .array(RejectionSchema)
      .max(10_000)
      .optional()
      .describe('Every refused report, in order ([] when none may be refused)'),
    loops: z.record(StepRef, z.int().min(0)).optional().describe('Rounds each named loop ran (0: none)'),
    state: z
      .enum(EXECUTION_STATES)
      .optional()
      .describe('The execution state at the end (default completed, unless stopped_at or error is expected)'),
    stopped_at: StepRef.optional().describe(
      'The step the execution is on at the end (a report refused with nothing else to say)',
    ),
    context: ContextSchema.optional().describe(
      'Values the context holds at the end (objects match by subset)',
    ),
    requests: z
      .record(StepRef, z.union([RequestSchema, z.array(RequestSchema).max(10_000)]))
      .optional()
      .describe(
        'What each named command step sent: one request (its first call) or a list (its calls in order); objects match by subset',
      ),
    children: z
      .record(StepRef, JoinExpectSchema)
      .optional()
      .describe("What each delegating step's children did, by the step's id"),
    final_output: z.unknown().optional().describe("The workflow's rendered final_output (deep equality)"),
    error: z
      .strictObject({
        code: z.string().min(1).max(64).optional().describe('The error code, e.g. inputs_not_ready'),
        message: z.string().min(1).max(10_000).optional().describe('Text the message contains'),
      })
      .optional()
      .describe('A call that fails (a start refused, a command step that fails)'),
  })
  .describe('What must follow; every field is optional');
export type Expectation = z.infer<typeof ExpectSchema>;

export const ScenarioSchema = z
  .strictObject({
    name: z.string().min(1).max(200).describe('What the scenario shows, one line'),
    description: z.string().max(10_000).optional(),
    inputs: z.record(z.string(), z.unknown()).optional().describe("The workflow's inputs"),
    context: ContextSchema.optional().describe('The context the execution starts with'),
    defaults: AnswerSchema.optional().describe('The answer for steps not named in steps'),
    steps: z
      .record(StepRef, StepAnswersSchema)
      .optional()
      .describe('What the agent reports at each step, by step id'),
    commands: z
      .record(StepRef, StepResponsesSchema)
      .optional()
      .describe('Canned API answers for command steps, by step id'),
    checks: z
      .record(z.string().min(1).max(64), CheckAnswersSchema)
      .optional()
      .describe('Canned results of server-run checks, by check name'),
    children: ChildrenScriptsSchema.optional().describe(
      "What the children of each delegating step do, by the step's id (each step it names replaces the file's)",
    ),
    max_reports: z
      .int()
      .min(1)
      .max(TEST_LIMITS.maxReports)
      .optional()
      .describe(`Reports after which the scenario is stopped (default ${TEST_LIMITS.defaultMaxReports})`),
    expect: ExpectSchema.optional(),
  })
  .describe('One walk through the workflow');
export type Scenario = z.infer<typeof ScenarioSchema>;
export type CheckAnswers = z.infer<typeof CheckAnswersSchema>;

export const TestFileSchema = z
  .strictObject({
    $schema: z.string().optional().describe('The JSON Schema of this format, for editors'),
    workflow: IdSchema.optional().describe('The workflow under test (default: the id in the file name)'),
    defaults: AnswerSchema.optional().describe('The answer for steps no steps map names'),
    steps: z
      .record(StepRef, StepAnswersSchema)
      .optional()
      .describe('Answers every scenario starts from, by step id (a scenario overrides a step)'),
    commands: z
      .record(StepRef, StepResponsesSchema)
      .optional()
      .describe('Canned API answers every scenario starts from (a scenario overrides a step)'),
    checks: z
      .record(z.string().min(1).max(64), CheckAnswersSchema)
      .optional()
      .describe('Canned check results every scenario starts from (a scenario overrides a check)'),
    children: ChildrenScriptsSchema.optional().describe(
      'What the children of each delegating step do, for every scenario (a scenario overrides a step)',
    ),
    scenarios: z.array(ScenarioSchema).min(1).max(TEST_LIMITS.maxScenarios),
  })
  .meta({
    id: 'WorkflowTests',
    title: 'workflowlookup workflow tests',
    description:
      'Scenarios that walk a workflow through the server engine with scripted agent reports and canned API answers, and what must follow',
  });
export type TestFile = z.infer<typeof TestFileSchema>;

/** The JSON Schema (draft 2020-12) of a workflow test file, generated from the zod model. */
export function testFileJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(TestFileSchema, { target: 'draft-2020-12', unrepresentable: 'any' });
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://workflowlookup.dev/schema/workflow-test.schema.json',
    ...generated,
  };
}
