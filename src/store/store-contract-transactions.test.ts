import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { canTransition, EXECUTION_STATES } from '../engine/state-machine.js';
import type { ExecutionStore, StoreWriter, TaskRecord } from './execution-store.js';
import { MIGRATIONS } from './sqlite/migrations.js';
import { adapters, at, execution, HASH, type Namespace, seed, step, T0 } from './store-test-kit.js';

// The contract of the store port (src/store/execution-store.ts), run unchanged against every adapter: tasks,
// history, the state machine's trigger, transactions under contention and migrations (records and execution
// heads: store-contract.test.ts).

const ADAPTERS = await adapters('store contract suite (transactions)');

for (const { adapter, skip } of ADAPTERS)
  describe.skipIf(skip)(`store contract: ${adapter.name}${skip ? ' (skipped: no server)' : ''}`, () => {
    afterEach(() => adapter.closeStores());
    afterAll(() => adapter.cleanup());

    let ns: Namespace;
    /** A store on a fresh, empty namespace. */
    const fresh = async (): Promise<ExecutionStore> => {
      ns = await adapter.fresh();
      return ns.open();
    };

    describe('tasks and history', () => {
      const task = (overrides: Partial<TaskRecord> = {}): TaskRecord => ({
        task_id: 'task-1',
        principal: 'local',
        tool: 'workflow_run',
        arguments: { workflow_id: 'demo', inputs: { b: 2, a: 1 } },
        run_id: null,
        workflow_id: 'demo',
        status: 'working',
        status_message: 'running',
        snapshot: { state: 'running' },
        created_at: T0,
        last_updated_at: T0,
        ttl_ms: 60_000,
        expires_at: at(60_000),
        poll_interval_ms: 500,
        input_requests: {},
        input_responses: {},
        result: null,
        error: null,
        owner: 'host:1:abc',
        lease_expires_at: at(30_000),
        meta: {},
        ...overrides,
      });

      it('keeps tasks as written, pages them newest first per principal, and never changes a terminal status', async () => {
        const store = await fresh();
        await store.transaction(async (tx) => {
          for (let i = 0; i < 5; i++) {
            await tx.insertTask(
              task({ task_id: `t${i}`, created_at: at(i * 1000), last_updated_at: at(i * 1000) }),
            );
          }
          await tx.insertTask(task({ task_id: 'other', principal: 'bob' }));
        });
        expect(await store.getTask('t0')).toEqual(
          task({ task_id: 't0', created_at: T0, last_updated_at: T0 }),
        );
        const first = await store.listTasks({ principal: 'local', limit: 2 });
        expect(first.map((t) => t.task_id)).toEqual(['t4', 't3']);
        const last = first.at(-1) as TaskRecord;
        const next = await store.listTasks({
          principal: 'local',
          limit: 10,
          before: { created_at: last.created_at, task_id: last.task_id },
        });
        expect(next.map((t) => t.task_id)).toEqual(['t2', 't1', 't0']);
        const done = task({
          task_id: 't1',
          created_at: at(1000),
          status: 'completed',
          result: { content: [], structuredContent: { ok: true } },
          last_updated_at: at(2000),
        });
        await store.transaction((tx) => tx.updateTask(done));
        expect(await store.getTask('t1')).toEqual(done);
        await expect(
          store.transaction((tx) => tx.updateTask({ ...done, status: 'working' })),
        ).rejects.toThrow();
        expect((await store.listTasks({ statuses: ['completed'], limit: 10 })).map((t) => t.task_id)).toEqual(
          ['t1'],
        );
        // Finished tasks past their retention go; unfinished ones stay whatever their expiry.
        expect(await store.transaction((tx) => tx.deleteExpiredTasks(at(10 * 60_000)))).toBe(1);
        expect(await store.getTask('t1')).toBeUndefined();
        expect(await store.getTask('t0')).toBeDefined();
      });

      it('purges finished executions of one principal with their steps, events, submissions and tasks, never running ones', async () => {
        const store = await fresh();
        await seed(
          store,
          execution({ execution_id: 'done', state: 'completed', completed_at: at(1000) }),
          execution({ execution_id: 'live', state: 'running' }),
          execution({ execution_id: 'bobs', principal: 'bob', state: 'completed', completed_at: at(1000) }),
        );
        await store.transaction(async (tx) => {
          await tx.insertStep(step({ execution_id: 'done' }));
          await tx.insertStep(step({ execution_id: 'live' }));
          await tx.insertTelemetry({
            event_type: 'x',
            execution_id: 'done',
            step_name: null,
            agent_name: null,
            metadata: null,
          });
          await tx.recordSubmission({
            nonce: 'n1',
            execution_id: 'done',
            output_hash: 'h',
            response: {},
            created_at: T0,
          });
          await tx.insertTask(task({ task_id: 'run-task', run_id: 'done', status: 'completed' }));
          await tx.insertTask(task({ task_id: 'live-task', run_id: 'live' }));
        });
        const filter = {
          principal: 'local',
          states: ['completed', 'failed', 'abandoned', 'diverged'] as const,
        };
        const dry = await store.transaction((tx) =>
          tx.purgeHistory({ ...filter, states: [...filter.states], dry_run: true }),
        );
        expect(dry).toEqual({
          executions: 1,
          steps: 1,
          artifacts: 0,
          telemetry: 1,
          submissions: 1,
          tasks: 1,
        });
        expect(await store.getExecution('done')).toBeDefined();
        const counts = await store.transaction((tx) =>
          tx.purgeHistory({ ...filter, states: [...filter.states] }),
        );
        expect(counts).toEqual(dry);
        expect(await store.getExecution('done')).toBeUndefined();
        expect(await store.getSteps('done')).toEqual([]);
        expect(await store.getTask('run-task')).toBeUndefined();
        expect(await store.getExecution('live')).toBeDefined();
        expect(await store.getTask('live-task')).toBeDefined();
        expect(await store.getExecution('bobs')).toBeDefined();
      });
    });

    describe('children', () => {
      it("counts every principal's child executions per state, and never the executions that are no child", async () => {
        const store = await fresh();
        expect(await store.countChildren()).toEqual({});
        await seed(
          store,
          execution({ execution_id: 'p1' }),
          execution({ execution_id: 'p2', principal: 'mallory', state: 'paused' }),
          execution({ execution_id: 'c1', parent_id: 'p1' }),
          execution({ execution_id: 'c2', parent_id: 'p1', state: 'completed' }),
          execution({ execution_id: 'c3', parent_id: 'p1', state: 'completed' }),
          execution({ execution_id: 'c4', parent_id: 'p2', principal: 'mallory', state: 'paused' }),
          execution({ execution_id: 'g1', parent_id: 'c1', state: 'abandoned' }),
        );
        expect(await store.countChildren()).toEqual({ running: 1, completed: 2, paused: 1, abandoned: 1 });
        // A child that ends moves from one state's count to the other's.
        const c1 = (await store.getExecution('c1')) as Parameters<StoreWriter['updateExecution']>[0];
        await store.transaction((tx) => tx.updateExecution({ ...c1, state: 'failed' }));
        expect(await store.countChildren()).toEqual({ failed: 1, completed: 2, paused: 1, abandoned: 1 });
      });
    });

    describe('state machine', () => {
      it('the database refuses every transition the state machine refuses, and unknown states', async () => {
        const store = await fresh();
        const pairs = EXECUTION_STATES.flatMap((from) => EXECUTION_STATES.map((to) => [from, to] as const));
        await seed(
          store,
          ...pairs.map(([from, to]) => execution({ execution_id: `${from}-${to}`, state: from })),
        );
        const refused: string[] = [];
        for (const [from, to] of pairs) {
          const exec = execution({ execution_id: `${from}-${to}`, state: to });
          const result = await store
            .transaction((tx) => tx.updateExecution(exec))
            .then(
              () => 'ok',
              (error: Error) => error.message,
            );
          if (result !== 'ok') {
            expect(result).toMatch(/invalid state transition/);
            refused.push(`${from}->${to}`);
          }
        }
        const expected = pairs.filter(([from, to]) => from !== to && !canTransition(from, to));
        expect(refused).toEqual(expected.map(([from, to]) => `${from}->${to}`));
        await expect(
          store.transaction((tx) =>
            tx.updateExecution(execution({ execution_id: 'idle-idle', state: 'bogus' as never })),
          ),
        ).rejects.toThrow();
        expect((await store.getExecution('idle-idle'))?.state).toBe('idle');
      });
    });

    describe('transactions', () => {
      it('a transaction that throws leaves nothing behind; one that returns keeps everything', async () => {
        const store = await fresh();
        const write = async (tx: StoreWriter, id: string) => {
          await tx.pinDefinition(HASH, 'demo', '{}');
          await tx.insertExecution(execution({ execution_id: id }));
          await tx.insertStep(step({ execution_id: id }));
          await tx.insertTelemetry({
            event_type: 'e',
            execution_id: id,
            step_name: null,
            agent_name: null,
            metadata: null,
          });
          await tx.insertArtifact({
            execution_id: id,
            step_name: 'design',
            artifact_type: 'data',
            name: 'a',
            content: 'c',
            content_type: 'text/plain',
            size_bytes: 1,
            metadata: null,
          });
          await tx.recordSubmission({
            nonce: `n-${id}`,
            execution_id: id,
            output_hash: 'h',
            response: {},
            created_at: T0,
          });
          // Reads inside the transaction see its own writes.
          expect((await tx.getExecution(id))?.execution_id).toBe(id);
          expect(await tx.getSteps(id)).toHaveLength(1);
        };
        await expect(
          store.transaction(async (tx) => {
            await write(tx, 'doomed');
            throw new Error('changed my mind');
          }),
        ).rejects.toThrow('changed my mind');
        expect(await store.getExecution('doomed')).toBeUndefined();
        expect(await store.getDefinition(HASH)).toBeUndefined();
        expect(await store.getSteps('doomed')).toEqual([]);
        expect(await store.getArtifacts('doomed')).toEqual([]);
        expect(await store.getTelemetry({ limit: 10 })).toEqual([]);
        expect(await store.getSubmission('n-doomed')).toBeUndefined();

        const result = await store.transaction(async (tx) => {
          await write(tx, 'kept');
          return 'result';
        });
        expect(result).toBe('result');
        expect(await store.getSteps('kept')).toHaveLength(1);
        expect(await store.getTelemetry({ limit: 10 })).toHaveLength(1);
      });

      it('writes of one transaction land in call order, a row written twice keeps the last, and reads see them', async () => {
        const store = await fresh();
        await store.transaction(async (tx) => {
          await tx.pinDefinition(HASH, 'demo', '{}');
          await tx.insertExecution(execution());
          for (const type of ['first', 'second', 'third'])
            await tx.insertTelemetry({
              event_type: type,
              execution_id: 'exec-1',
              step_name: null,
              agent_name: null,
              metadata: { type },
            });
          await tx.insertStep(step());
          await tx.updateStep({ ...step(), status: 'completed', attempts: 1 });
          await tx.updateExecution(execution({ state: 'running', current_seq: 1 }));
          await tx.updateExecution(execution({ state: 'running', current_seq: 2 }));
          expect((await tx.getStep('exec-1', 1))?.status).toBe('completed');
          await tx.insertTelemetry({
            event_type: 'fourth',
            execution_id: 'exec-1',
            step_name: null,
            agent_name: null,
            metadata: null,
          });
          await tx.recordSubmission({
            nonce: 'n-1',
            execution_id: 'exec-1',
            output_hash: 'h',
            response: 1,
            created_at: T0,
          });
          await tx.updateSubmission('n-1', 2);
        });
        const events = await store.getTelemetry({ execution_id: 'exec-1', limit: 10 });
        expect(events.map((e) => e.event_type)).toEqual(['first', 'second', 'third', 'fourth']);
        expect(events.map((e) => e.id)).toEqual([...events.map((e) => e.id)].sort((a, b) => a - b));
        expect(await store.getExecution('exec-1')).toMatchObject({ state: 'running', current_seq: 2 });
        expect(await store.getStep('exec-1', 1)).toMatchObject({ status: 'completed', attempts: 1 });
        expect((await store.getSubmission('n-1'))?.response).toBe(2);
      });

      it('a write the database refuses fails the transaction, even when fn returns, and keeps nothing', async () => {
        const store = await fresh();
        await seed(store);
        await expect(
          store.transaction(async (tx) => {
            await tx.insertTelemetry({
              event_type: 'kept?',
              execution_id: 'exec-1',
              step_name: null,
              agent_name: null,
              metadata: null,
            });
            // No such execution: the foreign key refuses the step (now, or when the writes are sent).
            await tx.insertStep(step({ execution_id: 'missing' })).catch(() => undefined);
            return 'returned';
          }),
        ).rejects.toThrow();
        expect(await store.getTelemetry({ limit: 10 })).toEqual([]);
      });

      it('two store instances racing a read-then-write (a lease claim): exactly one wins each round', async () => {
        const store = await fresh();
        const other = await ns.open();
        await seed(store);
        await store.transaction((tx) => tx.insertStep(step()));
        const claim = (s: ExecutionStore, owner: string) =>
          s.transaction(async (tx) => {
            const row = await tx.getStep('exec-1', 1);
            if (!row || row.lease_owner !== null) return false;
            await tx.updateStep({
              ...row,
              attempts: row.attempts + 1,
              lease_owner: owner,
              lease_expires_at: at(60_000),
            });
            return true;
          });
        for (let round = 0; round < 3; round++) {
          const results = await Promise.all(
            Array.from({ length: 8 }, (_, i) => claim(i % 2 === 0 ? store : other, `w-${round}-${i}`)),
          );
          expect(results.filter(Boolean)).toHaveLength(1);
          const row = await other.getStep('exec-1', 1);
          expect(row?.attempts).toBe(round + 1);
          expect(row?.lease_owner).toBe(`w-${round}-${results.indexOf(true)}`);
          await store.transaction(async (tx) => {
            const r = await tx.getStep('exec-1', 1);
            if (r) await tx.updateStep({ ...r, lease_owner: null, lease_expires_at: null });
          });
        }
      });

      it('concurrent read-modify-write transactions from two instances lose no update', async () => {
        const store = await fresh();
        const other = await ns.open();
        await seed(store);
        const increments = 30;
        await Promise.all(
          Array.from({ length: increments }, (_, i) =>
            (i % 2 === 0 ? store : other).transaction(async (tx) => {
              const exec = await tx.getExecution('exec-1');
              if (!exec) throw new Error('missing');
              await tx.insertTelemetry({
                event_type: 'tick',
                execution_id: 'exec-1',
                step_name: null,
                agent_name: null,
                metadata: { seen: exec.token_attempt },
              });
              await tx.updateExecution({ ...exec, token_attempt: exec.token_attempt + 1 });
            }),
          ),
        );
        expect((await store.getExecution('exec-1'))?.token_attempt).toBe(increments);
        // Each transaction saw the value the previous one wrote: the effects never interleaved.
        const seen = (await other.getTelemetry({ execution_id: 'exec-1', limit: 100 })).map(
          (e) => e.metadata?.seen,
        );
        expect(seen).toEqual(Array.from({ length: increments }, (_, i) => i));
      });

      it('of many concurrent submissions of one token, exactly one advances; the rest replay or conflict', async () => {
        const store = await fresh();
        const other = await ns.open();
        await seed(store);
        // The service's check (src/executions/execution-service.ts `advance`), reduced to the store's part.
        const submit = (s: ExecutionStore, outputHash: string) =>
          s.transaction(async (tx) => {
            const exec = await tx.getExecution('exec-1');
            if (!exec) throw new Error('missing');
            const recorded = await tx.getSubmission('n-1');
            if (recorded)
              return recorded.output_hash === outputHash ? `replay:${recorded.response}` : 'conflict';
            if (exec.token_nonce !== 'n-1') return 'stale';
            await tx.updateExecution({ ...exec, token_nonce: 'n-2', current_seq: exec.current_seq + 1 });
            await tx.recordSubmission({
              nonce: 'n-1',
              execution_id: 'exec-1',
              output_hash: outputHash,
              response: `advanced-by-${outputHash}`,
              created_at: T0,
            });
            return `advanced-by-${outputHash}`;
          });
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            submit(i % 2 === 0 ? store : other, i % 4 < 2 ? 'same' : `diff-${i}`),
          ),
        );
        const advanced = results.filter((r) => r.startsWith('advanced'));
        expect(advanced).toHaveLength(1);
        const winner = advanced[0] as string;
        for (const [i, r] of results.entries()) {
          if (r === winner) continue;
          const hash = i % 4 < 2 ? 'same' : `diff-${i}`;
          expect(r).toBe(winner === `advanced-by-${hash}` ? `replay:${winner}` : 'conflict');
        }
        expect((await store.getExecution('exec-1'))?.current_seq).toBe(2);
      });
    });

    describe('migrations', () => {
      it('brings a new store to the newest version, keeps data on reopen, and survives concurrent first opens', async () => {
        ns = await adapter.fresh();
        const [a, b] = await Promise.all([ns.open(), ns.open()]);
        expect(await a.schemaVersion()).toBe(MIGRATIONS.length);
        expect(await b.schemaVersion()).toBe(MIGRATIONS.length);
        await seed(a);
        const c = await ns.open();
        expect(await c.schemaVersion()).toBe(MIGRATIONS.length);
        expect((await c.getExecution('exec-1'))?.execution_id).toBe('exec-1');
      });

      it('refuses a store written by a newer version', async () => {
        ns = await adapter.fresh();
        await ns.open();
        await ns.addFutureMigration();
        await expect(ns.open()).rejects.toThrow(/newer workflowlookup \(schema version 99/);
      });
    });
  });
