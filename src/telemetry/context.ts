/**
 * The request a piece of work belongs to, carried across awaits (AsyncLocalStorage) so that log lines
 * and error answers deep in a service name it without a parameter threaded through every signature.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';

export interface RequestScope {
  /** The id errors report as `correlation_id` and every log line of the request carries. */
  readonly correlationId: string;
  /** Who the request acts for (never a token). */
  principal?: string | undefined;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** A fresh correlation id, in the form errors have always carried (`wl-` and 12 hex digits). */
export function newCorrelationId(): string {
  return `wl-${randomBytes(6).toString('hex')}`;
}

/** Runs `fn` as the work of one request: its log lines and errors share one correlation id. */
export function inRequestScope<T>(fn: () => T, principal?: string): T {
  return storage.run({ correlationId: newCorrelationId(), principal }, fn);
}

/** The request the running code serves, if any. */
export function requestScope(): RequestScope | undefined {
  return storage.getStore();
}

/** The running request's correlation id, else a new one (work outside a request: recovery, upkeep). */
export function correlationId(): string {
  return storage.getStore()?.correlationId ?? newCorrelationId();
}
