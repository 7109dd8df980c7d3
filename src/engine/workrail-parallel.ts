/**
 * WorkRail's `type: parallel` steps run as delegations (docs/workrail-compatibility.md). When every one of a
 * parallel step's parallelDelegations names a workflow this server serves, the step becomes a delegating
 * step (`delegate`): one child execution per delegation, joined when all completed; its `synthesis` becomes
 * a step of its own right after it. Otherwise the step stays text (stepPromptText lists the delegations and
 * the agent hands them off or does them itself). Pure: what is served is a predicate the caller gives.
 */
import {
  CHILD_NAME_PATTERN,
  type Condition,
  DELEGATION_MAX_CHILDREN,
  isLoopStep,
  modelSchemas,
  type OutputContract,
  type PromptStep,
  type Step,
  type Workflow,
} from '../model/workflow.js';
import { asRecord } from './conditions.js';

type Delegate = NonNullable<PromptStep['delegate']>;
type DelegateChild = NonNullable<Delegate['children']>[number];

/** What a parallel step becomes. */
export type ParallelPlan =
  | {
      kind: 'delegate';
      /** The step as a delegating step (its delegations and synthesis removed). */
      step: PromptStep;
      /** The step that brings the children's results together, when the parallel step has a synthesis. */
      synthesis?: PromptStep;
    }
  | {
      kind: 'text';
      /** The workflowIds this server does not serve, each once, in order. */
      missing: string[];
      /** Other reasons it cannot run as a delegation. */
      reasons: string[];
    };

/** The name a child's results are gathered under in the context (`into`), as the model allows it. */
const INTO = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** A context name `{{name}}` can read (templating.ts). */
const CONTEXT_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
const CHILD_NAME = new RegExp(CHILD_NAME_PATTERN);

/** A WorkRail synthesis: its prompt and output contract (`synthesis` on a parallel step). */
interface Synthesis {
  prompt?: string;
  outputContract?: OutputContract;
}

/**
 * The child's name: the last segment of its workflowId (after the namespace's dot) and its position,
 * `wr.routine-design-review` second in the list is `routine-design-review-2`.
 */
export function childName(workflowId: string, position: number): string {
  const suffix = `-${position}`;
  const segment = (workflowId.split('.').at(-1) ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .replace(/^[_-]+/, '')
    .slice(0, 64 - suffix.length);
  const name = `${segment || 'child'}${suffix}`;
  return CHILD_NAME.test(name) ? name : `child${suffix}`;
}

/** The synthesis step's id: `<parallel step id>-synthesis`. */
export function synthesisId(stepId: string): string {
  return `${stepId}-synthesis`;
}

function defaultSynthesisPrompt(into: string): string {
  return `Read the children's results in context.${into} (one entry per child, by name: its state, summary, context and artifacts) and combine them: say where they agree and where they disagree, check the claims that matter against the evidence yourself, and write one combined result in your output.`;
}

function delegatingPrompt(children: readonly DelegateChild[], into: string): string {
  const list = children.map((c) => `${c.name} (workflow "${c.workflow}")`).join(', ');
  return `Child executions do this step's work side by side, one per part: ${list}. The step is done when all of them completed; their results are then in context.${into}.`;
}

/**
 * What a parallel step becomes, given which workflow ids the server serves; undefined for a step that is
 * not `type: parallel` (a step with its own prompt lists its delegations as text). `taken`: the step ids
 * of the workflow, which the synthesis step's id must not clash with.
 */
export function parallelPlan(
  step: PromptStep,
  serves: (workflowId: string) => boolean,
  taken: ReadonlySet<string>,
): ParallelPlan | undefined {
  if (step.type !== 'parallel') return undefined;
  const delegations = step.parallelDelegations ?? [];
  const missing: string[] = [];
  const reasons: string[] = [];
  const children: DelegateChild[] = [];
  for (const [i, d] of delegations.entries()) {
    const record = d as Record<string, unknown>;
    const id = d.workflowId;
    const which = `delegation ${i + 1}`;
    if (id === undefined) {
      reasons.push(`${which} names no workflowId`);
      continue;
    }
    if (!serves(id)) {
      if (!missing.includes(id)) missing.push(id);
      continue;
    }
    let runCondition: Condition | undefined;
    if (record.runCondition !== undefined) {
      const parsed = modelSchemas().ConditionSchema.safeParse(record.runCondition);
      if (!parsed.success) {
        reasons.push(`${which}'s runCondition is not a condition`);
        continue;
      }
      runCondition = parsed.data;
    }
    // contextMapping {from: to}: the child's `to` is the parent's context value `from`; args win over it.
    const context: Record<string, unknown> = {};
    for (const [from, to] of Object.entries(asRecord(record.contextMapping))) {
      if (typeof to !== 'string' || to.length === 0 || !CONTEXT_NAME.test(from)) {
        reasons.push(`${which}'s contextMapping "${from}" is not a context name mapped to a key`);
        continue;
      }
      context[to] = `{{${from}}}`;
    }
    Object.assign(context, d.args ?? {});
    children.push({
      name: childName(id, i + 1),
      workflow: id,
      ...(Object.keys(context).length > 0 ? { context } : {}),
      ...(runCondition !== undefined ? { runCondition } : {}),
      ...(d.modelTier !== undefined ? { modelTier: d.modelTier } : {}),
    });
  }
  if (delegations.length > DELEGATION_MAX_CHILDREN)
    reasons.push(
      `it has ${delegations.length} delegations; a step starts at most ${DELEGATION_MAX_CHILDREN}`,
    );
  // A delegating step has no output of its own (the model refuses these beside `delegate`).
  for (const field of ['validationCriteria', 'verify', 'approval', 'outputContract'] as const)
    if (step[field] !== undefined) reasons.push(`it has ${field}, which a delegating step cannot have`);
  if (step.delegate !== undefined) reasons.push('it has a delegate of its own');
  const synthesis = synthesisOf(step, reasons);
  if (synthesis !== undefined && taken.has(synthesisId(step.id)))
    reasons.push(`its synthesis step's id "${synthesisId(step.id)}" is taken by another step`);
  if (missing.length > 0 || reasons.length > 0) return { kind: 'text', missing, reasons };

  // The children's results go to context.<step id> (the default of `into`, which it sets when it can).
  const into = step.id;
  const {
    type: _type,
    parallelDelegations: _delegations,
    synthesis: _synthesis,
    ...rest
  } = step as PromptStep & { synthesis?: unknown };
  const ownText =
    rest.prompt !== undefined || rest.promptBlocks !== undefined || rest.templateCall !== undefined;
  const delegating: PromptStep = {
    ...rest,
    ...(ownText ? {} : { prompt: delegatingPrompt(children, into) }),
    delegate: { children, join: 'all', ...(INTO.test(step.id) ? { into: step.id } : {}) },
  };
  if (synthesis === undefined) return { kind: 'delegate', step: delegating };
  return {
    kind: 'delegate',
    step: delegating,
    synthesis: {
      id: synthesisId(step.id),
      title: `${step.title}: synthesis`,
      prompt: synthesis.prompt ?? defaultSynthesisPrompt(into),
      ...(synthesis.outputContract !== undefined ? { outputContract: synthesis.outputContract } : {}),
      ...(step.runCondition !== undefined ? { runCondition: step.runCondition } : {}),
    },
  };
}

/** The step's `synthesis`, read as WorkRail writes it; a part that cannot be read is a reason. */
function synthesisOf(step: PromptStep, reasons: string[]): Synthesis | undefined {
  const raw = (step as { synthesis?: unknown }).synthesis;
  if (raw === undefined) return undefined;
  const s = asRecord(raw);
  const out: Synthesis = {};
  if (typeof s.prompt === 'string' && s.prompt.length > 0) out.prompt = s.prompt;
  else if (s.prompt !== undefined) reasons.push('its synthesis prompt is not text');
  if (s.outputContract !== undefined) {
    const contract = modelSchemas().OutputContractSchema.safeParse(s.outputContract);
    if (contract.success) out.outputContract = contract.data;
    else reasons.push('its synthesis outputContract is not an output contract ({contractRef})');
  }
  return out;
}

/** Every step id of a workflow, inline loop bodies included. */
function stepIds(workflow: Workflow): Set<string> {
  const ids = new Set<string>();
  for (const step of workflow.steps) {
    ids.add(step.id);
    if (isLoopStep(step) && Array.isArray(step.body)) for (const inner of step.body) ids.add(inner.id);
  }
  return ids;
}

/** The plan of every parallel step of a workflow (inline loop bodies included), by step id. */
export function parallelPlans(
  workflow: Workflow,
  serves: (workflowId: string) => boolean,
): Map<string, ParallelPlan> {
  const taken = stepIds(workflow);
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  const plans = new Map<string, ParallelPlan>();
  const visit = (step: Step) => {
    if (isLoopStep(step) || 'run' in step) return;
    const plan = parallelPlan(step, serves, taken);
    // A loop naming the step as its body runs it alone: a synthesis step after it would run outside the loop.
    if (plan?.kind === 'delegate' && plan.synthesis !== undefined && bodyRefs.has(step.id))
      plans.set(step.id, {
        kind: 'text',
        missing: [],
        reasons: ['a loop names it as its body, so no synthesis step can follow it there'],
      });
    else if (plan !== undefined) plans.set(step.id, plan);
  };
  for (const step of workflow.steps) {
    if (isLoopStep(step) && Array.isArray(step.body)) step.body.forEach(visit);
    visit(step);
  }
  return plans;
}

/**
 * The workflow with every parallel step whose delegations all name served workflows as a delegating step
 * (and its synthesis step right after it); `mapped` is false, and the workflow the same object, when none is.
 */
export function mapParallelSteps(
  workflow: Workflow,
  serves: (workflowId: string) => boolean,
): { workflow: Workflow; mapped: boolean } {
  const plans = parallelPlans(workflow, serves);
  if (![...plans.values()].some((p) => p.kind === 'delegate')) return { workflow, mapped: false };
  const map = (step: PromptStep): PromptStep[] => {
    const plan = plans.get(step.id);
    if (plan?.kind !== 'delegate') return [step];
    return plan.synthesis !== undefined ? [plan.step, plan.synthesis] : [plan.step];
  };
  const steps = workflow.steps.flatMap((step): Step[] => {
    if (isLoopStep(step))
      return Array.isArray(step.body) ? [{ ...step, body: step.body.flatMap(map) }] : [step];
    return 'run' in step ? [step] : map(step);
  });
  return { workflow: { ...workflow, steps }, mapped: true };
}
