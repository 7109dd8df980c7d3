import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DomainFailure } from '../engine/errors.js';
import { SqliteExecutionStore } from '../store/sqlite/sqlite-store.js';
import { manifestText } from './orchestrations.js';
import type { RunSnapshot } from './run-model.js';
import { cutoff } from './run-service.js';
import { InputFailed, TASK_PAGE_SIZE, TASK_TTL, TaskService } from './task-service.js';

const snapshot: RunSnapshot = {
  run_id: null,
  workflow_id: null,
  step_id: null,
  step_name: null,
  state: 'pending',
  summary: 'queued',
};

let dir: string;
let store: SqliteExecutionStore;
let tasks: TaskService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'wl-tasks-'));
  store = new SqliteExecutionStore(dir);
  tasks = new TaskService(store);
});
afterEach(async () => {
  tasks.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const create = (principal = 'local', extra: Partial<Parameters<TaskService['create']>[0]> = {}) =>
  tasks.create({ principal, tool: 'workflow_run', arguments: {}, snapshot, meta: {}, ...extra });

const code = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (error) {
    return error instanceof DomainFailure ? error.error.code : String(error);
  }
  return 'no error';
};

describe('TaskService', () => {
  it('creates durable tasks with random ids and a clamped ttl', async () => {
    const a = await create('local', { ttl_ms: 1 });
    const b = await create('local', { ttl_ms: 10 * TASK_TTL.maxMs });
    expect(a.task_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.task_id).not.toBe(b.task_id);
    expect(a.ttl_ms).toBe(TASK_TTL.minMs);
    expect(b.ttl_ms).toBe(TASK_TTL.maxMs);
    // Another service on the same file (another process) sees it at once.
    const other = new TaskService(store);
    expect((await other.get(a.task_id, 'local')).status).toBe('working');
  });

  it('keeps principals apart: get, list, cancel and answers of another principal find nothing', async () => {
    const mine = await create('alice');
    await create('bob');
    expect(await code(tasks.get(mine.task_id, 'bob'))).toBe('task_not_found');
    expect(await code(tasks.cancel(mine.task_id, 'bob', 'x'))).toBe('task_not_found');
    expect(await code(tasks.answer(mine.task_id, 'bob', { k: {} }))).toBe('task_not_found');
    expect((await tasks.list('bob')).tasks.map((t) => t.principal)).toEqual(['bob']);
  });

  it('pages tasks/list newest first with an opaque cursor, and refuses a forged one', async () => {
    const ids: string[] = [];
    for (let i = 0; i < TASK_PAGE_SIZE + 7; i++) ids.push((await create()).task_id);
    const first = await tasks.list('local');
    expect(first.tasks).toHaveLength(TASK_PAGE_SIZE);
    expect(first.nextCursor).toBeDefined();
    const second = await tasks.list('local', first.nextCursor);
    expect(second.tasks).toHaveLength(7);
    expect(second.nextCursor).toBeUndefined();
    const all = [...first.tasks, ...second.tasks].map((t) => t.task_id);
    expect(new Set(all).size).toBe(ids.length);
    expect(await code(tasks.list('local', 'not-a-cursor'))).toBe('invalid_params');
  });

  it('cancels once: a terminal task never changes again, in the service and in the database', async () => {
    const t = await create();
    const controller = tasks.claim(t.task_id);
    const first = await tasks.cancel(t.task_id, 'local', 'stop');
    expect(first).toMatchObject({ wasTerminal: false, record: { status: 'cancelled' } });
    expect(controller.signal.aborted).toBe(true);
    expect((await tasks.cancel(t.task_id, 'local', 'again')).wasTerminal).toBe(true);
    await tasks.finish(t.task_id, { result: { content: [] }, isError: false });
    expect((await tasks.get(t.task_id, 'local')).status).toBe('cancelled');
    const row = (await store.getTask(t.task_id)) as NonNullable<Awaited<ReturnType<typeof store.getTask>>>;
    await expect(store.transaction((tx) => tx.updateTask({ ...row, status: 'working' }))).rejects.toThrow(
      /terminal/,
    );
  });

  it('asks, ignores answers for keys that are not outstanding, and never reuses a key', async () => {
    const t = await create();
    const request = { method: 'elicitation/create', params: { message: 'q' } };
    const signal = new AbortController().signal;
    const asked = tasks.ask(t.task_id, 'step', request, signal);
    await new Promise((r) => setTimeout(r, 50));
    const waiting = await tasks.get(t.task_id, 'local');
    expect(waiting.status).toBe('input_required');
    expect(Object.keys(waiting.input_requests)).toEqual(['step-1']);
    await tasks.answer(t.task_id, 'local', {
      'step-9': { action: 'accept' },
      'step-1': { action: 'accept' },
    });
    await expect(asked).resolves.toEqual({ action: 'accept' });
    const after = await tasks.get(t.task_id, 'local');
    expect(after.status).toBe('working');
    expect(after.input_requests).toEqual({});
    expect(after.input_responses).toEqual({});
    // A withdrawn request (the waiter gave up) is gone too; the next key is new.
    const giveUp = new AbortController();
    const second = tasks.ask(t.task_id, 'step', request, giveUp.signal);
    await new Promise((r) => setTimeout(r, 50));
    giveUp.abort();
    await expect(second).rejects.toBeDefined();
    await new Promise((r) => setTimeout(r, 50));
    expect((await tasks.get(t.task_id, 'local')).input_requests).toEqual({});
    const third = tasks.ask(t.task_id, 'step', request, signal);
    await new Promise((r) => setTimeout(r, 50));
    expect(Object.keys((await tasks.get(t.task_id, 'local')).input_requests)).toEqual(['step-3']);
    await tasks.answerFailed(t.task_id, 'step-3', 'the client refused');
    await expect(third).rejects.toBeInstanceOf(InputFailed);
  });

  it('wakes a waiter in another service (process) when the task ends', async () => {
    const t = await create();
    const other = new TaskService(store);
    const waited = other.waitTerminal(t.task_id, 'local');
    await tasks.finish(t.task_id, {
      result: { content: [], structuredContent: { summary: 'all done' } },
      isError: false,
    });
    const done = await waited;
    expect(done.status).toBe('completed');
    expect(done.snapshot).toMatchObject({ state: 'succeeded', summary: 'all done' });
    other.close();
  });

  it('finds orphans whose owner process is gone, and lets one process adopt each', async () => {
    const t = await create();
    const row = (await store.getTask(t.task_id)) as NonNullable<Awaited<ReturnType<typeof store.getTask>>>;
    // An owner on this host with a pid that does not exist.
    await store.transaction((tx) =>
      tx.updateTask({ ...row, owner: `${row.owner?.split(':')[0]}:999999999:dead` }),
    );
    const heir = new TaskService(store);
    expect((await heir.orphans()).map((r) => r.task_id)).toEqual([t.task_id]);
    expect((await heir.adopt(t.task_id))?.owner).toBe(heir.owner);
    expect(await tasks.adopt(t.task_id)).toBeUndefined();
    expect(await heir.orphans()).toEqual([]);
    heir.close();
  });

  it('drops terminal tasks once their retention ended, never running ones', async () => {
    const done = await create();
    const running = await create();
    await tasks.finish(done.task_id, { error: { code: -32603, message: 'x' } });
    const later = new Date(Date.now() + TASK_TTL.defaultMs + 60_000).toISOString();
    expect(await store.transaction((tx) => tx.deleteExpiredTasks(later))).toBe(1);
    expect(await store.getTask(done.task_id)).toBeUndefined();
    expect(await store.getTask(running.task_id)).toBeDefined();
  });
});

describe('helpers', () => {
  it('reads older_than as a duration or a date, and refuses anything else', () => {
    const now = Date.parse('2026-01-31T00:00:00Z');
    expect(cutoff('30d', now)).toBe('2026-01-01T00:00:00.000Z');
    expect(cutoff('12h', now)).toBe('2026-01-30T12:00:00.000Z');
    expect(cutoff('2025-12-01', now)).toBe('2025-12-01T00:00:00.000Z');
    for (const bad of ['yesterday', '30 days', '-1d', '1y'])
      expect(() => cutoff(bad, now)).toThrow(DomainFailure);
  });

  it('takes the manifest out of a fenced reply, or the whole reply', () => {
    expect(manifestText('Here it is:\n```yaml\nid: x\n```\nDone.')).toBe('id: x');
    expect(manifestText('id: y\nname: z\n')).toBe('id: y\nname: z');
  });
});
