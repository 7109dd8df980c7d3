import { type ActionStep, isCommandStep, type PromptStep, type Workflow } from '../workflows/model.js';
import { asRecord, type Context, evaluateCondition } from './conditions.js';
import type { LoopPosition } from './next-step.js';
import { renderPreview, type TemplateScope } from './templating.js';
import { describeCriteria } from './validation-engine.js';

/** Seed 002 `guidance` object. */
export type Guidance = {
  prompt: string;
  modelHint: string;
  requiresConfirmation: boolean;
  validationCriteria: string[];
};

export const DEFAULT_MODEL_HINT = 'general-purpose';
export const REASONING_MODEL_HINT = 'model-with-strong-reasoning';

function truncate(text: string): string {
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}

/** Templates in prompt text, rendered as far as they can be; a reference that fails stays as written. */
export function renderText(text: string, scope: TemplateScope | undefined): string {
  return scope === undefined ? text : String(renderPreview(text, scope, { lenient: true }).value);
}

/** The template scope the stateless face can offer: inputs and step outputs carried in the context. */
export function contextScope(context: Context, env: Record<string, string> = {}): TemplateScope {
  return { inputs: asRecord(context.inputs), steps: asRecord(context.steps), env, context };
}

export function requiresConfirmation(step: PromptStep, context: Context): boolean {
  const rc = step.requireConfirmation;
  if (rc === undefined) return false;
  return typeof rc === 'boolean' ? rc : evaluateCondition(rc, context);
}

/**
 * Builds the orchestration guidance for a step: the step prompt framed by its role, hints, loop
 * position and the workflow's meta guidance, so an agent can act on `guidance.prompt` alone.
 */
export function buildGuidance(
  workflow: Workflow,
  step: ActionStep,
  context: Context,
  loop?: LoopPosition,
  notices: readonly string[] = [],
  scope: TemplateScope = contextScope(context),
): Guidance {
  if (isCommandStep(step)) return commandGuidance(step, notices);
  const parts: string[] = [...notices];
  if (step.agentRole) parts.push(`Role: ${step.agentRole}`);
  if (loop) {
    const of = loop.total !== undefined ? ` of ${loop.total}` : ` (at most ${loop.maxIterations})`;
    const item = loop.item
      ? ` Current item (${loop.item.var}): ${truncate(JSON.stringify(loop.item.value) ?? 'null')}`
      : '';
    parts.push(
      `Loop "${loop.title}": iteration ${loop.iteration}${of}.${item}${loop.note ? `\n${loop.note}` : ''}`,
    );
  }
  parts.push(`Step: ${renderText(step.title, scope)}\n${renderText(step.prompt, scope)}`);
  if (step.askForFiles) parts.push('Before you start, ask the user for the files relevant to this step.');
  if (step.guidance && step.guidance.length > 0) {
    parts.push(`Guidance:\n${step.guidance.map((g) => `- ${renderText(g, scope)}`).join('\n')}`);
  }
  const criteria = describeCriteria(step.validationCriteria, context);
  if (criteria.length > 0) {
    parts.push(`Your output will be checked for:\n${criteria.map((c) => `- ${c}`).join('\n')}`);
  }
  if (workflow.metaGuidance && workflow.metaGuidance.length > 0) {
    parts.push(`Keep in mind:\n${workflow.metaGuidance.map((g) => `- ${g}`).join('\n')}`);
  }
  const confirm = requiresConfirmation(step, context);
  if (confirm) parts.push('When done, present the result and wait for the user to confirm before moving on.');
  return {
    prompt: parts.join('\n\n'),
    modelHint: step.modelHint ?? (confirm || criteria.length > 0 ? REASONING_MODEL_HINT : DEFAULT_MODEL_HINT),
    requiresConfirmation: confirm,
    validationCriteria: criteria,
  };
}

/** A command step met outside a durable execution: the agent is told what the server would run. */
function commandGuidance(step: Extract<ActionStep, { run: string }>, notices: readonly string[]): Guidance {
  const args = step.with ? ` with ${JSON.stringify(step.with)}` : '';
  return {
    prompt: [
      ...notices,
      `Step: ${step.title}\nThis is a command step: in a durable execution (workflow_start) the server runs "${step.run}"${args} itself. Here, call that API yourself if you have access to it, or skip it, then mark the step completed.`,
    ].join('\n\n'),
    modelHint: DEFAULT_MODEL_HINT,
    requiresConfirmation: false,
    validationCriteria: [],
  };
}
