/**
 * `fill`: everything only the agent can supply with a step, named by the dotted path of the call that
 * reports it, with what to put there in a few literal words. The durable face reports a step with
 * workflow_next_step (`output.summary`, `output.context.<var>`, `output.artifacts.<n>`); the stateless
 * face moves on with workflow_next (`context.<var>`, `context._loopControl.<loop>`). One function words
 * both, so they never disagree.
 */
import {
  type ActionStep,
  type Assessment,
  isCommandStep,
  type PromptStep,
  type ValidationCriterion,
  type Workflow,
} from '../model/workflow.js';
import { type Context, evaluateCondition } from './conditions.js';
import { contextFill, type FillItem } from './context-needs.js';
import { contractShape } from './contracts.js';
import {
  ASSESSMENT_KIND,
  decisionTarget,
  LOOP_CONTROL_CONTRACT,
  LOOP_CONTROL_KEY,
  LOOP_CONTROL_KIND,
} from './workrail.js';

/** Which call reports the step: the durable workflow_next_step, or the stateless workflow_next. */
export type FillFace = 'durable' | 'stateless';

/** The longest shape a fill hint shows of a JSON Schema; past it, the shape ends in "...". */
const MAX_SHAPE = 1200;

/**
 * A JSON Schema as a compact shape an agent can copy: `{"summary": string, "findings": [{"file":
 * string, "line"?: integer, "severity": "critical" | "major"}]}` (`?`: optional property).
 */
export function schemaShape(schema: unknown, depth = 0): string {
  if (schema === true || schema === undefined) return 'any';
  if (schema === null || typeof schema !== 'object' || depth > 8) return 'any';
  const s = schema as Record<string, unknown>;
  if ('const' in s) return JSON.stringify(s.const) ?? 'null';
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v) ?? 'null').join(' | ');
  const alternatives = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined) as
    | unknown[]
    | undefined;
  if (alternatives) return alternatives.map((a) => schemaShape(a, depth + 1)).join(' | ');
  const type = Array.isArray(s.type) ? (s.type as string[]).join(' | ') : s.type;
  const properties = s.properties as Record<string, unknown> | undefined;
  if (type === 'object' || properties !== undefined) {
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const entries = Object.entries(properties ?? {}).map(
      ([key, value]) =>
        `${JSON.stringify(key)}${required.has(key) ? '' : '?'}: ${schemaShape(value, depth + 1)}`,
    );
    return entries.length > 0 ? `{${entries.join(', ')}}` : 'object';
  }
  if (type === 'array') return `[${schemaShape(s.items, depth + 1)}]`;
  return typeof type === 'string' ? type : 'any';
}

const bounded = (text: string) => (text.length > MAX_SHAPE ? `${text.slice(0, MAX_SHAPE - 3)}...` : text);

/** The JSON Schema the whole output must satisfy, when a schema rule applies in this context. */
function rawJsonSchema(step: PromptStep, context: Context): Record<string, unknown> | undefined {
  const criteria = step.validationCriteria;
  const list: ValidationCriterion[] =
    criteria === undefined ? [] : Array.isArray(criteria) ? criteria : [criteria];
  for (const c of list) {
    if (!('type' in c) || c.type !== 'schema') continue;
    if (c.condition !== undefined && !evaluateCondition(c.condition, context)) continue;
    return c.schema;
  }
  return undefined;
}

function summaryHint(step: PromptStep, context: Context): string {
  const schema = rawJsonSchema(step, context);
  if (schema !== undefined)
    return bounded(`raw JSON only (no Markdown fences, no other text), shaped ${schemaShape(schema)}`);
  return `what you did for step "${step.id}" (its validation criteria check this text)`;
}

function assessmentShape(def: Assessment): string {
  const dims = def.dimensions
    .map((d) => `${JSON.stringify(d.id)}: ${d.levels.map((l) => JSON.stringify(l)).join(' | ')}`)
    .join(', ');
  return `{"kind": "${ASSESSMENT_KIND}", "assessmentId": ${JSON.stringify(def.id)}, "dimensions": {${dims}}}`;
}

/** What the step's contracts ask the output to carry: a loop decision, assessments. */
function contractItems(workflow: Workflow, step: PromptStep, face: FillFace): FillItem[] {
  const out: FillItem[] = [];
  const contract = step.outputContract;
  if (contract?.contractRef === LOOP_CONTROL_CONTRACT) {
    const loop = decisionTarget(workflow, step.id, undefined);
    const required = contract.required !== false;
    const which = loop ? ` ("stop" leaves loop ${loop.id}, "${loop.title}")` : '';
    out.push({
      target: 'decision',
      path: loop?.id ?? step.id,
      required,
      text:
        face === 'durable'
          ? `${required ? 'required' : 'optional'}: {"kind": "${LOOP_CONTROL_KIND}", "decision": "continue" | "stop"}${which}`
          : `${required ? 'required' : 'optional'}: "continue" or "stop"${which}`,
    });
  }
  if (contract !== undefined && contract.contractRef !== LOOP_CONTROL_CONTRACT && face === 'durable') {
    // A handoff contract (coding_handoff, review_verdict, ...): its artifact, fields and an example.
    const shape = contractShape(contract.contractRef);
    const required = contract.required !== false;
    out.push({
      target: 'artifact',
      path: contract.contractRef,
      required,
      text: shape
        ? `${required ? 'required' : 'optional'}: {"kind": ${JSON.stringify(shape.kind)}, ...} with ${shape.fields}; e.g. ${JSON.stringify(shape.example)}`
        : `${required ? 'required' : 'optional'}: the artifact of contract ${contract.contractRef}`,
    });
  }
  if (face === 'durable') {
    const defs = new Map((workflow.assessments ?? []).map((a) => [a.id, a]));
    for (const ref of step.assessmentRefs ?? []) {
      const def = defs.get(ref);
      if (def)
        out.push({
          target: 'artifact',
          path: ref,
          required: true,
          text: `required: ${assessmentShape(def)}`,
        });
    }
  }
  return out;
}

/**
 * The `fill` of the call that reports `step`, handed out with `context`: the summary (durable), the
 * context variables the step must or may set, and the artifacts its contracts require. `also` names
 * variables a refusal asked for, so they stay named after a failed validation.
 */
export function stepFill(
  workflow: Workflow,
  step: ActionStep,
  context: Context,
  face: FillFace,
  also: readonly string[] = [],
): Record<string, string> {
  const fill: Record<string, string> = {};
  if (isCommandStep(step)) {
    // Only the stateless face hands a command step to the agent: what it got back goes in the context.
    if (face === 'stateless') {
      fill[`context.steps.${step.id}`] = bounded(
        `optional: the response body of ${step.run}${step.output_contract ? `, shaped ${schemaShape(step.output_contract)}` : ''} (templates of later steps read it)`,
      );
    }
    return fill;
  }
  if (face === 'durable') fill['output.summary'] = summaryHint(step, context);
  const prefix = face === 'durable' ? 'output.context.' : 'context.';
  for (const item of contextFill(workflow, step.id, context, also)) fill[`${prefix}${item.path}`] = item.text;
  let artifact = 0;
  for (const item of contractItems(workflow, step, face)) {
    if (item.target === 'decision' && face === 'stateless')
      fill[`context.${LOOP_CONTROL_KEY}.${item.path}`] = item.text;
    else fill[`output.artifacts.${artifact++}`] = item.text;
  }
  return fill;
}
