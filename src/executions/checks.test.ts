import { describe, expect, it } from 'vitest';
import { DomainFailure } from '../engine/errors.js';
import { CheckSlots } from './checks.js';

// The slots checks run in: over the limits a run waits in line (fair between principals), past the
// queue's length it is refused with check_busy, and an aborted wait leaves the line.

/** Settles pending promise callbacks (grants resolve in microtasks). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Acquires a slot and records the order in which runs were granted one. */
function runner(slots: CheckSlots, order: string[]) {
  return (name: string, principal: string, signal?: AbortSignal) => {
    const held = slots.acquire('tests', principal, { signal }).then((release) => {
      order.push(name);
      return release;
    });
    held.catch(() => undefined);
    return held;
  };
}

describe('CheckSlots', () => {
  it('grants up to the limits at once and makes the rest wait until a slot is given back', async () => {
    const slots = new CheckSlots({ maxConcurrent: 2, maxPerPrincipal: 2, maxQueued: 10 });
    const order: string[] = [];
    const take = runner(slots, order);
    const a = take('a', 'alice');
    const b = take('b', 'alice');
    const c = take('c', 'alice');
    await settle();
    expect(order).toEqual(['a', 'b']);
    expect(slots.counts).toEqual({ running: 2, waiting: 1 });
    (await a)();
    await settle();
    expect(order).toEqual(['a', 'b', 'c']);
    // Giving a slot back twice frees it once.
    (await a)();
    expect(slots.counts).toEqual({ running: 2, waiting: 0 });
    (await b)();
    (await c)();
    expect(slots.counts).toEqual({ running: 0, waiting: 0 });
  });

  it("holds a principal to its own limit while others' runs go ahead", async () => {
    const slots = new CheckSlots({ maxConcurrent: 3, maxPerPrincipal: 1, maxQueued: 10 });
    const order: string[] = [];
    const take = runner(slots, order);
    const a1 = take('a1', 'alice');
    take('a2', 'alice');
    take('b1', 'bob');
    await settle();
    expect(order).toEqual(['a1', 'b1']);
    (await a1)();
    await settle();
    expect(order).toEqual(['a1', 'b1', 'a2']);
  });

  it('gives a free slot to the waiting principal served longest ago, each principal first come first served', async () => {
    const slots = new CheckSlots({ maxConcurrent: 1, maxPerPrincipal: 1, maxQueued: 10 });
    const order: string[] = [];
    const take = runner(slots, order);
    const held = new Map<string, Promise<() => void>>();
    for (const [name, who] of [
      ['a1', 'alice'],
      ['a2', 'alice'],
      ['a3', 'alice'],
      ['a4', 'alice'],
      ['b1', 'bob'],
      ['b2', 'bob'],
      ['c1', 'carol'],
    ] as const)
      held.set(name, take(name, who));
    await settle();
    expect(order).toEqual(['a1']);
    // Each run, once granted, gives its slot back: the order they ran in is the line's order.
    for (let i = 0; i < 6; i++) {
      const last = order[order.length - 1] as string;
      (await held.get(last))?.();
      await settle();
    }
    // Alice's burst does not keep bob and carol waiting behind all of it.
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
  });

  it('refuses a run with check_busy once the queue is full, and runs with no queue never wait', async () => {
    const slots = new CheckSlots({ maxConcurrent: 1, maxPerPrincipal: 1, maxQueued: 2 });
    const order: string[] = [];
    const take = runner(slots, order);
    take('a', 'alice');
    take('b', 'bob');
    take('c', 'carol');
    await settle();
    expect(slots.counts).toEqual({ running: 1, waiting: 2 });
    let refusal: unknown;
    try {
      await slots.acquire('unit-tests', 'dave', { retryAfterMs: 4000 });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(DomainFailure);
    expect((refusal as DomainFailure).error).toMatchObject({
      code: 'check_busy',
      check: 'unit-tests',
      principal: 'dave',
      limit: 2,
      retryAfterMs: 4000,
    });
    expect((refusal as DomainFailure).error.message).toContain('WORKFLOWLOOKUP_CHECKS_MAX_QUEUED');
    expect(slots.counts).toEqual({ running: 1, waiting: 2 });

    const none = new CheckSlots({ maxConcurrent: 1, maxPerPrincipal: 1, maxQueued: 0 });
    const first = await none.acquire('t', 'alice');
    await expect(none.acquire('t', 'bob')).rejects.toMatchObject({ error: { code: 'check_busy' } });
    first();
    (await none.acquire('t', 'bob'))();
  });

  it('takes a waiting run out of the line when its signal aborts', async () => {
    const slots = new CheckSlots({ maxConcurrent: 1, maxPerPrincipal: 1, maxQueued: 1 });
    const order: string[] = [];
    const take = runner(slots, order);
    const a = take('a', 'alice');
    const stop = new AbortController();
    const b = take('b', 'bob', stop.signal);
    await settle();
    expect(slots.counts).toEqual({ running: 1, waiting: 1 });
    stop.abort(new Error('cancelled by the client'));
    await expect(b).rejects.toThrow('cancelled by the client');
    // Its place is free: another run may queue, and it, not the aborted one, gets the slot.
    expect(slots.counts).toEqual({ running: 1, waiting: 0 });
    const c = take('c', 'carol');
    (await a)();
    await settle();
    expect(order).toEqual(['a', 'c']);
    (await c)();
    expect(slots.counts).toEqual({ running: 0, waiting: 0 });
    // An already aborted signal never queues.
    await expect(slots.acquire('t', 'alice', { signal: AbortSignal.abort() })).rejects.toBeDefined();
    expect(slots.counts).toEqual({ running: 0, waiting: 0 });
  });
});
