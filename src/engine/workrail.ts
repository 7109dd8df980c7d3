/**
 * WorkRail's authoring fields given meaning (docs/workrail-compatibility.md): structured prompts
 * (promptBlocks, promptFragments, functions, templateCall), the loop-control contract and assessments.
 * Pure and cheap: rendering walks the step once, checking a submission parses at most a few JSON texts.
 */
import type { Violation } from '../model/violation.js';
import {
  type Assessment,
  type FunctionDefinition,
  isLoopStep,
  type LoopStep,
  modelSchemas,
  PROMPT_BLOCK_ORDER,
  type PromptBlock,
  type PromptBlocks,
  type PromptPart,
  type PromptStep,
  type Step,
  type Workflow,
} from '../model/workflow.js';
import { asRecord, type Context, evaluateCondition } from './conditions.js';
import { checkContract, contractInstruction, knownContract, LOOP_CONTROL_CONTRACT } from './contracts.js';
import type { ValidationResult } from './validation-engine.js';

// ---------------------------------------------------------------------------------------------
// Built-in snippets (`{kind: "ref", refId}` parts), in our own words

const SNIPPETS: Readonly<Record<string, string>> = {
  'wr.refs.notes_first_durability':
    'Keep the durable record of this step in your step output (its summary), not in scratch files: a later step, or a resumed session, reads it from there.',
  'wr.refs.synthesis_under_disagreement':
    'When sources or reviewers disagree, say where, weigh the evidence yourself, and record which side you take and why.',
  'wr.refs.parallelize_cognition_serialize_synthesis':
    'Run independent reading and review passes side by side when you can; bring the results together yourself, one decision at a time.',
  'wr.refs.adversarial_challenge_rules':
    'Argue against the leading option as a skeptic would: name the assumption that breaks it and the evidence that would show it.',
};

export function snippetText(refId: string): string | undefined {
  return Object.hasOwn(SNIPPETS, refId) ? SNIPPETS[refId] : undefined;
}

function partText(part: PromptPart): string {
  if (typeof part === 'string') return part;
  if (part.kind === 'ref' && typeof part.refId === 'string')
    return snippetText(part.refId) ?? `(see ${part.refId})`;
  return typeof part.text === 'string' ? part.text : '';
}

function itemText(item: string | PromptPart[]): string {
  return typeof item === 'string' ? item : item.map(partText).join(' ');
}

const BLOCK_TITLES: Readonly<Record<(typeof PROMPT_BLOCK_ORDER)[number], string>> = {
  goal: 'Goal',
  constraints: 'Constraints',
  procedure: 'Procedure',
  outputRequired: 'Output required',
  verify: 'Verify',
};

function blockBody(name: (typeof PROMPT_BLOCK_ORDER)[number], block: PromptBlock): string {
  if (typeof block === 'string') return block;
  if (Array.isArray(block)) {
    const lines = block.map(itemText).filter((t) => t.length > 0);
    return lines.map((t, i) => (name === 'procedure' ? `${i + 1}. ${t}` : `- ${t}`)).join('\n');
  }
  return Object.entries(block)
    .map(([key, item]) => `- ${key}: ${itemText(item)}`)
    .join('\n');
}

/** promptBlocks as Markdown sections, always in the order goal, constraints, procedure, outputRequired, verify. */
export function renderPromptBlocks(blocks: PromptBlocks): string {
  const sections: string[] = [];
  for (const name of PROMPT_BLOCK_ORDER) {
    const block = blocks[name];
    if (block === undefined) continue;
    const body = blockBody(name, block);
    if (body.length > 0) sections.push(`### ${BLOCK_TITLES[name]}\n${body}`);
  }
  return sections.join('\n\n');
}

// ---------------------------------------------------------------------------------------------
// Templates (templateCall), in our own words

const ROUTINE_PREFIX = 'wr.templates.routine.';

/** What each routine the WorkRail library calls is for; the expansion names its workflow too. */
const ROUTINES: Readonly<Record<string, string>> = {
  'context-gathering':
    'explore the code that matters here and write down what you found, with file references',
  'design-review':
    'review the selected design for gaps, risks and simpler alternatives, and list the findings',
  'execution-simulation':
    'walk through how the code will behave on the riskiest paths, step by step, and note where it breaks',
  'feature-implementation': 'implement the planned change in small, verified increments',
  'final-verification':
    'check the finished work against every acceptance criterion and invariant, with evidence',
  'hypothesis-challenge': 'argue against the current hypothesis and record what would prove it wrong',
  ideation: 'generate several genuinely different options before choosing',
  'parallel-work-partitioning': 'split the work into independent parts that can proceed side by side',
  'philosophy-alignment': "check the work against the project's stated principles and name each tension",
  'plan-analysis': 'audit the plan for missing work, weak assumptions and unverifiable criteria',
  'plan-generation': 'write an implementation plan with slices, tests and risks',
  'reviewer-family': 'review the change from several independent angles and merge the findings',
  'tension-driven-design':
    'name the tensions of the problem and design candidates that resolve them differently',
};

export function knownTemplate(templateId: string): boolean {
  return (
    templateId.startsWith(ROUTINE_PREFIX) && Object.hasOwn(ROUTINES, templateId.slice(ROUTINE_PREFIX.length))
  );
}

/** Every template id the loader expands. */
export function templateIds(): string[] {
  return Object.keys(ROUTINES).map((name) => `${ROUTINE_PREFIX}${name}`);
}

/** The prompt a templateCall expands to; undefined for an unknown template (the loader refuses those). */
export function expandTemplate(
  templateId: string,
  args: Record<string, unknown> | undefined,
): string | undefined {
  if (!knownTemplate(templateId)) return undefined;
  const name = templateId.slice(ROUTINE_PREFIX.length);
  const lines = [
    `Run the ${name} routine: ${ROUTINES[name]}.`,
    `If the workflow "wr.routine-${name}" is available (workflow_get), follow its steps; otherwise do the routine yourself, or hand it to a sub-agent and treat what comes back as evidence to check.`,
  ];
  const entries = Object.entries(args ?? {});
  if (entries.length > 0) {
    lines.push(
      `Arguments:\n${entries.map(([k, v]) => `- ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n')}`,
    );
  }
  const deliverable = args?.deliverableName;
  if (typeof deliverable === 'string')
    lines.push(`Write the result to \`${deliverable}\` and summarize it in your output.`);
  else lines.push('Summarize the result in your output.');
  return lines.join('\n\n');
}

/**
 * The workflow ids a template names: `wr.templates.routine.<name>` is the routine `wr.routine-<name>`
 * (or a legacy `routine-<name>`), as WorkRail names them.
 */
export function routineIdsOf(templateId: string): string[] {
  if (!templateId.startsWith(ROUTINE_PREFIX)) return [];
  const name = templateId.slice(ROUTINE_PREFIX.length);
  return [`wr.routine-${name}`, `routine-${name}`];
}

/** `{argName}` in a routine's title or prompt, never `{{contextVar}}` (filled in at run time). */
const TEMPLATE_ARG = /(?<!\{)\{([^{}]+)\}(?!\})/g;

/**
 * Expands every templateCall whose routine is installed into the routine's steps, as WorkRail compiles
 * them: each routine step becomes `<caller id>.<routine step id>` with its own fields (gates, contracts,
 * criteria, role), `{arg}` in its title and prompt replaced by the call's arguments, the routine's
 * metaGuidance added to its guidance, and the caller's runCondition when it has none. Steps of inline
 * loop bodies expand too. A templateCall whose routine is not installed stays one step (its built-in
 * text). A missing or non-scalar argument, a routine step that is not a prompt step, or an id that
 * clashes after expansion is a violation: the workflow cannot be served, as WorkRail cannot compile it.
 */
export function expandTemplateCalls(
  workflow: Workflow,
  routineOf: (templateId: string) => Workflow | undefined,
): { workflow: Workflow; expanded: boolean; violations: Violation[] } {
  const violations: Violation[] = [];
  let expanded = false;
  const expand = (step: PromptStep, path: string): PromptStep[] => {
    const call = step.templateCall;
    const routine = call === undefined ? undefined : routineOf(call.templateId);
    if (call === undefined || routine === undefined) return [step];
    expanded = true;
    const args = call.args ?? {};
    const fill = (text: string, routineStep: string, field: string) =>
      text.replace(TEMPLATE_ARG, (whole, name: string) => {
        const value = args[name];
        if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
          return String(value);
        violations.push({
          path: `${path}/templateCall/args`,
          rule: 'templateArg',
          message:
            value === undefined
              ? `routine "${routine.id}" step "${routineStep}" uses {${name}} in its ${field}; templateCall.args does not give it`
              : `routine "${routine.id}" step "${routineStep}" uses {${name}}; its argument must be a string, number or boolean`,
          actual: name,
        });
        return whole;
      });
    const out: PromptStep[] = [];
    for (const inner of routine.steps) {
      if (isLoopStep(inner) || 'run' in inner || inner.templateCall !== undefined) {
        violations.push({
          path: `${path}/templateCall/templateId`,
          rule: 'routineStep',
          message: `routine "${routine.id}" step "${inner.id}" is ${isLoopStep(inner) ? 'a loop' : 'run' in inner ? 'a command step' : 'another templateCall'}; a routine expands into prompt steps only`,
          actual: inner.id,
        });
        continue;
      }
      const meta = routine.metaGuidance ?? [];
      const runCondition = inner.runCondition ?? step.runCondition;
      out.push({
        ...inner,
        id: `${step.id}.${inner.id}`,
        title: fill(inner.title, inner.id, 'title'),
        ...(inner.prompt !== undefined ? { prompt: fill(inner.prompt, inner.id, 'prompt') } : {}),
        ...(meta.length > 0 ? { guidance: [...(inner.guidance ?? []), ...meta] } : {}),
        ...(runCondition !== undefined ? { runCondition } : {}),
      });
    }
    return out;
  };
  const steps = workflow.steps.flatMap((step, i): Step[] => {
    if (isLoopStep(step)) {
      if (!Array.isArray(step.body)) return [step];
      const body = step.body.flatMap((inner, j) => expand(inner, `/steps/${i}/body/${j}`));
      return [{ ...step, body }];
    }
    return 'run' in step ? [step] : expand(step, `/steps/${i}`);
  });
  if (!expanded) return { workflow, expanded, violations };
  const seen = new Set<string>();
  const note = (id: string) => {
    if (seen.has(id))
      violations.push({
        path: '/steps',
        rule: 'uniqueId',
        message: `step id "${id}" appears twice once templateCalls are expanded`,
        actual: id,
      });
    seen.add(id);
  };
  for (const step of steps) {
    note(step.id);
    if (isLoopStep(step) && Array.isArray(step.body)) for (const inner of step.body) note(inner.id);
  }
  return { workflow: { ...workflow, steps }, expanded, violations };
}

// ---------------------------------------------------------------------------------------------
// Step text

/**
 * The step's own instruction: prompt, else its rendered promptBlocks, else its expanded template; its
 * parallelDelegations follow (or are the whole text of a parallel step). With a context, delegations
 * whose runCondition does not hold are left out, as WorkRail leaves them out.
 */
export function stepPromptText(step: PromptStep, context?: Context): string {
  const own =
    step.prompt ??
    (step.promptBlocks !== undefined ? renderPromptBlocks(step.promptBlocks) : undefined) ??
    (step.templateCall !== undefined
      ? (expandTemplate(step.templateCall.templateId, step.templateCall.args) ?? '')
      : undefined);
  const all = step.parallelDelegations ?? [];
  if (all.length === 0) return own ?? '';
  const active =
    context === undefined
      ? all
      : all.filter((d) => {
          if (d.runCondition === undefined) return true;
          // Kept as written (delegations are WorkRail's loose objects): one that is not a condition
          // never holds, as WorkRail's evaluator answers false for it.
          const condition = modelSchemas().ConditionSchema.safeParse(d.runCondition);
          return condition.success && evaluateCondition(condition.data, context);
        });
  const text = active.length > 0 ? delegationText(active) : NO_DELEGATION;
  return own === undefined ? text : `${own}\n\n${text}`;
}

const NO_DELEGATION =
  'No part of this step applies to this context (every delegation has a condition that does not hold): report that and move on.';

/** A parallel step's instruction: the hand-offs to run side by side, then bringing their results together. */
function delegationText(delegations: NonNullable<PromptStep['parallelDelegations']>): string {
  const lines = delegations.map((d, i) => {
    const who =
      typeof d.workflowId === 'string' ? `follow the workflow "${d.workflowId}"` : 'do the part below';
    const tier = d.modelTier !== undefined ? ` (model tier: ${d.modelTier})` : '';
    const args = Object.entries(d.args ?? {})
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join('; ');
    // contextMapping: context values the sub-agent receives, named by the key it reads them under.
    const mapped = Object.entries(asRecord(d.contextMapping))
      .map(([from, to]) => (from === to ? from : `${String(to)} (context ${from})`))
      .join(', ');
    return `${i + 1}. ${who}${tier}${args ? `, with ${args}` : ''}${mapped ? `; give it ${mapped} from the context` : ''}`;
  });
  return [
    'Hand these independent parts to sub-agents side by side when you can (otherwise do them one after another yourself):',
    lines.join('\n'),
    'Then read what each part produced, check it against the evidence yourself, and summarize the combined result in your output.',
  ].join('\n\n');
}

/** Texts of the step's promptFragments whose `when` holds in the context, in file order. */
export function activeFragments(step: PromptStep, context: Context): string[] {
  return (step.promptFragments ?? [])
    .filter((f) => f.when === undefined || evaluateCondition(f.when, context))
    .map((f) => f.text);
}

/** The loop whose inline body holds the step, if any. */
export function enclosingLoop(workflow: Workflow, stepId: string): LoopStep | undefined {
  for (const s of workflow.steps) {
    if (!isLoopStep(s)) continue;
    if (Array.isArray(s.body) ? s.body.some((b) => b.id === stepId) : s.body === stepId) return s;
  }
  return undefined;
}

/**
 * The function definitions the step's guidance shows: those it references (functionReferences,
 * looked up in the step, its loop, then the workflow) and those it declares itself.
 */
export function stepFunctions(workflow: Workflow, step: PromptStep): FunctionDefinition[] {
  const loop = enclosingLoop(workflow, step.id);
  const scopes = [
    step.functionDefinitions ?? [],
    loop?.functionDefinitions ?? [],
    workflow.functionDefinitions ?? [],
  ];
  const shown = new Map<string, FunctionDefinition>();
  for (const def of step.functionDefinitions ?? []) shown.set(def.name, def);
  for (const ref of step.functionReferences ?? []) {
    const name = ref.slice(0, -2);
    if (shown.has(name)) continue;
    for (const scope of scopes) {
      const def = scope.find((d) => d.name === name);
      if (def) {
        shown.set(name, def);
        break;
      }
    }
  }
  return [...shown.values()];
}

export function describeFunction(def: FunctionDefinition): string {
  const params = (def.parameters ?? []).map((p) => `${p.name}${p.required ? '' : '?'}: ${p.type}`).join(', ');
  return `${def.name}(${params}): ${def.definition}`;
}

// ---------------------------------------------------------------------------------------------
// Artifacts the agent reports: the loop-control contract and assessments

export { LOOP_CONTROL_CONTRACT };
export const ASSESSMENT_CONTRACT = 'wr.contracts.assessment';
export const LOOP_CONTROL_KIND = 'wr.loop_control';
export const ASSESSMENT_KIND = 'wr.assessment';

/** Reserved context key: the latest loop-control decision per loop step id. */
export const LOOP_CONTROL_KEY = '_loopControl';

export type LoopDecision = 'continue' | 'stop';

export interface ReportedOutput {
  summary: string;
  /** Ids, stored artifacts (`type` a `wr.` kind, JSON `content`), or WorkRail's own `{kind, ...}` objects. */
  artifacts?:
    | readonly (string | { type: string; content: string } | ({ kind: string } & Record<string, unknown>))[]
    | undefined;
}

const FENCE = /```(?:json)?[ \t]*\n([\s\S]*?)```/g;
/** Largest text parsed for artifacts; summaries are bounded by the tools already. */
const MAX_PARSE = 262_144;

function tryJson(text: string): unknown {
  if (text.length > MAX_PARSE) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function collect(value: unknown, into: Record<string, unknown>[]): void {
  const record = asRecord(value);
  if (Array.isArray(record.artifacts)) {
    for (const a of record.artifacts) if (typeof asRecord(a).kind === 'string') into.push(asRecord(a));
  } else if (typeof record.kind === 'string') into.push(record);
}

/**
 * The WorkRail artifacts in a step output: WorkRail's own `{kind, ...}` objects in `output.artifacts`
 * first, then `{"artifacts": [...]}` (or one `{kind, ...}` object) as the whole summary or in a
 * ```json block of it, and stored artifacts whose type is a `wr.` kind with JSON content.
 */
export function reportedArtifacts(output: ReportedOutput): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  for (const a of output.artifacts ?? []) {
    if (typeof a !== 'string' && typeof (a as { kind?: unknown }).kind === 'string')
      found.push(a as Record<string, unknown>);
  }
  const text = output.summary.trim();
  const inText: Record<string, unknown>[] = [];
  if (text.startsWith('{')) collect(tryJson(text), inText);
  if (inText.length === 0 && text.includes('```')) {
    for (const m of text.matchAll(FENCE)) collect(tryJson(m[1] ?? ''), inText);
  }
  found.push(...inText);
  for (const a of output.artifacts ?? []) {
    if (typeof a === 'string' || !('type' in a) || typeof a.type !== 'string' || !a.type.startsWith('wr.'))
      continue;
    const content = asRecord(tryJson(String(a.content)));
    found.push({ ...content, kind: a.type });
  }
  return found;
}

/** The dimension levels of one reported assessment artifact. */
function reportedLevels(artifact: Record<string, unknown>): Record<string, unknown> {
  const dims = artifact.dimensions;
  if (Array.isArray(dims)) {
    const out: Record<string, unknown> = {};
    for (const d of dims) {
      const r = asRecord(d);
      const id = r.id ?? r.dimensionId;
      if (typeof id === 'string') out[id] = r.level;
    }
    return out;
  }
  // A dimension is a level, or {level, rationale} as WorkRail also takes it.
  return Object.fromEntries(
    Object.entries(asRecord(dims)).map(([id, v]) => [
      id,
      typeof v === 'object' && v !== null && !Array.isArray(v) ? asRecord(v).level : v,
    ]),
  );
}

export interface SubmissionCheck {
  /** Problems that refuse the output (missing or malformed artifacts). */
  issues: string[];
  suggestions: string[];
  /** Follow-up guidance of fired assessment consequences: the step stays current. */
  followups: string[];
  /** The loop decision the output reports, with the loop it names. */
  loopDecision?: { decision: LoopDecision; loopId?: string };
  /** Reported assessment levels by assessment id. */
  assessments: Record<string, Record<string, string>>;
}

/** Whether a step asks for anything this check looks at (most steps do not: no parsing then). */
export function hasWorkrailChecks(step: PromptStep): boolean {
  return step.outputContract !== undefined || (step.assessmentRefs?.length ?? 0) > 0;
}

/**
 * Checks a submitted output against the step's outputContract and assessments, and says what the
 * output reports: a loop decision, assessment levels, and the follow-ups their consequences require.
 */
export function checkSubmission(
  workflow: Workflow,
  step: PromptStep,
  output: ReportedOutput,
): SubmissionCheck {
  const result: SubmissionCheck = { issues: [], suggestions: [], followups: [], assessments: {} };
  if (!hasWorkrailChecks(step)) return result;
  const artifacts = reportedArtifacts(output);
  const contract = step.outputContract;
  if (contract !== undefined && contract.contractRef !== LOOP_CONTROL_CONTRACT) {
    const checked = checkContract(contract.contractRef, artifacts, contract.required !== false);
    result.issues.push(...checked.issues);
    result.suggestions.push(...checked.suggestions);
  }
  if (contract?.contractRef === LOOP_CONTROL_CONTRACT) {
    const control = artifacts.filter((a) => a.kind === LOOP_CONTROL_KIND).at(-1);
    const decision = control?.decision;
    if (control === undefined) {
      if (contract.required !== false) {
        result.issues.push('the output carries no loop-control artifact (kind "wr.loop_control")');
        result.suggestions.push(LOOP_CONTROL_HINT);
      }
    } else if (decision !== 'continue' && decision !== 'stop') {
      result.issues.push('the loop-control artifact needs "decision": "continue" or "stop"');
      result.suggestions.push(LOOP_CONTROL_HINT);
    } else {
      result.loopDecision = {
        decision,
        ...(typeof control.loopId === 'string' ? { loopId: control.loopId } : {}),
      };
    }
  }
  const refs = step.assessmentRefs ?? [];
  const defs = new Map((workflow.assessments ?? []).map((a) => [a.id, a]));
  const reports = artifacts.filter((a) => a.kind === ASSESSMENT_KIND);
  for (const ref of refs) {
    const def = defs.get(ref);
    if (def === undefined) continue;
    const report =
      reports.find((r) => r.assessmentId === ref) ??
      (refs.length === 1 && reports.length === 1 ? reports[0] : undefined);
    if (report === undefined) {
      result.issues.push(`the output does not report assessment "${ref}"`);
      result.suggestions.push(assessmentHint(def));
      continue;
    }
    const levels = reportedLevels(report);
    const accepted: Record<string, string> = {};
    for (const dim of def.dimensions) {
      const level = levels[dim.id];
      if (typeof level !== 'string' || !dim.levels.includes(level)) {
        result.issues.push(
          `assessment "${ref}" needs dimension "${dim.id}" rated one of ${dim.levels.map((l) => `"${l}"`).join(', ')}`,
        );
      } else accepted[dim.id] = level;
    }
    result.assessments[ref] = accepted;
  }
  if (result.issues.length > 0) return result;
  for (const consequence of step.assessmentConsequences ?? []) {
    const { anyEqualsLevel, forAssessment } = consequence.when;
    const fired = Object.entries(result.assessments).some(
      ([id, levels]) =>
        (forAssessment === undefined || forAssessment === id) &&
        Object.values(levels).includes(anyEqualsLevel),
    );
    if (fired) result.followups.push(consequence.effect.guidance);
  }
  return result;
}

const LOOP_CONTROL_HINT =
  'End the output with ```json {"artifacts": [{"kind": "wr.loop_control", "decision": "continue"}]} ``` ("stop" to leave the loop).';

function assessmentHint(def: Assessment): string {
  const dims = Object.fromEntries(def.dimensions.map((d) => [d.id, d.levels.join('|')]));
  return `Report it as ${JSON.stringify({ artifacts: [{ kind: ASSESSMENT_KIND, assessmentId: def.id, dimensions: dims }] })} in a \`\`\`json block of the output.`;
}

/** What the step guidance tells the agent to report: the contract artifact and each assessment. */
export function reportingInstructions(workflow: Workflow, step: PromptStep): string[] {
  const out: string[] = [];
  const contract = step.outputContract;
  if (contract?.contractRef === LOOP_CONTROL_CONTRACT) {
    out.push(`Loop decision${contract.required === false ? ' (optional)' : ''}: ${LOOP_CONTROL_HINT}`);
  } else if (contract !== undefined && knownContract(contract.contractRef)) {
    out.push(contractInstruction(contract.contractRef, contract.required !== false));
  }
  const defs = new Map((workflow.assessments ?? []).map((a) => [a.id, a]));
  for (const ref of step.assessmentRefs ?? []) {
    const def = defs.get(ref);
    if (def === undefined) continue;
    const dims = def.dimensions.map(
      (d) => `${d.id} (${d.levels.join(' / ')})${d.purpose ? `: ${d.purpose}` : ''}`,
    );
    out.push(
      `Assessment "${def.id}"${def.purpose ? ` (${def.purpose})` : ''}. Rate ${dims.join('; ')}. ${assessmentHint(def)}`,
    );
  }
  return out;
}

/**
 * The loop a reported decision is for: the loop its loopId names (a conditionSource loopId or a loop
 * step id), else the loop whose body holds the step, else the first artifact loop after the step.
 */
export function decisionTarget(
  workflow: Workflow,
  stepId: string,
  loopId: string | undefined,
): LoopStep | undefined {
  const loops = workflow.steps.filter(isLoopStep);
  if (loopId !== undefined) {
    const named = loops.find(
      (l) =>
        l.id === loopId ||
        ((l.loop.type === 'while' || l.loop.type === 'until') &&
          l.loop.conditionSource?.kind === 'artifact_contract' &&
          l.loop.conditionSource.loopId === loopId),
    );
    if (named) return named;
  }
  const enclosing = enclosingLoop(workflow, stepId);
  if (enclosing) return enclosing;
  const at = workflow.steps.findIndex((s) => s.id === stepId);
  return workflow.steps
    .slice(at + 1)
    .find(
      (s): s is LoopStep =>
        isLoopStep(s) &&
        (s.loop.type === 'while' || s.loop.type === 'until') &&
        s.loop.conditionSource?.kind === 'artifact_contract',
    );
}

/**
 * A step's criteria result with its WorkRail checks added: a missing or bad artifact fails it like a
 * broken rule, and a fired assessment consequence asks for its follow-up. One rule for the durable
 * submission and the stateless step check, so both judge an output alike.
 */
export function withSubmissionCheck(
  validation: ValidationResult,
  reported: SubmissionCheck,
): ValidationResult {
  if (!validation.valid || (reported.issues.length === 0 && reported.followups.length === 0))
    return validation;
  return {
    valid: false,
    issues: [...reported.issues, ...reported.followups.map((f) => `Follow-up required: ${f}`)],
    suggestions: reported.suggestions,
  };
}

/** The context with a loop decision recorded for the loop it addresses. */
export function recordDecision(
  workflow: Workflow,
  stepId: string,
  reported: { decision: LoopDecision; loopId?: string },
  context: Context,
): void {
  const loop = decisionTarget(workflow, stepId, reported.loopId);
  if (loop === undefined) return;
  context[LOOP_CONTROL_KEY] = { ...asRecord(context[LOOP_CONTROL_KEY]), [loop.id]: reported.decision };
}

// ---------------------------------------------------------------------------------------------
// Load-time rules and warnings

/** Rules the schema cannot express: a prompt source, known templates, resolvable references. */
export function workrailViolations(workflow: Workflow): Violation[] {
  const out: Violation[] = [];
  const assessments = new Map((workflow.assessments ?? []).map((a) => [a.id, a]));
  const visit = (step: PromptStep, path: string) => {
    if (step.templateCall !== undefined && !knownTemplate(step.templateCall.templateId)) {
      out.push({
        path: `${path}/templateCall/templateId`,
        rule: 'unknownTemplate',
        message: `unknown template "${step.templateCall.templateId}"; known: ${templateIds().join(', ')}`,
        actual: step.templateCall.templateId,
      });
    }
    const refs = step.assessmentRefs ?? [];
    refs.forEach((ref, i) => {
      if (!assessments.has(ref)) {
        out.push({
          path: `${path}/assessmentRefs/${i}`,
          rule: 'assessmentRef',
          message: `the workflow declares no assessment "${ref}"`,
          actual: ref,
        });
      }
    });
    (step.assessmentConsequences ?? []).forEach((c, i) => {
      const at = `${path}/assessmentConsequences/${i}/when`;
      if (refs.length === 0) {
        out.push({
          path: at,
          rule: 'assessmentRef',
          message: 'assessmentConsequences need assessmentRefs on the step',
        });
        return;
      }
      const scope = c.when.forAssessment === undefined ? refs : [c.when.forAssessment];
      if (c.when.forAssessment !== undefined && !refs.includes(c.when.forAssessment)) {
        out.push({
          path: `${at}/forAssessment`,
          rule: 'assessmentRef',
          message: `forAssessment "${c.when.forAssessment}" is not one of this step's assessmentRefs`,
          actual: c.when.forAssessment,
        });
      }
      const levels = scope.flatMap((id) => assessments.get(id)?.dimensions.flatMap((d) => d.levels) ?? []);
      if (levels.length > 0 && !levels.includes(c.when.anyEqualsLevel)) {
        out.push({
          path: `${at}/anyEqualsLevel`,
          rule: 'assessmentLevel',
          message: `no referenced assessment has a level "${c.when.anyEqualsLevel}"`,
          actual: c.when.anyEqualsLevel,
        });
      }
    });
  };
  workflow.steps.forEach((step, i) => {
    const path = `/steps/${i}`;
    if (isLoopStep(step)) {
      const cfg = step.loop;
      if (
        (cfg.type === 'while' || cfg.type === 'until') &&
        cfg.condition === undefined &&
        cfg.conditionSource === undefined
      ) {
        out.push({
          path: `${path}/loop`,
          rule: 'loopCondition',
          message: `a ${cfg.type} loop needs a condition or a conditionSource`,
        });
      }
      if (Array.isArray(step.body))
        for (const [j, inner] of step.body.entries()) visit(inner, `${path}/body/${j}`);
    } else if (!('run' in step)) visit(step, path);
  });
  return out;
}

/** Fields accepted for WorkRail files that do nothing here: one warning per field (the table lists them). */
const INERT_ROOT = [
  'metricsProfile',
  'recommendedPreferences',
  'features',
  'capabilities',
  'extensionPoints',
  'validatedAgainstSpecVersion',
] as const;
const INERT_STEP = ['hasValidation', 'notesOptional', 'functionCalls', 'audit', 'verification'] as const;

/** `delegates`: a parallel step that runs as a delegation here (workrail-parallel.ts) draws no warning. */
export function workrailWarnings(workflow: Workflow, delegates?: (step: PromptStep) => boolean): Violation[] {
  const out: Violation[] = [];
  const root = workflow as Record<string, unknown>;
  for (const field of INERT_ROOT) {
    if (root[field] !== undefined) {
      out.push({
        path: `/${field}`,
        rule: 'workrailInert',
        message: `${field} is a WorkRail field this server accepts and keeps but does not act on (docs/workrail-compatibility.md)`,
        actual: field,
      });
    }
  }
  const firstUse = new Map<string, { path: string; count: number }>();
  const note = (field: string, path: string) => {
    const seen = firstUse.get(field);
    if (seen) seen.count++;
    else firstUse.set(field, { path, count: 1 });
  };
  const unknownRefs = new Set<string>();
  const visit = (step: Record<string, unknown>, path: string) => {
    for (const field of INERT_STEP) if (step[field] !== undefined) note(field, `${path}/${field}`);
    // Delegations are listed in the prompt either way; what the server does not do is run them.
    if (step.parallelDelegations !== undefined && delegates?.(step as PromptStep) !== true)
      note('parallelDelegations (no sub-agents are spawned)', `${path}/parallelDelegations`);
    const contract = (step.outputContract as { contractRef?: unknown } | undefined)?.contractRef;
    if (typeof contract === 'string' && !knownContract(contract))
      note(`outputContract ${contract}`, `${path}/outputContract`);
    const blocks = step.promptBlocks as PromptBlocks | undefined;
    for (const block of Object.values(blocks ?? {})) {
      const items = Array.isArray(block)
        ? block
        : typeof block === 'object' && block !== null
          ? Object.values(block)
          : [];
      for (const item of items) {
        if (!Array.isArray(item)) continue;
        for (const part of item) {
          if (
            typeof part === 'object' &&
            part.kind === 'ref' &&
            typeof part.refId === 'string' &&
            snippetText(part.refId) === undefined
          )
            unknownRefs.add(part.refId);
        }
      }
    }
  };
  workflow.steps.forEach((step, i) => {
    const path = `/steps/${i}`;
    const record = step as Record<string, unknown>;
    if (isLoopStep(step)) {
      if (step.requireConfirmation !== undefined)
        note('requireConfirmation (on a loop)', `${path}/requireConfirmation`);
      if (Array.isArray(step.body))
        for (const [j, inner] of step.body.entries())
          visit(inner as Record<string, unknown>, `${path}/body/${j}`);
    } else visit(record, path);
  });
  for (const [field, { path, count }] of firstUse) {
    out.push({
      path,
      rule: 'workrailInert',
      message: `${field} (${count} step${count > 1 ? 's' : ''}) is a WorkRail field this server accepts and keeps but does not act on (docs/workrail-compatibility.md)`,
      actual: field,
    });
  }
  for (const refId of unknownRefs) {
    out.push({
      path: '',
      rule: 'workrailRef',
      message: `prompt reference "${refId}" is not a built-in snippet here; it is shown as "(see ${refId})"`,
      actual: refId,
    });
  }
  return out;
}

/** The step's effective role: its own, else its loop's, else the workflow's. */
export function effectiveRole(workflow: Workflow, step: PromptStep): string | undefined {
  return step.agentRole ?? enclosingLoop(workflow, step.id)?.agentRole ?? workflow.agentRole;
}
