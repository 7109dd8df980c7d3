import { CriteriaError, type ValidationEngine } from '../engine/validation-engine.js';
import type { Violation } from '../model/violation.js';
import {
  isCommandStep,
  isLoopStep,
  isPromptStep,
  type ValidationCriterion,
  type Workflow,
} from '../model/workflow.js';
import {
  delegatingParallelSteps,
  delegationViolations,
  parallelStepWarnings,
  type ServedWorkflows,
} from './delegation.js';
import { lint } from './lint.js';
import { type Locator, NO_LOCATION, type Position } from './locate.js';
import { type DefinitionFormat, parseDefinition } from './parse.js';
import { regexCost } from './regex-cost.js';
import { holdsForText, type Salvaged, salvage } from './salvage.js';
import { dedupe, templateUses, toPointer, validateDefinition } from './validate-definition.js';

/**
 * How far a check goes. Each level includes the one before it:
 *
 * - `load`: the text describes a workflow. Size and complexity bounds, syntax, the schema (with its
 *   caps on durations, retries and iterations), and the rules a schema cannot express (unique step
 *   ids, loop bodies, template references). Pure: needs neither the regex and JSON Schema engines nor
 *   the server's settings.
 * - `strict`: this server can serve it. Adds every validation rule, input pattern and output contract
 *   that cannot be evaluated, and `${{ env.X }}` / `{env: X}` names outside WORKFLOWLOOKUP_ALLOWED_ENV.
 *   A definition is valid exactly when it passes `strict`; every source, the CLI and the tools use it.
 * - `authoring`: adds warnings (legal but probably unintended). Same verdict and errors as `strict`.
 */
export type CheckLevel = 'load' | 'strict' | 'authoring';

/** Bounds on a definition and on the work checking it may take (docs/workflow-format.md, authoring guide). */
export const DEFINITION_LIMITS = {
  /** UTF-8 bytes of the file (or of the object as JSON). */
  maxBytes: 1_048_576,
  /** Nesting of objects and arrays. */
  maxDepth: 64,
  /** Values (objects, arrays and scalars) in the parsed definition. */
  maxNodes: 100_000,
  /** The `yaml` library's alias expansion guard. */
  maxAliasCount: 100,
  /** Estimated compiled size of all regex patterns together (rules and inputs), see regexCost. */
  maxRegexCost: 100_000,
  /** Values in all JSON Schemas together (schema rules and output contracts), 4 more per schema. */
  maxSchemaNodes: 5_000,
  /** Errors (and warnings) reported; the rest are counted in one last violation. */
  maxReported: 100,
} as const;

export interface CheckPolicy {
  /** The regex and JSON Schema engine (`strict` and above); loaded on demand. */
  engine?: ValidationEngine | undefined;
  /** Names `${{ env.X }}` and `{env: X}` may read (WORKFLOWLOOKUP_ALLOWED_ENV); default none. */
  allowedEnv?: ReadonlySet<string> | undefined;
  /** Installed personas, for the unknown-persona warning (`authoring`). */
  knownAgents?: ReadonlySet<string> | undefined;
  /**
   * The checks this server defines (WORKFLOWLOOKUP_CHECKS_FILE), for the `knownCheck` rule on a step's
   * `verify: {check}`. A set: a name outside it is an error (`strict`), as workflow_start refuses it.
   * `'none'`, no checks file: each `verify` is a warning (`authoring`), since its check cannot run here.
   * Absent: not looked at (the registry does not pass it: a served file naming a check this server lacks
   * is refused at workflow_start). The app's check policy (app.ts) always says.
   */
  knownChecks?: ReadonlySet<string> | 'none' | undefined;
  /**
   * The workflows this server serves (the registry, once ready), for delegations: every workflow a
   * delegating step names must be one of them (`unknownChildWorkflow`) and no chain of delegations may
   * lead back to the definition (`delegationCycle`), both errors (`strict`); a WorkRail parallel step
   * whose workflowIds are not all served stays text, a warning (`unresolvedDelegation`, `authoring`).
   * Absent: not looked at (the registry judges its files against each other once every source is read).
   */
  workflows?: ServedWorkflows | undefined;
}

/** A definition as text (a file, tool content) or as an already parsed value (tool `manifest`). */
export type CheckSource =
  | { text: string | Uint8Array; format: DefinitionFormat }
  | { data: unknown; format?: DefinitionFormat };

export interface CheckReport {
  level: CheckLevel;
  /** No errors at this level. */
  valid: boolean;
  format: DefinitionFormat;
  /** The model, once the `load` stage passed (even when a later stage found errors). */
  workflow?: Workflow;
  /** The definition's id when it is readable, valid or not (a broken file still claims its id). */
  id?: string;
  errors: Violation[];
  warnings: Violation[];
}

/**
 * The one check behind the registry (every source), `workflowlookup validate` and `list`,
 * `workflow_validate_manifest`, `workflow_save` and the authoring prompts: they differ only in how
 * they present the report. Findings carry the line and column of their node when there is text.
 *
 * At `strict` and above, compiling the regex and JSON Schema rules past the validation budget is no
 * finding: the check throws the retryable `validation_not_checked` and gives no report, so a timing
 * never makes a definition invalid (callers answer the error, or, the registry, check again later).
 */
export async function checkDefinition(
  source: CheckSource,
  level: CheckLevel,
  policy: CheckPolicy = {},
): Promise<CheckReport> {
  const format = source.format ?? 'json';
  let locate: Locator = NO_LOCATION;
  const finish = (
    stage: { errors: Violation[]; warnings?: Violation[]; workflow?: Workflow; data?: unknown },
    reportedLevel = level,
  ): CheckReport => {
    const errors = capped(stage.errors);
    const warnings = capped(stage.warnings ?? []);
    const unplaced = [...errors, ...warnings].filter((f) => f.line === undefined).map((f) => f.path);
    const where = unplaced.length > 0 ? locate(unplaced) : new Map<string, Position>();
    const place = (f: Violation): Violation => {
      if (f.line !== undefined) return f;
      const at = where.get(f.path);
      if (at === undefined) return f;
      return { ...asWritten(f, at.source), line: at.line, column: at.column };
    };
    const id = stage.workflow?.id ?? readableId(stage.data);
    return {
      level: reportedLevel,
      valid: errors.length === 0,
      format,
      ...(stage.workflow ? { workflow: stage.workflow } : {}),
      ...(id !== undefined ? { id } : {}),
      errors: errors.map(place),
      warnings: warnings.map(place),
    };
  };

  // Stage 1 (load): bounds, syntax, schema, semantic rules.
  let data: unknown;
  if ('text' in source) {
    const bytes = typeof source.text === 'string' ? Buffer.byteLength(source.text) : source.text.byteLength;
    const big = oversize(bytes);
    if (big) return finish({ errors: [big] });
    const text =
      typeof source.text === 'string'
        ? source.text
        : Buffer.from(source.text.buffer, source.text.byteOffset, source.text.byteLength).toString('utf8');
    const parsed = await parseDefinition(text, format, {
      maxDepth: DEFINITION_LIMITS.maxDepth,
      maxAliasCount: DEFINITION_LIMITS.maxAliasCount,
    });
    if (!parsed.ok) return finish({ errors: parsed.violations });
    data = parsed.data;
    locate = parsed.locate;
  } else {
    data = source.data;
    const big = oversize(jsonBytes(data));
    if (big) return finish({ errors: [big] });
  }
  const bounds = boundViolations(data);
  if (bounds.length > 0) return finish({ errors: bounds });
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    // Say what the file holds, never what it says: it may be any file, even a secret.
    const actual = data === null ? 'null' : Array.isArray(data) ? 'array' : typeof data;
    return finish({
      errors: [
        {
          path: '',
          rule: 'type',
          message: `a workflow definition is an object (a YAML mapping); this holds ${actual === 'array' ? 'an array' : `a ${actual}`}`,
          expected: 'object',
          actual,
        },
      ],
    });
  }
  // The schema, then the rules beyond it. When the schema fails, the failing parts are replaced by
  // stand-ins and every later check runs on the rest: one pass reports every error (salvage.ts).
  const result = validateDefinition(data);
  const errors: Violation[] = result.ok ? [] : [...result.violations];
  let model = result.workflow;
  let salvaged: Salvaged | undefined;
  if (model === undefined) {
    salvaged = salvage(data as Record<string, unknown>, errors);
    model = salvaged?.workflow;
    if (salvaged) errors.push(...salvaged.semantic.filter((f) => holdsForText(f, salvaged as Salvaged)));
  }
  /** The model reported: only a definition that passed the load stage has one. */
  const loaded = result.ok ? result.workflow : undefined;
  // A stand-in can repeat a finding the schema reported: each once.
  const stageOf = (found: Violation[]) => ({
    errors: dedupe(found),
    data,
    ...(loaded ? { workflow: loaded } : {}),
  });
  if (model === undefined) return finish(stageOf(errors));
  const budget = budgetViolations(model);
  if (budget.length > 0 || level === 'load') return finish(stageOf([...errors, ...budget]));

  // Stage 2 (strict): what this server cannot evaluate or must not expose.
  const engine = policy.engine;
  if (engine === undefined) throw new Error('checkDefinition: the strict level needs the validation engine');
  // The worker thread (~15 MB, tens of ms to start and to compile ajv's meta-schema) starts only for a
  // definition that has a regex or JSON Schema to compile; the other checks below run here.
  if (needsWorker(model)) await engine.load();
  const strict = [
    ...engine.checkWorkflow(model),
    ...unevaluableContracts(model, engine),
    ...envViolations(model, policy.allowedEnv ?? new Set()),
    ...(typeof policy.knownChecks === 'object' ? unknownChecks(model, policy.knownChecks) : []),
    ...(policy.workflows !== undefined ? delegationViolations(model, policy.workflows) : []),
  ].filter((f) => salvaged === undefined || holdsForText(f, salvaged));
  const all = [...errors, ...strict];
  if (level === 'strict' || !result.ok) return finish(stageOf(all));

  // Stage 3 (authoring): warnings, once the definition is read as written (not a stand-in).
  return finish({
    ...stageOf(all),
    warnings: [
      ...lint(
        result.workflow,
        policy.knownAgents,
        policy.workflows !== undefined
          ? delegatingParallelSteps(result.workflow, policy.workflows)
          : undefined,
      ),
      ...(policy.knownChecks === 'none' ? unrunnableChecks(result.workflow) : []),
      ...(policy.workflows !== undefined ? parallelStepWarnings(result.workflow, policy.workflows) : []),
    ],
  });
}

/** Rules whose findings quote the offending value in `actual`. */
const QUOTES_VALUE = new Set(['type', 'pattern', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength']);

/**
 * A finding about a scalar, worded with the scalar as written: YAML and JSON read `version: 1.0` as
 * the number 1, which the author never wrote.
 */
function asWritten(finding: Violation, source: string | undefined): Violation {
  // Only where the finding already quotes the value (never the whole text of something unreadable).
  if (source === undefined || finding.path === '' || !QUOTES_VALUE.has(finding.rule)) return finding;
  if (finding.rule === 'type' && finding.expected === 'string' && !/^["']/.test(source)) {
    // `version: 1.0` quoted is still no semantic version: the hint gives one that is accepted.
    const quoted = finding.path === '/version' ? semanticVersion(source) : source;
    return {
      ...finding,
      message: `${finding.message} (written ${source}); write it in quotes: "${quoted.replaceAll('"', '\\"')}"`,
      actual: source,
    };
  }
  return { ...finding, actual: source };
}

/** `1` and `1.0` as the semantic version they abbreviate (`1.0.0`); anything else as it is. */
function semanticVersion(source: string): string {
  const parts = source.split('.');
  if (!parts.every((p) => /^(0|[1-9]\d*)$/.test(p)) || parts.length > 3) return source;
  return [...parts, '0', '0'].slice(0, 3).join('.');
}

/**
 * One finding as one line, the same in every place that shows it (`workflowlookup validate` and
 * `list`, `workflow_validate_manifest`'s `errors`, the dashboard): `path (line:column): message`.
 */
export function describeViolation(v: Violation): string {
  return `${v.path || '(root)'}${v.line !== undefined ? ` (${v.line}:${v.column ?? 0})` : ''}: ${v.message}`;
}

/** The first stage of every check, usable before reading a file: a definition over the size limit. */
export function oversize(bytes: number): Violation | undefined {
  return bytes > DEFINITION_LIMITS.maxBytes ? sizeViolation(bytes) : undefined;
}

function sizeViolation(bytes: number): Violation {
  return {
    path: '',
    rule: 'maxFileSize',
    message: `the definition is ${bytes} bytes; at most ${DEFINITION_LIMITS.maxBytes} bytes (1 MiB) are accepted`,
    expected: `<= ${DEFINITION_LIMITS.maxBytes}`,
    actual: String(bytes),
  };
}

function jsonBytes(data: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(data) ?? '');
  } catch {
    // Nested too deeply for JSON.stringify: the depth bound reports it.
    return 0;
  }
}

function readableId(data: unknown): string | undefined {
  const id = (data as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' && id.length > 0 && id.length <= 64 ? id : undefined;
}

function capped(findings: Violation[]): Violation[] {
  if (findings.length <= DEFINITION_LIMITS.maxReported) return findings;
  const rest = findings.length - DEFINITION_LIMITS.maxReported;
  return [
    ...findings.slice(0, DEFINITION_LIMITS.maxReported),
    {
      path: '',
      rule: 'maxReported',
      message: `${rest} more like these are not listed; fix the ones above and check again`,
      actual: String(findings.length),
    },
  ];
}

interface Trail {
  parent: Trail | undefined;
  key: PropertyKey;
}

function trailPointer(trail: Trail | undefined): string {
  const keys: PropertyKey[] = [];
  for (let t = trail; t !== undefined; t = t.parent) keys.unshift(t.key);
  return toPointer(keys);
}

/** Depth and size of the parsed value, walked without recursion (a hostile value may be deep). */
function boundViolations(data: unknown): Violation[] {
  const { maxDepth, maxNodes } = DEFINITION_LIMITS;
  let nodes = 0;
  const stack: [unknown, number, Trail | undefined][] = [[data, 0, undefined]];
  while (stack.length > 0) {
    const [value, depth, trail] = stack.pop() as [unknown, number, Trail | undefined];
    if (++nodes > maxNodes) {
      return [
        {
          path: '',
          rule: 'maxNodes',
          message: `the definition holds more than ${maxNodes} values; split it into several workflows`,
          expected: `<= ${maxNodes}`,
        },
      ];
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth + 1 > maxDepth) {
      return [
        {
          path: trailPointer(trail),
          rule: 'maxDepth',
          message: `objects and arrays are nested more than ${maxDepth} levels deep`,
          expected: `<= ${maxDepth}`,
        },
      ];
    }
    const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
    for (const [key, child] of entries) stack.push([child, depth + 1, { parent: trail, key }]);
  }
  return [];
}

/** Leaf rules of a step's criteria, with their pointers. */
function leafRules(
  criteria: ValidationCriterion | ValidationCriterion[] | undefined,
  path: string,
): [Extract<ValidationCriterion, { type: string }>, string][] {
  const out: [Extract<ValidationCriterion, { type: string }>, string][] = [];
  const visit = (c: ValidationCriterion, at: string) => {
    if ('and' in c) for (const [i, x] of c.and.entries()) visit(x, `${at}/and/${i}`);
    else if ('or' in c) for (const [i, x] of c.or.entries()) visit(x, `${at}/or/${i}`);
    else if ('not' in c) visit(c.not, `${at}/not`);
    else out.push([c, at]);
  };
  if (Array.isArray(criteria))
    for (const [i, c] of criteria.entries()) visit(c, `${path}/validationCriteria/${i}`);
  else if (criteria !== undefined) visit(criteria, `${path}/validationCriteria`);
  return out;
}

/** Every step with its pointer, inline loop bodies included. */
function allSteps(workflow: Workflow): [Workflow['steps'][number], string][] {
  const out: [Workflow['steps'][number], string][] = [];
  for (const [i, step] of workflow.steps.entries()) {
    out.push([step, `/steps/${i}`]);
    if (isLoopStep(step) && Array.isArray(step.body))
      for (const [j, inner] of step.body.entries()) out.push([inner, `/steps/${i}/body/${j}`]);
  }
  return out;
}

function countValues(value: unknown): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    n++;
    if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
  }
  return n;
}

/**
 * The work a definition asks of the regex and JSON Schema engines, bounded before they run: compiling
 * is the one step whose cost a small text can multiply.
 */
function budgetViolations(workflow: Workflow): Violation[] {
  const patterns: [string, string][] = [];
  const schemas: [unknown, string][] = [];
  for (const [name, spec] of Object.entries(workflow.inputs ?? {}))
    if (spec.pattern !== undefined) patterns.push([spec.pattern, `/inputs/${name}/pattern`]);
  for (const [step, path] of allSteps(workflow)) {
    if (isCommandStep(step)) {
      if (step.output_contract) schemas.push([step.output_contract, `${path}/output_contract`]);
    } else if (isPromptStep(step)) {
      for (const [rule, at] of leafRules(step.validationCriteria, path)) {
        if (rule.type === 'regex') patterns.push([rule.pattern, `${at}/pattern`]);
        if (rule.type === 'schema') schemas.push([rule.schema, `${at}/schema`]);
      }
    }
  }
  const out: Violation[] = [];
  let regex = 0;
  for (const [pattern, path] of patterns) {
    regex += 20 + regexCost(pattern);
    if (regex > DEFINITION_LIMITS.maxRegexCost) {
      out.push({
        path,
        rule: 'maxRegexCost',
        message: `the regular expressions of this workflow are too costly to compile (counted repetitions such as {1000} multiply); at most ${DEFINITION_LIMITS.maxRegexCost} units in all`,
        expected: `<= ${DEFINITION_LIMITS.maxRegexCost}`,
        actual: String(regex),
      });
      break;
    }
  }
  let schemaNodes = 0;
  for (const [schema, path] of schemas) {
    schemaNodes += 4 + countValues(schema);
    if (schemaNodes > DEFINITION_LIMITS.maxSchemaNodes) {
      out.push({
        path,
        rule: 'maxSchemaNodes',
        message: `the JSON Schemas of this workflow (schema rules and output contracts) hold more than ${DEFINITION_LIMITS.maxSchemaNodes} values in all`,
        expected: `<= ${DEFINITION_LIMITS.maxSchemaNodes}`,
        actual: String(schemaNodes),
      });
      break;
    }
  }
  return out;
}

/**
 * Whether the strict stage sends anything to the regex and JSON Schema worker: an input pattern, an
 * output contract, or a regex or schema rule in some step's criteria (where ValidationEngine's
 * checkWorkflow and unevaluableContracts below go to the worker, and nowhere else).
 */
export function needsWorker(workflow: Workflow): boolean {
  for (const spec of Object.values(workflow.inputs ?? {})) if (spec.pattern !== undefined) return true;
  for (const [step, path] of allSteps(workflow)) {
    if (isCommandStep(step)) {
      if (step.output_contract !== undefined) return true;
    } else if (isPromptStep(step)) {
      for (const [rule] of leafRules(step.validationCriteria, path))
        if (rule.type === 'regex' || rule.type === 'schema') return true;
    }
  }
  return false;
}

/**
 * Output contracts and input patterns that cannot be evaluated (criteria are the engine's own check). A
 * `validation_not_checked` from the engine is not caught here: it is no finding (see checkDefinition).
 */
function unevaluableContracts(workflow: Workflow, engine: ValidationEngine): Violation[] {
  const out: Violation[] = [];
  const attempt = (path: string, run: () => void) => {
    try {
      run();
    } catch (error) {
      if (!(error instanceof CriteriaError)) throw error;
      out.push({ path, rule: 'criteria', message: error.message });
    }
  };
  for (const [name, spec] of Object.entries(workflow.inputs ?? {})) {
    const pattern = spec.pattern;
    if (pattern !== undefined) attempt(`/inputs/${name}/pattern`, () => engine.matches(pattern, ''));
  }
  for (const [step, path] of allSteps(workflow)) {
    const contract = isCommandStep(step) ? step.output_contract : undefined;
    if (contract === undefined) continue;
    attempt(`${path}/output_contract`, () =>
      engine.check({ type: 'schema', schema: contract, message: 'output_contract' }),
    );
  }
  return out;
}

/** Each step's `verify` check, with the pointer to its name. */
function verifiedSteps(workflow: Workflow): { id: string; check: string; path: string }[] {
  return allSteps(workflow).flatMap(([step, path]) =>
    isPromptStep(step) && step.verify !== undefined
      ? [{ id: step.id, check: step.verify.check, path: `${path}/verify/check` }]
      : [],
  );
}

/** A step naming a check the server's checks file does not define (workflow_start refuses it too). */
function unknownChecks(workflow: Workflow, known: ReadonlySet<string>): Violation[] {
  return verifiedSteps(workflow)
    .filter((v) => !known.has(v.check))
    .map((v) => ({
      path: v.path,
      rule: 'knownCheck',
      message: `step "${v.id}" names check "${v.check}", which the server's checks file does not define`,
      actual: v.check,
    }));
}

/** Without a checks file, a step's check cannot run on this server (a warning: another server may run it). */
function unrunnableChecks(workflow: Workflow): Violation[] {
  return verifiedSteps(workflow).map((v) => ({
    path: v.path,
    rule: 'knownCheck',
    message: `step "${v.id}" names check "${v.check}", which cannot run here: this server has no checks (WORKFLOWLOOKUP_CHECKS_FILE is unset), so workflow_start refuses the workflow with CHECK_UNAVAILABLE`,
    actual: v.check,
  }));
}

/** `${{ env.X }}` and `{env: X}` may only name variables the server allows, so secrets cannot reach prompts. */
function envViolations(workflow: Workflow, allowed: ReadonlySet<string>): Violation[] {
  const out: Violation[] = [];
  for (const { path, ref } of templateUses(workflow)) {
    if (ref?.kind === 'env' && !allowed.has(ref.name)) {
      out.push({
        path,
        rule: 'templateReference',
        message: `environment variable ${ref.name} is not in WORKFLOWLOOKUP_ALLOWED_ENV, so templates cannot read it`,
        actual: ref.name,
      });
    }
  }
  for (const [name, spec] of Object.entries(workflow.inputs ?? {})) {
    const d = spec.default as { env?: unknown } | undefined;
    if (d && typeof d === 'object' && typeof d.env === 'string' && !allowed.has(d.env)) {
      out.push({
        path: `/inputs/${name}/default`,
        rule: 'templateReference',
        message: `default reads environment variable ${d.env}, which is not in WORKFLOWLOOKUP_ALLOWED_ENV`,
        actual: d.env,
      });
    }
  }
  return out;
}
