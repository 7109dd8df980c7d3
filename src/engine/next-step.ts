import {
  type ActionStep,
  type Condition,
  isArtifactLoop,
  isLoopStep,
  isPromptStep,
  type LoopStep,
  loopCondition,
  type PromptStep,
  type Step,
  type Workflow,
} from '../model/workflow.js';
import { asRecord, type Context, conditionVariables, evaluateCondition, readPath } from './conditions.js';
import { DomainFailure, fail } from './errors.js';
import { LOOP_CONTROL_KEY } from './workrail.js';

/** Reserved context key holding loop progress; clients send it back unchanged. */
export const LOOPS_KEY = '_loops';

export interface LoopState {
  /** 1-based number of the iteration in progress. */
  iteration: number;
}

export type LoopPosition = {
  loopId: string;
  title: string;
  type: LoopStep['loop']['type'];
  iteration: number;
  maxIterations: number;
  /** forEach only: number of items. */
  total?: number;
  /** forEach only: the item of this iteration and the context variable holding it. */
  item?: { var: string; value: unknown };
  /** The loop step's own prompt, shown with each body step. */
  note?: string;
};

/** How a loop ended: it ran no round, its own rule ended it (condition, list, count, decision), or its cap. */
export type LoopExit = 'none' | 'condition' | 'max_iterations';

/**
 * What the walk decided while choosing a step, told as it happens: a runCondition that decided whether a
 * step runs, a while/until condition that decided whether a loop goes on, and how a loop ended. The
 * workflow tests count these as coverage; the walk itself is unchanged by an observer.
 */
export type WalkEvent =
  | { kind: 'runCondition'; step: string; value: boolean }
  | { kind: 'loopCondition'; loop: string; value: boolean }
  | { kind: 'loopExit'; loop: string; exit: LoopExit; iterations: number };

export type WalkObserver = (event: WalkEvent) => void;

export interface NextStep {
  step: ActionStep | null;
  isComplete: boolean;
  /** The context to send with the next call (loop progress and loop variables included). */
  context: Context;
  /** The completed step ids to send with the next call (body ids are cleared between iterations). */
  completedSteps: string[];
  loop?: LoopPosition;
  /** Things the agent should know, e.g. a loop that ended because it hit maxIterations. */
  notices: string[];
}

/** Context keys the server writes: inputs, step outputs, loop progress and every loop variable. */
export function serverOwnedKeys(workflow: Workflow): Set<string> {
  const keys = new Set<string>(['inputs', 'steps', LOOPS_KEY, LOOP_CONTROL_KEY]);
  for (const step of workflow.steps) {
    // Where a delegating step puts its children's results: the server writes it when they join.
    for (const inner of isLoopStep(step) ? (Array.isArray(step.body) ? step.body : []) : [step])
      if (isPromptStep(inner) && inner.delegate !== undefined) keys.add(inner.delegate.into ?? inner.id);
    if (!isLoopStep(step)) continue;
    const cfg = step.loop;
    keys.add(cfg.iterationVar ?? 'currentIteration');
    if (cfg.type === 'forEach') {
      keys.add(cfg.itemVar ?? 'currentItem');
      keys.add(cfg.indexVar ?? 'currentIndex');
    }
  }
  return keys;
}

/** Every step id the workflow defines, including inline loop bodies. */
export function allStepIds(workflow: Workflow): Set<string> {
  const ids = new Set<string>();
  for (const step of workflow.steps) {
    ids.add(step.id);
    if (isLoopStep(step) && Array.isArray(step.body)) for (const inner of step.body) ids.add(inner.id);
  }
  return ids;
}

/** Finds a prompt or command step by id anywhere in the workflow (top level or inline loop body). */
export function findActionStep(workflow: Workflow, stepId: string): ActionStep | undefined {
  for (const step of workflow.steps) {
    if (step.id === stepId && !isLoopStep(step)) return step;
    if (isLoopStep(step) && Array.isArray(step.body)) {
      const inner = step.body.find((s) => s.id === stepId);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** Finds a prompt step (one an agent carries out) by id. */
export function findPromptStep(workflow: Workflow, stepId: string): PromptStep | undefined {
  const step = findActionStep(workflow, stepId);
  return step && isPromptStep(step) ? step : undefined;
}

/** Ids of top-level steps that are the body of a loop; they run only inside it. */
function loopBodyRefs(workflow: Workflow): Set<string> {
  const refs = new Set<string>();
  for (const step of workflow.steps)
    if (isLoopStep(step) && typeof step.body === 'string') refs.add(step.body);
  return refs;
}

/** The steps a loop repeats: its inline body, or the top-level step its body names. */
export function bodyOf(workflow: Workflow, loop: LoopStep): ActionStep[] {
  if (Array.isArray(loop.body)) return loop.body;
  const target = workflow.steps.find((s): s is Step => s.id === loop.body);
  return target && !isLoopStep(target) ? [target] : [];
}

function runs(step: Pick<Step, 'id' | 'runCondition'>, context: Context, observe?: WalkObserver): boolean {
  if (step.runCondition === undefined) return true;
  const value = evaluateCondition(step.runCondition, context);
  observe?.({ kind: 'runCondition', step: step.id, value });
  return value;
}

/** What the steps after the current one come to, as far as the context decides now. */
export interface StepsAhead {
  /** Steps still to run: no condition, a condition true now, or one not decided yet (counted). */
  ahead: number;
  /** Steps (a loop: its body) whose condition is false on the values set now. */
  skipped: number;
  /** Of `ahead`, those whose condition reads a value not set yet. */
  undecided: number;
}

/**
 * The steps after `stepId` in the walk's order, each loop's body counted once: what `progress` counts,
 * so the last step to run reads `N/N` when the steps after it are skipped. A condition is decided when
 * every value it reads is set; one that reads a missing value may still go either way, so it counts.
 */
export function stepsAhead(workflow: Workflow, stepId: string, context: Context): StepsAhead {
  const out: StepsAhead = { ahead: 0, skipped: 0, undecided: 0 };
  const decide = (step: Pick<Step, 'runCondition'>): 'runs' | 'skipped' | 'undecided' => {
    if (step.runCondition === undefined) return 'runs';
    if (conditionVariables(step.runCondition).some((v) => readPath(context, v) === undefined))
      return 'undecided';
    return evaluateCondition(step.runCondition, context) ? 'runs' : 'skipped';
  };
  const count = (steps: readonly Pick<Step, 'runCondition'>[], parent: 'runs' | 'undecided' = 'runs') => {
    for (const step of steps) {
      const own = decide(step);
      if (own === 'skipped') out.skipped++;
      else {
        out.ahead++;
        if (own === 'undecided' || parent === 'undecided') out.undecided++;
      }
    }
  };
  const bodyRefs = loopBodyRefs(workflow);
  const top = workflow.steps.filter((s) => !bodyRefs.has(s.id));
  const at = top.findIndex(
    (s) => s.id === stepId || (isLoopStep(s) && bodyOf(workflow, s).some((b) => b.id === stepId)),
  );
  if (at === -1) return out;
  const here = top[at] as Step;
  if (isLoopStep(here)) {
    // The rest of this iteration's body; later iterations are not known yet.
    const body = bodyOf(workflow, here);
    count(body.slice(body.findIndex((b) => b.id === stepId) + 1));
  }
  for (const step of top.slice(at + 1)) {
    if (!isLoopStep(step)) {
      count([step]);
      continue;
    }
    const loop = decide(step);
    const body = bodyOf(workflow, step);
    if (loop === 'skipped') out.skipped += body.length;
    else count(body, loop);
  }
  return out;
}

/**
 * Picks the next step (seed 002 `workflow_next`). Steps already completed or whose runCondition is
 * false are skipped. A loop keeps its iteration number in `context._loops[loopId]`; when an
 * iteration's body is done its ids are removed from `completedSteps` and the loop either starts the
 * next iteration or is itself marked completed.
 */
export function nextStep(
  workflow: Workflow,
  completedSteps: readonly string[],
  inputContext: Context,
  observe?: WalkObserver,
): NextStep {
  const completed = new Set(completedSteps);
  const context: Context = { ...inputContext };
  const loops: Record<string, LoopState> = { ...(asRecord(context[LOOPS_KEY]) as Record<string, LoopState>) };
  const bodyRefs = loopBodyRefs(workflow);
  const notices: string[] = [];
  const result = (step: ActionStep | null, loop?: LoopPosition): NextStep => {
    // A step that fans out over a list needs it now, as a forEach loop does.
    if (step !== null && isPromptStep(step) && step.delegate?.forEach !== undefined)
      withWorkflowId(workflow, () => delegationItems(step, context));
    if (Object.keys(loops).length > 0) context[LOOPS_KEY] = loops;
    else delete context[LOOPS_KEY];
    return {
      step,
      isComplete: step === null,
      context,
      completedSteps: [...completed],
      ...(loop ? { loop } : {}),
      notices,
    };
  };

  for (const step of workflow.steps) {
    if (bodyRefs.has(step.id) || completed.has(step.id)) continue;
    if (!isLoopStep(step)) {
      if (runs(step, context, observe)) return result(step);
      continue;
    }
    // A loop in progress goes on whatever its runCondition says now (it decided when the loop started).
    if (loops[step.id] === undefined && !runs(step, context, observe)) continue;
    const found = withWorkflowId(workflow, () =>
      advanceLoop(workflow, step, completed, context, loops, notices, observe),
    );
    if (found) return result(found.step, found.position);
    completed.add(step.id);
  }
  return result(null);
}

/** Names the workflow in a precondition failure raised below (the loop helpers do not know it). */
function withWorkflowId<T>(workflow: Workflow, run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof DomainFailure && error.error.code === 'precondition_failed')
      fail({ ...error.error, workflowId: workflow.id });
    throw error;
  }
}

function advanceLoop(
  workflow: Workflow,
  loop: LoopStep,
  completed: Set<string>,
  context: Context,
  loops: Record<string, LoopState>,
  notices: string[],
  observe?: WalkObserver,
): { step: ActionStep; position: LoopPosition } | undefined {
  const body = bodyOf(workflow, loop);
  const cfg = loop.loop;
  let iteration = sanitizeIteration(loops[loop.id]?.iteration);
  if (iteration === 0) {
    if (!shouldRun(loop, 1, context, true, observe)) {
      observe?.({ kind: 'loopExit', loop: loop.id, exit: 'none', iterations: 0 });
      return finish(loop, body, completed, loops);
    }
    iteration = 1;
  } else {
    setLoopVars(loop, iteration, context);
  }
  for (;;) {
    loops[loop.id] = { iteration };
    const next = body.find((s) => !completed.has(s.id) && runs(s, context, observe));
    if (next) {
      const items = cfg.type === 'forEach' ? loopSource(loop, context).items : undefined;
      return {
        step: next,
        position: {
          loopId: loop.id,
          title: loop.title,
          type: cfg.type,
          iteration,
          maxIterations: cfg.maxIterations,
          ...(loop.prompt !== undefined ? { note: loop.prompt } : {}),
          ...(cfg.type === 'forEach' && Array.isArray(items)
            ? {
                total: items.length,
                item: { var: cfg.itemVar ?? 'currentItem', value: items[iteration - 1] },
              }
            : {}),
        },
      };
    }
    for (const s of body) completed.delete(s.id);
    if (!shouldRun(loop, iteration + 1, context, false, observe)) {
      const capped =
        iteration + 1 > cfg.maxIterations && wouldContinue(loop, iteration + 1, context, observe);
      if (capped) {
        notices.push(
          `Loop "${loop.title}" stopped after reaching its limit of ${cfg.maxIterations} iterations; its exit condition was not met.`,
        );
      }
      observe?.({
        kind: 'loopExit',
        loop: loop.id,
        exit: capped ? 'max_iterations' : 'condition',
        iterations: iteration,
      });
      return finish(loop, body, completed, loops);
    }
    iteration += 1;
  }
}

function sanitizeIteration(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
}

/** Decides whether iteration `n` runs, and when it does, sets the loop variables for it. */
function shouldRun(
  loop: LoopStep,
  n: number,
  context: Context,
  first: boolean,
  observe?: WalkObserver,
): boolean {
  const cfg = loop.loop;
  if (n > cfg.maxIterations) return false;
  let go: boolean;
  if (isArtifactLoop(cfg)) {
    // The agent's loop-control artifact decides: the first round runs unless it already said stop;
    // each further round needs a fresh "continue" (a round that reports nothing ends the loop).
    const decisions = { ...asRecord(context[LOOP_CONTROL_KEY]) };
    const decision = decisions[loop.id];
    go = first ? decision !== 'stop' : decision === 'continue';
    if (go) {
      delete decisions[loop.id];
      if (Object.keys(decisions).length > 0) context[LOOP_CONTROL_KEY] = decisions;
      else delete context[LOOP_CONTROL_KEY];
      setLoopVars(loop, n, context);
    }
    return go;
  }
  const condition = loopCondition(cfg) ?? { var: '' };
  switch (cfg.type) {
    case 'while':
      go = conditionValue(loop, condition, context, observe);
      break;
    case 'until':
      go = first || !conditionValue(loop, condition, context, observe);
      break;
    case 'for':
    case 'forEach':
      go = n <= loopSource(loop, context).length;
      break;
  }
  if (go) setLoopVars(loop, n, context);
  return go;
}

/** A while/until loop's condition, told to the observer: it decides whether the loop goes on. */
function conditionValue(
  loop: LoopStep,
  condition: Condition,
  context: Context,
  observe: WalkObserver | undefined,
): boolean {
  const value = evaluateCondition(condition, context);
  observe?.({ kind: 'loopCondition', loop: loop.id, value });
  return value;
}

/**
 * Whether the loop itself asks for iteration `n`, ignoring maxIterations (to report a capped loop): at the
 * cap, this reading of the condition decides how the loop ended.
 */
function wouldContinue(loop: LoopStep, n: number, context: Context, observe?: WalkObserver): boolean {
  const cfg = loop.loop;
  if (isArtifactLoop(cfg)) return asRecord(context[LOOP_CONTROL_KEY])[loop.id] === 'continue';
  const condition = loopCondition(cfg) ?? { var: '' };
  switch (cfg.type) {
    case 'while':
      return conditionValue(loop, condition, context, observe);
    case 'until':
      return !conditionValue(loop, condition, context, observe);
    case 'for':
    case 'forEach':
      return n <= loopSource(loop, context).length;
  }
}

/**
 * What a for/forEach loop iterates over: its count, or the items of its list. A list or count that is
 * missing or of the wrong type refuses to go on (PRECONDITION_FAILED, naming the variable to supply)
 * instead of skipping the loop without a word, as WorkRail does; an empty list or a count of 0 runs no
 * iteration.
 */
export function loopSource(loop: LoopStep, context: Context): { length: number; items?: unknown[] } {
  const cfg = loop.loop;
  if (cfg.type === 'for') {
    if (typeof cfg.count === 'number') return { length: cfg.count };
    const count = readPath(context, cfg.count);
    if (typeof count === 'number' && Number.isInteger(count) && count >= 0) return { length: count };
    return missingSource(loop, cfg.count, 'a whole number (0 or more)', count);
  }
  if (cfg.type !== 'forEach') return { length: 0 };
  const items = readPath(context, cfg.items);
  if (Array.isArray(items)) return { length: items.length, items };
  return missingSource(loop, cfg.items, 'an array', items);
}

function missingSource(loop: LoopStep, variable: string, expected: string, got: unknown): never {
  return fail({
    code: 'precondition_failed',
    message: `${loop.loop.type} loop '${loop.id}' requires ${expected} in context['${variable}']; ${got === undefined ? 'it is not set' : `got ${describeGot(got)}`}`,
    workflowId: '',
    variable,
    expected,
    loopId: loop.id,
  });
}

/**
 * The items a delegating step fans out over (`delegate.forEach`): the context list it names. Missing or
 * not a list refuses to go on (PRECONDITION_FAILED naming the variable), as a forEach loop does.
 */
export function delegationItems(step: PromptStep, context: Context): unknown[] {
  const variable = step.delegate?.forEach;
  if (variable === undefined) return [];
  const items = readPath(context, variable);
  if (Array.isArray(items)) return items;
  return fail({
    code: 'precondition_failed',
    message: `step '${step.id}' hands one child per item of context['${variable}'], which must be an array; ${items === undefined ? 'it is not set' : `got ${describeGot(items)}`}`,
    workflowId: '',
    variable,
    expected: 'an array',
  });
}

/** A short, bounded description of a refused value (its type, and the value itself when small). */
export function describeGot(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return `${typeof value} ${text.length > 60 ? `${text.slice(0, 57)}...` : text}`;
}

function setLoopVars(loop: LoopStep, n: number, context: Context): void {
  const cfg = loop.loop;
  context[cfg.iterationVar ?? 'currentIteration'] = n;
  if (cfg.type === 'forEach') {
    const { items = [] } = loopSource(loop, context);
    context[cfg.itemVar ?? 'currentItem'] = items[n - 1];
    context[cfg.indexVar ?? 'currentIndex'] = n - 1;
  }
}

function finish(
  loop: LoopStep,
  body: ActionStep[],
  completed: Set<string>,
  loops: Record<string, LoopState>,
): undefined {
  delete loops[loop.id];
  for (const s of body) completed.delete(s.id);
  completed.add(loop.id);
  return undefined;
}
