import { execFile, spawnSync } from 'node:child_process';
import { createHash, createPublicKey, verify as edVerify, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Decider, ExecutionService } from '../src/executions/execution-service.js';
import { eventHash, genesis } from '../src/executions/record-model.js';
import { type Statement, signStatement } from '../src/record/envelope.js';
import type { RecordKeyring } from '../src/record/keys.js';
import { verifyRecord } from '../src/record/verify.js';
import { addToken } from '../src/transports/http-auth.js';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { CLI, callTool, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

// Proof of process: every execution leaves a record chained as it happens, signed in a standard
// envelope (Sigstore bundle, DSSE, in-toto Statement), and verified offline by one command. Driven
// through the real protocol (the record resource), the built CLI (record, verify, keys) and the HTTP
// server's well-known keys; every tamper fails with its own message.

type Json = Record<string, any>;

const run = promisify(execFile);

const OPERATOR: Decider = { principal: null, name: 'cli:tester', via: 'cli', operator: true };

const WORKFLOW = `id: checked-release
name: Checked release
description: a fix the server checks, notes a person approves, then publish
version: 1.2.0
steps:
  - id: fix
    title: Fix it
    prompt: Fix the bug.
    verify:
      check: tests
  - id: notes
    title: Release notes
    prompt: Write the release notes.
    approval:
      prompt: Ship these notes?
  - id: publish
    title: Publish
    prompt: Publish the release.
`;

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

function prepare() {
  const sb = sandbox();
  boxes.push(sb);
  const work = join(sb.root, 'work');
  mkdirSync(work);
  const checksFile = join(sb.root, 'checks.json');
  const code =
    "const ok=require('fs').existsSync('fixed');console.log(ok?'all pass':'1 failing');process.exit(ok?0:1)";
  writeFileSync(
    checksFile,
    JSON.stringify({
      checks: {
        tests: { command: process.execPath, args: ['-e', code], cwd: 'directory', directory: work, env: [] },
      },
    }),
  );
  writeFileSync(join(sb.runtime, 'checked-release.yaml'), WORKFLOW);
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  sb.env.WORKFLOWLOOKUP_CHECKS_FILE = checksFile;
  return { sb, work };
}

async function connect(sb: Sandbox) {
  const conn = await inProcessClient(sb);
  open.push(conn);
  const call = (name: string, args: Json) => callTool(conn.client, name, args);
  const readRecord = async (id: string) => {
    const read = await conn.client.readResource({ uri: `workflowlookup://workflow/execution_record/${id}` });
    return JSON.parse((read.contents[0] as { text: string }).text) as Json;
  };
  return { ...conn, call, readRecord, service: () => conn.app.services.executions() };
}

/** Walks checked-release to its end: a failing check, the fix, a person's approval, the last step. */
async function walk(
  call: (name: string, args: Json) => Promise<Json>,
  service: ExecutionService,
  work: string,
) {
  const started = await call('workflow_start', {
    workflow_id: 'checked-release',
    context: { ticket: 'BUG-7' },
  });
  const failed = await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'fixed' } });
  expect(failed).toMatchObject({ success: false, check: { passed: false } });
  writeFileSync(join(work, 'fixed'), '');
  const fixed = await call('workflow_next_step', {
    token: tokenOf(failed),
    output: { summary: 'fixed for real' },
  });
  expect(fixed).toMatchObject({ success: true, step_name: 'notes' });
  const waiting = await call('workflow_next_step', {
    token: tokenOf(fixed),
    output: { summary: 'release notes: the parser no longer drops lines' },
  });
  expect(waiting).toMatchObject({ approval: { status: 'pending' } });
  const pending = (await service.approvalsOf(started.execution_id, null))?.find(
    (a) => a.status === 'pending',
  );
  await service.decide(started.execution_id, 'approve', OPERATOR, 'good', {
    approval_id: pending?.approval_id as string,
  });
  const publish = await call('workflow_next_step', { token: tokenOf(waiting), output: { summary: 'poll' } });
  expect(publish).toMatchObject({ step_name: 'publish' });
  const done = await call('workflow_next_step', {
    token: tokenOf(publish),
    output: { summary: 'published 1.2.0' },
  });
  expect(done).toMatchObject({ workflow_state: 'completed' });
  return started.execution_id as string;
}

function cli(sb: Sandbox, args: string[], input?: string) {
  return spawnSync(process.execPath, [CLI, ...args], {
    env: sb.env,
    cwd: sb.project,
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
}

function payloadOf(bundle: Json): Statement {
  return JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString('utf8')) as Statement;
}

/** Every hash after an edit made right again, as a forger holding the key would. */
function rechain(s: Statement): void {
  let prev = genesis(s.predicate.execution.id);
  for (const e of s.predicate.events) {
    e.prev = prev;
    e.hash = eventHash(s.predicate.execution.id, e);
    prev = e.hash;
  }
  s.predicate.head = prev;
}

/** The statement changed, then signed again with the server's own key: only the chain can tell. */
function resigned(bundle: Json, keyring: RecordKeyring, change: (s: Statement) => void): string {
  const statement = payloadOf(bundle);
  change(statement);
  return JSON.stringify(signStatement(statement, keyring));
}

describe('execution records', () => {
  it('chains every event as it happens and exports a signed record the agent reads as a resource', async () => {
    const { sb, work } = prepare();
    const { call, readRecord, service, app } = await connect(sb);
    const svc = await service();
    const id = await walk(call, svc, work);
    const bundle = await readRecord(id);
    expect(bundle).toMatchObject({
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: { publicKey: { hint: expect.stringMatching(/^[0-9a-f]{64}$/) } },
      dsseEnvelope: { payloadType: 'application/vnd.in-toto+json' },
    });
    const statement = payloadOf(bundle);
    const file = createHash('sha256').update(WORKFLOW).digest('hex');
    expect(statement).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      predicateType: 'https://workflowlookup.dev/attestation/execution-record/v1',
      subject: [{ name: 'workflow/checked-release@1.2.0', digest: { sha256: file } }],
      predicate: {
        execution: { id, principal: 'local', state: 'completed' },
        workflow: { id: 'checked-release', version: '1.2.0', file_sha256: file },
      },
    });
    const events = statement.predicate.events;
    const types = events.map((e) => e.type);
    for (const t of [
      'workflow_created',
      'output_submitted',
      'check_run',
      'step_failed',
      'step_completed',
      'approval_requested',
      'approval_decided',
      'workflow_completed',
    ])
      expect(types).toContain(t);
    // Outputs by digest, never their text; free text (a reason, a check's tail) by digest too.
    const text = JSON.stringify(statement);
    expect(text).not.toContain('parser no longer drops lines');
    expect(text).not.toContain('1 failing');
    const created = events.find((e) => e.type === 'workflow_created');
    expect(created?.body).toMatchObject({
      workflow_version: '1.2.0',
      file_sha256: file,
      inputs_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const decided = events.find((e) => e.type === 'approval_decided');
    expect(decided?.body).toMatchObject({
      decision: 'approved',
      decided_via: 'cli',
      decided_by: 'cli:tester',
    });
    expect(decided?.body).toHaveProperty('output_sha256');
    expect(decided?.body).toHaveProperty('reason_sha256');
    const result = verifyRecord(JSON.stringify(bundle), {
      keys: app.services.records.trusted(),
      require: ['completed', 'approved', 'checked'],
      workflowFile: Buffer.from(WORKFLOW),
      execution: id,
      head: statement.predicate.head,
    });
    expect(result).toMatchObject({ ok: true, verified: { execution: id, state: 'completed', migrated: 0 } });
    // Another principal's record is not found, as their executions are.
    await expect(svc.record(id, { principal: 'mallory' })).rejects.toMatchObject({
      error: { code: 'execution_not_found' },
    });
    await expect(readRecord('exec_nope')).rejects.toThrow(/not found/i);
  });

  it('names the first tamper precisely: edited, dropped, inserted, reordered, swapped, replayed, forged, unsigned, unknown key, wrong definition', async () => {
    const { sb, work } = prepare();
    const { call, readRecord, service, app } = await connect(sb);
    const svc = await service();
    const id = await walk(call, svc, work);
    const other = await call('workflow_start', { workflow_id: 'checked-release' });
    const bundle = await readRecord(id);
    const otherBundle = await readRecord(other.execution_id);
    const { keyring } = app.services.records;
    const keys = app.services.records.trusted();
    const check = (text: string, extra: Json = {}) => {
      const r = verifyRecord(text, { keys, ...extra });
      return r.ok ? 'ok' : r.failure;
    };
    expect(check(JSON.stringify(bundle))).toBe('ok');
    // Changed without signing again: the signature says so.
    const raw = structuredClone(bundle);
    const edited = payloadOf(raw);
    (edited.predicate.events[2] as Json).body.seq = 99;
    raw.dsseEnvelope.payload = Buffer.from(JSON.stringify(edited)).toString('base64');
    expect(check(JSON.stringify(raw))).toMatch(/signature by key [0-9a-f]{64} does not match the record/);
    // Changed and signed again (a server whose store was edited): the chain says which event.
    expect(check(resigned(bundle, keyring, (s) => ((s.predicate.events[2] as Json).body.seq = 99)))).toMatch(
      /^event 3 \([a-z_]+\): its hash is [0-9a-f]{64}, its content hashes to [0-9a-f]{64} \(the event was edited\)$/,
    );
    expect(
      check(
        resigned(bundle, keyring, (s) => {
          s.predicate.events.splice(3, 1);
          s.predicate.event_count -= 1;
        }),
      ),
    ).toMatch(/^event 4: its number is 5, expected 4/);
    expect(
      check(
        resigned(bundle, keyring, (s) => {
          const copy = structuredClone(s.predicate.events[1]) as Statement['predicate']['events'][number];
          s.predicate.events.splice(2, 0, copy);
        }),
      ),
    ).toMatch(/^event 3: its number is 2, expected 3/);
    expect(
      check(
        resigned(bundle, keyring, (s) => {
          const [a, b] = [s.predicate.events[3], s.predicate.events[4]] as [Json, Json];
          [a.n, b.n] = [b.n, a.n];
          s.predicate.events[3] = b as never;
          s.predicate.events[4] = a as never;
        }),
      ),
    ).toMatch(/^event 4: its prev is [0-9a-f]{64}, expected event 3's hash/);
    // Another execution's events under this execution's id: its chain starts elsewhere.
    expect(
      check(
        resigned(bundle, keyring, (s) => {
          s.predicate.events = payloadOf(otherBundle).predicate.events;
          s.predicate.event_count = s.predicate.events.length;
        }),
      ),
    ).toMatch(/^event 1: it does not start this execution's chain .*a chain of another execution$/);
    // Another execution's whole record, where this one's is required.
    expect(check(JSON.stringify(otherBundle), { execution: id })).toBe(
      `the record is of execution ${other.execution_id}, expected ${id}`,
    );
    // An older record of the same execution, replayed where the later one is required.
    const older = JSON.stringify(
      signStatement(
        (() => {
          const s = payloadOf(bundle);
          s.predicate.events = s.predicate.events.slice(0, 5);
          s.predicate.event_count = 5;
          s.predicate.head = (s.predicate.events[4] as Json).hash;
          s.predicate.execution.state = 'running';
          return s;
        })(),
        keyring,
      ),
    );
    const head = payloadOf(bundle).predicate.head;
    expect(check(older, { head })).toMatch(
      /^the record ends at head [0-9a-f]{64}; the required head .* is not one of its events/,
    );
    expect(check(older, { require: ['completed'] })).toBe('completed: the execution is running');
    // The head the record claims must be its last event's.
    expect(
      check(resigned(bundle, keyring, (s) => (s.predicate.head = (s.predicate.events[0] as Json).hash))),
    ).toMatch(/^the record's head is [0-9a-f]{64}, expected the last event's hash/);
    // Forged, missing, unknown key.
    const forged = structuredClone(bundle);
    const sig = Buffer.from(forged.dsseEnvelope.signatures[0].sig, 'base64');
    sig[0] = (sig[0] as number) ^ 0xff;
    forged.dsseEnvelope.signatures[0].sig = sig.toString('base64');
    expect(check(JSON.stringify(forged))).toMatch(/does not match the record \(forged/);
    const unsigned = structuredClone(bundle);
    unsigned.dsseEnvelope.signatures = [];
    expect(() => check(JSON.stringify(unsigned))).toThrow(/not a valid Sigstore bundle/);
    const bare = { ...structuredClone(bundle.dsseEnvelope), signatures: [] };
    expect(check(JSON.stringify(bare))).toBe('the record is not signed (its envelope has no signature)');
    const stranger = generateKeyPairSync('ed25519').publicKey;
    expect(
      verifyRecord(JSON.stringify(bundle), { keys: new Map([['someone-else', stranger]]) }),
    ).toMatchObject({
      ok: false,
      failure: expect.stringMatching(
        /^the record is signed by key [0-9a-f]{64}, which is not among the 1 trusted key\(s\)/,
      ),
    });
    // The definition: another file than the one the execution ran.
    expect(
      check(JSON.stringify(bundle), { workflowFile: Buffer.from(WORKFLOW.replace('1.2.0', '1.2.1')) }),
    ).toMatch(
      /^the workflow file's sha256 is [0-9a-f]{64}; the execution ran checked-release@1.2.0 with file/,
    );
    // Policy: an execution that is not done, an approval not by a person.
    expect(check(JSON.stringify(otherBundle), { require: ['completed'] })).toBe(
      'completed: the execution is running',
    );
    expect(
      check(
        resigned(bundle, keyring, (s) => {
          const d = s.predicate.events.find((e) => e.type === 'approval_decided') as Json;
          d.body.decided_via = 'timeout';
        }),
        { require: ['approved'] },
      ),
    ).toMatch(/^event \d+ \(approval_decided\): its hash/);
    // A chain made whole again after the edit (a forger holding the key): the policy still names it.
    const byTimeout = resigned(bundle, keyring, (s) => {
      const d = s.predicate.events.find((e) => e.type === 'approval_decided') as Json;
      d.body.decided_via = 'timeout';
      rechain(s);
    });
    expect(check(byTimeout)).toBe('ok');
    expect(check(byTimeout, { require: ['approved'] })).toMatch(
      /^approved: event \d+ \(step "notes"\) was approved by timeout, expected a person \(dashboard, cli or elicitation\)$/,
    );
    const unchecked = resigned(bundle, keyring, (s) => {
      const runs = s.predicate.events.filter((e) => e.type === 'check_run') as Json[];
      (runs.at(-1) as Json).body.passed = false;
      rechain(s);
    });
    expect(check(unchecked, { require: ['checked'] })).toMatch(
      /^checked: event \d+ \(check "tests" on step "fix"\) did not pass \(exit 0\), and event \d+ completed the step$/,
    );
  });

  it('the store was edited: the exported record names the edited event; a record from before records is made by the migration, marked', async () => {
    const { sb, work } = prepare();
    const { call, readRecord, service, app } = await connect(sb);
    const id = await walk(call, await service(), work);
    const db = new Database(join(sb.root, 'data', 'workflowlookup.db'));
    try {
      const row = db
        .prepare('SELECT body FROM execution_record WHERE execution_id = ? AND n = 4')
        .get(id) as {
        body: string;
      };
      const body = JSON.parse(row.body);
      body.attempt = 7;
      db.prepare('UPDATE execution_record SET body = ? WHERE execution_id = ? AND n = 4').run(
        JSON.stringify(body),
        id,
      );
      const keys = app.services.records.trusted();
      expect(verifyRecord(JSON.stringify(await readRecord(id)), { keys })).toMatchObject({
        ok: false,
        failure: expect.stringMatching(/^event 4 \([a-z_]+\): .*\(the event was edited\)$/),
      });
      // What the dashboard's execution page says of it, from the stored chain (nothing signed for that).
      expect(await app.services.records.status(id, { principal: 'local' })).toMatchObject({
        ok: false,
        text: expect.stringMatching(/^event 4 \([a-z_]+\): .*\(the event was edited\)$/),
      });
      // An execution from before records existed: its chain is made from its telemetry, marked migrated.
      db.prepare('DELETE FROM execution_record WHERE execution_id = ?').run(id);
      const migrated = await readRecord(id);
      const events = payloadOf(migrated).predicate.events;
      expect(events.length).toBeGreaterThan(5);
      expect(events.every((e) => e.migrated === true)).toBe(true);
      expect(verifyRecord(JSON.stringify(migrated), { keys })).toMatchObject({
        ok: true,
        verified: { migrated: events.length },
      });
    } finally {
      db.close();
    }
  });

  it('an independent verifier (node:crypto only, written from the DSSE and in-toto specifications) accepts what the server signs', async () => {
    const { sb, work } = prepare();
    const { call, readRecord, service, app } = await connect(sb);
    const id = await walk(call, await service(), work);
    const bundle = await readRecord(id);
    const jwks = app.services.records.keyring.jwks();
    // DSSE v1: PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.
    const env = bundle.dsseEnvelope;
    const body = Buffer.from(env.payload, 'base64');
    const type = Buffer.from(env.payloadType, 'utf8');
    const pae = Buffer.concat([
      Buffer.from(`DSSEv1 ${type.length} `),
      type,
      Buffer.from(` ${body.length} `),
      body,
    ]);
    const [signature] = env.signatures;
    const jwk = jwks.keys.find((k) => k.kid === signature.keyid);
    expect(jwk).toBeDefined();
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk?.x as string }, format: 'jwk' });
    expect(edVerify(null, pae, key, Buffer.from(signature.sig, 'base64'))).toBe(true);
    // The chain, as docs/records.md defines it: sha256 of the JCS (RFC 8785) form of each event.
    const jcs = (v: unknown): string =>
      Array.isArray(v)
        ? `[${v.map(jcs).join(',')}]`
        : v !== null && typeof v === 'object'
          ? `{${Object.keys(v)
              .sort()
              .map((k) => `${JSON.stringify(k)}:${jcs((v as Json)[k])}`)
              .join(',')}}`
          : JSON.stringify(v);
    const statement = JSON.parse(body.toString('utf8'));
    expect(statement._type).toBe('https://in-toto.io/Statement/v1');
    let prev = createHash('sha256').update(`workflowlookup-record:v1:${id}`).digest('hex');
    for (const [i, e] of statement.predicate.events.entries()) {
      expect(e.n).toBe(i + 1);
      expect(e.prev).toBe(prev);
      const { hash, migrated: _m, ...content } = e;
      prev = createHash('sha256')
        .update(jcs({ execution_id: id, ...content }))
        .digest('hex');
      expect(hash).toBe(prev);
    }
    expect(statement.predicate.head).toBe(prev);
  });

  it('record, verify and keys on the command line: exit 0, 1 naming the failure, 2 for what is not a record; rotation keeps old records verifying, revocation does not', async () => {
    const { sb, work } = prepare();
    const { call, service } = await connect(sb);
    const id = await walk(call, await service(), work);
    const out = join(sb.root, 'record.json');
    const recorded = cli(sb, ['record', id, '--out', out]);
    expect(recorded.status, recorded.stderr).toBe(0);
    const keysOut = cli(sb, ['keys']);
    expect(keysOut.status, keysOut.stderr).toBe(0);
    const jwks = JSON.parse(keysOut.stdout);
    expect(jwks.keys).toHaveLength(1);
    const keysFile = join(sb.root, 'team-keys.json');
    writeFileSync(keysFile, keysOut.stdout);
    const workflowFile = join(sb.runtime, 'checked-release.yaml');
    const ok = cli(sb, [
      'verify',
      out,
      '--keys',
      keysFile,
      '--workflow',
      workflowFile,
      '--require',
      'completed,approved,checked',
      '--execution',
      id,
    ]);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`verified: execution ${id} of checked-release@1.2.0, completed`);
    expect(ok.stdout).toContain('approved: 1 approval(s), each decided by a person');
    expect(ok.stdout).toContain(
      'checked: 2 check run(s), every step completed on a passing one (1 failed run(s) were fixed)',
    );
    // From stdin, against the host's own keys.
    expect(cli(sb, ['verify', '-'], readFileSync(out, 'utf8')).status).toBe(0);
    // A failure: exit 1, named.
    const other = cli(sb, ['verify', out, '--keys', keysFile, '--execution', 'exec_other']);
    expect(other.status).toBe(1);
    expect(other.stderr).toContain(`the record is of execution ${id}, expected exec_other`);
    // Not a record, bad options: exit 2 with a clear message, never a crash.
    const junk = join(sb.root, 'junk.json');
    writeFileSync(junk, '{"mediaType": 12');
    const malformed = cli(sb, ['verify', junk, '--keys', keysFile]);
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toMatch(/the record is not JSON/);
    writeFileSync(junk, '{"hello": "world"}');
    expect(cli(sb, ['verify', junk, '--keys', keysFile]).stderr).toMatch(/neither a Sigstore bundle/);
    writeFileSync(junk, Buffer.alloc(33 * 1024 * 1024, 0x20));
    const big = cli(sb, ['verify', junk, '--keys', keysFile]);
    expect(big.status).toBe(2);
    expect(big.stderr).toMatch(/at most 33554432 are read/);
    expect(cli(sb, ['verify', out, '--require', 'signed']).stderr).toMatch(/unknown requirement "signed"/);
    expect(cli(sb, ['verify']).status).toBe(2);
    // A host that never signed trusts nothing by default, and says so (it generates no key to trust).
    const stranger = cli({ ...sb, env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'elsewhere') } }, [
      'verify',
      out,
    ]);
    expect(stranger.status).toBe(2);
    expect(stranger.stderr).toContain('this host has no record keys to trust');
    expect(existsSync(join(sb.root, 'elsewhere', 'record-keys.json'))).toBe(false);
    expect(cli(sb, ['verify', join(sb.root, 'missing.json')]).stderr).toMatch(/cannot read the record/);
    const noExec = cli(sb, ['record', 'exec_missing']);
    expect(noExec.status).toBe(1);
    expect(noExec.stderr).toContain('no such execution');
    // Rotation: a new key signs, the old one stays published, so the old record still verifies.
    const rotated = cli(sb, ['keys', 'rotate']);
    expect(rotated.status, rotated.stderr).toBe(0);
    const after = JSON.parse(cli(sb, ['keys']).stdout);
    expect(after.keys).toHaveLength(2);
    expect(after.keys[1]).toMatchObject({ kid: jwks.keys[0].kid, retired_at: expect.any(String) });
    writeFileSync(keysFile, JSON.stringify(after));
    expect(cli(sb, ['verify', out, '--keys', keysFile]).status).toBe(0);
    const newer = join(sb.root, 'newer.json');
    expect(cli(sb, ['record', id, '--out', newer]).status).toBe(0);
    expect(JSON.parse(readFileSync(newer, 'utf8')).verificationMaterial.publicKey.hint).toBe(
      after.keys[0].kid,
    );
    // Revocation: the old key is no longer published; what it signed no longer verifies.
    expect(cli(sb, ['keys', 'revoke', after.keys[0].kid]).stderr).toMatch(/signs now; rotate first/);
    expect(cli(sb, ['keys', 'revoke', jwks.keys[0].kid]).status).toBe(0);
    const revoked = cli(sb, ['verify', out]);
    expect(revoked.status).toBe(1);
    expect(revoked.stderr).toMatch(/which is not among the 1 trusted key\(s\) \(unknown, or revoked\)/);
    expect(cli(sb, ['verify', newer]).status).toBe(0);
  });

  it('serves the public keys at the well-known URL of the HTTP server, which verify reads', async () => {
    const { sb, work } = prepare();
    const { call, service } = await connect(sb);
    const id = await walk(call, await service(), work);
    const out = join(sb.root, 'record.json');
    expect(cli(sb, ['record', id, '--out', out]).status).toBe(0);
    const server = await inProcessHttp(
      sb,
      { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data') },
      { dashboard: true },
    );
    open.push(server);
    // The dashboard's execution page offers the record and says whether it verifies.
    const page = await (await fetch(new URL(`/dashboard/executions/${id}`, server.url))).text();
    expect(page).toContain(`href="/dashboard/executions/${id}/record"`);
    expect(page).toMatch(/Verifies: \d+ events chained, signed by key [0-9a-f]{16}…/);
    const download = await fetch(new URL(`/dashboard/executions/${id}/record`, server.url));
    expect(download.headers.get('content-disposition')).toBe(
      `attachment; filename="record-${id}.sigstore.json"`,
    );
    const downloaded = join(sb.root, 'downloaded.json');
    writeFileSync(downloaded, await download.text());
    expect((await fetch(new URL('/dashboard/executions/exec_nope/record', server.url))).status).toBe(404);
    const url = new URL('/.well-known/workflowlookup-record-keys.json', server.url);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/jwk-set+json');
    expect(await res.json()).toEqual(JSON.parse(cli(sb, ['keys']).stdout));
    expect((await fetch(url, { method: 'POST' })).status).toBe(405);
    // Not spawnSync: the server answering the keys runs in this process.
    const verified = await run(process.execPath, [CLI, 'verify', out, '--keys', String(url)], {
      env: sb.env,
    });
    expect(verified.stdout).toContain(`verified: execution ${id}`);
    const fromDashboard = await run(process.execPath, [CLI, 'verify', downloaded, '--keys', String(url)], {
      env: sb.env,
    });
    expect(fromDashboard.stdout).toContain(`verified: execution ${id}`);
  });

  it("another principal's token reads no record of alice's: not through the resource, not from the dashboard", async () => {
    const { sb } = prepare();
    const file = join(sb.root, 'tokens.json');
    writeFileSync(file, JSON.stringify({ tokens: [] }));
    const alice = await addToken(file, 'alice-agent', ['read', 'run'], 'alice');
    const bob = await addToken(file, 'bob-agent', ['read', 'run'], 'bob');
    const server = await inProcessHttp(
      sb,
      { WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: file },
      { dashboard: true },
    );
    open.push(server);
    const client = async (token: string) => {
      const c = new Client({ name: 'agent', version: '1.0.0' });
      await c.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      open.push(c);
      return c;
    };
    const aliceClient = await client(alice);
    const started = await callTool(aliceClient, 'workflow_start', { workflow_id: 'checked-release' });
    const uri = `workflowlookup://workflow/execution_record/${started.execution_id}`;
    const mine = await aliceClient.readResource({ uri });
    expect(JSON.parse((mine.contents[0] as { text: string }).text)).toHaveProperty('dsseEnvelope');
    const bobClient = await client(bob);
    await expect(bobClient.readResource({ uri })).rejects.toThrow(/not found/i);
    const download = (token: string) =>
      fetch(new URL(`/dashboard/executions/${started.execution_id}/record`, server.url), {
        headers: { authorization: `Bearer ${token}` },
      });
    expect((await download(bob)).status).toBe(404);
    expect((await download(alice)).status).toBe(200);
  });
});
