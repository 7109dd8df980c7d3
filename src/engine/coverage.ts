/**
 * What the workflow tests count as covered: every action step entered, every condition taken both ways
 * (runCondition, a while/until loop's condition, promptFragment `when`, a conditional requireConfirmation,
 * a validation rule's `condition`: the reads the context analysis knows), every way each loop can end, and
 * every way each delegating step's join can end (it holds, goes on without a child, fails, times out).
 * Pure: the runner feeds it what the engine decided (the walk's observer) and the contexts it saw.
 */
import {
  type Condition,
  confirmationRule,
  isArtifactLoop,
  isLoopStep,
  isPromptStep,
  type LoopStep,
  loopCondition,
  type PromptStep,
  type Workflow,
} from '../model/workflow.js';
import { type Context, evaluateCondition } from './conditions.js';
import { conditionLine, criteriaConditions } from './context-needs.js';
import { bodyOf, type LoopExit, type WalkEvent } from './next-step.js';

export type BranchKind = 'runCondition' | 'loop' | 'fragment' | 'confirmation' | 'criteria';

/** One condition of the workflow: both of its outcomes are a branch to cover. */
export interface BranchSite {
  /** `<step>/runCondition`, `<loop>/loop`, `<step>/fragment/<n>`, `<step>/confirmation`, `<step>/criteria/<n>` (n from 1). */
  id: string;
  step: string;
  kind: BranchKind;
  condition: Condition;
  /** The condition in one line, e.g. `taskScope == "large"`. */
  rule: string;
}

/** One loop and the ways it can end. */
export interface LoopSite {
  id: string;
  title: string;
  maxIterations: number;
  /** The exits its configuration allows (a `for` over a literal count has exactly one). */
  exits: LoopExit[];
}

/** How a delegating step's join can end: each is a path to cover, like a loop's exits. */
export type JoinOutcome = 'held' | 'continued' | 'failed' | 'timed_out';

/** One delegating step and the ways its join can end. */
export interface JoinSite {
  id: string;
  title: string;
  /** The outcomes its `delegate` allows. */
  outcomes: JoinOutcome[];
  /** Its `delegate.timeout`, as written (for the words of an untested timeout). */
  timeout?: string | number;
}

export interface CoverageSites {
  /** Action steps (prompt and command, loop bodies included), in walk order. */
  steps: string[];
  branches: BranchSite[];
  loops: LoopSite[];
  joins: JoinSite[];
}

/**
 * The ways a delegating step's join can end, from its `delegate`: it holds (always: enough children
 * complete); a child that ends without completing either fails the execution (onChildFailure: fail, the
 * default) or lets it go on with the children that completed (continue); with a `timeout`, the wait can
 * time out.
 */
function joinOutcomes(step: PromptStep): JoinOutcome[] {
  const d = step.delegate;
  if (d === undefined) return [];
  return [
    'held',
    d.onChildFailure === 'continue' ? 'continued' : 'failed',
    ...(d.timeout !== undefined ? (['timed_out'] as const) : []),
  ];
}

const LOOP_EXITS: readonly LoopExit[] = ['none', 'condition', 'max_iterations'];

/** The ways a loop can end, from its configuration. */
function loopExits(loop: LoopStep): LoopExit[] {
  const cfg = loop.loop;
  if (cfg.type === 'for' && typeof cfg.count === 'number') {
    return [cfg.count === 0 ? 'none' : cfg.count > cfg.maxIterations ? 'max_iterations' : 'condition'];
  }
  // An until loop always runs its first round; an agent's loop decision is asked for inside the loop.
  if (cfg.type === 'until' || isArtifactLoop(cfg)) return ['condition', 'max_iterations'];
  return [...LOOP_EXITS];
}

const cache = new WeakMap<Workflow, CoverageSites>();

/** The steps, conditions and loop exits of a definition, worked out once per definition object. */
export function coverageSites(workflow: Workflow): CoverageSites {
  const cached = cache.get(workflow);
  if (cached) return cached;
  const sites: CoverageSites = { steps: [], branches: [], loops: [], joins: [] };
  const seen = new Set<string>();
  const branch = (step: string, kind: BranchKind, condition: Condition | undefined, n?: number) => {
    if (condition === undefined) return;
    sites.branches.push({
      id: n === undefined ? `${step}/${kind}` : `${step}/${kind}/${n}`,
      step,
      kind,
      condition,
      rule: conditionLine(condition),
    });
  };
  const action = (step: Workflow['steps'][number]) => {
    if (seen.has(step.id) || isLoopStep(step)) return;
    seen.add(step.id);
    sites.steps.push(step.id);
    branch(step.id, 'runCondition', step.runCondition);
    if (!isPromptStep(step)) return;
    if (step.delegate !== undefined)
      sites.joins.push({
        id: step.id,
        title: step.title,
        outcomes: joinOutcomes(step),
        ...(step.delegate.timeout !== undefined ? { timeout: step.delegate.timeout } : {}),
      });
    (step.promptFragments ?? []).forEach((f, i) => {
      branch(step.id, 'fragment', f.when, i + 1);
    });
    const confirm = confirmationRule(step);
    if (typeof confirm === 'object') branch(step.id, 'confirmation', confirm);
    criteriaConditions(step.validationCriteria).forEach((c, i) => {
      branch(step.id, 'criteria', c, i + 1);
    });
  };
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  for (const step of workflow.steps) {
    if (!isLoopStep(step)) {
      if (!bodyRefs.has(step.id)) action(step);
      continue;
    }
    branch(step.id, 'runCondition', step.runCondition);
    if (step.loop.type === 'while' || step.loop.type === 'until')
      branch(step.id, 'loop', loopCondition(step.loop));
    sites.loops.push({
      id: step.id,
      title: step.title,
      maxIterations: step.loop.maxIterations,
      exits: loopExits(step),
    });
    for (const inner of bodyOf(workflow, step)) action(inner);
  }
  cache.set(workflow, sites);
  return sites;
}

export interface BranchCoverage {
  id: string;
  step: string;
  kind: BranchKind;
  rule: string;
  /** Times the condition held, and did not, where it decided something. */
  true: number;
  false: number;
}

export interface LoopCoverage {
  id: string;
  title: string;
  /** How often the loop ended each way. */
  exits: Record<LoopExit, number>;
  /** The exits its configuration allows: each is a path to cover. */
  possible: LoopExit[];
}

export interface JoinCoverage {
  id: string;
  title: string;
  /** How often the join ended each way (timed_out: each wait that timed out). */
  outcomes: Record<JoinOutcome, number>;
  /** The outcomes its `delegate` allows: each is a path to cover. */
  possible: JoinOutcome[];
}

export interface CoverageReport {
  /** Action steps entered, of all. */
  steps: { covered: number; total: number; items: { id: string; visits: number }[] };
  /** Condition outcomes seen (each condition counts twice: true and false), of all. */
  branches: { covered: number; total: number; items: BranchCoverage[] };
  /** Loop exits taken, of those the loops allow. */
  loops: { covered: number; total: number; items: LoopCoverage[] };
  /** Join outcomes seen, of those the delegating steps allow. */
  joins: { covered: number; total: number; items: JoinCoverage[] };
  /** Each path no scenario walks, in a line. */
  untested: string[];
}

const KIND_WORDS: Record<BranchKind, (site: BranchSite) => string> = {
  runCondition: (s) => `runCondition of "${s.step}"`,
  loop: (s) => `the condition of loop "${s.step}"`,
  fragment: (s) => `promptFragment ${s.id.split('/').at(-1)} of "${s.step}"`,
  confirmation: (s) => `requireConfirmation of "${s.step}"`,
  criteria: (s) => `validation rule condition ${s.id.split('/').at(-1)} of "${s.step}"`,
};

const EXIT_WORDS: Record<LoopExit, (loop: LoopSite) => string> = {
  none: (l) => `loop "${l.id}" never runs zero rounds`,
  condition: (l) => `loop "${l.id}" never ends by its own rule`,
  max_iterations: (l) => `loop "${l.id}" never stops at its maxIterations (${l.maxIterations})`,
};

const JOIN_WORDS: Record<JoinOutcome, (join: JoinSite) => string> = {
  held: (j) => `the join of "${j.id}" never holds`,
  continued: (j) =>
    `the join of "${j.id}" never goes on without a child that did not complete (onChildFailure: continue)`,
  failed: (j) => `the join of "${j.id}" never fails (a child that does not complete fails the execution)`,
  timed_out: (j) => `the wait on the children of "${j.id}" never times out (timeout: ${j.timeout})`,
};

const NO_JOINS = (): Record<JoinOutcome, number> => ({ held: 0, continued: 0, failed: 0, timed_out: 0 });

/**
 * Counts what the scenarios of one test file exercised. The walk's events come from the engine itself
 * (`observe`); fragments and confirmations are read with the context a step was handed out with, rule
 * conditions with the context a report was checked against, as the engine reads them.
 */
export class CoverageTally {
  readonly sites: CoverageSites;
  private readonly visits = new Map<string, number>();
  private readonly outcomes = new Map<string, { true: number; false: number }>();
  private readonly exits = new Map<string, Record<LoopExit, number>>();
  private readonly joins = new Map<string, Record<JoinOutcome, number>>();

  constructor(workflow: Workflow) {
    this.sites = coverageSites(workflow);
  }

  entered(stepId: string): void {
    this.visits.set(stepId, (this.visits.get(stepId) ?? 0) + 1);
  }

  private count(siteId: string, value: boolean): void {
    const counts = this.outcomes.get(siteId) ?? { true: 0, false: 0 };
    counts[value ? 'true' : 'false'] += 1;
    this.outcomes.set(siteId, counts);
  }

  /** A walk event from the engine. */
  observe(event: WalkEvent): void {
    if (event.kind === 'runCondition') this.count(`${event.step}/runCondition`, event.value);
    else if (event.kind === 'loopCondition') this.count(`${event.loop}/loop`, event.value);
    else {
      const exits = this.exits.get(event.loop) ?? { none: 0, condition: 0, max_iterations: 0 };
      exits[event.exit] += 1;
      this.exits.set(event.loop, exits);
    }
  }

  /** A delegating step's join ended `outcome` (or its wait timed out), as the runner saw it. */
  joined(stepId: string, outcome: JoinOutcome): void {
    const counts = this.joins.get(stepId) ?? NO_JOINS();
    counts[outcome] += 1;
    this.joins.set(stepId, counts);
  }

  /** A prompt step handed out with `context`: its fragments and its confirmation are read. */
  handedOut(step: PromptStep, context: Context): void {
    for (const site of this.sites.branches) {
      if (site.step !== step.id || (site.kind !== 'fragment' && site.kind !== 'confirmation')) continue;
      this.count(site.id, evaluateCondition(site.condition, context));
    }
  }

  /** A report at a prompt step checked against `context`: its rules' conditions are read. */
  reported(step: PromptStep, context: Context): void {
    for (const site of this.sites.branches) {
      if (site.step === step.id && site.kind === 'criteria')
        this.count(site.id, evaluateCondition(site.condition, context));
    }
  }

  report(): CoverageReport {
    const untested: string[] = [];
    const steps = this.sites.steps.map((id) => ({ id, visits: this.visits.get(id) ?? 0 }));
    for (const s of steps) if (s.visits === 0) untested.push(`step "${s.id}" is never entered`);
    const branches = this.sites.branches.map((site) => {
      const counts = this.outcomes.get(site.id) ?? { true: 0, false: 0 };
      for (const outcome of ['true', 'false'] as const) {
        if (counts[outcome] === 0)
          untested.push(`${KIND_WORDS[site.kind](site)} (${site.rule}) is never ${outcome}`);
      }
      return { id: site.id, step: site.step, kind: site.kind, rule: site.rule, ...counts };
    });
    const loops = this.sites.loops.map((site) => {
      const exits = this.exits.get(site.id) ?? { none: 0, condition: 0, max_iterations: 0 };
      for (const exit of site.exits) if (exits[exit] === 0) untested.push(EXIT_WORDS[exit](site));
      return { id: site.id, title: site.title, exits: { ...exits }, possible: site.exits };
    });
    const joins = this.sites.joins.map((site) => {
      const outcomes = this.joins.get(site.id) ?? NO_JOINS();
      for (const o of site.outcomes) if (outcomes[o] === 0) untested.push(JOIN_WORDS[o](site));
      return { id: site.id, title: site.title, outcomes: { ...outcomes }, possible: site.outcomes };
    });
    return {
      steps: { covered: steps.filter((s) => s.visits > 0).length, total: steps.length, items: steps },
      branches: {
        covered: branches.reduce((n, b) => n + (b.true > 0 ? 1 : 0) + (b.false > 0 ? 1 : 0), 0),
        total: branches.length * 2,
        items: branches,
      },
      loops: {
        covered: loops.reduce((n, l) => n + l.possible.filter((e) => l.exits[e] > 0).length, 0),
        total: loops.reduce((n, l) => n + l.possible.length, 0),
        items: loops,
      },
      joins: {
        covered: joins.reduce((n, j) => n + j.possible.filter((o) => j.outcomes[o] > 0).length, 0),
        total: joins.reduce((n, j) => n + j.possible.length, 0),
        items: joins,
      },
      untested,
    };
  }
}
