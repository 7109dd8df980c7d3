import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { DomainFailure, fail } from '../engine/errors.js';
import { ownerAlive } from '../executions/command-phase.js';
import {
  type ExecutionStore,
  type TaskInputRequest,
  type TaskRecord,
  type TaskStatus,
  TERMINAL_TASK_STATUSES,
} from '../store/execution-store.js';
import { type Logger, silentLogger } from '../telemetry/log.js';
import { type ClientAbilities, type RunSnapshot, statusMessage, type TaskHandle } from './run-model.js';

/** Retention of a task from its creation: the default, and the bounds a requested ttl is clamped to. */
export const TASK_TTL = { defaultMs: 24 * 60 * 60_000, minMs: 60_000, maxMs: 7 * 24 * 60 * 60_000 };
/** How often clients are told to poll tasks/get. */
export const POLL_INTERVAL_MS = 500;
/** Tasks per tasks/list page. */
export const TASK_PAGE_SIZE = 50;

/**
 * A process working on a task holds a lease on it, renewed while it works. A task whose owner died
 * (its pid is gone on this host, or its lease ran out) is an orphan a live process takes over.
 */
const LEASE_MS = 30_000;
const RENEW_MS = 10_000;
/** How often waiters re-read the store, for changes made by other processes. */
const WAIT_POLL_MS = 500;

/** An input response that carries the client's failure instead of an answer. */
const FAILED_ANSWER = 'workflowlookup/failed';

const TERMINAL: ReadonlySet<TaskStatus> = new Set(TERMINAL_TASK_STATUSES);
export const isTerminalTask = (status: TaskStatus) => TERMINAL.has(status);

export interface NewTask {
  principal: string;
  tool: string;
  arguments: Record<string, unknown>;
  run_id?: string | null | undefined;
  workflow_id?: string | null | undefined;
  /** Requested retention in ms (clamped to TASK_TTL). */
  ttl_ms?: number | undefined;
  snapshot: RunSnapshot;
  meta: Record<string, unknown>;
}

/** How a task ended: the tool's result (`isError` for a failure), a JSON-RPC error, or a cancellation. */
export type TaskEnd =
  | { result: Record<string, unknown>; isError: boolean }
  | { error: Record<string, unknown> }
  | { cancelled: string };

export type TaskEvent = 'status' | 'input' | 'terminal';
export type TaskListener = (event: TaskEvent, record: TaskRecord) => void;

const cancelledError = (taskId: string, message: string) =>
  new DomainFailure({ code: 'task_cancelled', message, taskId });

/**
 * MCP tasks, durably: every task is a row in the store, so any process sharing it answers tasks/get,
 * a waiter in one process sees a result written by another, and a task whose process died is found
 * and taken over (resumed or failed). In-process listeners only shorten waits; the store is the truth.
 */
export class TaskService {
  /** This process as a task owner: host, pid (so a dead local owner is recognised at once), random part. */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
  private readonly listeners = new Map<string, Set<TaskListener>>();
  private readonly working = new Map<string, AbortController>();
  private readonly delivered = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  /** Told about tasks whose process died, so whoever can resume them does. */
  onOrphans: ((records: TaskRecord[]) => void) | undefined;

  constructor(
    private readonly store: ExecutionStore,
    private readonly log: Logger = silentLogger,
  ) {}

  // ------------------------------------------------------------------------------------------
  // creation and reads

  /** Creates a task; it exists durably (tasks/get resolves) before this returns. */
  async create(input: NewTask): Promise<TaskRecord> {
    const now = Date.now();
    const ttl = Math.min(TASK_TTL.maxMs, Math.max(TASK_TTL.minMs, input.ttl_ms ?? TASK_TTL.defaultMs));
    const at = new Date(now).toISOString();
    const record: TaskRecord = {
      task_id: randomUUID(),
      principal: input.principal,
      tool: input.tool,
      arguments: input.arguments,
      run_id: input.run_id ?? null,
      workflow_id: input.workflow_id ?? null,
      status: 'working',
      status_message: statusMessage(input.snapshot),
      snapshot: { ...input.snapshot },
      created_at: at,
      last_updated_at: at,
      ttl_ms: ttl,
      expires_at: new Date(now + ttl).toISOString(),
      poll_interval_ms: POLL_INTERVAL_MS,
      input_requests: {},
      input_responses: {},
      result: null,
      error: null,
      owner: this.owner,
      lease_expires_at: new Date(now + LEASE_MS).toISOString(),
      meta: input.meta,
    };
    await this.store.transaction((tx) => tx.insertTask(record));
    this.startTimer();
    return record;
  }

  /** A task of this principal; unknown, expired and other principals' tasks are all "not found". */
  async get(taskId: string, principal: string): Promise<TaskRecord> {
    const record = await this.store.getTask(taskId);
    if (!record || record.principal !== principal || expired(record)) notFound(taskId);
    return record;
  }

  /** The task driving a run, if any (newest first). */
  async forRun(runId: string, principal: string): Promise<TaskRecord | undefined> {
    const [record] = await this.store.listTasks({ principal, run_id: runId, limit: 1 });
    return record;
  }

  /** One page of the principal's tasks, newest first; the cursor is opaque to clients. */
  async list(principal: string, cursor?: string): Promise<{ tasks: TaskRecord[]; nextCursor?: string }> {
    const before = cursor === undefined ? undefined : decodeCursor(cursor);
    const rows = await this.store.listTasks({
      principal,
      limit: TASK_PAGE_SIZE + 1,
      ...(before ? { before } : {}),
    });
    const page = rows.slice(0, TASK_PAGE_SIZE);
    const last = page[page.length - 1];
    return {
      tasks: page.filter((r) => !expired(r)),
      ...(rows.length > TASK_PAGE_SIZE && last ? { nextCursor: encodeCursor(last) } : {}),
    };
  }

  // ------------------------------------------------------------------------------------------
  // the work: claiming, reporting, asking, finishing

  /** This process works on the task: its lease is renewed and external cancellation aborts `signal`. */
  claim(taskId: string): AbortController {
    const controller = new AbortController();
    this.working.set(taskId, controller);
    this.startTimer();
    return controller;
  }

  /** The handle the work inside a task uses. */
  handle(record: TaskRecord, signal: AbortSignal, can: ClientAbilities, resumed: boolean): TaskHandle {
    const taskId = record.task_id;
    return {
      taskId,
      runId: record.run_id,
      resumed,
      signal,
      can,
      report: async (snapshot, options) => {
        await this.report(taskId, snapshot, options?.awaitingInput ?? false);
      },
      ask: (prefix, request, own) =>
        this.ask(taskId, prefix, request, own ? AbortSignal.any([signal, own]) : signal),
    };
  }

  async report(taskId: string, snapshot: RunSnapshot, awaitingInput: boolean): Promise<void> {
    await this.mutate(taskId, 'status', (r) => {
      if (isTerminalTask(r.status)) return false;
      r.snapshot = { ...snapshot };
      r.status_message = statusMessage(snapshot);
      if (r.workflow_id === null && snapshot.workflow_id !== null) r.workflow_id = snapshot.workflow_id;
      if (r.run_id === null && snapshot.run_id !== null) r.run_id = snapshot.run_id;
      r.status = awaitingInput || Object.keys(r.input_requests).length > 0 ? 'input_required' : 'working';
      return true;
    });
  }

  /** Puts an input request on the task and waits for its answer (see TaskHandle.ask). */
  async ask(
    taskId: string,
    prefix: string,
    request: TaskInputRequest,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> {
    signal.throwIfAborted();
    let key = '';
    await this.mutate(taskId, 'input', (r) => {
      if (isTerminalTask(r.status)) throw cancelledError(taskId, 'the task has ended');
      const n = Number(r.meta.input_seq ?? 0) + 1;
      key = `${prefix}-${n}`;
      r.meta = { ...r.meta, input_seq: n };
      r.input_requests = { ...r.input_requests, [key]: request };
      r.status = 'input_required';
      return true;
    });
    try {
      return await this.answerFor(taskId, key, signal);
    } finally {
      await this.withdraw(taskId, key).catch((error: unknown) =>
        this.log.warn(`task ${taskId}: withdrawing input ${key} failed: ${String(error)}`),
      );
    }
  }

  private async answerFor(
    taskId: string,
    key: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> {
    for (;;) {
      signal.throwIfAborted();
      const r = await this.store.getTask(taskId);
      if (!r || isTerminalTask(r.status)) throw cancelledError(taskId, 'the task has ended');
      if (Object.hasOwn(r.input_responses, key)) {
        const answer = (r.input_responses[key] ?? {}) as Record<string, unknown>;
        if (typeof answer[FAILED_ANSWER] === 'string') throw new InputFailed(answer[FAILED_ANSWER] as string);
        return answer;
      }
      await this.wake(taskId, signal, WAIT_POLL_MS);
    }
  }

  /** Removes an input request (answered, or no longer wanted) and its answer. */
  private async withdraw(taskId: string, key: string): Promise<void> {
    this.delivered.delete(`${taskId} ${key}`);
    await this.mutate(taskId, 'input', (r) => {
      if (isTerminalTask(r.status)) return false;
      if (!Object.hasOwn(r.input_requests, key) && !Object.hasOwn(r.input_responses, key)) return false;
      const { [key]: _request, ...requests } = r.input_requests;
      const { [key]: _response, ...responses } = r.input_responses;
      r.input_requests = requests;
      r.input_responses = responses;
      if (Object.keys(requests).length === 0 && r.status === 'input_required') r.status = 'working';
      return true;
    });
  }

  /**
   * Answers outstanding input requests (tasks/update, or the client's reply to a pushed request).
   * Keys that are not outstanding (never issued, already answered, withdrawn) are ignored.
   */
  async answer(taskId: string, principal: string, responses: Record<string, unknown>): Promise<void> {
    const record = await this.store.getTask(taskId);
    if (!record || record.principal !== principal || expired(record)) notFound(taskId);
    await this.mutate(taskId, 'input', (r) => {
      if (isTerminalTask(r.status)) return false;
      let changed = false;
      for (const [key, value] of Object.entries(responses)) {
        if (!Object.hasOwn(r.input_requests, key) || Object.hasOwn(r.input_responses, key)) continue;
        if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
        r.input_responses = { ...r.input_responses, [key]: value };
        changed = true;
      }
      return changed;
    });
  }

  /** The client failed a pushed request: the waiting `ask` rejects with InputFailed. */
  async answerFailed(taskId: string, key: string, message: string): Promise<void> {
    const record = await this.store.getTask(taskId);
    if (record) await this.answer(taskId, record.principal, { [key]: { [FAILED_ANSWER]: message } });
  }

  /** Marks an outstanding request as pushed to a client by this process; false if it already was. */
  markDelivered(taskId: string, key: string): boolean {
    const id = `${taskId} ${key}`;
    if (this.delivered.has(id)) return false;
    this.delivered.add(id);
    return true;
  }

  /** Ends a task (a no-op on one that already ended: terminal statuses never change). */
  async finish(taskId: string, end: TaskEnd): Promise<TaskRecord | undefined> {
    const record = await this.mutate(taskId, 'terminal', (r) => {
      if (isTerminalTask(r.status)) return false;
      const snapshot = r.snapshot as unknown as RunSnapshot;
      let state: RunSnapshot['state'];
      let summary: string;
      if ('cancelled' in end) {
        r.status = 'cancelled';
        state = 'canceled';
        summary = end.cancelled;
      } else if ('error' in end) {
        r.status = 'failed';
        r.error = end.error;
        state = 'failed';
        summary = String(end.error.message ?? 'failed');
      } else {
        r.status = end.isError ? 'failed' : 'completed';
        r.result = end.result;
        state = end.isError ? 'failed' : 'succeeded';
        summary = resultSummary(end.result) ?? (end.isError ? 'failed' : 'done');
      }
      endTask(r, { ...snapshot, state, summary });
      return true;
    });
    this.release(taskId);
    return record;
  }

  /**
   * Cancels a task: it is `cancelled` durably before this returns, and the work on it (here or, within a
   * lease renewal, in another process) is aborted. A task that already ended is returned unchanged.
   */
  async cancel(
    taskId: string,
    principal: string,
    message: string,
  ): Promise<{ record: TaskRecord; wasTerminal: boolean }> {
    let wasTerminal = false;
    const record = await this.mutate(taskId, 'terminal', (r) => {
      if (r.principal !== principal || expired(r)) notFound(taskId);
      if (isTerminalTask(r.status)) {
        wasTerminal = true;
        return false;
      }
      r.status = 'cancelled';
      endTask(r, { ...(r.snapshot as unknown as RunSnapshot), state: 'canceled', summary: message });
      return true;
    });
    if (!record) notFound(taskId);
    if (!wasTerminal) this.working.get(taskId)?.abort(cancelledError(taskId, message));
    return { record, wasTerminal };
  }

  /** Waits until the task is terminal (tasks/result); the store is re-read for other processes' writes. */
  async waitTerminal(taskId: string, principal: string, signal?: AbortSignal): Promise<TaskRecord> {
    for (;;) {
      const record = await this.get(taskId, principal);
      if (isTerminalTask(record.status)) return record;
      await this.wake(taskId, signal, WAIT_POLL_MS);
    }
  }

  /** Listens to one task's changes in this process; returns the unsubscribe function. */
  on(taskId: string, listener: TaskListener): () => void {
    let set = this.listeners.get(taskId);
    if (!set) {
      set = new Set();
      this.listeners.set(taskId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(taskId);
    };
  }

  // ------------------------------------------------------------------------------------------
  // orphans, leases, retention

  /** Non-terminal tasks whose owner is gone (dead local process, or a lease that ran out). */
  async orphans(): Promise<TaskRecord[]> {
    const open = await this.store.listTasks({ statuses: ['working', 'input_required'], limit: 1000 });
    return open.filter((r) => this.orphaned(r));
  }

  /** Takes an orphan over (if it still is one): this process now owns it. */
  async adopt(taskId: string): Promise<TaskRecord | undefined> {
    let adopted = false;
    const record = await this.mutate(taskId, 'status', (r) => {
      if (isTerminalTask(r.status) || !this.orphaned(r)) return false;
      r.owner = this.owner;
      r.lease_expires_at = new Date(Date.now() + LEASE_MS).toISOString();
      r.meta = { ...r.meta, adopted: Number(r.meta.adopted ?? 0) + 1 };
      adopted = true;
      return true;
    });
    return adopted ? record : undefined;
  }

  private orphaned(r: TaskRecord): boolean {
    if (r.owner === this.owner) return false;
    if (r.owner === null || !ownerAlive(r.owner)) return true;
    return r.lease_expires_at === null || Date.parse(r.lease_expires_at) < Date.now();
  }

  /** Renews this process's leases, aborts work cancelled elsewhere, drops expired tasks, reports orphans. */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const mine = [...this.working.keys()];
      const ended: TaskRecord[] = [];
      await this.store.transaction(async (tx) => {
        for (const taskId of mine) {
          const r = await tx.getTask(taskId);
          if (!r || isTerminalTask(r.status) || r.owner !== this.owner) {
            if (r) ended.push(r);
            continue;
          }
          r.lease_expires_at = new Date(Date.now() + LEASE_MS).toISOString();
          await tx.updateTask(r);
        }
        await tx.deleteExpiredTasks(new Date().toISOString());
      });
      for (const r of ended) {
        this.working.get(r.task_id)?.abort(cancelledError(r.task_id, r.status_message ?? 'cancelled'));
        this.emit(r.task_id, 'terminal', r);
      }
      const orphans = this.onOrphans ? await this.orphans() : [];
      if (orphans.length > 0) this.onOrphans?.(orphans);
    } finally {
      this.ticking = false;
    }
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.tick().catch((error: unknown) => this.log.error(`task upkeep failed: ${String(error)}`));
    }, RENEW_MS);
    this.timer.unref();
  }

  private release(taskId: string): void {
    this.working.delete(taskId);
  }

  /** Stops upkeep. Work in progress is left as is: its tasks become orphans another process takes over. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  // ------------------------------------------------------------------------------------------

  /** Read, change and save one task in a transaction; listeners hear about it after the commit. */
  private async mutate(
    taskId: string,
    event: TaskEvent,
    change: (record: TaskRecord) => boolean,
  ): Promise<TaskRecord | undefined> {
    let saved = false;
    const record = await this.store.transaction(async (tx) => {
      const r = await tx.getTask(taskId);
      if (!r) return undefined;
      if (!change(r)) return r;
      r.last_updated_at = new Date().toISOString();
      await tx.updateTask(r);
      saved = true;
      return r;
    });
    if (record && saved) this.emit(taskId, event, record);
    return record;
  }

  private emit(taskId: string, event: TaskEvent, record: TaskRecord): void {
    for (const listener of [...(this.listeners.get(taskId) ?? [])]) {
      try {
        listener(event, record);
      } catch (error) {
        this.log.error(`task ${taskId} listener failed: ${String(error)}`);
      }
    }
  }

  /** Resolves on the task's next change here, after `ms`, or rejects when `signal` aborts. */
  private wake(taskId: string, signal: AbortSignal | undefined, ms: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const done = () => {
        clearTimeout(timer);
        off();
        signal?.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = () => {
        clearTimeout(timer);
        off();
        reject(signal?.reason);
      };
      const timer = setTimeout(done, ms);
      const off = this.on(taskId, done);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }
}

/** The client failed (or refused) a request it was sent for a task. */
export class InputFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputFailed';
  }
}

function endTask(r: TaskRecord, snapshot: RunSnapshot): void {
  r.snapshot = { ...snapshot };
  r.status_message = statusMessage(snapshot);
  r.input_requests = {};
  r.input_responses = {};
  r.owner = null;
  r.lease_expires_at = null;
}

function expired(r: TaskRecord): boolean {
  return isTerminalTask(r.status) && r.expires_at !== null && Date.parse(r.expires_at) < Date.now();
}

function notFound(taskId: string): never {
  fail({ code: 'task_not_found', message: `Failed to retrieve task: Task not found (${taskId})`, taskId });
}

/** The first line of a tool result's text, as the final summary. */
function resultSummary(result: Record<string, unknown>): string | undefined {
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  if (typeof structured?.summary === 'string') return structured.summary;
  const content = result.content as { type?: string; text?: string }[] | undefined;
  const text = content?.find((c) => c.type === 'text')?.text;
  return text?.split('\n')[0]?.slice(0, 500);
}

function encodeCursor(r: TaskRecord): string {
  return Buffer.from(JSON.stringify([r.created_at, r.task_id])).toString('base64url');
}

function decodeCursor(cursor: string): { created_at: string; task_id: string } {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string'
    ) {
      return { created_at: value[0], task_id: value[1] };
    }
  } catch {
    // fall through
  }
  fail({ code: 'invalid_params', message: 'Invalid params', details: 'invalid tasks/list cursor' });
}
