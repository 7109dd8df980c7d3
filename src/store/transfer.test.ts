import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ApprovalRecord, ExecutionStore } from './execution-store.js';
import { adapters, at, execution, sqliteAdapter, step, T0 } from './store-test-kit.js';
import { copyExecutions, type ExecutionBundle, exportExecutions, importExecutions } from './transfer.js';

const ADAPTERS = await adapters('export/import suite');
const source = sqliteAdapter();
afterEach(() => source.closeStores());
afterAll(() => source.cleanup());

const H1 = '1'.repeat(64);
const H2 = '2'.repeat(64);

/** A store with what the service writes: two principals, every kind of record, events interleaved. */
async function populated(): Promise<ExecutionStore> {
  const store = await (await source.fresh()).open();
  await store.transaction(async (tx) => {
    await tx.importDefinition({
      hash: H1,
      workflow_id: 'demo',
      content: '{"id":"demo","v":1}',
      created_at: T0,
    });
    await tx.importDefinition({
      hash: H2,
      workflow_id: 'other',
      content: '{"id":"other"}',
      created_at: at(5),
    });
    await tx.insertExecution(
      execution({
        execution_id: 'exec_b',
        definition_hash: H1,
        state: 'completed',
        current_step: null,
        current_seq: 2,
        completed_steps: ['design', 'implement'],
        context: { z: 1, a: { deep: ['x', null] }, steps: { design: 'ok' } },
        token_nonce: null,
        completed_at: at(9000),
        duration_ms: 9000,
        updated_at: at(9000),
        metadata: { final_output: { url: 'https://example.test/x' } },
      }),
    );
    await tx.insertExecution(
      execution({
        execution_id: 'exec_a',
        principal: 'alice',
        definition_hash: H2,
        state: 'paused',
        token_attempt: 2,
      }),
    );
    await tx.insertExecution(execution({ execution_id: 'exec_c', definition_hash: H1, current_seq: 1 }));
    await tx.insertStep(
      step({ execution_id: 'exec_b', seq: 1, status: 'completed', output: { summary: 'd' } }),
    );
    await tx.insertStep(
      step({
        execution_id: 'exec_b',
        seq: 2,
        step_name: 'implement',
        status: 'completed',
        iteration: 1,
        attempts: 3,
      }),
    );
    await tx.insertStep(step({ execution_id: 'exec_a', lease_owner: 'w-1', lease_expires_at: at(60_000) }));
    await tx.insertStep(step({ execution_id: 'exec_c' }));
    for (const [i, id] of ['exec_b', 'exec_a', 'exec_b', 'exec_c', 'exec_b'].entries()) {
      const artifact = await tx.insertArtifact({
        execution_id: id,
        step_name: 'design',
        artifact_type: i % 2 === 0 ? 'file' : 'report',
        name: `artifact-${i}`,
        content: `content ${i} \u0000 🎉`,
        content_type: 'text/plain',
        size_bytes: 12,
        metadata: i === 1 ? null : { i },
      });
      await tx.insertTelemetry({
        event_type: 'artifact_stored',
        execution_id: id,
        step_name: 'design',
        agent_name: 'default',
        metadata: { artifact_id: artifact, name: `artifact-${i}` },
      });
      await tx.insertTelemetry({
        event_type: 'step_completed',
        execution_id: id,
        step_name: 'design',
        agent_name: null,
        metadata: null,
      });
    }
    await tx.recordSubmission({
      nonce: 'n-b1',
      execution_id: 'exec_b',
      output_hash: 'h1',
      response: { v: 1, kind: 'step' },
      created_at: at(1),
    });
    await tx.recordSubmission({
      nonce: 'n-b2',
      execution_id: 'exec_b',
      output_hash: 'h2',
      response: { v: 1, kind: 'ended' },
      created_at: at(2),
    });
  });
  return store;
}

/** Everything a store holds, with artifact and event ids (which are each store's own) made relative. */
async function contents(store: ExecutionStore) {
  const out: unknown[] = [];
  for await (const bundle of exportExecutions(store)) out.push(comparable(bundle));
  return out;
}

function comparable(b: ExecutionBundle) {
  const names = new Map(b.artifacts.map((a) => [a.id, a.name]));
  return {
    ...b,
    artifacts: b.artifacts.map(({ id: _id, ...a }) => a),
    telemetry: b.telemetry.map(({ id: _id, ...e }) => ({
      ...e,
      metadata:
        typeof e.metadata?.artifact_id === 'number'
          ? { ...e.metadata, artifact_id: `-> ${names.get(e.metadata.artifact_id)}` }
          : e.metadata,
    })),
  };
}

for (const { adapter, skip } of ADAPTERS) {
  describe.skipIf(skip)(
    `export and import through ${adapter.name}${skip ? ' (skipped: no server)' : ''}`,
    () => {
      afterEach(() => adapter.closeStores());
      afterAll(() => adapter.cleanup());

      it('round-trips a populated SQLite store and back with nothing lost', async () => {
        const original = await populated();
        const middle = await (await adapter.fresh()).open();
        const back = await (await source.fresh()).open();
        const there = await copyExecutions(original, middle);
        expect(there).toEqual({
          executions: 3,
          steps: 4,
          artifacts: 5,
          telemetry: 10,
          submissions: 2,
          definitions: 2,
          skipped: [],
          retokened: 0,
        });
        await copyExecutions(middle, back);
        const expected = await contents(original);
        expect(expected.map((b) => (b as ExecutionBundle).execution.execution_id)).toEqual([
          'exec_a',
          'exec_b',
          'exec_c',
        ]);
        expect(await contents(middle)).toEqual(expected);
        expect(await contents(back)).toEqual(expected);
        // Reads the service makes agree too (telemetry order within an execution, listings).
        for (const s of [middle, back]) {
          expect(await s.listExecutions({ principal: 'local', limit: 10 })).toEqual(
            await original.listExecutions({ principal: 'local', limit: 10 }),
          );
          expect(
            (await s.getTelemetry({ execution_id: 'exec_b', limit: 3 })).map((e) => e.event_type),
          ).toEqual(
            (await original.getTelemetry({ execution_id: 'exec_b', limit: 3 })).map((e) => e.event_type),
          );
          expect(await s.getDefinition(H2)).toBe('{"id":"other"}');
        }
      });

      it('an import run again skips what is there; a target with its own executions keeps them', async () => {
        const original = await populated();
        const target = await (await adapter.fresh()).open();
        await target.transaction(async (tx) => {
          await tx.importDefinition({
            hash: H1,
            workflow_id: 'demo',
            content: '{"id":"demo","v":1}',
            created_at: T0,
          });
          await tx.insertExecution(execution({ execution_id: 'exec_local', definition_hash: H1 }));
          await tx.insertArtifact({
            execution_id: 'exec_local',
            step_name: 'design',
            artifact_type: 'data',
            name: 'mine',
            content: 'mine',
            content_type: 'text/plain',
            size_bytes: 4,
            metadata: null,
          });
        });
        const first = await copyExecutions(original, target);
        expect(first).toMatchObject({ executions: 3, definitions: 1, skipped: [] });
        const again = await copyExecutions(original, target);
        expect(again).toMatchObject({ executions: 0, steps: 0, skipped: ['exec_a', 'exec_b', 'exec_c'] });
        const all = await contents(target);
        expect(all).toHaveLength(4);
        expect(all.filter((b) => (b as ExecutionBundle).execution.execution_id !== 'exec_local')).toEqual(
          await contents(original),
        );
        expect((await target.getArtifacts('exec_local')).map((a) => a.name)).toEqual(['mine']);
      });

      it('newTokens gives every live token and the awaited poll token a fresh nonce, and nothing else', async () => {
        const original = await populated();
        const approval = (id: string, status: ApprovalRecord['status'], poll: string): ApprovalRecord => ({
          approval_id: id,
          execution_id: 'exec_c',
          principal: 'local',
          workflow_name: 'demo',
          step_name: 'design',
          seq: 1,
          prompt: 'Ship it?',
          approvers: null,
          status,
          requested_at: T0,
          expires_at: null,
          output: { summary: 'release' },
          poll_nonce: poll,
          decided_by: status === 'pending' ? null : 'ann',
          decided_via: status === 'pending' ? null : 'dashboard',
          decided_at: status === 'pending' ? null : at(5),
          reason: null,
        });
        // exec_c waits on appr_now, polled with its live token; appr_old was decided on an earlier token.
        await original.transaction(async (tx) => {
          const c = await tx.getExecution('exec_c');
          if (!c) throw new Error('no exec_c');
          await tx.updateExecution({
            ...c,
            token_nonce: 'n-live',
            metadata: { awaiting_approval: 'appr_now' },
          });
          await tx.insertApproval(approval('appr_old', 'approved', 'n-before'));
          await tx.insertApproval(approval('appr_now', 'pending', 'n-live'));
        });
        const before = new Map<string, ExecutionBundle>();
        for await (const b of exportExecutions(original)) before.set(b.execution.execution_id, b);
        const target = await (await adapter.fresh()).open();
        const report = await importExecutions(target, before.values(), { newTokens: true });
        // exec_b is completed: it has no live token to replace.
        expect(report).toMatchObject({ executions: 3, retokened: 2 });
        const after = new Map<string, ExecutionBundle>();
        for await (const b of exportExecutions(target)) after.set(b.execution.execution_id, b);
        for (const id of ['exec_a', 'exec_c']) {
          const nonce = after.get(id)?.execution.token_nonce;
          expect(nonce, id).toMatch(/^[0-9a-f]{32}$/);
          expect(nonce, id).not.toBe(before.get(id)?.execution.token_nonce);
          // Only the nonce: the rest of the execution, and its step, attempt and times, are as exported.
          expect({ ...after.get(id)?.execution, token_nonce: null }).toEqual({
            ...before.get(id)?.execution,
            token_nonce: null,
          });
        }
        expect(after.get('exec_b')?.execution.token_nonce).toBeNull();
        const polls = Object.fromEntries(
          (after.get('exec_c')?.approvals ?? []).map((a) => [a.approval_id, a.poll_nonce]),
        );
        // The awaited approval polls with the new live token; a decided one keeps its recorded answer.
        expect(polls).toEqual({ appr_old: 'n-before', appr_now: after.get('exec_c')?.execution.token_nonce });
        // Submissions (answers to tokens already used) are kept as they were.
        expect(after.get('exec_b')?.submissions).toEqual(before.get('exec_b')?.submissions);
        // Without the option, tokens are copied as they are.
        const plain = await (await adapter.fresh()).open();
        expect(await importExecutions(plain, before.values())).toMatchObject({ retokened: 0 });
        expect((await plain.getExecution('exec_c'))?.token_nonce).toBe('n-live');
      });

      it('refuses bundles that do not hold together, saying which and why, and writes none of them', async () => {
        const target = await (await adapter.fresh()).open();
        const bundles: ExecutionBundle[] = [];
        for await (const b of exportExecutions(await populated())) bundles.push(b);
        const good = bundles[0];
        if (!good) throw new Error('no bundle');
        await expect(importExecutions(target, [{ ...good, steps: 'nope' }])).rejects.toThrow(
          /bundle 1: steps/,
        );
        await expect(
          importExecutions(target, [{ ...good, definition: { ...good.definition, hash: 'f'.repeat(64) } }]),
        ).rejects.toThrow(/bundle 1 \(exec_a\): the definition is not the one the execution pinned/);
        await expect(
          importExecutions(target, [{ ...good, steps: [step({ execution_id: 'exec_zzz' })] }]),
        ).rejects.toThrow(/another execution/);
        await expect(importExecutions(target, [null])).rejects.toThrow(/bundle 1/);
        expect(await target.pageExecutions(null, 10)).toEqual([]);
      });
    },
  );
}
