import type { Violation } from '../model/violation.js';
import { IdSchema, type Workflow } from '../model/workflow.js';
import { validateDefinition } from './validate-definition.js';

/**
 * What is left of a definition that failed the schema once each failing part is replaced by the least
 * that passes: the checks after the schema (step ids, loop bodies, templates, regexes, schemas, env
 * names) then run on everything else in the same pass, so an author fixes every error in one round
 * instead of meeting them stage by stage.
 */
export interface Salvaged {
  workflow: Workflow;
  /** What the rules beyond the schema found in the rest (duplicate ids, loop bodies, templates). */
  semantic: Violation[];
  /** Pointers of the parts replaced or removed: findings inside them are about stand-ins, not the text. */
  replaced: string[];
  /** Whether every step kept its id and every input its name (so references to them still resolve). */
  namesKept: boolean;
  /** Whether a loop's inline body was replaced (steps that ran before some places are then unknown). */
  stepsLost: boolean;
}

type Json = Record<string, unknown>;

const REQUIRED_TOP: Record<string, unknown> = {
  id: 'invalid-id',
  name: 'invalid',
  description: 'invalid',
  version: '0.0.0',
};

function segments(pointer: string): string[] {
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** Fields that decide what kind of step a step is, or that every step needs. */
const STEP_CORE = new Set([
  'id',
  'title',
  'prompt',
  'type',
  'loop',
  'body',
  'run',
  'promptBlocks',
  'templateCall',
]);

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const INDEX = /^\d+$/;

/**
 * A stand-in for the schema violations `errors` of `data`, or undefined when too little is left to
 * check (no usable list of steps, or the stand-ins still fail the schema).
 */
export function salvage(data: Json, errors: readonly Violation[]): Salvaged | undefined {
  const copy = structuredClone(data) as Json;
  const replaced = new Set<string>();
  let namesKept = true;
  let stepsLost = false;
  const steps = copy.steps;
  if (!Array.isArray(steps) || steps.length === 0) return undefined;

  const standIn = (list: unknown[], index: number, pointer: string) => {
    if (replaced.has(pointer)) return;
    const old = list[index];
    const id = isObject(old) ? old.id : undefined;
    const keepsId = IdSchema.safeParse(id).success;
    if (!keepsId) namesKept = false;
    if (isObject(old) && (old.type === 'loop' || Array.isArray(old.body))) stepsLost = true;
    list[index] = { id: keepsId ? id : `invalid-step-${replaced.size}`, title: 'invalid', prompt: 'invalid' };
    replaced.add(pointer);
  };
  /**
   * A step with a failing optional field loses that field and keeps the rest (its other rules are
   * still checked); a failing field that makes the step what it is replaces the whole step.
   */
  const mend = (list: unknown[], index: number, pointer: string, field: string | undefined) => {
    const step = list[index];
    if (field !== undefined && !STEP_CORE.has(field) && isObject(step) && !replaced.has(pointer)) {
      delete step[field];
      replaced.add(`${pointer}/${field}`);
    } else standIn(list, index, pointer);
  };
  /** Removes an unknown property wherever it is; the object holding it stays and is checked. */
  const removeKey = (path: string[]): void => {
    let node: unknown = copy;
    for (const segment of path.slice(0, -1)) {
      if (Array.isArray(node) && INDEX.test(segment)) node = node[Number(segment)];
      else if (isObject(node)) node = node[segment];
      else return;
    }
    if (isObject(node)) delete node[path.at(-1) as string];
  };
  const repair = (error: Violation): boolean => {
    if (error.path === '') return false;
    const path = segments(error.path);
    const [top = '', second, third, fourth] = path;
    if (error.rule === 'additionalProperties' && error.actual === path.at(-1)) {
      removeKey(path);
      replaced.add(error.path);
      return true;
    }
    if (top === 'steps') {
      if (second === undefined || !INDEX.test(second)) return false;
      const index = Number(second);
      const step = steps[index];
      // A failing step of an inline loop body is mended alone; the loop and its other steps stay.
      if (third === 'body' && fourth !== undefined && INDEX.test(fourth) && isObject(step)) {
        const body = step.body;
        if (Array.isArray(body) && Number(fourth) < body.length) {
          mend(body, Number(fourth), `/steps/${index}/body/${fourth}`, path[4]);
          return true;
        }
      }
      if (index < steps.length) mend(steps, index, `/steps/${index}`, third);
    } else if (top === 'inputs' && second !== undefined && isObject(copy.inputs)) {
      copy.inputs[second] = { type: 'string', description: 'invalid' };
      replaced.add(`/inputs/${second}`);
    } else if (top in REQUIRED_TOP) {
      copy[top] = REQUIRED_TOP[top];
      replaced.add(`/${top}`);
    } else {
      if (top === 'inputs') namesKept = false;
      delete copy[top];
      replaced.add(`/${top}`);
    }
    return true;
  };

  // A repair can move a step to another union branch, with other complaints: a few rounds at most.
  let pending: readonly Violation[] = errors;
  for (let round = 0; round < 3; round++) {
    for (const error of pending) if (!repair(error)) return undefined;
    const again = validateDefinition(copy);
    if (again.workflow !== undefined) {
      return {
        workflow: again.workflow,
        semantic: again.ok ? [] : again.violations,
        replaced: [...replaced],
        namesKept,
        stepsLost,
      };
    }
    pending = again.ok ? [] : again.violations;
  }
  return undefined;
}

/**
 * Whether a finding made on the stand-in holds for the text too: not inside a replaced part, and not
 * a reference that only fails because a name or a step was replaced.
 */
export function holdsForText(finding: Violation, salvaged: Salvaged): boolean {
  const inside = salvaged.replaced.some((p) => finding.path === p || finding.path.startsWith(`${p}/`));
  if (inside) return false;
  if (!salvaged.namesKept && (finding.rule === 'loopBody' || finding.rule === 'templateReference'))
    return false;
  if (salvaged.stepsLost && finding.rule === 'templateReference') return false;
  return true;
}
