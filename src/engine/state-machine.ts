/** The seven execution states of seed 004 and the transitions between them. */
export const EXECUTION_STATES = [
  'idle',
  'running',
  'paused',
  'completed',
  'failed',
  'abandoned',
  'diverged',
] as const;
export type ExecutionState = (typeof EXECUTION_STATES)[number];

/**
 * Seed 004's transition table. The SQLite schema enforces the same table with a trigger, so a bug
 * here cannot write an impossible state.
 */
export const TRANSITIONS: Readonly<Record<ExecutionState, readonly ExecutionState[]>> = {
  idle: ['running'],
  running: ['completed', 'failed', 'paused', 'abandoned', 'diverged'],
  paused: ['running', 'abandoned'],
  completed: [],
  failed: [],
  abandoned: [],
  diverged: [],
};

/**
 * What an agent (or a person on the dashboard) may set: pause, resume, abandon, or declare that the
 * user took a different path. `completed` and `failed` are the server's to set: an execution completes
 * only when its last step's output is accepted, and fails when a step or the server does.
 */
export const REQUESTABLE_STATES = ['running', 'paused', 'abandoned', 'diverged'] as const;
export type RequestableState = (typeof REQUESTABLE_STATES)[number];

/** The states a request may move an execution to from `from`. */
export function requestableFrom(from: ExecutionState): RequestableState[] {
  return REQUESTABLE_STATES.filter((to) => TRANSITIONS[from].includes(to));
}

export function canTransition(from: ExecutionState, to: ExecutionState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isTerminal(state: ExecutionState): boolean {
  return TRANSITIONS[state].length === 0;
}

/** The states an execution never leaves (finished): those with no transition out. */
export const TERMINAL_STATES: readonly ExecutionState[] = EXECUTION_STATES.filter(isTerminal);
