import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { postgresFor } from './helpers/postgres.js';
import { CLI, FIXTURES, RawServer, ROOT, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

// The command line as a newcomer meets it: store commands that name an impossible store, settings that
// cannot work, and moving executions between stores with their live continuation tokens.

type Json = Record<string, any>;

const server = await postgresFor('export/import round trip');

let sb: Sandbox;
const servers: RawServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
  sb?.cleanup();
});

function run(args: string[], env: Record<string, string> = {}, input?: string) {
  const res = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...sb.env, ...env },
    cwd: sb.project,
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('store commands refuse what cannot be a store', () => {
  it('an unknown --store scheme exits 2 with a message and creates no directory', () => {
    sb = sandbox();
    const cases: [string[], RegExp][] = [
      [
        ['export', '--store', 'postgress://me@127.0.0.1/db'],
        /--store: unknown scheme postgress:\/\/ \(did you mean postgres:\/\/\?\); a store is a SQLite data directory/,
      ],
      [
        ['migrate', '--store', 'ftp://x'],
        /--store: unknown scheme ftp:\/\/; a store is a SQLite data directory/,
      ],
      [['import', '-', '--store', 'mysql://root@db/x'], /--store: unknown scheme mysql:\/\//],
      [['export', '--store', ''], /--store must name a SQLite data directory or a postgres:\/\/ URL/],
    ];
    for (const [args, says] of cases) {
      const res = run(args, {}, '');
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(says);
      expect(res.stdout).toBe('');
    }
    // Nothing named after the URLs (`./postgress:`, `./ftp:`) was created.
    expect(readdirSync(sb.project)).toEqual([]);
  });

  it('export from a directory that holds no store says so (exit 2) instead of creating one', () => {
    sb = sandbox();
    const res = run(['export', '--store', 'no-such-dir']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('export: no execution store in');
    expect(res.stderr).toContain('workflowlookup.db is missing');
    expect(existsSync(join(sb.project, 'no-such-dir'))).toBe(false);
  });

  it('import of a missing file, a directory or a line that is not JSON: a clear message, never a stack', () => {
    sb = sandbox();
    const missing = run(['import', 'missing.jsonl', '--store', 'target']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      'workflowlookup: import: cannot read missing.jsonl: no such file; name the file that export wrote (or - for stdin)\n',
    );
    expect(existsSync(join(sb.project, 'target'))).toBe(false);
    const dir = run(['import', '.', '--store', 'target']);
    expect(dir.code).toBe(2);
    expect(dir.stderr).toContain('import: . is not a file');
    writeFileSync(join(sb.project, 'bad.jsonl'), '\n{"not json\n');
    const bad = run(['import', 'bad.jsonl', '--store', 'target']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^workflowlookup: bad\.jsonl line 2 is not JSON \(.*\); is it a file export wrote\?\n$/,
    );
  });
});

/** The secret every store of the --new-tokens cases signs with: the case where old tokens used to work. */
const SHARED_SECRET = 'the-secret-source-and-target-share-0123456789abcdef';

/**
 * A data dir with two executions of the local user: one on an agent step, one waiting on a person's
 * approval; the step token and the approval's poll token the agent holds.
 */
async function liveExecutions(dataDir: string): Promise<{ step: string; poll: string; ids: string[] }> {
  const s = new InProcessRaw({ env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: dataDir }, cwd: sb.project });
  try {
    await s.initialize();
    const started = (await s.request(1, 'workflow_start', { workflow_name: 'durable-demo' })).result as Json;
    const release = (await s.request(2, 'workflow_start', { workflow_name: 'release-approval' }))
      .result as Json;
    const waiting = (
      await s.request(3, 'workflow_next_step', {
        token: tokenOf(release),
        output: { summary: 'The release notes for 2.0.' },
      })
    ).result as Json;
    expect(waiting.workflow_state).toBe('running');
    expect(JSON.stringify(waiting)).toContain('approval');
    return {
      step: tokenOf(started),
      poll: tokenOf(waiting),
      ids: [started.execution_id, release.execution_id],
    };
  } finally {
    await s.close();
  }
}

/** Sends each of `tokens` to a server on `dataDir`; what each answer was: its error, or its result. */
async function answersTo(dataDir: string, calls: [string, Json][]): Promise<Json[]> {
  const s = new InProcessRaw({ env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: dataDir }, cwd: sb.project });
  try {
    await s.initialize();
    const out: Json[] = [];
    for (const [i, [method, params]] of calls.entries()) {
      const res = await s.request(`c${i}`, method, params);
      out.push(res.error ? { error: res.error } : (res.result as Json));
    }
    return out;
  } finally {
    await s.close();
  }
}

describe('import --new-tokens: no token handed out before the export works after it', () => {
  it('under the same secret, the old step and poll tokens are refused (-32005) and workflow_resume hands out working ones; without it they keep working', async () => {
    sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SHARED_SECRET });
    cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
    cpSync(
      join(ROOT, 'examples', 'approvals', 'release-approval.yaml'),
      join(sb.runtime, 'release-approval.yaml'),
    );
    const source = join(sb.root, 'source');
    const old = await liveExecutions(source);
    const file = join(sb.root, 'executions.jsonl');
    expect(run(['export', '--store', source, '--out', file]).code).toBe(0);

    const renewed = join(sb.root, 'renewed');
    const imported = run(['import', file, '--store', renewed, '--new-tokens']);
    expect(imported.code).toBe(0);
    expect(imported.stdout).toContain('imported 2 execution(s)');
    expect(imported.stdout).toContain('2 execution(s) got new continuation tokens');
    const report = { summary: 'The design uses a queue and a retry policy.' };
    const [step, poll, resumedStep, resumedPoll] = await answersTo(renewed, [
      ['workflow_next_step', { token: old.step, output: report }],
      ['workflow_next_step', { token: old.poll, output: { summary: 'waiting for approval' } }],
      ['workflow_resume', { execution_id: old.ids[0] }],
      ['workflow_resume', { execution_id: old.ids[1] }],
    ]);
    for (const [refused, id] of [
      [step, old.ids[0]],
      [poll, old.ids[1]],
    ] as const) {
      expect(refused?.error).toMatchObject({
        code: -32005,
        data: {
          error_code: 'EXECUTION_STATE_CONFLICT',
          details: `this token is no longer current for execution ${id}`,
          next: [{ tool: 'workflow_resume', arguments: { execution_id: id } }],
        },
      });
    }
    const fresh = [tokenOf(resumedStep), tokenOf(resumedPoll)];
    expect(fresh[0]).toMatch(/\./);
    expect(fresh[1]).toMatch(/\./);
    expect(fresh).not.toContain(old.step);
    expect(fresh).not.toContain(old.poll);
    const [advanced, polled] = await answersTo(renewed, [
      ['workflow_next_step', { token: fresh[0], output: report }],
      ['workflow_next_step', { token: fresh[1], output: { summary: 'waiting for approval' } }],
    ]);
    expect(advanced).toMatchObject({ success: true, step_name: 'implement' });
    expect(polled?.error).toBeUndefined();
    expect(JSON.stringify(polled)).toContain('approval');

    // As documented: without --new-tokens, under the same secret, the tokens the agent holds still work.
    const kept = join(sb.root, 'kept');
    expect(run(['import', file, '--store', kept]).code).toBe(0);
    const [stepKept, pollKept] = await answersTo(kept, [
      ['workflow_next_step', { token: old.step, output: report }],
      ['workflow_next_step', { token: old.poll, output: { summary: 'waiting for approval' } }],
    ]);
    expect(stepKept).toMatchObject({ success: true, step_name: 'implement' });
    expect(pollKept?.error).toBeUndefined();
    expect(JSON.stringify(pollKept)).toContain('approval');
  });
});

describe('every boolean and number of the environment table is parsed strictly', () => {
  const refused: [string, string, RegExp][] = [
    [
      'WORKFLOWLOOKUP_INCLUDE_BUNDLED',
      'nope',
      /must be true or false \(also 1\/0, yes\/no, on\/off\), not "nope"/,
    ],
    ['WORKFLOWLOOKUP_INCLUDE_USER', 'maybe', /must be true or false/],
    ['WORKFLOWLOOKUP_INCLUDE_PROJECT', '2', /must be true or false/],
    ['WORKFLOWLOOKUP_ALLOW_URL_SOURCES', 'yes please', /must be true or false/],
    ['WORKFLOWLOOKUP_HTTP_DASHBOARD', 'maybe', /must be true or false .*not "maybe"/],
    ['WORKFLOWLOOKUP_MAX_MESSAGE_BYTES', '64k', /must be a whole number of bytes, at least 1024, not "64k"/],
    ['WORKFLOWLOOKUP_TOKEN_TTL_SECONDS', '1.5', /must be a whole number of seconds, at least 1, not "1\.5"/],
    [
      'WORKFLOWLOOKUP_RATE_LIMIT',
      '1e3',
      /must be a whole number of requests per minute, at least 0 \(0: no limit\)/,
    ],
    ['WORKFLOWLOOKUP_HTTP_MAX_SESSIONS', '0', /must be a whole number of sessions, at least 1, not "0"/],
    ['WORKFLOWLOOKUP_HTTP_PORT', '0x50', /must be a port number 0-65535 \(0 picks a free port\), not "0x50"/],
    ['WORKFLOWLOOKUP_DASHBOARD_PORT', '99999', /0-65535/],
  ];

  // One test per variable: each starts two processes, and 22 starts in one test took more than its
  // timeout on a busy machine.
  it.each(refused)(
    '%s=%s exits 2 naming the variable and what it accepts, whatever the command',
    (name, value, says) => {
      sb = sandbox();
      for (const args of [['list'], ['serve', '--http', '--port', '0']]) {
        const res = run(args, { [name]: value }, '');
        expect(res.code, `${name}=${value} ${args.join(' ')}`).toBe(2);
        expect(res.stderr).toMatch(new RegExp(`^workflowlookup: ${name} `));
        expect(res.stderr).toMatch(says);
      }
    },
  );

  it('the documented spellings are accepted (any case), and empty means the default', () => {
    sb = sandbox();
    const ids = (env: Record<string, string>) =>
      (JSON.parse(run(['list', '--json'], env).stdout) as { workflows: unknown[] }).workflows.length;
    const all = ids({});
    expect(all).toBeGreaterThan(0);
    for (const off of ['FALSE', 'Off']) expect(ids({ WORKFLOWLOOKUP_INCLUDE_BUNDLED: off })).toBe(0);
    for (const on of ['yes', '']) expect(ids({ WORKFLOWLOOKUP_INCLUDE_BUNDLED: on })).toBe(all);
    expect(run(['list'], { WORKFLOWLOOKUP_RATE_LIMIT: '0', WORKFLOWLOOKUP_HTTP_PORT: ' 8080 ' }).code).toBe(
      0,
    );
  });
});

describe.skipIf(server.url === undefined)(
  'moving executions with export and import keeps live tokens valid',
  () => {
    const SECRET_OTHER = 'a-different-secret-of-the-target-0123456789abcdef';

    it('SQLite → PostgreSQL: import refuses until the target has the source secret, then the old token advances', async () => {
      sb = sandbox();
      cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
      const sqlite = join(sb.root, 'sqlite');
      // A local server with the secret it generates into its data dir (the default).
      const local = new RawServer({ env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: sqlite }, cwd: sb.project });
      servers.push(local);
      await local.initialize();
      const started = (await local.request(1, 'workflow_start', { workflow_name: 'durable-demo' }))
        .result as Json;
      const live = tokenOf(started);
      local.kill();
      const secretFile = join(sqlite, 'token-secret');
      const secret = readFileSync(secretFile, 'utf8').trim();

      const file = join(sb.root, 'executions.jsonl');
      const exported = run(['export', '--store', sqlite, '--out', file]);
      expect(exported.code).toBe(0);
      expect(exported.stderr).toContain('exported 1 execution(s)');
      expect(exported.stderr).toContain(`signed with the secret in ${secretFile}`);
      expect(exported.stderr).toContain(`WORKFLOWLOOKUP_TOKEN_SECRET="$(cat ${secretFile})"`);
      // The file names the secret's place and fingerprint, never the secret.
      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain(secret);
      expect(JSON.parse(text.split('\n')[0] as string)).toMatchObject({
        format: 'workflowlookup-executions',
        version: 1,
        token_secret: { source: secretFile },
      });

      const { url } = await server.database().schema();
      const pg = { WORKFLOWLOOKUP_DATABASE_URL: url };
      for (const env of [pg, { ...pg, WORKFLOWLOOKUP_TOKEN_SECRET: SECRET_OTHER }]) {
        const refused = run(['import', file], env);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain('were signed with another secret than the target');
        expect(refused.stderr).toContain(`WORKFLOWLOOKUP_TOKEN_SECRET="$(cat ${secretFile})"`);
        expect(refused.stderr).toContain('Nothing was imported');
      }
      const withSecret = { ...pg, WORKFLOWLOOKUP_TOKEN_SECRET: secret };
      expect(run(['export'], withSecret).stdout.trim().split('\n')).toHaveLength(1); // the header alone
      const imported = run(['import', file], withSecret);
      expect(imported.code).toBe(0);
      expect(imported.stdout).toContain('imported 1 execution(s)');

      // A PostgreSQL server with that secret takes the token the SQLite server handed out.
      const replica = new RawServer({ env: { ...sb.env, ...withSecret }, cwd: sb.project });
      servers.push(replica);
      await replica.initialize();
      const next = await replica.request(2, 'workflow_next_step', {
        token: live,
        output: { summary: 'The design uses a queue and a retry policy.' },
      });
      expect(next.error).toBeUndefined();
      expect(next.result).toMatchObject({ success: true, step_name: 'implement' });
      // The record moved with the execution: the chain begun on SQLite goes on on PostgreSQL, unbroken.
      const signed = run(['record', started.execution_id as string], {
        ...withSecret,
        WORKFLOWLOOKUP_DATA_DIR: sqlite,
      });
      expect(signed.code, signed.stderr).toBe(0);
      const statement = JSON.parse(
        Buffer.from(JSON.parse(signed.stdout).dsseEnvelope.payload, 'base64').toString('utf8'),
      );
      const types = statement.predicate.events.map((e: { type: string }) => e.type);
      expect(types[0]).toBe('workflow_created');
      expect(types).toContain('output_submitted');
      const recordFile = join(sb.root, 'record.json');
      writeFileSync(recordFile, signed.stdout);
      const verified = run(['verify', recordFile], { ...withSecret, WORKFLOWLOOKUP_DATA_DIR: sqlite });
      expect(verified.code, verified.stderr).toBe(0);
      expect(verified.stdout).toContain(`${statement.predicate.event_count} events chained, head`);
    });

    it('--new-tokens imports anyway, and an export without a header (older versions) still imports', async () => {
      sb = sandbox({ WORKFLOWLOOKUP_TOKEN_SECRET: SECRET_OTHER });
      cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
      const source = join(sb.root, 'source');
      const s = new RawServer({ env: { ...sb.env, WORKFLOWLOOKUP_DATA_DIR: source }, cwd: sb.project });
      servers.push(s);
      await s.initialize();
      await s.request(1, 'workflow_start', { workflow_name: 'durable-demo' });
      s.kill();
      const file = join(sb.root, 'x.jsonl');
      expect(run(['export', '--store', source, '--out', file]).stderr).toContain(
        'signed with WORKFLOWLOOKUP_TOKEN_SECRET',
      );
      const { url } = await server.database().schema();
      const other = { WORKFLOWLOOKUP_TOKEN_SECRET: 'yet-another-secret-0123456789abcdef0123' };
      expect(run(['import', file, '--store', url], other).code).toBe(2);
      const forced = run(['import', file, '--store', url, '--new-tokens'], other);
      expect(forced.code).toBe(0);
      expect(forced.stdout).toContain('imported 1 execution(s)');
      const headless = readFileSync(file, 'utf8').split('\n').slice(1).join('\n');
      const old = run(['import', '-', '--store', join(sb.root, 'copy')], {}, headless);
      expect(old.code).toBe(0);
      expect(old.stderr).toContain('has no header (written by an older export)');
      expect(old.stdout).toContain('imported 1 execution(s)');
    });
  },
);
