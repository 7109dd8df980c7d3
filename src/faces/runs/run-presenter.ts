import type { AgentStepWait, RunWording } from '../../runs/run-service.js';
import { next } from '../next.js';

/**
 * A run waiting on an agent step, as its status says it: what to do, and the workflow_next_step call
 * that submits the step (the call the executions face hands out for it, with the step's `fill` when the
 * step has one).
 */
function waitingForAgent(step: AgentStepWait) {
  const rejected = step.issues ? ` (last answer rejected: ${step.issues.join('; ')})` : '';
  const how = step.elicitation ? 'answer the input request, or call' : 'do the step, then call';
  return {
    summary: `waiting for the agent on step "${step.title}"${rejected}: ${how} workflow_next_step with the continuation token`,
    next: [next('workflow_next_step', { token: step.token }, step.view.fill)],
  };
}

/** The runs face's wording of what a run's status tells the agent (the run service words no tool call). */
export const runWording: RunWording = { waitingForAgent };
