import { conditionVariables } from '../engine/conditions.js';
import { expressionsIn, parseReference } from '../engine/templating.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import {
  type Condition,
  isCommandStep,
  isLoopStep,
  type PromptStep,
  type ValidationCriterion,
  type VarCondition,
  type Workflow,
} from './model.js';
import { type DefinitionFormat, parseDefinition, type SyntaxViolation } from './parse.js';
import { templatePlaces, validateDefinition } from './validate-definition.js';

/** A finding with its place in the source text, when the source text is known. */
export type Finding = SyntaxViolation;

export interface ManifestReport {
  valid: boolean;
  format: DefinitionFormat;
  workflow?: Workflow;
  /** Problems that make the manifest invalid. */
  errors: Finding[];
  /** Legal but probably unintended: unused or undocumented variables, unreachable steps, unknown personas. */
  warnings: Finding[];
}

export interface ManifestSource {
  content?: string | undefined;
  manifest?: unknown;
  format?: DefinitionFormat | undefined;
}

/** JSON when the text starts like JSON, else YAML (JSON text is also valid YAML). */
export function detectFormat(content: string): DefinitionFormat {
  return /^\s*[{[]/.test(content) ? 'json' : 'yaml';
}

/**
 * Checks a manifest the way `workflow_validate_manifest` and `workflow_save` do: syntax, the schema,
 * semantic rules, criteria that cannot be evaluated (errors), and suspicious constructs (warnings).
 * Findings carry the line and column of the offending node when the source text is given.
 */
export async function checkManifest(
  source: ManifestSource,
  engine: ValidationEngine,
  knownAgents?: ReadonlySet<string>,
  allowedEnv?: ReadonlySet<string>,
): Promise<ManifestReport> {
  await engine.load();
  const format = source.format ?? (source.content !== undefined ? detectFormat(source.content) : 'json');
  let data: unknown = source.manifest;
  let locate: (path: string) => { line: number; column: number } | undefined = () => undefined;
  if (source.content !== undefined) {
    const parsed = await parseDefinition(source.content, format);
    if (!parsed.ok) return { valid: false, format, errors: parsed.violations, warnings: [] };
    data = parsed.data;
    locate = await locator(source.content);
  }
  const place = (f: Finding): Finding => ({ ...f, ...(f.line === undefined ? (locate(f.path) ?? {}) : {}) });
  const result = validateDefinition(data);
  if (!result.ok) return { valid: false, format, errors: result.violations.map(place), warnings: [] };
  const workflow = result.workflow;
  const errors = [
    ...engine.checkWorkflow(workflow),
    ...(allowedEnv ? envViolations(workflow, allowedEnv) : []),
  ].map(place);
  const warnings = lint(workflow, knownAgents).map(place);
  return { valid: errors.length === 0, format, workflow, errors, warnings };
}

/** Maps a JSON Pointer to the line and column of its node (or of the nearest existing parent). */
async function locator(content: string) {
  const mod = (await import('yaml')) as typeof import('yaml') & { default?: typeof import('yaml') };
  const YAML = mod.default ?? mod;
  const lineCounter = new YAML.LineCounter();
  const doc = YAML.parseDocument(content, { lineCounter, keepSourceTokens: false });
  return (pointer: string) => {
    if (doc.errors.length > 0) return undefined;
    const segments = pointer
      .split('/')
      .slice(1)
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    for (let n = segments.length; n >= 0; n--) {
      const node = n === 0 ? doc.contents : doc.getIn(segments.slice(0, n), true);
      const range = (node as { range?: [number, number, number] } | undefined)?.range;
      if (range) {
        const pos = lineCounter.linePos(range[0]);
        return { line: pos.line, column: pos.col };
      }
    }
    return undefined;
  };
}

/** `${{ env.X }}` may only name variables the server allows, so secrets cannot reach prompts. */
function envViolations(workflow: Workflow, allowed: ReadonlySet<string>): Finding[] {
  const out: Finding[] = [];
  for (const place of templatePlaces(workflow)) {
    for (const expr of expressionsIn(place.value)) {
      const ref = parseReference(expr);
      if (ref?.kind === 'env' && !allowed.has(ref.name)) {
        out.push({
          path: place.path,
          rule: 'templateReference',
          message: `environment variable ${ref.name} is not in WORKFLOWLOOKUP_ALLOWED_ENV, so templates cannot read it`,
          actual: ref.name,
        });
      }
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

// -------------------------------------------------------------------------------------------------
// Warnings

function lint(workflow: Workflow, knownAgents: ReadonlySet<string> | undefined): Finding[] {
  const out: Finding[] = [];
  const provided = loopVariables(workflow);
  const text = documentation(workflow);
  const undocumented = new Set<string>();
  const reads = (cond: Condition | undefined, path: string) => {
    for (const v of conditionVariables(cond)) checkVar(v, path);
  };
  const checkVar = (variable: string, path: string) => {
    const root = variable.split('.')[0] ?? variable;
    if (provided.has(root) || undocumented.has(root)) return;
    if (new RegExp(`\\b${escapeRegExp(root)}\\b`).test(text)) return;
    undocumented.add(root);
    out.push({
      path,
      rule: 'undocumentedVariable',
      message: `reads context variable "${root}", which no loop of this workflow sets and no prompt, precondition or guidance mentions; callers will not know to provide it`,
      actual: root,
    });
  };
  const visitPrompt = (step: PromptStep, path: string) => {
    reads(step.runCondition, `${path}/runCondition`);
    if (typeof step.requireConfirmation === 'object')
      reads(step.requireConfirmation, `${path}/requireConfirmation`);
    for (const c of criteriaList(step.validationCriteria)) reads(c, `${path}/validationCriteria`);
    if (step.runCondition !== undefined && !satisfiable(step.runCondition)) {
      out.push({
        path: `${path}/runCondition`,
        rule: 'unreachableStep',
        message: `step "${step.id}" can never run: its runCondition cannot be true`,
      });
    }
    if (step.agent !== undefined && knownAgents !== undefined && !knownAgents.has(step.agent)) {
      out.push({
        path: `${path}/agent`,
        rule: 'unknownAgent',
        message: `persona "${step.agent}" is not installed; the step will run without it`,
        actual: step.agent,
        expected: [...knownAgents].sort().join(', '),
      });
    }
  };
  workflow.steps.forEach((step, i) => {
    const path = `/steps/${i}`;
    if (isCommandStep(step)) {
      reads(step.runCondition, `${path}/runCondition`);
      if (step.repeat) reads(step.repeat.until, `${path}/repeat/until`);
      return;
    }
    if (!isLoopStep(step)) {
      visitPrompt(step, path);
      return;
    }
    reads(step.runCondition, `${path}/runCondition`);
    const cfg = step.loop;
    if (cfg.type === 'while' || cfg.type === 'until') reads(cfg.condition, `${path}/loop/condition`);
    if (cfg.type === 'for' && typeof cfg.count === 'string') checkVar(cfg.count, `${path}/loop/count`);
    if (cfg.type === 'forEach') checkVar(cfg.items, `${path}/loop/items`);
    if (
      (cfg.type === 'for' && cfg.count === 0) ||
      (step.runCondition !== undefined && !satisfiable(step.runCondition))
    ) {
      out.push({ path, rule: 'unreachableStep', message: `the body of loop "${step.id}" can never run` });
    }
    if (Array.isArray(step.body)) {
      step.body.forEach((inner, j) => {
        visitPrompt(inner, `${path}/body/${j}`);
      });
    }
  });
  return out;
}

function criteriaList(criteria: PromptStep['validationCriteria']): Condition[] {
  const out: Condition[] = [];
  const visit = (c: ValidationCriterion) => {
    if ('and' in c) c.and.forEach(visit);
    else if ('or' in c) c.or.forEach(visit);
    else if ('not' in c) visit(c.not);
    else if (c.condition !== undefined) out.push(c.condition);
  };
  if (criteria !== undefined) (Array.isArray(criteria) ? criteria : [criteria]).forEach(visit);
  return out;
}

function loopVariables(workflow: Workflow): Set<string> {
  const vars = new Set<string>(['_loops']);
  for (const step of workflow.steps) {
    if (!isLoopStep(step)) continue;
    vars.add(step.loop.iterationVar ?? 'currentIteration');
    if (step.loop.type === 'forEach') {
      vars.add(step.loop.itemVar ?? 'currentItem');
      vars.add(step.loop.indexVar ?? 'currentIndex');
    }
  }
  return vars;
}

function documentation(workflow: Workflow): string {
  const parts: string[] = [
    workflow.description,
    ...(workflow.preconditions ?? []),
    ...(workflow.clarificationPrompts ?? []),
    ...(workflow.metaGuidance ?? []),
  ];
  const prompt = (s: PromptStep) => parts.push(s.title, s.prompt, ...(s.guidance ?? []), s.agentRole ?? '');
  for (const step of workflow.steps) {
    if (isLoopStep(step)) {
      parts.push(step.title, step.prompt ?? '');
      if (Array.isArray(step.body)) step.body.forEach(prompt);
    } else if (isCommandStep(step)) parts.push(step.title, step.run);
    else prompt(step);
  }
  return parts.join('\n');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A conservative satisfiability check: false only for conjunctions that contradict themselves on
 * one variable (two different `equals`, `equals` with a matching `not_equals`, empty numeric range).
 */
function satisfiable(cond: Condition): boolean {
  const conjuncts: VarCondition[] = [];
  const flatten = (c: Condition): boolean => {
    if ('and' in c) return c.and.every(flatten);
    if ('or' in c || 'not' in c) return true;
    conjuncts.push(c);
    return true;
  };
  flatten(cond);
  const byVar = new Map<string, VarCondition[]>();
  for (const c of conjuncts) byVar.set(c.var, [...(byVar.get(c.var) ?? []), c]);
  for (const list of byVar.values()) {
    const equals = list.filter((c) => 'equals' in c).map((c) => JSON.stringify(c.equals));
    if (new Set(equals).size > 1) return false;
    const notEquals = new Set(list.filter((c) => 'not_equals' in c).map((c) => JSON.stringify(c.not_equals)));
    if (equals.some((e) => notEquals.has(e))) return false;
    let low = Number.NEGATIVE_INFINITY;
    let high = Number.POSITIVE_INFINITY;
    let lowOpen = false;
    let highOpen = false;
    for (const c of list) {
      if (c.gt !== undefined && (c.gt > low || (c.gt === low && !lowOpen))) [low, lowOpen] = [c.gt, true];
      if (c.gte !== undefined && c.gte > low) [low, lowOpen] = [c.gte, false];
      if (c.lt !== undefined && (c.lt < high || (c.lt === high && !highOpen)))
        [high, highOpen] = [c.lt, true];
      if (c.lte !== undefined && c.lte < high) [high, highOpen] = [c.lte, false];
    }
    if (low > high || (low === high && (lowOpen || highOpen))) return false;
    const eqNumber = list.find((c) => typeof c.equals === 'number')?.equals as number | undefined;
    if (eqNumber !== undefined && (eqNumber < low || eqNumber > high)) return false;
  }
  return true;
}
