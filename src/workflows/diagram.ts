/**
 * A workflow definition as a graph (nodes, edges, loop clusters), and that graph as Mermaid text.
 * The dashboard's SVG and `workflow_get view=diagram` are both drawn from this one model, so the
 * picture a person sees and the text an agent gets always agree.
 */
import { contextNeeds, expectedValue } from '../engine/context-needs.js';
import {
  type CommandStep,
  type Condition,
  isCommandStep,
  isLoopStep,
  isPromptStep,
  type LoopStep,
  loopCondition,
  type PromptStep,
  type Step,
  type Workflow,
} from '../model/workflow.js';

/** child: the child executions a delegating step creates (one node per named child, or one for many);
 * join: where the step waits for them, labelled with its rule. */
export type DiagramNodeKind = 'start' | 'inputs' | 'prompt' | 'command' | 'loop' | 'child' | 'join' | 'end';

/** next: always taken; cond: taken when the target's runCondition holds; skip: taken when it does not;
 * back: to the loop for the next iteration; exit: out of a loop; fan: a delegating step to a child it
 * creates (labelled with the child's condition, if it has one); join: a child back to the join. */
export type DiagramEdgeKind = 'next' | 'cond' | 'skip' | 'back' | 'exit' | 'fan' | 'join';

export interface DiagramNode {
  id: string;
  kind: DiagramNodeKind;
  title: string;
  /** The step id, for step nodes (what live pages match execution state against). */
  step?: string;
  /** A second line: persona, command, loop rule or input names. */
  detail?: string;
  /** The loop cluster the node belongs to. */
  parent?: string;
  /** Context variables the step's output sets (`*`: the step is asked for it), from the context needs. */
  sets?: string[];
}

export interface DiagramEdge {
  from: string;
  to: string;
  kind: DiagramEdgeKind;
  label?: string;
}

export interface DiagramCluster {
  id: string;
  /** The loop step whose body the cluster holds. */
  loop: string;
  title: string;
  children: string[];
}

export interface WorkflowDiagram {
  nodes: DiagramNode[];
  edges: DiagramEdge[];
  clusters: DiagramCluster[];
}

const literal = (value: unknown) => JSON.stringify(value) ?? 'undefined';

/** A condition in one line, e.g. `taskScope == "large" and not (done)`. */
export function conditionText(condition: Condition): string {
  const wrap = (c: Condition) => ('and' in c || 'or' in c ? `(${conditionText(c)})` : conditionText(c));
  if ('and' in condition) return condition.and.map(wrap).join(' and ');
  if ('or' in condition) return condition.or.map(wrap).join(' or ');
  if ('not' in condition) return `not ${wrap(condition.not)}`;
  const parts: string[] = [];
  const v = condition.var;
  if ('equals' in condition) parts.push(`${v} == ${literal(condition.equals)}`);
  if ('not_equals' in condition) parts.push(`${v} != ${literal(condition.not_equals)}`);
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

function loopText(step: LoopStep): string {
  const { loop } = step;
  const max = `max ${loop.maxIterations}`;
  switch (loop.type) {
    case 'while':
    case 'until': {
      const condition = loopCondition(loop);
      const decided = condition ? conditionText(condition) : 'the agent says continue';
      return `${loop.type} ${decided} (${max})`;
    }
    case 'for':
      return `${loop.count} times (${max})`;
    case 'forEach':
      return `each ${loop.itemVar ?? 'currentItem'} in ${loop.items} (${max})`;
  }
}

/** A join rule in words: `all`, `any one`, `at least 2`. */
export function joinText(join: NonNullable<PromptStep['delegate']>['join']): string {
  if (join === undefined || join === 'all') return 'all';
  if (join === 'any') return 'any one';
  return `at least ${join.atLeast}`;
}

function commandText(step: CommandStep): string {
  return `run ${step.run}${step.repeat ? `, poll until ${conditionText(step.repeat.until)}` : ''}`;
}

/** The graph of a (valid) workflow definition. */
export function workflowDiagram(workflow: Workflow): WorkflowDiagram {
  const nodes: DiagramNode[] = [];
  const edges: DiagramEdge[] = [];
  const clusters: DiagramCluster[] = [];
  const needs = contextNeeds(workflow);
  const edge = (from: string, to: string, kind: DiagramEdgeKind, label?: string) =>
    edges.push(label === undefined ? { from, to, kind } : { from, to, kind, label });
  const stepNode = (step: Step, parent?: string): string => {
    const id = `s:${step.id}`;
    const node: DiagramNode = {
      id,
      kind: isLoopStep(step) ? 'loop' : isCommandStep(step) ? 'command' : 'prompt',
      title: step.title,
      step: step.id,
    };
    const detail = isLoopStep(step)
      ? loopText(step)
      : isCommandStep(step)
        ? commandText(step)
        : step.agent !== undefined
          ? `agent: ${step.agent}`
          : undefined;
    if (detail !== undefined) node.detail = detail;
    if (parent !== undefined) node.parent = parent;
    const sets = (needs.byStep.get(step.id) ?? [])
      .filter((e) => !e.whileUnset)
      .map((e) => `${e.path}${e.asked ? '*' : ''}`);
    if (sets.length > 0) node.sets = sets;
    nodes.push(node);
    return id;
  };

  /**
   * A delegating step's fan-out and join: a node per named child (or one for `count` and `forEach`),
   * each joined back to a node that names the join rule. Answers the join, which flow continues from.
   */
  const fanOut = (step: Step, from: string, cluster?: DiagramCluster): string => {
    const d = isPromptStep(step) ? step.delegate : undefined;
    if (d === undefined) return from;
    const place = (node: DiagramNode) => {
      if (cluster !== undefined) {
        node.parent = cluster.id;
        cluster.children.push(node.id);
      }
      nodes.push(node);
      return node.id;
    };
    const children: { title: string; workflow: string | undefined; condition?: Condition }[] =
      d.children !== undefined
        ? d.children.map((c) => ({
            title: c.name,
            workflow: c.workflow ?? d.workflow,
            ...(c.runCondition !== undefined ? { condition: c.runCondition } : {}),
          }))
        : [
            {
              title: d.count !== undefined ? `× ${d.count}` : `one per item of ${d.forEach ?? '?'}`,
              workflow: d.workflow,
            },
          ];
    const join = `j:${step.id}`;
    const ids = children.map((c, i) => {
      const node: DiagramNode = { id: `d:${step.id}:${i}`, kind: 'child', title: c.title };
      if (c.workflow !== undefined) node.detail = c.workflow;
      const id = place(node);
      edge(from, id, 'fan', c.condition !== undefined ? `if ${conditionText(c.condition)}` : undefined);
      return id;
    });
    const rule = [`into ${d.into ?? step.id}`];
    if (d.onChildFailure === 'continue') rule.push('continue on failure');
    if (d.timeout !== undefined) rule.push(`timeout ${d.timeout}`);
    place({ id: join, kind: 'join', title: `join: ${joinText(d.join)}`, detail: rule.join(', ') });
    for (const id of ids) edge(id, join, 'join');
    return join;
  };

  // A step named as a loop body runs only inside its loop.
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  const byId = new Map(workflow.steps.map((s) => [s.id, s]));

  // Flow starts at the inputs, or at a start node, so a first step's runCondition has an edge to sit on.
  let previous: string;
  if (workflow.inputs !== undefined && Object.keys(workflow.inputs).length > 0) {
    const names = Object.entries(workflow.inputs).map(([name, spec]) => (spec.required ? `${name}*` : name));
    previous = 'inputs';
    nodes.push({ id: 'inputs', kind: 'inputs', title: 'inputs', detail: names.join(', ') });
  } else {
    previous = 'start';
    nodes.push({ id: 'start', kind: 'start', title: 'start' });
  }
  // Variables read before any step can set them come with the start.
  const atStart = needs.variables.filter((v) => v.atStart).map((v) => v.path);
  if (atStart.length > 0) (nodes[0] as DiagramNode).sets = atStart;
  // Where flow goes when a conditional step is skipped: from its predecessor to whatever comes next.
  let skipping: string[] = [];
  let leavingLoop = false;
  const enter = (to: string, condition: Condition | undefined) => {
    if (condition !== undefined) {
      edge(previous, to, 'cond', `${leavingLoop ? 'exit, ' : ''}if ${conditionText(condition)}`);
    } else {
      edge(previous, to, leavingLoop ? 'exit' : 'next', leavingLoop ? 'exit' : undefined);
    }
    for (const from of skipping) edge(from, to, 'skip', 'skip');
    skipping = condition !== undefined ? [previous] : [];
  };

  for (const step of workflow.steps) {
    if (bodyRefs.has(step.id)) continue;
    const id = stepNode(step);
    enter(id, step.runCondition);
    previous = fanOut(step, id);
    leavingLoop = false;
    if (!isLoopStep(step)) continue;
    const body =
      typeof step.body === 'string' ? [byId.get(step.body)].filter((s) => s !== undefined) : step.body;
    const cluster: DiagramCluster = {
      id: `c:${step.id}`,
      loop: step.id,
      title: `loop ${step.id}`,
      children: [],
    };
    clusters.push(cluster);
    let inner = id;
    let innerSkips: string[] = [];
    body.forEach((bodyStep, i) => {
      const child = stepNode(bodyStep, cluster.id);
      cluster.children.push(child);
      const condition = bodyStep.runCondition;
      if (condition !== undefined) edge(inner, child, 'cond', `if ${conditionText(condition)}`);
      else edge(inner, child, 'next', i === 0 ? 'iterate' : undefined);
      for (const from of innerSkips) edge(from, child, 'skip', 'skip');
      innerSkips = condition !== undefined ? [inner] : [];
      inner = fanOut(bodyStep, child, cluster);
    });
    edge(inner, id, 'back', 'next iteration');
    for (const from of innerSkips) edge(from, id, 'back', 'skip, next iteration');
    leavingLoop = true;
  }
  nodes.push({ id: 'end', kind: 'end', title: 'done' });
  enter('end', undefined);
  return { nodes, edges, clusters };
}

// Labels are quoted, so only what could end the quotes, open markup or an entity is encoded (Mermaid's
// entity codes, `#60;`, decoded by Mermaid and never read as syntax). A double quote becomes a single one:
// conditions read `taskScope == 'large'`, not `taskScope == #34;large#34;`; parentheses and `*` stay.
const mermaidText = (s: string) =>
  s
    .replace(/\s+/g, ' ')
    .replaceAll('"', "'")
    .replace(/[#<>&`[\]{}|;\\]/g, (c) => `#${c.charCodeAt(0)};`);

const SHAPES: Record<DiagramNodeKind, (label: string) => string> = {
  start: (t) => `(("${t}"))`,
  inputs: (t) => `[/"${t}"/]`,
  prompt: (t) => `["${t}"]`,
  command: (t) => `[["${t}"]]`,
  loop: (t) => `{{"${t}"}}`,
  child: (t) => `(["${t}"])`,
  join: (t) => `[\\"${t}"/]`,
  end: (t) => `((("${t}")))`,
};
const ARROWS: Record<DiagramEdgeKind, string> = {
  next: '-->',
  cond: '-->',
  exit: '-->',
  skip: '-.->',
  back: '-.->',
  fan: '-->',
  join: '-->',
};

/** Mermaid flowchart text of a diagram: renders in Markdown viewers (GitHub, IDEs) and mermaid.js. */
export function toMermaid(diagram: WorkflowDiagram): string {
  // Step ids contain '-', which Mermaid reads as an edge: use positional ids.
  const ids = new Map(diagram.nodes.map((n, i) => [n.id, `n${i}`]));
  const nodeLine = (n: DiagramNode) => {
    const lines = n.step !== undefined ? [n.step, n.title] : [n.title];
    if (n.detail !== undefined) lines.push(n.detail);
    if (n.sets !== undefined)
      lines.push(`${n.kind === 'start' || n.kind === 'inputs' ? 'context' : 'sets'}: ${n.sets.join(', ')}`);
    return `${ids.get(n.id)}${SHAPES[n.kind](lines.map(mermaidText).join('<br/>'))}`;
  };
  const out = ['flowchart TD'];
  const clustered = new Set(diagram.clusters.flatMap((c) => c.children));
  for (const n of diagram.nodes) if (!clustered.has(n.id)) out.push(`  ${nodeLine(n)}`);
  const byId = new Map(diagram.nodes.map((n) => [n.id, n]));
  diagram.clusters.forEach((c, i) => {
    out.push(`  subgraph c${i} ["${mermaidText(c.title)}"]`);
    for (const child of c.children) {
      const n = byId.get(child);
      if (n) out.push(`    ${nodeLine(n)}`);
    }
    out.push('  end');
  });
  for (const e of diagram.edges) {
    const label = e.label !== undefined ? `|"${mermaidText(e.label)}"|` : '';
    out.push(`  ${ids.get(e.from)} ${ARROWS[e.kind]}${label} ${ids.get(e.to)}`);
  }
  const classes = {
    command: 'fill:#eff6ff,stroke:#3b82f6',
    loop: 'fill:#fff7ed,stroke:#d97706',
    child: 'fill:#f0fdf4,stroke:#16a34a',
    join: 'fill:#f5f3ff,stroke:#7c3aed',
  } as const;
  for (const kind of ['command', 'loop', 'child', 'join'] as const) {
    const members = diagram.nodes.filter((n) => n.kind === kind).map((n) => ids.get(n.id));
    if (members.length === 0) continue;
    out.push(`  classDef ${kind} ${classes[kind]}`);
    out.push(`  class ${members.join(',')} ${kind}`);
  }
  return `${out.join('\n')}\n`;
}

/** One context variable as authors see it (workflow_get views): what it holds, who sets it, who reads it. */
export type ContextEntry = {
  variable: string;
  expects: string;
  /** Steps whose output sets it. */
  set_by: string[];
  /** Some step asks for it by name (else it is only offered, and may stay unset). */
  asked: boolean;
  read_by: string[];
  /** Read before any step can set it: only the start context sets it in time. */
  at_start?: true;
};

/**
 * The workflow's context needs as a table: the same analysis `fill` names for agents and `validate`
 * warns from (src/engine/context-needs.ts).
 */
export function contextTable(workflow: Workflow): ContextEntry[] {
  const needs = contextNeeds(workflow);
  return needs.variables.map((v) => ({
    variable: v.path,
    expects: expectedValue(v),
    set_by: v.setBy,
    asked: v.asked,
    read_by: v.reads.map((r) => `${r.step} (${r.what})`),
    ...(v.atStart ? { at_start: true as const } : {}),
  }));
}
