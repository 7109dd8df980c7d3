// What a dashboard request may ask for: ids, page positions, states and the principal it looks at,
// each checked before it reaches the store (a bad one is a 400, never a query).
import { EXECUTION_STATES, type ExecutionState } from '../engine/state-machine.js';
import { ID_PATTERN } from '../model/workflow.js';
import type { ExecutionCursor } from '../store/execution-store.js';
import { HttpError } from './responses.js';
import type { Viewer } from './viewer.js';

export const EXECUTION_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** An approval id as the service makes them (`appr_` and 18 hex digits); older ones may be longer. */
export const APPROVAL_ID = /^appr_[A-Za-z0-9_-]{1,64}$/;
export const TASK_ID = /^[A-Za-z0-9_-]{1,128}$/;
export const WORKFLOW_ID = new RegExp(ID_PATTERN);
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** A query parameter, absent when empty. */
export function one(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  return value === null || value === '' ? undefined : value;
}

export function parseCursor(value: string | undefined): ExecutionCursor | undefined {
  if (value === undefined) return undefined;
  const comma = value.indexOf(',');
  const updated_at = value.slice(0, comma);
  const execution_id = value.slice(comma + 1);
  if (comma === -1 || !ISO.test(updated_at) || !EXECUTION_ID.test(execution_id)) {
    throw new HttpError(400, 'That page position is not valid.');
  }
  return { updated_at, execution_id };
}

export function parseTaskCursor(
  value: string | undefined,
): { created_at: string; task_id: string } | undefined {
  if (value === undefined) return undefined;
  const comma = value.indexOf(',');
  const created_at = value.slice(0, comma);
  const task_id = value.slice(comma + 1);
  if (comma === -1 || !ISO.test(created_at) || !TASK_ID.test(task_id)) {
    throw new HttpError(400, 'That page position is not valid.');
  }
  return { created_at, task_id };
}

export function parseStates(value: string | undefined): ExecutionState[] {
  if (value === undefined) return [];
  const states = value.split(',');
  if (!states.every((s) => (EXECUTION_STATES as readonly string[]).includes(s))) {
    throw new HttpError(400, `Unknown state; choose from ${EXECUTION_STATES.join(', ')}.`);
  }
  return [...new Set(states)] as ExecutionState[];
}

/** The principal a request looks at: its own, or (for the store's owner) the one it asks for. */
export function lookingAt(viewer: Viewer, asked: string | undefined): string {
  if (asked === undefined || !viewer.allPrincipals) return viewer.principal;
  if (asked.length > 256) throw new HttpError(400, 'That principal is not valid.');
  return asked;
}
