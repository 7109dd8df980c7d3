import * as fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordReliability } from './helpers/reliability.js';
import { RawServer, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

const MAX_BYTES = 65_536;
const RUNS = 10;
const FRAMES_PER_RUN = 1_000;

/** A frame the server must answer exactly once, in order: a valid request with a unique id. */
interface Valid {
  kind: 'valid';
  id: string;
  text: string;
}
interface Noise {
  kind: 'noise';
  bytes: Buffer;
}
type Frame = Valid | Noise;

const line = (text: string) => Buffer.from(`${text}\n`, 'utf8');

const validRequest = fc
  .constantFrom(
    { method: 'ping' },
    { method: 'workflow_list', params: null },
    { method: 'tools/list', params: {} },
    { method: 'resources/list' },
    { method: 'workflow_get', params: { id: 'ai-task-implementation' } },
    { method: 'workflow_get', params: { id: 'no-such-workflow' } },
    { method: 'workflow_next', params: { workflowId: 'coding-task-workflow', completedSteps: [] } },
    { method: 'workflow.list' },
    { method: 'tools/call', params: { name: 'workflow_get', arguments: { id: 'mr-review-workflow' } } },
    { method: 'no/such/method' },
  )
  .map((r) => ({ jsonrpc: '2.0', ...r }));

/** Everything that is not a valid request: broken JSON, wrong types, deep or huge values, bad bytes. */
const noise: fc.Arbitrary<Buffer> = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => line(`{${s}`)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => line(JSON.stringify(v))),
  fc
    .record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('1.0'), fc.integer()),
        id: fc.oneof(
          fc.double(),
          fc.constantFrom(1.5, 1e308, 9007199254740992, null, true),
          fc.array(fc.integer()),
          fc.object(),
        ),
        method: fc.oneof(
          fc.constantFrom('ping', 'tools/call', 'workflow_list', ''),
          fc.integer(),
          fc.constant(null),
        ),
        params: fc.oneof(
          fc.constant([]),
          fc.constant(5),
          fc.constant({ _meta: 5 }),
          fc.constant({ _meta: null }),
          fc.constant({ _meta: { progressToken: {} } }),
          fc.object(),
        ),
        result: fc.jsonValue(),
      },
      { requiredKeys: [] },
    )
    .map((v) => line(JSON.stringify(v))),
  fc.integer({ min: 65, max: 400 }).map((depth) => line(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
  fc
    .integer({ min: 65, max: 300 })
    .map((depth) =>
      line(
        `{"jsonrpc":"2.0","id":"deep","method":"workflow_next","params":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`,
      ),
    ),
  fc.integer({ min: MAX_BYTES + 1, max: MAX_BYTES * 3 }).map((n) => line(`"${'x'.repeat(n)}"`)),
  fc
    .uint8Array({ minLength: 1, maxLength: 64 })
    .map((bytes) => Buffer.concat([Buffer.from(bytes.filter((b) => b !== 10)), Buffer.from('\n')])),
  fc.constant(Buffer.from([0xff, 0xfe, 0x7b, 0x22, 0xc3, 0x28, 0x0a])),
);

let counter = 0;
const frames = fc.array(
  fc.oneof({ weight: 1, arbitrary: validRequest.map((r) => ({ r })) }, { weight: 2, arbitrary: noise }),
  {
    minLength: FRAMES_PER_RUN,
    maxLength: FRAMES_PER_RUN,
  },
);

function toFrames(items: ({ r: Json } | Buffer)[], run: number): Frame[] {
  return items.map((item) => {
    if (Buffer.isBuffer(item)) return { kind: 'noise', bytes: item };
    const id = `v-${run}-${counter++}`;
    return { kind: 'valid', id, text: JSON.stringify({ ...item.r, id }) };
  });
}

let sb: Sandbox;
let server: RawServer;

beforeAll(async () => {
  sb = sandbox({ WORKFLOWLOOKUP_MAX_MESSAGE_BYTES: String(MAX_BYTES) });
  server = new RawServer({ env: sb.env, cwd: sb.project });
  await server.initialize();
});

afterAll(() => {
  server.kill();
  sb.cleanup();
});

describe('fuzzing the stdio wire', () => {
  it(`${RUNS * FRAMES_PER_RUN} generated frames, split at random across writes: the server never dies and answers every valid request once, in order`, async ({
    task,
  }) => {
    let run = 0;
    let framesSent = 0;
    await fc.assert(
      fc.asyncProperty(
        frames,
        fc.array(fc.integer({ min: 1, max: 4096 }), { minLength: 64, maxLength: 64 }),
        async (items, cuts) => {
          const batch = toFrames(items, run++);
          framesSent += batch.length;
          const from = server.lines.length;
          const bytes = Buffer.concat(batch.map((f) => (f.kind === 'valid' ? line(f.text) : f.bytes)));
          // Lines split across writes at random points.
          for (let at = 0, i = 0; at < bytes.length; i++) {
            const size = cuts[i % cuts.length] as number;
            server.child.stdin.write(bytes.subarray(at, at + size));
            at += size;
          }
          const endId = `end-${run}`;
          server.send({ jsonrpc: '2.0', id: endId, method: 'ping' });
          const deadline = Date.now() + 60_000;
          while (!server.lines.slice(from).some((l) => l.includes(`"${endId}"`))) {
            if (server.child.exitCode !== null) throw new Error(`server died: ${server.stderr.slice(-2000)}`);
            if (Date.now() > deadline) throw new Error('timed out waiting for the batch to be answered');
            await new Promise((r) => setTimeout(r, 20));
          }
          const answers = server.lines.slice(from).map((l) => JSON.parse(l) as Json);
          for (const a of answers) {
            expect(a.jsonrpc).toBe('2.0');
            expect('id' in a).toBe(true);
            expect('result' in a !== 'error' in a).toBe(true);
          }
          const valid = batch.filter((f): f is Valid => f.kind === 'valid').map((f) => f.id);
          const answeredValid = answers
            .map((a) => a.id)
            .filter((id) => typeof id === 'string' && id.startsWith('v-'));
          expect(answeredValid).toEqual(valid);
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    );
    expect(server.child.exitCode).toBeNull();
    recordReliability(
      task,
      'stdio wire fuzzing (invalid JSON, wrong id/method/params types, batches, deep nesting, oversize lines, invalid UTF-8, split writes)',
      framesSent,
      framesSent,
    );
  });
});
