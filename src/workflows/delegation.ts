import { didYouMean, nearestNames } from '../engine/nearest.js';
import { routineIdsOf } from '../engine/workrail.js';
import { type ParallelPlan, parallelPlans } from '../engine/workrail-parallel.js';
import type { Violation } from '../model/violation.js';
import { isLoopStep, type Step, type Workflow } from '../model/workflow.js';
import type { RegistryEntry } from './entry.js';

/**
 * Delegations across workflows (docs/workflow-format.md, "Delegation: child executions"): every workflow a
 * delegating step names must be one the server serves (`unknownChildWorkflow`), and no chain of delegations
 * may lead back to the workflow it starts from (`delegationCycle`). WorkRail's parallel steps count as
 * delegations when they run as one here (every workflowId served, workrail-parallel.ts); the others stay
 * text, with a warning naming what is missing (`unresolvedDelegation`).
 *
 * Two places judge this. `workflowlookup validate`, workflow_validate_manifest and workflow_save look at
 * one definition against the registry's served workflows (CheckPolicy.workflows). The registry judges its
 * files against each other once every source is read, and a workflow that fails is listed as broken.
 */

/** The workflows a server serves, as delegations look them up (the registry is one). */
export interface ServedWorkflows {
  get(id: string): RegistryEntry | undefined;
  entries(): Iterable<RegistryEntry>;
}

/** One workflow a step hands work to. */
export interface DelegationRef {
  /** The step that delegates (for a routine's step, the calling step's id and the routine step's). */
  step: string;
  workflowId: string;
  /** Where it is written: a JSON Pointer into the definition. */
  path: string;
}

/** What a reference resolves against: the served ids, and the routine a templateCall expands into. */
export interface DelegationLookup {
  serves(workflowId: string): boolean;
  routineOf(templateId: string): Workflow | undefined;
}

/** Every step with its pointer, inline loop bodies included. */
function stepsOf(workflow: Workflow): [Step, string][] {
  const out: [Step, string][] = [];
  for (const [i, step] of workflow.steps.entries()) {
    out.push([step, `/steps/${i}`]);
    if (isLoopStep(step) && Array.isArray(step.body))
      for (const [j, inner] of step.body.entries()) out.push([inner, `/steps/${i}/body/${j}`]);
  }
  return out;
}

/** Whether a workflow has a step that may delegate: a `delegate`, a parallel step, or a templateCall. */
function mayDelegate(workflow: Workflow): boolean {
  return stepsOf(workflow).some(
    ([step]) =>
      !isLoopStep(step) &&
      !('run' in step) &&
      (step.delegate !== undefined || step.type === 'parallel' || step.templateCall !== undefined),
  );
}

/** The references of a workflow's own steps: `delegate`s, and the parallel steps that run as one. */
function ownRefs(workflow: Workflow, plans: ReadonlyMap<string, ParallelPlan>): DelegationRef[] {
  const out: DelegationRef[] = [];
  for (const [step, path] of stepsOf(workflow)) {
    if (isLoopStep(step) || 'run' in step) continue;
    const d = step.delegate;
    if (d?.workflow !== undefined)
      out.push({ step: step.id, workflowId: d.workflow, path: `${path}/delegate/workflow` });
    for (const [k, child] of (d?.children ?? []).entries()) {
      if (child.workflow !== undefined)
        out.push({
          step: step.id,
          workflowId: child.workflow,
          path: `${path}/delegate/children/${k}/workflow`,
        });
    }
    if (plans.get(step.id)?.kind !== 'delegate') continue;
    for (const [k, delegation] of (step.parallelDelegations ?? []).entries()) {
      if (delegation.workflowId !== undefined)
        out.push({
          step: step.id,
          workflowId: delegation.workflowId,
          path: `${path}/parallelDelegations/${k}/workflowId`,
        });
    }
  }
  return out;
}

/**
 * The workflows a definition delegates to, as the registry serves it: its `delegate` steps, its parallel
 * steps whose delegations all resolve, and the delegations of the routines its templateCalls expand into
 * (placed at the templateCall).
 */
export function delegationRefs(workflow: Workflow, lookup: DelegationLookup): DelegationRef[] {
  const out = ownRefs(workflow, parallelPlans(workflow, lookup.serves));
  for (const [step, path] of stepsOf(workflow)) {
    if (isLoopStep(step) || 'run' in step || step.templateCall === undefined) continue;
    const routine = lookup.routineOf(step.templateCall.templateId);
    if (routine === undefined) continue;
    for (const ref of ownRefs(routine, parallelPlans(routine, lookup.serves)))
      out.push({ ...ref, step: `${step.id}.${ref.step}`, path: `${path}/templateCall/templateId` });
  }
  return out;
}

/** The served workflows' ids (valid entries only) and a lookup over them. */
function servedLookup(
  served: ServedWorkflows,
  self?: string,
): { ids: Set<string>; lookup: DelegationLookup } {
  const ids = new Set<string>();
  for (const entry of served.entries()) if (entry.status === 'valid') ids.add(entry.workflow.id);
  const lookup: DelegationLookup = {
    serves: (id) => id === self || ids.has(id),
    routineOf: (templateId) => {
      for (const id of routineIdsOf(templateId)) {
        const entry = served.get(id);
        if (entry?.status === 'valid') return entry.workflow;
      }
      return undefined;
    },
  };
  return { ids, lookup };
}

function unknownChild(
  ref: DelegationRef,
  entry: RegistryEntry | undefined,
  known: Iterable<string>,
): Violation {
  const message =
    entry?.status === 'broken'
      ? `step "${ref.step}" delegates to workflow "${ref.workflowId}", which is broken (workflow_list lists it under broken), so no child can start it`
      : `step "${ref.step}" delegates to workflow "${ref.workflowId}", which this server does not serve${didYouMean(ref.workflowId, nearestNames(ref.workflowId, known))}`;
  return { path: ref.path, rule: 'unknownChildWorkflow', message, actual: ref.workflowId };
}

function cycleViolation(ref: DelegationRef, cycle: readonly string[]): Violation {
  const [from] = cycle;
  return {
    path: ref.path,
    rule: 'delegationCycle',
    message:
      ref.workflowId === from
        ? `step "${ref.step}" delegates to this workflow itself (${cycle.join(' → ')}): a delegation may not lead back to the workflow it starts from, or its children would never end`
        : `step "${ref.step}" delegates to "${ref.workflowId}", which leads back to this workflow (${cycle.join(' → ')}): a delegation may not lead back to the workflow it starts from, or its children would never end`,
    actual: cycle.join(' → '),
  };
}

/**
 * The way from `start` back to `home` along `edges` (through the nodes `passable` allows), as the list of
 * ids from home to home; undefined when there is none. `dead` holds the nodes known not to lead back, and
 * gains those this search proves so. Iterative: a chain may be as long as the registry.
 */
function wayBack(
  home: string,
  start: string,
  edges: (id: string) => readonly string[],
  passable: (id: string) => boolean,
  dead: Set<string>,
): string[] | undefined {
  if (start === home) return [home, home];
  if (dead.has(start) || !passable(start)) return undefined;
  const parent = new Map<string, string | undefined>([[start, undefined]]);
  const stack = [start];
  while (stack.length > 0) {
    const at = stack.pop() as string;
    for (const next of edges(at)) {
      if (next === home) {
        const way: string[] = [];
        for (let p: string | undefined = at; p !== undefined; p = parent.get(p)) way.unshift(p);
        return [home, ...way, home];
      }
      if (parent.has(next) || dead.has(next) || !passable(next)) continue;
      parent.set(next, at);
      stack.push(next);
    }
  }
  for (const id of parent.keys()) dead.add(id);
  return undefined;
}

/** Cycle findings of one workflow's references (one per reference that leads back). */
function cyclesThrough(
  home: string,
  refs: readonly DelegationRef[],
  edges: (id: string) => readonly string[],
  passable: (id: string) => boolean,
): Violation[] {
  const out: Violation[] = [];
  const dead = new Set<string>();
  for (const ref of refs) {
    const cycle = wayBack(home, ref.workflowId, edges, passable, dead);
    if (cycle !== undefined) out.push(cycleViolation(ref, cycle));
  }
  return out;
}

/**
 * The errors of one definition's delegations against the workflows a server serves: a child workflow it
 * does not serve (or serves broken), and a chain of delegations that leads back to the definition (its
 * own id stands for the definition itself, not for the version the server may serve).
 */
export function delegationViolations(workflow: Workflow, served: ServedWorkflows): Violation[] {
  if (!mayDelegate(workflow)) return [];
  const { ids, lookup } = servedLookup(served, workflow.id);
  const refs = delegationRefs(workflow, lookup);
  if (refs.length === 0) return [];
  const out: Violation[] = [];
  for (const ref of refs) {
    if (ref.workflowId !== workflow.id && !ids.has(ref.workflowId))
      out.push(unknownChild(ref, served.get(ref.workflowId), ids));
  }
  const cache = new Map<string, string[]>();
  const edges = (id: string): string[] => {
    let found = cache.get(id);
    if (found === undefined) {
      const entry = served.get(id);
      found =
        entry?.status === 'valid' ? delegationRefs(entry.workflow, lookup).map((r) => r.workflowId) : [];
      cache.set(id, found);
    }
    return found;
  };
  out.push(...cyclesThrough(workflow.id, refs, edges, (id) => ids.has(id)));
  return out;
}

/**
 * The warnings of a definition's WorkRail parallel steps that do not run as delegations here: the
 * workflowIds the server does not serve (or why else), so the step stays text the agent carries out.
 */
export function parallelStepWarnings(workflow: Workflow, served: ServedWorkflows): Violation[] {
  if (!mayDelegate(workflow)) return [];
  const { lookup } = servedLookup(served, workflow.id);
  const plans = parallelPlans(workflow, lookup.serves);
  const out: Violation[] = [];
  for (const [step, path] of stepsOf(workflow)) {
    const plan = plans.get(step.id);
    if (plan?.kind !== 'text') continue;
    const why = [
      ...(plan.missing.length > 0
        ? [
            `${plan.missing.length === 1 ? 'workflow' : 'workflows'} ${plan.missing.map((m) => `"${m}"`).join(', ')} ${plan.missing.length === 1 ? 'is' : 'are'} not served here`,
          ]
        : []),
      ...plan.reasons,
    ].join('; ');
    out.push({
      path: `${path}/parallelDelegations`,
      rule: 'unresolvedDelegation',
      message: `parallel step "${step.id}" does not run as child executions (${why}): it stays text, and the agent hands its delegations off or does them itself`,
      actual: plan.missing.join(', '),
    });
  }
  return out;
}

/** The parallel steps that run as delegations against the served workflows (they draw no inert-field warning). */
export function delegatingParallelSteps(workflow: Workflow, served: ServedWorkflows): Set<string> {
  if (!mayDelegate(workflow)) return new Set();
  const { lookup } = servedLookup(served, workflow.id);
  const plans = parallelPlans(workflow, lookup.serves);
  return new Set([...plans].filter(([, p]) => p.kind === 'delegate').map(([id]) => id));
}

/**
 * The registry's judgement of its served workflows' delegations, against each other: `workflows` are the
 * valid ones as their files define them (templateCalls not expanded, parallel steps not mapped). Returns
 * the violations of each workflow that cannot be served: a delegation to a workflow no source serves or
 * that is broken, one that leads back to it (every workflow on a cycle), and one to a workflow that is
 * broken for these reasons (repeated until nothing changes).
 */
export function registryDelegationFailures(
  workflows: ReadonlyMap<string, Workflow>,
  entries: ReadonlyMap<string, RegistryEntry>,
  routineOf: (templateId: string) => Workflow | undefined,
): Map<string, Violation[]> {
  const lookup: DelegationLookup = { serves: (id) => workflows.has(id), routineOf };
  const refs = new Map<string, DelegationRef[]>();
  for (const [id, workflow] of workflows) {
    if (!mayDelegate(workflow)) continue;
    const found = delegationRefs(workflow, lookup);
    if (found.length > 0) refs.set(id, found);
  }
  const failures = new Map<string, Violation[]>();
  if (refs.size === 0) return failures;
  const add = (id: string, v: Violation) => failures.set(id, [...(failures.get(id) ?? []), v]);
  const edges = (id: string) => (refs.get(id) ?? []).map((r) => r.workflowId);
  const served = [...workflows.keys()];
  for (const [id, list] of refs) {
    for (const ref of list)
      if (!workflows.has(ref.workflowId)) add(id, unknownChild(ref, entries.get(ref.workflowId), served));
    for (const v of cyclesThrough(id, list, edges, (n) => workflows.has(n))) add(id, v);
  }
  // A workflow that delegates to one that cannot be served cannot be served either.
  for (let changed = true; changed; ) {
    changed = false;
    for (const [id, list] of refs) {
      if (failures.has(id)) continue;
      const ref = list.find((r) => failures.has(r.workflowId));
      if (ref === undefined) continue;
      add(id, {
        path: ref.path,
        rule: 'unknownChildWorkflow',
        message: `step "${ref.step}" delegates to workflow "${ref.workflowId}", which is broken (workflow_list lists it under broken), so no child can start it`,
        actual: ref.workflowId,
      });
      changed = true;
    }
  }
  return failures;
}
