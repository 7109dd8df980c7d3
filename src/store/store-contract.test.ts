import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ExecutionHead, ExecutionRecord, ExecutionStore } from './execution-store.js';
import { PG_MIGRATIONS } from './postgres/migrations.js';
import { MIGRATIONS } from './sqlite/migrations.js';
import { adapters, at, execution, HASH, type Namespace, seed, step, T0 } from './store-test-kit.js';

// The contract of the store port (src/store/execution-store.ts), run unchanged against every adapter: records
// and execution heads (tasks, transactions and migrations: store-contract-transactions.test.ts).

const ADAPTERS = await adapters('store contract suite');

it('both adapters number their migrations alike, 1..n without gaps', () => {
  expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
  expect(PG_MIGRATIONS.map((m) => [m.version, m.name])).toEqual(MIGRATIONS.map((m) => [m.version, m.name]));
});

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

    describe('records', () => {
      it("appends an execution's record events in the transaction, in order, one per place; a second at a taken place fails", async () => {
        const store = await fresh();
        await seed(store, execution({ execution_id: 'r1' }));
        const event = (n: number) => ({
          execution_id: 'r1',
          n,
          type: n === 1 ? 'workflow_created' : 'step_completed',
          at: at(n),
          step: n === 1 ? null : 'one',
          body: { seq: n, nested: { b: 1, a: [1, 'x'] } },
          prev: `prev-${n}`,
          hash: `hash-${n}`,
          migrated: 0,
        });
        // Alone in its transaction (nothing else written), and beside other writes.
        await store.transaction((tx) => tx.appendRecordEvent(event(1)));
        await store.transaction(async (tx) => {
          const exec = (await tx.getExecution('r1')) as ExecutionRecord;
          await tx.updateExecution({ ...exec, updated_at: at(9) });
          await tx.appendRecordEvent(event(2));
          // Read back inside the transaction that wrote it.
          expect((await tx.lastRecordEvent('r1'))?.n).toBe(2);
        });
        expect(await store.getRecordEvents('r1')).toEqual([event(1), event(2)]);
        expect(await store.lastRecordEvent('r1')).toEqual(event(2));
        expect(await store.lastRecordEvent('nobody')).toBeUndefined();
        await expect(
          store.transaction((tx) => tx.appendRecordEvent({ ...event(2), hash: 'other' })),
        ).rejects.toThrow();
        // A transaction that fails leaves no event behind.
        await expect(
          store.transaction(async (tx) => {
            await tx.appendRecordEvent(event(3));
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect((await store.getRecordEvents('r1')).map((e) => e.n)).toEqual([1, 2]);
      });

      it("keeps a child's parent, lists a parent's children, and counts a principal's open children", async () => {
        const store = await fresh();
        const parent = execution({ execution_id: 'p1' });
        const kids = ['c1', 'c2', 'c3'].map((id, i) =>
          execution({
            execution_id: id,
            parent_id: 'p1',
            updated_at: at(i + 1),
            state: i === 2 ? 'completed' : 'running',
          }),
        );
        const other = execution({ execution_id: 'c9', parent_id: 'p1', principal: 'mallory' });
        await seed(store, parent, ...kids, other);
        expect((await store.getExecution('c1'))?.parent_id).toBe('p1');
        expect((await store.getExecution('p1'))?.parent_id).toBeNull();
        const listed = await store.listExecutions({ parent_id: 'p1', principal: 'local', limit: 10 });
        expect(listed.map((e) => e.execution_id)).toEqual(['c3', 'c2', 'c1']);
        expect(
          (
            await store.listExecutions({
              parent_id: 'p1',
              principal: 'local',
              states: ['running'],
              limit: 10,
            })
          ).map((e) => e.execution_id),
        ).toEqual(['c2', 'c1']);
        // The parent never changes: an update writes every column but it.
        const moved = { ...(kids[0] as ExecutionRecord), parent_id: 'elsewhere', state: 'paused' as const };
        await store.transaction((tx) => tx.updateExecution(moved));
        expect((await store.getExecution('c1'))?.parent_id).toBe('p1');
        expect(await store.countOpenChildren('local')).toBe(2);
        expect(await store.countOpenChildren('mallory')).toBe(1);
        expect(await store.countOpenChildren('nobody')).toBe(0);
        const heads = await store.listExecutionHeads({ principal: 'local', limit: 10 });
        expect(heads.find((h) => h.execution_id === 'c2')?.parent_id).toBe('p1');
      });

      it('keeps an execution exactly as written: JSON key order, unicode, NUL, large numbers, nulls', async () => {
        const store = await fresh();
        const record = execution({
          completed_steps: ['a', 'b'],
          context: {
            zeta: 1,
            alpha: { nested: [1, 'two', null, true] },
            text: 'é漢字🎉 \u0000 end',
            big: 2 ** 40,
          },
          metadata: { waiting: { step_id: 's' }, z: null },
          duration_ms: 40 * 24 * 3600 * 1000,
        });
        await seed(store, record);
        const got = await store.getExecution('exec-1');
        expect(got).toEqual(record);
        expect(Object.keys(got?.context ?? {})).toEqual(['zeta', 'alpha', 'text', 'big']);
        expect(await store.getExecution('missing')).toBeUndefined();

        const updated = {
          ...record,
          state: 'completed' as const,
          current_step: null,
          current_seq: 7,
          token_nonce: null,
          token_attempt: 3,
          token_issued_at: null,
          token_expires_at: null,
          updated_at: at(5000),
          completed_at: at(5000),
          duration_ms: 5000,
          metadata: { final_output: 'done' },
          // What an execution never changes is not written again by an update.
          principal: 'someone-else',
          started_at: at(1),
        };
        await store.transaction((tx) => tx.updateExecution(updated));
        expect(await store.getExecution('exec-1')).toEqual({
          ...updated,
          principal: 'local',
          started_at: T0,
        });
      });

      it('lists executions by principal, workflow and states, newest update first, ties by id (descending), up to a limit', async () => {
        const store = await fresh();
        await seed(
          store,
          execution({ execution_id: 'a', updated_at: at(3) }),
          execution({ execution_id: 'b', updated_at: at(1), state: 'paused' }),
          execution({ execution_id: 'c', updated_at: at(3), workflow_name: 'other' }),
          execution({ execution_id: 'd', updated_at: at(2), principal: 'alice' }),
          execution({ execution_id: 'e', updated_at: at(4), principal: 'alice', state: 'completed' }),
        );
        const ids = async (filter: Parameters<ExecutionStore['listExecutions']>[0]) =>
          (await store.listExecutions(filter)).map((e) => e.execution_id);
        expect(await ids({ limit: 10 })).toEqual(['e', 'c', 'a', 'd', 'b']);
        expect(await ids({ principal: 'local', limit: 10 })).toEqual(['c', 'a', 'b']);
        expect(await ids({ principal: 'local', limit: 2 })).toEqual(['c', 'a']);
        expect(await ids({ principal: 'local', workflow_name: 'demo', limit: 10 })).toEqual(['a', 'b']);
        expect(await ids({ principal: 'local', states: ['paused'], limit: 10 })).toEqual(['b']);
        expect(await ids({ states: ['paused', 'completed'], limit: 10 })).toEqual(['e', 'b']);
        expect(await ids({ principal: 'local', states: ['paused', 'running'], limit: 10 })).toEqual([
          'c',
          'a',
          'b',
        ]);
        expect(await ids({ principal: 'local', states: ['running', 'paused', 'running'], limit: 2 })).toEqual(
          ['c', 'a'],
        );
        expect(
          await ids({ principal: 'local', workflow_name: 'demo', states: ['paused', 'running'], limit: 10 }),
        ).toEqual(['a', 'b']);
        expect(await ids({ principal: 'alice', states: [], limit: 10 })).toEqual(['e', 'd']);
        expect(await ids({ principal: 'nobody', limit: 10 })).toEqual([]);
        const page1 = await store.pageExecutions(null, 2);
        const page2 = await store.pageExecutions(page1.at(-1)?.execution_id ?? null, 10);
        expect([...page1, ...page2].map((e) => e.execution_id)).toEqual(['a', 'b', 'c', 'd', 'e']);
      });

      it('pins a definition once (the first pin stays) and refuses an execution of an unpinned one', async () => {
        const store = await fresh();
        await store.transaction(async (tx) => {
          await tx.pinDefinition(HASH, 'demo', 'first');
          await tx.pinDefinition(HASH, 'demo', 'second');
        });
        expect(await store.getDefinition(HASH)).toBe('first');
        const pinned = await store.getPinnedDefinition(HASH);
        expect(pinned).toMatchObject({ hash: HASH, workflow_id: 'demo', content: 'first' });
        expect(new Date(pinned?.created_at ?? '').toISOString()).toBe(pinned?.created_at);
        expect(await store.getDefinition('b'.repeat(64))).toBeUndefined();
        await expect(
          store.transaction((tx) => tx.insertExecution(execution({ definition_hash: 'b'.repeat(64) }))),
        ).rejects.toThrow();
        await store.transaction((tx) =>
          tx.importDefinition({ hash: 'c'.repeat(64), workflow_id: 'x', content: '{}', created_at: T0 }),
        );
        expect(await store.getPinnedDefinition('c'.repeat(64))).toEqual({
          hash: 'c'.repeat(64),
          workflow_id: 'x',
          content: '{}',
          created_at: T0,
        });
      });

      it('keeps steps in sequence, updates their status, output and lease, refuses a duplicate seq', async () => {
        const store = await fresh();
        await seed(store);
        await store.transaction(async (tx) => {
          await tx.insertStep(step({ seq: 2, step_name: 'implement', iteration: 1 }));
          await tx.insertStep(step({ seq: 1, status: 'completed', output: { summary: 'x', n: [1] } }));
        });
        const steps = await store.getSteps('exec-1');
        expect(steps.map((s) => s.seq)).toEqual([1, 2]);
        expect(steps[0]).toEqual(step({ seq: 1, status: 'completed', output: { summary: 'x', n: [1] } }));
        const leased = step({
          seq: 2,
          step_name: 'implement',
          iteration: 1,
          attempts: 1,
          lease_owner: 'w-1',
          lease_expires_at: at(30_000),
        });
        await store.transaction((tx) => tx.updateStep(leased));
        expect(await store.getStep('exec-1', 2)).toEqual(leased);
        const done = {
          ...leased,
          status: 'completed' as const,
          completed_at: at(40_000),
          duration_ms: 40_000,
          output: 'plain text output',
          lease_owner: null,
          lease_expires_at: null,
        };
        await store.transaction((tx) => tx.updateStep(done));
        expect(await store.getStep('exec-1', 2)).toEqual(done);
        expect(await store.getStep('exec-1', 3)).toBeUndefined();
        await expect(store.transaction((tx) => tx.insertStep(step({ seq: 1 })))).rejects.toThrow();
        await expect(
          store.transaction((tx) => tx.insertStep(step({ execution_id: 'missing', seq: 1 }))),
        ).rejects.toThrow();
      });

      it('keeps artifacts (any text, NUL included) with increasing ids, by execution and by step', async () => {
        const store = await fresh();
        await seed(store);
        const content = 'line 1\n\u0000 binary-ish \u0001 🎉 漢字';
        const ids = await store.transaction(async (tx) => [
          await tx.insertArtifact({
            execution_id: 'exec-1',
            step_name: 'design',
            artifact_type: 'file',
            name: 'design.md',
            content,
            content_type: 'text/markdown',
            size_bytes: Buffer.byteLength(content),
            metadata: { lines: 2 },
          }),
          await tx.insertArtifact({
            execution_id: 'exec-1',
            step_name: 'review',
            artifact_type: 'finding',
            name: 'f1',
            content: '',
            content_type: 'text/plain',
            size_bytes: 0,
            metadata: null,
          }),
        ]);
        expect(ids[1]).toBeGreaterThan(ids[0] as number);
        const all = await store.getArtifacts('exec-1');
        expect(all.map((a) => a.id)).toEqual(ids);
        expect(all[0]).toMatchObject({
          content,
          metadata: { lines: 2 },
          size_bytes: Buffer.byteLength(content),
        });
        expect(all[1]?.metadata).toBeNull();
        expect(new Date(all[0]?.created_at ?? '').toISOString()).toBe(all[0]?.created_at);
        expect((await store.getArtifacts('exec-1', 'review')).map((a) => a.name)).toEqual(['f1']);
        expect(await store.getArtifacts('missing')).toEqual([]);
      });

      it('returns the most recent telemetry in order, by execution, type and principal', async () => {
        const store = await fresh();
        await seed(store, execution(), execution({ execution_id: 'exec-2', principal: 'alice' }));
        await store.transaction(async (tx) => {
          for (let i = 0; i < 6; i++) {
            await tx.insertTelemetry({
              event_type: i % 2 === 0 ? 'step_started' : 'step_completed',
              execution_id: i < 4 ? 'exec-1' : 'exec-2',
              step_name: `s${i}`,
              agent_name: i === 0 ? null : 'default',
              metadata: i === 0 ? null : { i },
            });
          }
        });
        const names = async (filter: Parameters<ExecutionStore['getTelemetry']>[0]) =>
          (await store.getTelemetry(filter)).map((e) => e.step_name);
        expect(await names({ limit: 100 })).toEqual(['s0', 's1', 's2', 's3', 's4', 's5']);
        expect(await names({ limit: 2 })).toEqual(['s4', 's5']);
        expect(await names({ execution_id: 'exec-1', limit: 3 })).toEqual(['s1', 's2', 's3']);
        expect(await names({ event_type: 'step_started', limit: 100 })).toEqual(['s0', 's2', 's4']);
        expect(await names({ principal: 'alice', limit: 100 })).toEqual(['s4', 's5']);
        expect(await names({ principal: 'local', event_type: 'step_completed', limit: 100 })).toEqual([
          's1',
          's3',
        ]);
        const [first] = await store.getTelemetry({ limit: 100 });
        expect(first).toMatchObject({ event_type: 'step_started', execution_id: 'exec-1', agent_name: null });
        expect(first?.metadata).toBeNull();
        const ids = (await store.getTelemetry({ limit: 100 })).map((e) => e.id);
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
      });

      it('records a token once: the nonce is unique, the recorded answer can be replaced', async () => {
        const store = await fresh();
        await seed(store);
        const record = {
          nonce: 'n-1',
          execution_id: 'exec-1',
          output_hash: 'h',
          response: { v: 1, kind: 'pending', list: [1, 2] },
          created_at: T0,
        };
        await store.transaction((tx) => tx.recordSubmission(record));
        expect(await store.getSubmission('n-1')).toEqual(record);
        await expect(
          store.transaction((tx) => tx.recordSubmission({ ...record, output_hash: 'other' })),
        ).rejects.toThrow();
        await store.transaction((tx) => tx.updateSubmission('n-1', { v: 1, kind: 'step' }));
        expect((await store.getSubmission('n-1'))?.response).toEqual({ v: 1, kind: 'step' });
        expect(await store.getSubmission('n-2')).toBeUndefined();
        await store.transaction((tx) => tx.recordSubmission({ ...record, nonce: 'n-0', created_at: at(1) }));
        expect((await store.getSubmissions('exec-1')).map((s) => s.nonce)).toEqual(['n-1', 'n-0']);
      });
    });

    describe('execution heads', () => {
      const minute = (n: number) => at(n * 60_000);
      const head = (id: string, over: Partial<ExecutionRecord> = {}) =>
        execution({
          execution_id: id,
          context: { big: 'x'.repeat(100) },
          token_nonce: 'secret-nonce',
          ...over,
        });

      it('pages most recent first in both directions, ties broken by id, with no row lost or repeated', async () => {
        const store = await fresh();
        // 25 executions over 10 distinct minutes: many share updated_at.
        const all = Array.from({ length: 25 }, (_, i) =>
          head(`e${String(i).padStart(2, '0')}`, { updated_at: minute(i % 10) }),
        );
        await seed(store, ...all);
        const expected = [...all]
          .sort((a, b) =>
            a.updated_at === b.updated_at
              ? b.execution_id.localeCompare(a.execution_id)
              : b.updated_at.localeCompare(a.updated_at),
          )
          .map((r) => r.execution_id);
        const pages: string[][] = [];
        let page = await store.listExecutionHeads({ principal: 'local', limit: 7 });
        for (;;) {
          pages.push(page.map((h) => h.execution_id));
          const last = page.at(-1);
          if (page.length < 7 || !last) break;
          page = await store.listExecutionHeads({ principal: 'local', limit: 7, older_than: last });
        }
        expect(pages.flat()).toEqual(expected);
        // Back from a later page: `newer_than` returns the 7 closest newer rows, still most recent first.
        const later = (
          await store.listExecutionHeads({
            principal: 'local',
            limit: 7,
            older_than: { updated_at: minute(3), execution_id: 'e03' },
          })
        )[0] as ExecutionHead;
        expect(later).toBeDefined();
        const back = await store.listExecutionHeads({ principal: 'local', limit: 7, newer_than: later });
        const index = expected.indexOf(later.execution_id);
        expect(back.map((h) => h.execution_id)).toEqual(expected.slice(index - 7, index));
        // Heads leave out the context and the token fields.
        expect(Object.keys(back[0] ?? {})).not.toContain('context');
        expect(JSON.stringify(back)).not.toContain('secret-nonce');
        // The executions listing breaks ties the same way.
        const listed = await store.listExecutions({ principal: 'local', limit: 25 });
        expect(listed.map((r) => r.execution_id)).toEqual(expected);
      });

      it('filters by principal, workflow, states and the time of the last change, and counts per state', async () => {
        const store = await fresh();
        await seed(
          store,
          head('a1', { state: 'running', updated_at: minute(1) }),
          head('a2', { state: 'paused', updated_at: minute(2) }),
          head('a3', { state: 'completed', updated_at: minute(3), workflow_name: 'wf-b' }),
          head('a4', { state: 'completed', updated_at: minute(4) }),
          head('b1', { state: 'running', updated_at: minute(5), principal: 'alice' }),
        );
        const ids = async (filter: Parameters<typeof store.listExecutionHeads>[0]) =>
          (await store.listExecutionHeads(filter)).map((h) => h.execution_id);
        expect(await ids({ principal: 'local', limit: 10 })).toEqual(['a4', 'a3', 'a2', 'a1']);
        expect(await ids({ principal: 'alice', limit: 10 })).toEqual(['b1']);
        expect(await ids({ principal: 'local', workflow_name: 'wf-b', limit: 10 })).toEqual(['a3']);
        expect(await ids({ principal: 'local', states: ['running', 'paused'], limit: 10 })).toEqual([
          'a2',
          'a1',
        ]);
        expect(await ids({ principal: 'local', states: ['completed'], limit: 10 })).toEqual(['a4', 'a3']);
        expect(await ids({ principal: 'local', updated_since: minute(2), limit: 10 })).toEqual([
          'a4',
          'a3',
          'a2',
        ]);
        expect(await ids({ principal: 'local', updated_before: minute(2), limit: 10 })).toEqual(['a1']);
        expect(await store.countExecutions({ principal: 'local' })).toEqual({
          running: 1,
          paused: 1,
          completed: 2,
        });
        expect(
          await store.countExecutions({
            principal: 'local',
            workflow_name: 'demo',
            updated_since: minute(2),
          }),
        ).toEqual({ paused: 1, completed: 1 });
        expect(await store.listPrincipals()).toEqual(['alice', 'local']);
      });

      it('counts per state stay exact over days, state changes and deletes, for any time window', async () => {
        const store = await fresh();
        const on = (day: number, hour: number) => new Date(Date.UTC(2030, 0, day, hour)).toISOString();
        await seed(
          store,
          head('e1', { state: 'running', updated_at: on(7, 10) }),
          head('e2', { state: 'completed', updated_at: on(9, 12) }),
          head('e3', { state: 'paused', updated_at: on(10, 8) }),
          head('e4', { state: 'completed', updated_at: on(10, 9), workflow_name: 'wf-b' }),
          head('e5', { state: 'running', updated_at: on(8, 1), principal: 'alice' }),
          head('e6', { state: 'running', updated_at: on(8, 23) }),
        );
        await store.transaction(async (tx) => {
          const e1 = (await tx.getExecution('e1')) as ExecutionRecord;
          // A new state and a new day; then a new day only; then neither.
          await tx.updateExecution({
            ...e1,
            state: 'completed',
            updated_at: on(10, 10),
            completed_at: on(10, 10),
          });
          const e6 = (await tx.getExecution('e6')) as ExecutionRecord;
          await tx.updateExecution({ ...e6, updated_at: on(9, 2) });
          await tx.updateExecution({ ...e6, updated_at: on(9, 3), current_seq: 4 });
        });
        await store.transaction((tx) =>
          tx.purgeHistory({ principal: 'local', states: ['completed'], finished_before: on(9, 23) }),
        );
        const all = await store.pageExecutions(null, 100);
        expect(all.map((e) => e.execution_id).sort()).toEqual(['e1', 'e3', 'e4', 'e5', 'e6']);
        const expected = (filter: Parameters<typeof store.countExecutions>[0]) => {
          const counts: Record<string, number> = {};
          for (const e of all) {
            if (filter.principal !== undefined && e.principal !== filter.principal) continue;
            if (filter.workflow_name !== undefined && e.workflow_name !== filter.workflow_name) continue;
            if (filter.updated_since !== undefined && e.updated_at < filter.updated_since) continue;
            if (filter.updated_before !== undefined && e.updated_at >= filter.updated_before) continue;
            counts[e.state] = (counts[e.state] ?? 0) + 1;
          }
          return counts;
        };
        const times = [undefined, on(7, 9), on(8, 0), on(9, 2), on(9, 3), on(10, 8), on(10, 9), on(11, 0)];
        for (const scope of [{}, { principal: 'local' }, { principal: 'local', workflow_name: 'demo' }]) {
          for (const since of times) {
            for (const before of times) {
              const filter = {
                ...scope,
                ...(since !== undefined ? { updated_since: since } : {}),
                ...(before !== undefined ? { updated_before: before } : {}),
              };
              expect(await store.countExecutions(filter), JSON.stringify(filter)).toEqual(expected(filter));
            }
          }
        }
        expect(await store.listPrincipals()).toEqual(['alice', 'local']);
      });

      it('reads the one-execution page for its owner only: steps, artifacts, recent events and failures', async () => {
        const store = await fresh();
        await seed(store, execution(), execution({ execution_id: 'exec-2', principal: 'bob' }));
        await store.transaction(async (tx) => {
          await tx.insertStep(step());
          await tx.insertStep(step({ seq: 2, step_name: 'build' }));
          await tx.insertArtifact({
            execution_id: 'exec-1',
            step_name: 'design',
            artifact_type: 'report',
            name: 'r',
            content: 'c',
            content_type: 'text/plain',
            size_bytes: 1,
            metadata: null,
          });
          for (let i = 0; i < 6; i++) {
            const type = i % 2 === 0 ? 'step_failed' : 'step_started';
            for (const id of ['exec-1', 'exec-2'])
              await tx.insertTelemetry({
                event_type: type,
                execution_id: id,
                step_name: null,
                agent_name: null,
                metadata: { i },
              });
          }
        });
        const page = await store.executionPage('exec-1', 'local', { telemetry: 4, failures: 2 });
        expect(page?.execution).toEqual(await store.getExecution('exec-1'));
        expect(page?.definition).toBe('{"id":"demo"}');
        expect(page?.steps.map((s) => s.seq)).toEqual([1, 2]);
        expect(page?.artifacts.map((a) => a.name)).toEqual(['r']);
        expect(page?.telemetry.map((e) => e.metadata?.i)).toEqual([2, 3, 4, 5]);
        expect(page?.failures.map((e) => [e.event_type, e.metadata?.i])).toEqual([
          ['step_failed', 2],
          ['step_failed', 4],
        ]);
        // A definition the caller holds is not read again.
        expect(
          (
            await store.executionPage('exec-1', 'local', {
              telemetry: 1,
              failures: 1,
              known: (h) => h === HASH,
            })
          )?.definition,
        ).toBeUndefined();
        // Another principal's execution, or none: nothing.
        expect(await store.executionPage('exec-2', 'local', { telemetry: 4, failures: 2 })).toBeUndefined();
        expect(await store.executionPage('missing', 'local', { telemetry: 4, failures: 2 })).toBeUndefined();
      });

      it("scopes telemetry to a principal's executions", async () => {
        const store = await fresh();
        await seed(store, head('t1'), head('t2', { principal: 'alice' }));
        await store.transaction(async (tx) => {
          for (const id of ['t1', 't2']) {
            await tx.insertTelemetry({
              event_type: 'x',
              execution_id: id,
              step_name: null,
              agent_name: null,
              metadata: null,
            });
          }
        });
        const local = await store.getTelemetry({ principal: 'local', limit: 10 });
        expect(local.map((e) => e.execution_id)).toEqual(['t1']);
        expect(await store.getTelemetry({ principal: 'alice', execution_id: 't1', limit: 10 })).toEqual([]);
      });

      it('lists what changed since a time, oldest change first, for one principal', async () => {
        const store = await fresh();
        await seed(
          store,
          head('c1', { updated_at: minute(1) }),
          head('c2', { updated_at: minute(3) }),
          head('c3', { updated_at: minute(2) }),
          head('c4', { updated_at: minute(4), principal: 'alice' }),
        );
        const changed = await store.changedExecutions({ principal: 'local', since: minute(2), limit: 10 });
        expect(changed.map((h) => [h.execution_id, h.updated_at])).toEqual([
          ['c3', minute(2)],
          ['c2', minute(3)],
        ]);
      });

      it("tells watchers of another connection's commits", async () => {
        const writer = await fresh();
        const watcher = await ns.open();
        if (watcher.watch === undefined) return;
        let calls = 0;
        const unwatch = watcher.watch(() => {
          calls++;
        });
        try {
          // LISTEN (PostgreSQL) starts asynchronously: write until a notification arrives.
          const deadline = Date.now() + (adapter.name === 'sqlite' ? 100 : 5000);
          for (let i = 0; calls === 0 && Date.now() < deadline; i++) {
            await seed(writer, head(`w${i}`));
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          if (adapter.name === 'sqlite') {
            // SQLite tells a store of its own commits only; the dashboard polls for the rest.
            expect(calls).toBe(0);
            await seed(watcher, head('own'));
            expect(calls).toBe(1);
          } else expect(calls).toBeGreaterThan(0);
        } finally {
          unwatch();
        }
      });
    });
  });
