import { conditionVariables } from '../engine/conditions.js';
import { type ContextVariable, contextNeeds } from '../engine/context-needs.js';
import { contextKeysTheServerSets } from '../engine/delegate-context.js';
import { stepPromptText, workrailWarnings } from '../engine/workrail.js';
import type { Violation } from '../model/violation.js';
import {
  type Condition,
  confirmationRule,
  isCommandStep,
  isLoopStep,
  loopCondition,
  type PromptStep,
  type ValidationCriterion,
  type VarCondition,
  type Workflow,
} from '../model/workflow.js';

type Finding = Violation;

/**
 * Warnings: constructs that are legal but probably unintended (undocumented or unused variables,
 * unreachable steps, unknown personas). They never make a definition invalid. `delegatingParallel`: the
 * WorkRail parallel steps that run as child executions here (their delegations draw no workrailInert).
 */
export function lint(
  workflow: Workflow,
  knownAgents: ReadonlySet<string> | undefined,
  delegatingParallel?: ReadonlySet<string>,
): Finding[] {
  const out: Finding[] = [];
  const provided = contextKeysTheServerSets(workflow);
  const needs = contextNeeds(workflow);
  const words = documentationWords(workflow);
  const warned = new Set<string>();
  const reads = (cond: Condition | undefined, path: string) => {
    for (const v of conditionVariables(cond)) checkVar(v, path);
  };
  // One warning per variable, at its first read: nothing mentions it; no step asks for it; or it is
  // read before any step can set it. Each says what an unset variable does there.
  const checkVar = (variable: string, path: string) => {
    if (warned.has(variable)) return;
    const root = variable.split('.')[0] ?? variable;
    const dangling = needs.dangling.find((d) => d.path === variable);
    if (dangling) {
      warned.add(variable);
      out.push({
        path,
        rule: 'unsetVariable',
        message: `reads ${variable}, but the workflow declares no ${root === 'inputs' ? 'input' : 'step'} "${variable.split('.')[1]}": it is always unset`,
        actual: variable,
      });
      return;
    }
    const v = needs.byPath.get(variable);
    if (provided.has(root) || v === undefined) return;
    const unset = unsetMeaning(v);
    const setter = v.setBy.length > 0 ? `; fill offers it (optional) on step "${v.setBy[0]}"` : '';
    let finding: Finding | undefined;
    if (!v.asked && !words.mentions(root)) {
      finding = {
        path,
        rule: 'undocumentedVariable',
        message: `reads context variable "${variable}", which no step, input or default sets and no prompt, precondition or guidance mentions, so callers will not know to provide it. Unset, ${unset}${setter}`,
        actual: root,
      };
    } else if (!v.asked) {
      finding = {
        path,
        rule: 'unsetVariable',
        message: `reads context variable "${variable}", which no step before the read asks for by name (no step, input or default sets it). Unset, ${unset}${setter}`,
        actual: root,
      };
    } else if (v.atStart) {
      finding = {
        path,
        rule: 'readBeforeSet',
        message: `reads context variable "${variable}" before any step can set it (step "${v.setBy[0]}" asks for it later): only the context given to workflow_start (or the first workflow_next) sets it in time. Unset, ${unset}`,
        actual: root,
      };
    }
    if (finding) {
      warned.add(variable);
      out.push(finding);
    }
  };
  const visitPrompt = (step: PromptStep, path: string) => {
    reads(step.runCondition, `${path}/runCondition`);
    const confirm = confirmationRule(step);
    if (typeof confirm === 'object') reads(confirm, `${path}/requireConfirmation`);
    for (const c of criteriaList(step.validationCriteria)) reads(c, `${path}/validationCriteria`);
    step.promptFragments?.forEach((fragment, k) => {
      if (fragment.when !== undefined) reads(fragment.when, `${path}/promptFragments/${k}/when`);
    });
    // A fan-out reads its list as a forEach loop does; a child's condition as a runCondition.
    if (step.delegate?.forEach !== undefined) checkVar(step.delegate.forEach, `${path}/delegate/forEach`);
    step.delegate?.children?.forEach((child, k) => {
      reads(child.runCondition, `${path}/delegate/children/${k}/runCondition`);
    });
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
    if (cfg.type === 'while' || cfg.type === 'until') reads(loopCondition(cfg), `${path}/loop/condition`);
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
  out.push(...workrailWarnings(workflow, (step) => delegatingParallel?.has(step.id) === true));
  return out;
}

/** What an unset variable does where the workflow reads it (docs/tools.md, "Unset variables"). */
function unsetMeaning(v: ContextVariable): string {
  const effects = new Set<string>();
  for (const read of v.reads) {
    if (read.what === 'items' || read.what === 'count')
      effects.add(`loop "${read.step}" refuses to start (PRECONDITION_FAILED)`);
    else if (read.what === 'children')
      effects.add(`step "${read.step}" refuses to start its children (PRECONDITION_FAILED)`);
    else if (read.what === 'loop')
      effects.add(
        v.loop?.type === 'until'
          ? `loop "${read.step}" repeats until its maxIterations`
          : `loop "${read.step}" does not run (or ends)`,
      );
    else if (read.what !== 'template')
      effects.add('its equals, in, text and numeric tests are false and not_equals is true');
  }
  return [...effects].join('; ');
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

/**
 * Whether the workflow's prose mentions a name as a word. The prose is split into words once, so a
 * workflow with many variables costs one pass over its text, not one regular expression per variable.
 */
function documentationWords(workflow: Workflow): { mentions(name: string): boolean } {
  const parts: string[] = [
    workflow.description,
    workflow.about ?? '',
    ...(workflow.functionDefinitions ?? []).map((f) => f.definition),
    ...(workflow.preconditions ?? []),
    ...(workflow.clarificationPrompts ?? []),
    ...(workflow.metaGuidance ?? []),
  ];
  const prompt = (s: PromptStep) =>
    parts.push(
      s.title,
      stepPromptText(s),
      ...(s.promptFragments ?? []).map((f) => f.text),
      ...(s.guidance ?? []),
      s.agentRole ?? '',
    );
  for (const step of workflow.steps) {
    if (isLoopStep(step)) {
      parts.push(step.title, step.prompt ?? '');
      if (Array.isArray(step.body)) step.body.forEach(prompt);
    } else if (isCommandStep(step)) parts.push(step.title, step.run);
    else prompt(step);
  }
  const text = parts.join('\n');
  let words: Set<string> | undefined;
  return {
    mentions: (name) => {
      // A name made of word characters is mentioned when it is one of the words (what \bname\b finds).
      if (/^\w+$/.test(name)) {
        words ??= new Set(text.split(/\W+/));
        return words.has(name);
      }
      return text.includes(name);
    },
  };
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
