/**
 * What a workflow needs the agent to put in the context, worked out once per definition: from its
 * conditions (runCondition, loop while/until, confirmations, prompt fragments, rule conditions), its
 * forEach/for sources and its `{{var}}` templates, which variables each step's output must or may set,
 * of what type, and the values the conditions compare them with. The faces name these in `fill`, the
 * submission checks them, and authors see them in `workflow_get` / the diagram and in `validate`'s
 * warnings. Pure: no I/O; cached per definition object.
 */
import {
  type Condition,
  confirmationRule,
  isCommandStep,
  isLoopStep,
  isPromptStep,
  type LoopStep,
  loopCondition,
  type PromptStep,
  type Step,
  type ValidationCriterion,
  type VarCondition,
  type Workflow,
} from '../model/workflow.js';
import { type Context, readPath } from './conditions.js';
import { contextKeysTheServerSets, delegationTexts } from './delegate-context.js';
import { fail } from './errors.js';
import { MAX_DEPTH } from './json-text.js';
import { bodyOf, describeGot } from './next-step.js';
import { contextReferencesIn } from './templating.js';
import { stepPromptText } from './workrail.js';

/** What a variable holds, as far as the workflow's conditions tell. */
export type ValueKind =
  /** Text compared with string values (equals, in, contains...). */
  | 'string'
  /** A number; `strict` when numeric comparisons (gt, gte, lt, lte) read it, which never coerce text. */
  | 'number'
  | 'boolean'
  /** Tested for truthiness only ({var} with no operator). */
  | 'flag'
  /** A forEach list. */
  | 'array'
  /** A for loop's count. */
  | 'count'
  /** Mixed or unknown (a template only shows it). */
  | 'any';

/** Where a variable is read. */
export interface ContextRead {
  /** The step (or loop step) whose condition, source or template reads it. */
  step: string;
  what: 'runCondition' | 'loop' | SourceRead | 'fragment' | 'confirmation' | 'criteria' | 'template';
}

/** A list or count read: a forEach loop's items, a for loop's count, a delegating step's forEach (children). */
export type SourceRead = 'items' | 'count' | 'children';

export interface ContextVariable {
  /** The context path, e.g. "taskScope" or "ticket.priority". */
  path: string;
  kind: ValueKind;
  /** Numeric comparisons must get a number, not text ("10" is not > 5). */
  strict: boolean;
  /** Values the conditions compare it with (equals, not_equals, in), first seen first. */
  compared: unknown[];
  /** Numeric bounds the conditions test, e.g. ">= 0.7". */
  bounds: string[];
  /**
   * The values it may take, when the workflow's text enumerates them next to its name ("taskScope:
   * small, medium or large") and they include a compared value: the compared ones and those. Absent when
   * only the compared values are known (other values are then allowed: they take the paths where none
   * matches).
   */
  allowed?: string[];
  reads: ContextRead[];
  /**
   * Steps whose output sets it: the first one that asks for it by name, else the last one before it is
   * read (offered as optional there: the workflow never asks, so it may stay unset).
   */
  setBy: string[];
  /** Some step's text asks for it by name (otherwise the setter is the last step before the read). */
  asked: boolean;
  /** It is read before any step can set it: only the context given at the start can. */
  atStart: boolean;
  /** The loop whose condition reads it each round (it must be reported again every round). */
  loop?: { id: string; title: string; type: 'while' | 'until'; rule: string; maxIterations: number };
  /** The forEach/for loop it feeds. */
  source?: { id: string; title: string };
  /** The delegating step that starts one child execution per item of it (`delegate.forEach`). */
  fanOut?: { id: string; title: string };
}

/** One variable a step's output sets. */
export interface StepContextNeed {
  path: string;
  /** The workflow asks this step for it by name (else it is offered as optional). */
  asked: boolean;
  /** A loop condition reads it after every round: the step reports it again each round. */
  fresh: boolean;
  /** Named only while the variable is unset (a step after its setter, in case the setter was skipped). */
  whileUnset: boolean;
}

export interface ContextNeeds {
  /** Every context variable the workflow reads that only the agent can set, in order of first read. */
  variables: ContextVariable[];
  byPath: ReadonlyMap<string, ContextVariable>;
  /** Step id → the variables its output sets. */
  byStep: ReadonlyMap<string, StepContextNeed[]>;
  /** Reads of server-owned values that nothing provides: `inputs.x` with no input x, `steps.y` with no step y. */
  dangling: { path: string; step: string }[];
}

const cache = new WeakMap<Workflow, ContextNeeds>();

/** The analysis of a definition, computed on first use and kept as long as the definition object lives. */
export function contextNeeds(workflow: Workflow): ContextNeeds {
  let needs = cache.get(workflow);
  if (needs === undefined) {
    needs = analyse(workflow);
    cache.set(workflow, needs);
  }
  return needs;
}

// ---------------------------------------------------------------------------------------------
// Reading the definition

/** Every `{var, ...}` test of a condition. */
function leaves(condition: Condition | undefined, into: VarCondition[] = [], depth = 0): VarCondition[] {
  if (condition === undefined || depth > MAX_DEPTH) return into;
  if ('and' in condition) for (const c of condition.and) leaves(c, into, depth + 1);
  else if ('or' in condition) for (const c of condition.or) leaves(c, into, depth + 1);
  else if ('not' in condition) leaves(condition.not, into, depth + 1);
  else into.push(condition);
  return into;
}

/** The `condition` of every rule of a step's criteria (and/or/not included), in file order. */
export function criteriaConditions(criteria: PromptStep['validationCriteria']): Condition[] {
  const out: Condition[] = [];
  const visit = (c: ValidationCriterion, depth: number) => {
    if (depth > MAX_DEPTH) return;
    if ('and' in c) for (const x of c.and) visit(x, depth + 1);
    else if ('or' in c) for (const x of c.or) visit(x, depth + 1);
    else if ('not' in c) visit(c.not, depth + 1);
    else if (c.condition !== undefined) out.push(c.condition);
  };
  if (criteria !== undefined) for (const c of Array.isArray(criteria) ? criteria : [criteria]) visit(c, 0);
  return out;
}

/** The text of a step the agent reads: where a workflow asks for a variable by name. */
function stepText(step: PromptStep): string {
  return [
    step.title,
    stepPromptText(step),
    ...(step.promptFragments ?? []).map((f) => f.text),
    ...(step.guidance ?? []),
  ].join('\n');
}

const wordsOf = (text: string) => new Set(text.split(/[^A-Za-z0-9_]+/));

/** One place a step can run: its position in walk order, and the loop whose body holds it. */
interface Slot {
  step: PromptStep;
  index: number;
  loop?: LoopStep;
  words: Set<string>;
}

/** A read of a variable: the slots before `point` run before it; `loop` the iteration it is read in. */
interface Read extends ContextRead {
  path: string;
  point: number;
  loop?: LoopStep;
  /** A loop condition: the body must report the variable again every round. */
  fresh: boolean;
  /** Only shown (a template): never required. */
  display: boolean;
  /** A fan-out's list: the delegating step's title. */
  fanOut?: string;
}

function analyse(workflow: Workflow): ContextNeeds {
  const owned = contextKeysTheServerSets(workflow);
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  const slots: Slot[] = [];
  const reads: Read[] = [];
  const leafMap = new Map<string, VarCondition[]>();
  const dangling: { path: string; step: string }[] = [];
  const stepIds = new Set<string>();
  const inputs = new Set(Object.keys(workflow.inputs ?? {}));
  const conditionReads = (condition: Condition | undefined, base: Omit<Read, 'path' | 'display'>): void => {
    for (const leaf of leaves(condition)) {
      const list = leafMap.get(leaf.var) ?? [];
      list.push(leaf);
      leafMap.set(leaf.var, list);
      reads.push({ ...base, path: leaf.var, display: false });
    }
  };
  const stepReads = (step: Step, index: number, loop: LoopStep | undefined) => {
    const base = { step: step.id, point: index, fresh: false, ...(loop ? { loop } : {}) };
    conditionReads(step.runCondition, { ...base, what: 'runCondition' });
    if (!isPromptStep(step)) return;
    const confirm = confirmationRule(step);
    // A confirmation rule and a rule's condition may depend on what the step itself reports.
    if (typeof confirm === 'object')
      conditionReads(confirm, { ...base, point: index + 1, what: 'confirmation' });
    for (const f of step.promptFragments ?? []) conditionReads(f.when, { ...base, what: 'fragment' });
    for (const c of criteriaConditions(step.validationCriteria))
      conditionReads(c, { ...base, point: index + 1, what: 'criteria' });
    for (const name of contextReferencesIn(stepText(step)))
      reads.push({ ...base, path: name, what: 'template', display: true });
    // A delegating step reads its fan-out list as a forEach loop reads its items, each child's condition
    // as a runCondition, and `{{var}}` in the children's context as a template.
    const d = step.delegate;
    if (d === undefined) return;
    if (d.forEach !== undefined)
      reads.push({ ...base, path: d.forEach, what: 'children', display: false, fanOut: step.title });
    for (const child of d.children ?? [])
      conditionReads(child.runCondition, { ...base, what: 'runCondition' });
    for (const text of delegationTexts(d))
      for (const name of contextReferencesIn(text))
        reads.push({ ...base, path: name, what: 'template', display: true });
  };

  for (const step of workflow.steps) {
    stepIds.add(step.id);
    if (bodyRefs.has(step.id)) continue;
    if (!isLoopStep(step)) {
      if (isPromptStep(step)) slots.push({ step, index: slots.length, words: wordsOf(stepText(step)) });
      stepReads(step, slots.length - (isPromptStep(step) ? 1 : 0), undefined);
      continue;
    }
    const start = slots.length;
    conditionReads(step.runCondition, { step: step.id, point: start, fresh: false, what: 'runCondition' });
    const cfg = step.loop;
    if (cfg.type === 'forEach') reads.push(sourceRead(step, cfg.items, start, 'items'));
    if (cfg.type === 'for' && typeof cfg.count === 'string')
      reads.push(sourceRead(step, cfg.count, start, 'count'));
    const body = bodyOf(workflow, step);
    for (const inner of body) {
      stepIds.add(inner.id);
      if (!isPromptStep(inner)) continue;
      slots.push({ step: inner, index: slots.length, loop: step, words: wordsOf(stepText(inner)) });
      stepReads(inner, slots.length - 1, step);
    }
    const condition = loopCondition(cfg);
    if (condition !== undefined && (cfg.type === 'while' || cfg.type === 'until')) {
      // A while loop reads its condition before the first round (steps before the loop set it) and after
      // each round (the body reports it again); an until loop only after each round.
      if (cfg.type === 'while')
        conditionReads(condition, { step: step.id, point: start, fresh: false, what: 'loop' });
      conditionReads(condition, {
        step: step.id,
        point: slots.length,
        loop: step,
        fresh: true,
        what: 'loop',
      });
    }
  }

  // Server-owned reads: inputs, step outputs, loop progress and loop variables.
  const agentReads = reads.filter((r) => {
    const root = r.path.split('.')[0] as string;
    if (!owned.has(root)) return true;
    const second = r.path.split('.')[1];
    if (root === 'inputs' && second !== undefined && !inputs.has(second))
      dangling.push({ path: r.path, step: r.step });
    if (root === 'steps' && second !== undefined && !stepIds.has(second))
      dangling.push({ path: r.path, step: r.step });
    return false;
  });

  const texts = corpus(workflow);
  const names = new Set(agentReads.map((r) => (r.path.split('.').at(-1) as string).toLowerCase()));
  const variables = new Map<string, ContextVariable>();
  const byStep = new Map<string, StepContextNeed[]>();
  const need = (stepId: string, entry: StepContextNeed) => {
    const list = byStep.get(stepId) ?? [];
    const same = list.find((e) => e.path === entry.path);
    if (same === undefined) list.push(entry);
    else {
      same.asked ||= entry.asked;
      same.fresh ||= entry.fresh;
      same.whileUnset &&= entry.whileUnset;
    }
    byStep.set(stepId, list);
  };

  agentReads.sort((a, b) => a.point - b.point);
  for (const read of agentReads) {
    let variable = variables.get(read.path);
    if (variable === undefined) {
      variable = describe(read.path, leafMap.get(read.path) ?? [], texts, names);
      variables.set(read.path, variable);
    }
    if (!variable.reads.some((r) => r.step === read.step && r.what === read.what))
      variable.reads.push({ step: read.step, what: read.what });
    if (read.what === 'items' || read.what === 'count' || read.what === 'children') {
      variable.kind = read.what === 'count' ? 'count' : 'array';
      variable.strict = true;
      if (read.what === 'children') variable.fanOut ??= { id: read.step, title: read.fanOut ?? read.step };
      else if (read.loop) variable.source = { id: read.loop.id, title: read.loop.title };
    }
    if (read.what === 'loop' && read.fresh && read.loop) {
      const cfg = read.loop.loop;
      if (cfg.type === 'while' || cfg.type === 'until') {
        variable.loop = {
          id: read.loop.id,
          title: read.loop.title,
          type: cfg.type,
          rule: conditionLine(loopCondition(cfg)),
          maxIterations: cfg.maxIterations,
        };
      }
    }
    // Who sets it: a step before the read that asks for it by name (in the same loop body first), else
    // the last step before the read.
    const candidates = slots.filter((s) => s.index < read.point);
    const root = read.path.split('.')[0] as string;
    const asks = (s: Slot) => s.words.has(root);
    const inLoop = read.loop ? candidates.filter((s) => s.loop?.id === read.loop?.id) : [];
    const outside = read.loop ? candidates.filter((s) => s.loop?.id !== read.loop?.id) : candidates;
    let setter = inLoop.find(asks) ?? (read.fresh ? undefined : outside.find(asks));
    const asked = setter !== undefined;
    if (asked) variable.asked = true;
    // Unasked: a step already chosen for an earlier read, else the last one before this read.
    const chosen = variable.setBy;
    setter ??= read.fresh
      ? inLoop.at(-1)
      : (candidates.find((s) => chosen.includes(s.step.id)) ?? inLoop.at(-1) ?? outside.at(-1));
    if (setter === undefined) {
      variable.atStart = true;
      continue;
    }
    if (!variable.setBy.includes(setter.step.id)) variable.setBy.push(setter.step.id);
    // Asked where the workflow asks for it; otherwise offered (optional) and unset until given.
    need(setter.step.id, {
      path: read.path,
      asked: asked && !read.display,
      fresh: read.fresh,
      whileUnset: false,
    });
    // The steps between the setter and the read may set it too, while it is unset (the setter may have
    // been skipped by its own condition).
    for (const s of candidates) {
      if (s.index > setter.index && (!read.fresh || s.loop?.id === read.loop?.id))
        need(s.step.id, { path: read.path, asked: false, fresh: false, whileUnset: true });
    }
  }
  const list = [...variables.values()];
  return { variables: list, byPath: variables, byStep, dangling };
}

function sourceRead(loop: LoopStep, path: string, point: number, what: 'items' | 'count'): Read {
  return { step: loop.id, what, path, point, loop, fresh: false, display: false };
}

/** The text a workflow enumerates values in: descriptions, guidance and every step's text. */
function corpus(workflow: Workflow): string[] {
  const out: string[] = [
    workflow.description,
    workflow.about ?? '',
    ...(workflow.preconditions ?? []),
    ...(workflow.clarificationPrompts ?? []),
    ...(workflow.metaGuidance ?? []),
  ];
  for (const step of workflow.steps) {
    if (isLoopStep(step)) {
      out.push(step.prompt ?? '');
      if (Array.isArray(step.body)) for (const inner of step.body) out.push(stepText(inner));
    } else if (!isCommandStep(step)) out.push(stepText(step));
  }
  return out.filter((t) => t.length > 0);
}

const literal = (v: unknown) => JSON.stringify(v) ?? 'null';

/** A condition in one line, as the fill hint and the diagram show it. */
export function conditionLine(condition: Condition | undefined): string {
  if (condition === undefined) return '';
  const wrap = (c: Condition) => ('and' in c || 'or' in c ? `(${conditionLine(c)})` : conditionLine(c));
  if ('and' in condition) return condition.and.map(wrap).join(' and ');
  if ('or' in condition) return condition.or.map(wrap).join(' or ');
  if ('not' in condition) return `not ${wrap(condition.not)}`;
  const v = condition.var;
  const parts: string[] = [];
  if ('equals' in condition) parts.push(`${v} == ${literal(condition.equals)}`);
  if ('not_equals' in condition) parts.push(`${v} != ${literal(condition.not_equals)}`);
  if (condition.in !== undefined) parts.push(`${v} in ${literal(condition.in)}`);
  if (condition.contains !== undefined) parts.push(`${v} contains ${literal(condition.contains)}`);
  if (condition.startsWith !== undefined) parts.push(`${v} starts with ${literal(condition.startsWith)}`);
  if (condition.endsWith !== undefined) parts.push(`${v} ends with ${literal(condition.endsWith)}`);
  for (const [key, op] of [
    ['gt', '>'],
    ['gte', '>='],
    ['lt', '<'],
    ['lte', '<='],
  ] as const) {
    const bound = condition[key];
    if (bound !== undefined) parts.push(`${v} ${op} ${bound}`);
  }
  return parts.length > 0 ? parts.join(' and ') : v;
}

/** Type, compared values, bounds and enumerated values of one variable, from its tests and the prose. */
function describe(
  path: string,
  tests: readonly VarCondition[],
  texts: readonly string[],
  names: ReadonlySet<string>,
): ContextVariable {
  const kinds = new Set<ValueKind>();
  const compared: unknown[] = [];
  const bounds: string[] = [];
  let strict = false;
  const compare = (value: unknown) => {
    if (value === null) return;
    kinds.add(
      typeof value === 'boolean'
        ? 'boolean'
        : typeof value === 'number'
          ? 'number'
          : typeof value === 'string'
            ? 'string'
            : 'any',
    );
    const key = typeof value === 'string' ? value.trim().toLowerCase() : literal(value);
    if (!compared.some((c) => (typeof c === 'string' ? c.trim().toLowerCase() : literal(c)) === key))
      compared.push(value);
  };
  for (const t of tests) {
    let tested = false;
    if ('equals' in t) {
      compare(t.equals);
      tested = true;
    }
    if ('not_equals' in t) {
      compare(t.not_equals);
      tested = true;
    }
    for (const v of t.in ?? []) compare(v);
    if (t.in !== undefined) tested = true;
    for (const text of [t.contains, t.startsWith, t.endsWith]) {
      if (text === undefined) continue;
      kinds.add('string');
      tested = true;
    }
    for (const [key, op] of [
      ['gt', '>'],
      ['gte', '>='],
      ['lt', '<'],
      ['lte', '<='],
    ] as const) {
      const bound = t[key];
      if (bound === undefined) continue;
      kinds.add('number');
      strict = true;
      tested = true;
      if (!bounds.includes(`${op} ${bound}`)) bounds.push(`${op} ${bound}`);
    }
    if (!tested) kinds.add('flag');
  }
  kinds.delete('flag');
  const kind: ValueKind =
    kinds.size === 0
      ? tests.length > 0
        ? 'flag'
        : 'any'
      : kinds.size === 1
        ? ([...kinds][0] as ValueKind)
        : 'any';
  const variable: ContextVariable = {
    path,
    kind,
    strict,
    compared,
    bounds,
    reads: [],
    setBy: [],
    asked: false,
    atStart: false,
  };
  if (kind === 'string') {
    const strings = compared.filter((c): c is string => typeof c === 'string');
    const listed = enumerated(path.split('.').at(-1) as string, strings, texts, names);
    if (listed !== undefined) variable.allowed = listed;
  }
  return variable;
}

// ---------------------------------------------------------------------------------------------
// Values enumerated in prose: "taskScope: small (one file), medium or large", "(Small/Medium/Large)",
// "ticketType (bug | feature | epic)"

const ITEM = /(["'`]?)([A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,38}[A-Za-z0-9_])?)\1/y;
const SEPARATOR = /\s*(?:,\s*(?:or|and)\s+|,|\/|\||\s(?:or|and)\s)\s*/y;
/** What may follow a list item: a separator, closing punctuation, or the end. */
const AFTER_ITEM = /\s*(?:[,/|.;:)\]!?]|(?:or|and)\s|$)/y;
const WINDOW = 240;
const MAX_OCCURRENCES = 20;

/**
 * The values listed right after a variable's name in the workflow's text, when a list there names one of
 * the compared values; merged with the compared values (compared ones first when not listed).
 */
function enumerated(
  name: string,
  compared: readonly string[],
  texts: readonly string[],
  names: ReadonlySet<string>,
): string[] | undefined {
  if (compared.length === 0) return undefined;
  const known = new Set(compared.map((c) => c.trim().toLowerCase()));
  const found: string[] = [];
  const nameAt = new RegExp(
    `(?<![A-Za-z0-9_])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_])`,
    'g',
  );
  let seen = 0;
  for (const text of texts) {
    for (const m of text.matchAll(nameAt)) {
      if (++seen > MAX_OCCURRENCES) break;
      const list = listAfter(text.slice(m.index + m[0].length, m.index + m[0].length + WINDOW), known, names);
      for (const item of list ?? []) {
        if (!found.some((f) => f.toLowerCase() === item.toLowerCase())) found.push(item);
      }
    }
  }
  if (found.length === 0) return undefined;
  for (const c of compared) if (!found.some((f) => f.toLowerCase() === c.trim().toLowerCase())) found.push(c);
  return found;
}

function listAfter(
  raw: string,
  known: ReadonlySet<string>,
  names: ReadonlySet<string>,
): string[] | undefined {
  // Up to the end of the line; a parenthesis that names no compared value is a gloss ("small (one file)").
  const line = raw.split('\n')[0] ?? '';
  const window = line.replace(/\(([^()]*)\)/g, (all, inner: string) =>
    [...wordsOf(inner)].some((w) => known.has(w.toLowerCase())) ? all : ' '.repeat(all.length),
  );
  for (let start = 0; start < Math.min(window.length, 60); start++) {
    if (start > 0 && /[A-Za-z0-9_]/.test(window[start - 1] as string)) continue;
    const items = parseList(window, start, names);
    if (items && items.length >= 2 && items.some((i) => known.has(i.toLowerCase()))) return items;
  }
  return undefined;
}

/**
 * A list of single words with one kind of separator ("a, b or c", "a/b/c", "a | b | c"), each item
 * followed by a separator or closing punctuation; a context variable's name ends it ("... or large),
 * userExpertise (...)").
 */
function parseList(text: string, start: number, names: ReadonlySet<string>): string[] | undefined {
  const items: string[] = [];
  let family: string | undefined;
  let at = start;
  for (;;) {
    ITEM.lastIndex = at;
    const item = ITEM.exec(text);
    if (!item) break;
    const word = item[2] as string;
    AFTER_ITEM.lastIndex = ITEM.lastIndex;
    if (/^(?:or|and)$/i.test(word) || names.has(word.toLowerCase()) || !AFTER_ITEM.test(text)) break;
    items.push(word);
    if (items.length > 12) return undefined;
    SEPARATOR.lastIndex = ITEM.lastIndex;
    const separator = SEPARATOR.exec(text);
    if (!separator) break;
    const kind = separator[0].includes('/') ? '/' : separator[0].includes('|') ? '|' : ',';
    if (family !== undefined && kind !== family) break;
    family = kind;
    at = SEPARATOR.lastIndex;
  }
  return items.length > 0 ? items : undefined;
}

// ---------------------------------------------------------------------------------------------
// What a value must be, in words, and checking one

/** What the variable must hold, in a few literal words (the fill hint and error messages use it). */
export function expectedValue(v: ContextVariable): string {
  const quoted = (values: readonly unknown[]) => values.map(literal).join(', ');
  switch (v.kind) {
    case 'array':
      return v.source
        ? `an array (loop "${v.source.title}" runs once per item)`
        : v.fanOut
          ? `an array (step "${v.fanOut.title}" starts one child execution per item)`
          : 'an array';
    case 'count':
      return v.source ? `a whole number (loop "${v.source.title}" runs that many times)` : 'a whole number';
    case 'boolean':
    case 'flag':
      return 'true or false';
    case 'number':
      return v.bounds.length > 0
        ? `a number (compared: ${v.bounds.join(', ')})`
        : `a number${v.compared.length > 0 ? ` (compared with ${quoted(v.compared)})` : ''}`;
    case 'string':
      return v.allowed !== undefined
        ? `one of ${quoted(v.allowed)} (case-insensitive)`
        : `text; compared with ${quoted(v.compared)} (case-insensitive; anything else matches none)`;
    case 'any':
      return v.compared.length > 0 ? `a value; compared with ${quoted(v.compared)}` : 'a value';
  }
}

/**
 * Why a value does not fit the variable, or undefined when it does. Values compare as conditions compare
 * them: text ignoring case and surrounding space, "true"/"false" as booleans, numeric text as a number
 * (except for numeric comparisons, which need a number).
 */
export function valueProblem(v: ContextVariable, value: unknown): string | undefined {
  const bad = () =>
    `must be ${expectedValue(v)}; got ${value === undefined ? 'nothing' : describeGot(value)}`;
  switch (v.kind) {
    case 'array':
      return Array.isArray(value) ? undefined : bad();
    case 'count':
      return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? undefined : bad();
    case 'boolean':
    case 'flag':
      // As conditions compare: "true"/"yes"/"1" equal true, "false"/"no"/"0" equal false.
      return typeof value === 'boolean' ||
        (typeof value === 'string' && /^(?:true|false|yes|no|1|0)$/i.test(value.trim()))
        ? undefined
        : bad();
    case 'number':
      if (typeof value === 'number' && Number.isFinite(value)) return undefined;
      return !v.strict && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))
        ? undefined
        : bad();
    case 'string': {
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return bad();
      if (v.allowed === undefined) return undefined;
      const text = String(value).trim().toLowerCase();
      return v.allowed.some((a) => a.toLowerCase() === text) ? undefined : bad();
    }
    case 'any':
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// What a step's output must carry (fill)

/** One thing the agent must supply with a step, before it is worded for a face. */
export interface FillItem {
  /** context: a variable (path); decision: a loop-control artifact (loop id); artifact: another artifact. */
  target: 'context' | 'decision' | 'artifact';
  path: string;
  required: boolean;
  /** What to put there, literally. */
  text: string;
}

/**
 * What to put there: for a variable the workflow asks the step for, the value itself ("one of …"); for
 * one it only offers, "optional: …" (unset, the conditions that read it take their unset branch).
 */
function variableHint(v: ContextVariable, entry: { asked: boolean; fresh: boolean }): string {
  const loop =
    v.loop && entry.fresh
      ? `; loop "${v.loop.title}" ${v.loop.type === 'until' ? 'repeats until' : 'goes on while'} ${v.loop.rule} (at most ${v.loop.maxIterations} rounds)`
      : '';
  return `${entry.asked ? '' : 'optional: '}${expectedValue(v)}${loop}`;
}

/**
 * The context variables a step's output must or may set, given the context it is handed out with:
 * required ones always, the others while unset; `also` adds variables a refusal named.
 */
export function contextFill(
  workflow: Workflow,
  stepId: string,
  context: Context,
  also: readonly string[] = [],
): FillItem[] {
  const needs = contextNeeds(workflow);
  const out: FillItem[] = [];
  for (const entry of needs.byStep.get(stepId) ?? []) {
    const v = needs.byPath.get(entry.path);
    if (v === undefined || (entry.whileUnset && readPath(context, entry.path) !== undefined)) continue;
    out.push({ target: 'context', path: entry.path, required: entry.asked, text: variableHint(v, entry) });
  }
  for (const path of also) {
    if (out.some((f) => f.path === path)) continue;
    const v = needs.byPath.get(path);
    out.push({
      target: 'context',
      path,
      required: true,
      text: v ? variableHint(v, { asked: true, fresh: false }) : 'a value',
    });
  }
  return out;
}

/** Issues of the values a context gives, with the variables they name. */
export interface ContextCheck {
  issues: string[];
  variables: string[];
}

/**
 * Checks the values a context gives against what the workflow reads: each variable present must fit its
 * type and, when the workflow lists its values, be one of them. A variable left out is not an issue: it is
 * unset, and the conditions that read it take their unset branch (a forEach/for source refuses to go on
 * when its loop is reached). `prefix` names where the values came from in messages ("output.context.").
 */
export function checkContextValues(
  workflow: Workflow,
  given: Context | undefined,
  prefix: string,
): ContextCheck {
  const check: ContextCheck = { issues: [], variables: [] };
  if (given === undefined) return check;
  for (const v of contextNeeds(workflow).variables) {
    const value = readPath(given, v.path);
    if (value === undefined) continue;
    const problem = valueProblem(v, value);
    if (problem === undefined) continue;
    check.issues.push(`${prefix}${v.path} ${problem}`);
    check.variables.push(v.path);
  }
  return check;
}

/** Refuses a context that failed `checkContextValues` (nothing advanced), naming the first variable. */
export function refuseContext(workflow: Workflow, check: ContextCheck): never {
  const path = check.variables[0] as string;
  const v = contextNeeds(workflow).byPath.get(path);
  return fail({
    code: 'precondition_failed',
    message: check.issues.join('; '),
    workflowId: workflow.id,
    variable: path,
    expected: v ? expectedValue(v) : 'a value',
  });
}

/** A context variable of a step as a form field (elicitation): a JSON Schema primitive. */
export interface ContextField {
  path: string;
  schema: Record<string, unknown>;
  /** The form gives a list as comma-separated text; split it back into an array. */
  list: boolean;
}

/** The variables the workflow asks a step for, as form fields (a person answering for the agent fills them). */
export function contextFields(workflow: Workflow, stepId: string): ContextField[] {
  const needs = contextNeeds(workflow);
  const out: ContextField[] = [];
  for (const entry of needs.byStep.get(stepId) ?? []) {
    const v = needs.byPath.get(entry.path);
    if (!entry.asked || v === undefined) continue;
    const description = expectedValue(v);
    const schema: Record<string, unknown> =
      v.kind === 'boolean' || v.kind === 'flag'
        ? { type: 'boolean' }
        : v.kind === 'number'
          ? { type: 'number' }
          : v.kind === 'count'
            ? { type: 'integer', minimum: 0 }
            : v.kind === 'string' && v.allowed !== undefined
              ? { type: 'string', enum: v.allowed }
              : { type: 'string' };
    out.push({
      path: entry.path,
      schema: {
        ...schema,
        title: entry.path,
        description:
          v.kind === 'array' ? `${description}: one item per line, or comma-separated` : description,
      },
      list: v.kind === 'array',
    });
  }
  return out;
}
