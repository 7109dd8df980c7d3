import { type Context, conditionVariables, evaluateCondition, readPath } from '../../engine/conditions.js';
import { expressionsIn, parseReference } from '../../engine/templating.js';
import { stepPromptText } from '../../engine/workrail.js';
import {
  type ActionStep,
  type Condition,
  isCommandStep,
  isLoopStep,
  type Workflow,
} from '../../model/workflow.js';

/** One line of workflow_step_plan. */
export interface PlannedStep {
  step_id: string;
  kind: 'agent' | 'command' | 'loop';
  title: string;
  loop?: string;
  condition?: unknown;
  condition_result: boolean | 'runtime';
  depends_on: string[];
  decision: 'run' | 'skip' | 'runtime';
}

/**
 * The steps of a run in order, each with whether it will run, be skipped, or can only be decided at run
 * time, given what is known before the run starts (the context and the resolved inputs).
 */
export function planSteps(workflow: Workflow, known: Context): PlannedStep[] {
  const plan: PlannedStep[] = [];
  const entry = (
    step: Workflow['steps'][number],
    loop: string | undefined,
    inherited: 'run' | 'skip' | 'runtime',
  ) => {
    const result = step.runCondition === undefined ? true : decide(step.runCondition, known);
    const own = result === 'runtime' ? 'runtime' : result ? 'run' : 'skip';
    const decision =
      inherited === 'skip' ? 'skip' : inherited === 'runtime' && own === 'run' ? 'runtime' : own;
    plan.push({
      step_id: step.id,
      kind: isLoopStep(step) ? 'loop' : isCommandStep(step) ? 'command' : 'agent',
      title: step.title,
      ...(loop ? { loop } : {}),
      ...(step.runCondition !== undefined ? { condition: step.runCondition } : {}),
      condition_result: result,
      depends_on: dependencies(step),
      decision,
    });
    return decision;
  };
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  for (const step of workflow.steps) {
    if (bodyRefs.has(step.id)) continue;
    const decision = entry(step, undefined, 'run');
    if (!isLoopStep(step)) continue;
    const body = Array.isArray(step.body) ? step.body : workflow.steps.filter((s) => s.id === step.body);
    // Whether and how often a body runs depends on the loop's own condition or data: run time.
    for (const inner of body) entry(inner, step.id, decision === 'skip' ? 'skip' : 'runtime');
  }
  return plan;
}

export function actionSteps(workflow: Workflow): ActionStep[] {
  const out: ActionStep[] = [];
  for (const step of workflow.steps) {
    if (isLoopStep(step)) {
      if (Array.isArray(step.body)) out.push(...step.body);
    } else out.push(step);
  }
  return out;
}

/** Declared depends_on plus the steps whose outputs the step's templates read. */
function dependencies(step: Workflow['steps'][number]): string[] {
  const declared = 'depends_on' in step ? (step.depends_on ?? []) : [];
  const values = isCommandStep(step)
    ? [step.with, step.body]
    : isLoopStep(step)
      ? []
      : [stepPromptText(step), step.title, step.guidance];
  const implicit = values
    .flatMap(expressionsIn)
    .map(parseReference)
    .flatMap((r) => (r?.kind === 'steps' ? [r.step] : []));
  return [...new Set([...declared, ...implicit])];
}

/** A condition's value now, or 'runtime' when it reads something only the run will know. */
function decide(condition: Condition, known: Context): boolean | 'runtime' {
  const unknown = conditionVariables(condition).some(
    (v) => v.startsWith('steps.') || readPath(known, v.split('.')[0] as string) === undefined,
  );
  return unknown ? 'runtime' : evaluateCondition(condition, known);
}
