// What a workflow test says about the children of delegating steps (`children` in a scenario, in the file,
// and in `expect`): checking the names it uses against the workflow, each child's agent (its answers, how
// it ends), and which of the engine's walk events are the tested workflow's own.
import type { WalkEvent } from '../engine/next-step.js';
import { allStepIds, findPromptStep } from '../engine/next-step.js';
import type { Violation } from '../model/violation.js';
import type { PromptStep, Workflow } from '../model/workflow.js';
import type { Locator } from '../workflows/locate.js';
import { placed } from '../workflows/test-files.js';
import type { ChildScript, DelegationScript, Scenario, TestFile } from '../workflows/test-format.js';
import { toPointer } from '../workflows/validate-definition.js';
import { AnswerBook } from './workflow-test-doubles.js';

/** Finds a served workflow by id (the registry's valid entries), for the children's workflows. */
export type WorkflowLookup = (id: string) => Workflow | undefined;

/** Every prompt step of a workflow, inline loop bodies included. */
function promptSteps(workflow: Workflow): PromptStep[] {
  const out: PromptStep[] = [];
  for (const id of allStepIds(workflow)) {
    const step = findPromptStep(workflow, id);
    if (step !== undefined) out.push(step);
  }
  return out;
}

/** The delegating steps of a workflow. */
export function delegatingSteps(workflow: Workflow): PromptStep[] {
  return promptSteps(workflow).filter((s) => s.delegate !== undefined);
}

/** The workflow ids a delegating step's children run. */
function childWorkflowIds(step: PromptStep): string[] {
  const d = step.delegate;
  if (d === undefined) return [];
  const ids = d.children?.map((c) => c.workflow ?? d.workflow) ?? [d.workflow];
  return [...new Set(ids.filter((id): id is string => id !== undefined))];
}

/** The workflows delegations can reach from `workflow` (children, grandchildren, ...), the workflow left out. */
function _reachable(workflow: Workflow, lookup: WorkflowLookup): Workflow[] {
  const seen = new Set([workflow.id]);
  const out: Workflow[] = [];
  const stack = [workflow];
  while (stack.length > 0) {
    const at = stack.pop() as Workflow;
    for (const step of delegatingSteps(at)) {
      for (const id of childWorkflowIds(step)) {
        if (seen.has(id)) continue;
        seen.add(id);
        const found = lookup(id);
        if (found === undefined) continue;
        out.push(found);
        stack.push(found);
      }
    }
  }
  return out;
}

/**
 * The tested workflow's walk events: the engine tells every walk of a scenario's service, its children's
 * included, each with the workflow it walked (a workflow never delegates to itself: cycles are refused).
 */
export class WalkEvents {
  constructor(
    private readonly workflow: Workflow,
    private readonly deliver: (event: WalkEvent) => void,
  ) {}

  readonly observe = (event: WalkEvent, workflowId: string): void => {
    if (workflowId === this.workflow.id) this.deliver(event);
  };
}

/** The children scripts a scenario runs with: its own entry for a step replaces the file's. */
export function childrenScripts(scenario: Scenario, file: TestFile): Record<string, DelegationScript> {
  return { ...file.children, ...scenario.children };
}

/** What one child's agent does: its own entry (`each`) over the step's entry for every child. */
export interface ChildAgent {
  book: AnswerBook;
  end?: 'abandoned' | 'failed';
  reason?: string;
  late: boolean;
}

export function childAgent(script: DelegationScript | undefined, name: string): ChildAgent {
  const own: ChildScript | undefined = script?.each?.[name];
  const end = own?.end ?? script?.end;
  const reason = own?.reason ?? script?.reason;
  return {
    book: new AnswerBook({
      steps: [own?.steps, script?.steps],
      defaults: [script?.defaults, own?.defaults],
    }),
    ...(end !== undefined ? { end } : {}),
    ...(reason !== undefined ? { reason } : {}),
    late: own?.late ?? script?.late ?? false,
  };
}

/** Ids shown when an unknown one is named: enough to spot the right one. */
const MAX_SHOWN = 20;

function list(ids: readonly string[]): string {
  const shown = ids.slice(0, MAX_SHOWN).join(', ');
  return ids.length > MAX_SHOWN ? `${shown} and ${ids.length - MAX_SHOWN} more` : shown || 'none';
}

/** The names a delegating step's children may have: its list's, 1..count, or any item number (forEach). */
function childNames(step: PromptStep): { known?: string[]; words: string } {
  const d = step.delegate;
  if (d?.children !== undefined) {
    const names = d.children.map((c) => c.name);
    return { known: names, words: list(names) };
  }
  if (d?.count !== undefined) {
    const names = Array.from({ length: d.count }, (_, i) => String(i + 1));
    return { known: names, words: `1 to ${d.count}` };
  }
  return { words: `1, 2, ... (one per item of ${d?.forEach})` };
}

function namesChild(step: PromptStep, name: string): boolean {
  const { known } = childNames(step);
  return known !== undefined ? known.includes(name) : /^[1-9][0-9]{0,5}$/.test(name);
}

/** The workflow each child of a step runs, by name (forEach and count children: the one workflow). */
function workflowOf(step: PromptStep, name: string | undefined): string[] {
  const d = step.delegate;
  if (d?.children !== undefined && name !== undefined) {
    const child = d.children.find((c) => c.name === name);
    const id = child?.workflow ?? d.workflow;
    return id !== undefined ? [id] : [];
  }
  return childWorkflowIds(step);
}

/**
 * The children a test file names that the workflow cannot have: `children` entries for steps that do not
 * delegate, child names the step never gives, steps the child's workflow does not have, `late` on a step
 * whose wait never times out; each with its place.
 */
export function checkChildrenAgainst(
  workflow: Workflow,
  tests: TestFile,
  locate: Locator,
  lookup: WorkflowLookup,
): Violation[] {
  const delegating = delegatingSteps(workflow);
  const out: Violation[] = [];
  const bad = (path: PropertyKey[], rule: string, message: string, actual: string) =>
    out.push({ path: toPointer(path), rule, message, actual });
  const stepAt = (path: PropertyKey[], id: string): PromptStep | undefined => {
    const step = delegating.find((s) => s.id === id);
    if (step === undefined)
      bad(
        path,
        'unknownStep',
        `workflow "${workflow.id}" has no step "${id}" that hands its work to children; its delegating steps are ${list(delegating.map((s) => s.id))}`,
        id,
      );
    return step;
  };
  const child = (path: PropertyKey[], step: PromptStep, name: string) => {
    if (namesChild(step, name)) return true;
    bad(
      path,
      'unknownChild',
      `step "${step.id}" has no child "${name}"; its children are ${childNames(step).words}`,
      name,
    );
    return false;
  };
  /** The step ids of the workflows a step's child (or every child) runs; undefined when one is not served. */
  const idsOf = (step: PromptStep, name: string | undefined, only: 'prompt' | 'any') => {
    const workflows = workflowOf(step, name).map(lookup);
    if (workflows.some((w) => w === undefined)) return undefined; // one no source serves: validate says so
    return [
      ...new Set(
        (workflows as Workflow[]).flatMap((w) =>
          [...allStepIds(w)].filter((id) => only === 'any' || findPromptStep(w, id) !== undefined),
        ),
      ),
    ];
  };
  const childSteps = (path: PropertyKey[], step: PromptStep, name: string | undefined, ids: string[]) => {
    const known = idsOf(step, name, 'prompt');
    if (known === undefined) return;
    for (const id of ids) {
      if (!known.includes(id))
        bad(
          [...path, id],
          'unknownStep',
          `the children of step "${step.id}"${name !== undefined ? ` (child "${name}")` : ''} run ${workflowOf(step, name).join(', ')}, which has no step "${id}" its agent carries out; those steps are ${list(known)}`,
          id,
        );
    }
  };
  const script = (path: PropertyKey[], scripts: Record<string, DelegationScript> | undefined) => {
    for (const [id, given] of Object.entries(scripts ?? {})) {
      const step = stepAt([...path, id], id);
      if (step === undefined) continue;
      const late = (at: PropertyKey[]) => {
        if (step.delegate?.timeout === undefined)
          bad(
            [...at, 'late'],
            'lateChild',
            `step "${id}" has no delegate.timeout, so its wait on the children never times out: a late child would never report`,
            'late',
          );
      };
      if (given.late === true) late([...path, id]);
      childSteps([...path, id, 'steps'], step, undefined, Object.keys(given.steps ?? {}));
      for (const [name, own] of Object.entries(given.each ?? {})) {
        const at = [...path, id, 'each', name];
        if (!child(at, step, name)) continue;
        if (own.late === true) late(at);
        childSteps([...at, 'steps'], step, name, Object.keys(own.steps ?? {}));
      }
    }
  };
  script(['children'], tests.children);
  tests.scenarios.forEach((scenario, i) => {
    script(['scenarios', i, 'children'], scenario.children);
    for (const [id, want] of Object.entries(scenario.expect?.children ?? {})) {
      const at = ['scenarios', i, 'expect', 'children', id];
      const step = stepAt(at, id);
      if (step === undefined) continue;
      for (const key of ['completed', 'failed', 'abandoned', 'open'] as const)
        (want[key] ?? []).forEach((name, n) => {
          child([...at, key, n], step, name);
        });
      for (const [name, each] of Object.entries(want.each ?? {})) {
        if (!child([...at, 'each', name], step, name)) continue;
        const known = idsOf(step, name, 'any');
        if (known === undefined) continue;
        const named = [...(each.path ?? []), ...(each.rejected ?? []).map((r) => r.step)];
        for (const s of new Set(named.filter((n) => !known.includes(n))))
          bad(
            [...at, 'each', name],
            'unknownStep',
            `child "${name}" of step "${id}" runs ${workflowOf(step, name).join(', ')}, which has no step "${s}"; its steps are ${list(known)}`,
            s,
          );
      }
    }
  });
  return placed(out, locate);
}
