// Words the outcomes of the execution service for the wire: tool answers, messages, instructions and
// the call to make next. The step prompt (with its title, criteria, notices and loop position) appears
// once, in agent_content. The continuation token is where seed 004 shows it (`new_token` in the tool
// answers, `continuation_token` in the current_step resource and workflow_resume) and in the
// workflow_next_step call of `next`, ready to send.
import {
  type CurrentState,
  type DelegationView,
  type Outcome,
  type PauseRecord,
  pausedByPerson,
  pausePhrase,
  type StepView,
} from '../../executions/execution-model.js';
import { type NextCall, next } from '../next.js';

export const EXECUTION_URI = 'workflowlookup://workflow';

export const currentStepUri = (executionId: string) => `${EXECUTION_URI}/current_step/${executionId}`;

function ranCommands(count: number): string {
  return `Ran ${count} command step(s)`;
}

/**
 * The step to do. agent_content is the one text to read (persona, title, prompt, guidance, criteria,
 * notices, loop position); the other fields are what a client may act on without parsing it.
 */
export function leanStep(view: StepView) {
  const { modelHint, requiresConfirmation } = view.guidance;
  return {
    agent_name: view.agent_name,
    agent_content: view.agent_content,
    progress: view.progress,
    progress_note: view.progress_note,
    guidance: { modelHint, requiresConfirmation },
    ...(view.loop
      ? {
          loop: {
            loopId: view.loop.loopId,
            type: view.loop.type,
            iteration: view.loop.iteration,
            maxIterations: view.loop.maxIterations,
            ...(view.loop.total !== undefined ? { total: view.loop.total } : {}),
          },
        }
      : {}),
  };
}

/** The fill of a step view; replay records from before `fill` existed get what they carried then. */
export function viewFill(stepName: string, view?: StepView): Record<string, string> {
  if (view?.fill !== undefined) return view.fill;
  return {
    'output.summary': `what you did for step "${stepName}" (its validation criteria check this text)`,
    ...Object.fromEntries((view?.reports ?? []).map((r) => [`output.context.${r.name}`, r.hint])),
  };
}

/** Reporting the step the agent was given: the token travels here and nowhere else in the answer. */
export function submitStep(token: string, fill: Record<string, string>): NextCall {
  return next('workflow_next_step', { token }, fill);
}

export const resumeCall = (executionId: string) => next('workflow_resume', { execution_id: executionId });

/** Polling an approval: the poll token with any output (it is not read while the approval is pending). */
export const pollApproval = (token: string) =>
  next('workflow_next_step', { token, output: { summary: 'waiting for approval' } });

/** Waiting on a delegating step's children: the parent's token with any output polls the join. */
export const pollChildren = (token: string) =>
  next('workflow_next_step', { token, output: { summary: 'waiting for the children' } });

/** What an answer says of a delegation: the join and each child (never a child's token: that is in next). */
export function delegationFacts(d: DelegationView) {
  return {
    join: d.join,
    into: d.into,
    deadline: d.deadline,
    progress: d.progress,
    children: d.children.map(({ token: _token, on_command: _command, ...child }) => child),
  };
}

/** The calls of a delegation: one per open child for a subagent of its own, then the wait, last. */
export function delegatedCalls(executionId: string, d: DelegationView, token: string | null): NextCall[] {
  const open = d.children.filter((c) => c.state === 'running' || c.state === 'idle');
  return [
    ...open.map((c) => resumeCall(c.execution_id)),
    token ? pollChildren(token) : resumeCall(executionId),
  ];
}

function delegatedWords(d: DelegationView): string {
  const open = d.children.filter((c) => c.state === 'running' || c.state === 'idle').length;
  if (open === 0)
    return `Step '${d.step_name}' handed its work to ${d.children.length} child executions: ${d.progress}. Send the call in next: it takes their results and hands out the next step.`;
  return `Step '${d.step_name}' hands its work to ${d.children.length} child executions, each its own workflow run with its own token: ${d.progress}. Give each call in next but the last to a subagent of its own (it gets its first step by sending it, then follows that answer's next), or do them yourself one after another. Then send the last call: it waits on the children (the same answer until the join holds) and then hands out the next step with their results in context.${d.into}.`;
}

/** A paused execution goes on only after it is set running again (a person may have paused it). */
export const unpauseCall = (executionId: string) =>
  next('workflow_set_state', { execution_id: executionId, state: 'running' });

/**
 * What a paused execution's answer says: a person's pause is waited out (they resume it; the call in
 * next only looks again), the agent's own is lifted by the call in next.
 */
function pausedWords(pause: PauseRecord | undefined): string {
  if (!pausedByPerson(pause))
    return 'Set it running with the call in next, then call workflow_resume for the step.';
  return `A person paused it: ${pausePhrase(pause)}. It waits for them to resume it, not for you: tell the user, and send the call in next later to see whether it runs again.`;
}

/** The call after a pause: looking again (a person's pause), or setting it running (the agent's own). */
function afterPause(executionId: string, pause: PauseRecord | undefined): NextCall {
  return pausedByPerson(pause) ? resumeCall(executionId) : unpauseCall(executionId);
}

const SEND_NEXT =
  'Do what agent_content says, then send the call in next with every path its fill names filled in.';

/** The answer of workflow_start and workflow_next_step. */
export function presentOutcome(outcome: Outcome): Record<string, unknown> {
  if (outcome.kind === 'legacy') return outcome.answer;
  if (outcome.kind === 'pending') {
    return {
      success: true,
      execution_id: outcome.execution_id,
      workflow_state: 'running',
      message: `Step '${outcome.done_step}' done. The server is running command steps; call workflow_resume to continue.`,
      next: [resumeCall(outcome.execution_id)],
    };
  }
  const base = { execution_id: outcome.execution_id, workflow_state: outcome.state };
  if (outcome.kind === 'awaiting_approval') {
    const { approval } = outcome;
    const until = approval.expires_at
      ? ` If nobody decides by ${approval.expires_at}, it counts as rejected.`
      : '';
    return {
      success: true,
      ...base,
      step_name: outcome.step_name,
      message: `Step '${outcome.step_name}' output passed and now waits for a person to approve it ("${approval.prompt}"). Only a person can decide (the dashboard's Approvals page, \`workflowlookup approve\` on the server host, or your client's approval prompt); you cannot. Tell the user it waits for their approval, then send the call in next to poll: it answers the same until someone decides.${until}`,
      approval,
      ...(outcome.check ? { check: outcome.check } : {}),
      ...(outcome.token ? { new_token: outcome.token } : {}),
      next: outcome.token ? [pollApproval(outcome.token)] : [resumeCall(outcome.execution_id)],
    };
  }
  if (outcome.kind === 'delegated') {
    return {
      success: true,
      ...base,
      step_name: outcome.step_name,
      step_status: 'delegated',
      message: `${outcome.origin === 'started' ? `Workflow '${outcome.workflow_id}' started. ` : outcome.done_step !== undefined ? `Step '${outcome.done_step}' done. ` : ''}${delegatedWords(outcome.delegation)}`,
      ...leanStep(outcome.view),
      delegation: delegationFacts(outcome.delegation),
      ...(outcome.token ? { new_token: outcome.token } : {}),
      next: delegatedCalls(outcome.execution_id, outcome.delegation, outcome.token),
    };
  }
  if (outcome.kind === 'rejected' && outcome.delegation !== undefined) {
    // The wait on the children timed out: recorded; the fresh token waits again.
    return {
      success: false,
      ...base,
      step_name: outcome.step_name,
      validation: outcome.validation,
      message: `Step '${outcome.step_name}' waited on its children past its timeout: ${outcome.validation.issues.join('; ')}. ${delegatedWords(outcome.delegation)}`,
      delegation: delegationFacts(outcome.delegation),
      ...(outcome.token ? { new_token: outcome.token } : {}),
      next: delegatedCalls(outcome.execution_id, outcome.delegation, outcome.token),
    };
  }
  if (outcome.kind === 'rejected') {
    const decided = outcome.approval;
    return {
      success: false,
      ...base,
      step_name: outcome.step_name,
      validation: outcome.validation,
      message: decided
        ? `Step '${outcome.step_name}' output was not approved: ${outcome.validation.issues.join('; ')}. Revise it and send the call in next again; it needs a new approval.`
        : `Step '${outcome.step_name}' output did not pass validation: ${outcome.validation.issues.join('; ')}. Fix it and send the call in next again.`,
      ...(decided ? { approval: decided } : {}),
      ...(outcome.check ? { check: outcome.check } : {}),
      ...(outcome.token ? { new_token: outcome.token } : {}),
      next: outcome.token
        ? [submitStep(outcome.token, outcome.fill ?? viewFill(outcome.step_name))]
        : [resumeCall(outcome.execution_id)],
    };
  }
  const commands = outcome.commands.length > 0 ? { commands: outcome.commands } : {};
  const lead =
    outcome.origin === 'started'
      ? `Workflow '${outcome.workflow_id}' started.`
      : outcome.done_step !== undefined
        ? `Step '${outcome.done_step}' done.`
        : '';
  if (outcome.kind === 'step') {
    const stepName = outcome.view.step_name;
    const paused = outcome.state === 'paused';
    const message =
      outcome.origin === 'existing'
        ? `Execution ${outcome.execution_id} already exists; returning it unchanged.${paused ? ` ${pausedWords(outcome.paused)}` : ''}`
        : outcome.commands.length > 0
          ? `${lead} ${ranCommands(outcome.commands.length)}; step '${stepName}' ready. ${SEND_NEXT}`
          : outcome.origin === 'started'
            ? `${lead} Step '${stepName}' ready.` // seed 004's words
            : `Step '${stepName}' ready. Review agent_content and continue.`; // seed 004's words
    return {
      success: true,
      ...base,
      message,
      ...commands,
      step_name: stepName,
      ...leanStep(outcome.view),
      ...(outcome.token ? { new_token: outcome.token } : {}),
      ...(paused && outcome.paused ? { paused_by: outcome.paused } : {}),
      next: outcome.token
        ? [submitStep(outcome.token, viewFill(stepName, outcome.view))]
        : paused
          ? [afterPause(outcome.execution_id, outcome.paused)]
          : [resumeCall(outcome.execution_id)],
    };
  }
  let message: string;
  let calls: NextCall[] = [];
  if (outcome.state === 'running') {
    message = `${lead} The server is running command steps; call workflow_resume to continue.`;
    calls = [resumeCall(outcome.execution_id)];
  } else if (outcome.origin === 'existing') {
    message = `Execution ${outcome.execution_id} already exists (${outcome.state}); returning it unchanged.`;
    if (outcome.state === 'paused') {
      message += ` ${pausedWords(outcome.paused)}`;
      calls = [afterPause(outcome.execution_id, outcome.paused)];
    }
  } else if (outcome.parent !== undefined) {
    // A child's work is its subagent's: done here; the orchestrator collects it from the parent.
    message = `${lead} Child execution "${outcome.parent.name}" is ${outcome.state}: its results went to its parent execution ${outcome.parent.execution_id}. If you are the subagent it was handed to, report that and stop; if you are doing the children yourself, send the call in next to go back to the parent.`;
    calls = [resumeCall(outcome.parent.execution_id)];
  } else if (outcome.commands.length > 0) {
    message = `${lead} ${ranCommands(outcome.commands.length)}; workflow completed successfully.`;
  } else {
    message =
      outcome.origin === 'started'
        ? `Workflow '${outcome.workflow_id}' started and completed: no step applies to this context.`
        : 'Workflow completed successfully';
  }
  return {
    success: true,
    ...base,
    message: message.trim(),
    ...commands,
    ...('final_output' in outcome ? { final_output: outcome.final_output } : {}),
    next: calls,
  };
}

/** workflow_resume and the current_step resource: where the execution stands and what to do. */
export function presentCurrent(current: CurrentState) {
  const base = {
    execution_id: current.execution_id,
    workflow_id: current.workflow_id,
    workflow_state: current.state,
    current_step: current.current_step,
  };
  const paused = current.state === 'paused';
  const pause = paused && current.paused ? { paused_by: current.paused } : {};
  if (current.on_command) {
    const w = current.waiting;
    return {
      ...base,
      step_status: paused ? 'paused' : 'server',
      agent_name: 'server',
      progress: null,
      agent_content: null,
      ...pause,
      instructions: paused
        ? `The execution is paused on command step "${current.current_step}". ${pausedWords(current.paused)}`
        : w
          ? `Command step "${w.step_id}" (${w.command}) could not finish: ${w.message}. Fix the cause (${w.reason}), then send the call in next to retry it with the same idempotency key.`
          : `The server runs command step "${current.current_step}"; send the call in next to run it and continue.`,
      ...(w ? { waiting: w } : {}),
      ...(current.commands ? { commands: current.commands } : {}),
      next: [paused ? afterPause(current.execution_id, current.paused) : resumeCall(current.execution_id)],
    };
  }
  const view = current.view;
  if (view && current.delegation && current.token && !paused) {
    return {
      ...base,
      step_status: 'delegated',
      ...leanStep(view),
      continuation_token: current.token,
      instructions: delegatedWords(current.delegation),
      delegation: delegationFacts(current.delegation),
      next: delegatedCalls(current.execution_id, current.delegation, current.token),
    };
  }
  if (view && current.approval && current.token && !paused) {
    return {
      ...base,
      step_status: 'awaiting_approval',
      ...leanStep(view),
      continuation_token: current.token,
      instructions: `Step "${view.step_name}" was done; its output waits for a person's approval ("${current.approval.prompt}"), which you cannot give. Send the call in next to poll.`,
      approval: current.approval,
      next: [pollApproval(current.token)],
    };
  }
  return {
    ...base,
    step_status: view ? (paused ? 'paused' : 'running') : null,
    ...(view ? leanStep(view) : { agent_name: null, progress: null, agent_content: null }),
    ...(view && current.token && !paused ? { continuation_token: current.token } : {}),
    ...pause,
    instructions: view
      ? paused
        ? `The execution is paused. ${pausedWords(current.paused)}`
        : SEND_NEXT
      : `The execution is ${current.state}; there is nothing left to do.`,
    ...(current.commands ? { commands: current.commands } : {}),
    next: paused
      ? [afterPause(current.execution_id, current.paused)]
      : view && current.token
        ? [submitStep(current.token, viewFill(view.step_name, view))]
        : [],
  };
}
