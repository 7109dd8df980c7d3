import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { authorizationOf } from '../src/app/git-sources.js';
import { ConfigError, loadConfig } from '../src/config.js';
import type { Logger } from '../src/telemetry/log.js';
import { createPrometheus } from '../src/telemetry/prometheus.js';
import { metricSources } from '../src/transports/observability.js';
import { raw, startDashboard } from './helpers/dashboard.js';
import { GitRepo, hangingServer, smartHttp, workflowYaml } from './helpers/git.js';
import { inProcessClient } from './helpers/in-process.js';
import { CLI, callTool, RawServer, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;
const run = promisify(execFile);

let sb: Sandbox;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  sb?.cleanup();
});

/** A logger that keeps every line (to show no token is ever logged). */
function recordingLogger(lines: string[]): Logger {
  const record = (...args: unknown[]) => {
    lines.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
  };
  const log: Logger = { error: record, warn: record, info: record, debug: record, child: () => log };
  return log;
}

/**
 * An app over the real MCP protocol (in-process), with the git sources configured by `env`. It does
 * not fetch by itself (gitSync: false): the test syncs as `workflowlookup sources sync` does, so every
 * step is awaited, never timed.
 */
async function serve(env: Record<string, string>, extra: { log?: Logger } = {}) {
  const { Client: SdkClient } = await import('@modelcontextprotocol/client');
  const client: Client = new SdkClient({ name: 'git-test', version: '1.0.0' });
  let resourcesChanged = 0;
  client.setNotificationHandler('notifications/resources/list_changed', () => {
    resourcesChanged++;
  });
  const session = await inProcessClient(
    sb,
    { WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false', WORKFLOWLOOKUP_TOOLS: 'all', ...env },
    { client, app: { watch: true, gitSync: false, ...(extra.log ? { log: extra.log } : {}) } },
  );
  cleanups.push(() => session.close());
  const call = (name: string, args: Json = {}) => callTool(client, name, args);
  const sync = () => session.app.services.gitSources.syncAll();
  return { ...session, call, sync, changes: () => resourcesChanged };
}

/** Waits (on the protocol, not on a clock) until the client has heard `n` resources/list_changed. */
async function heard(changes: () => number, n: number, call: (name: string) => Promise<Json>) {
  // A round trip delivers every notification sent before its answer.
  for (let i = 0; i < 50 && changes() < n; i++) await call('workflow_list');
  return changes();
}

/** Each listed workflow's id and the commit it comes from (through the listing's git_sources). */
function provenance(listed: Json): [string, string | undefined][] {
  return listed.workflows.map((w: Json) => [w.id, listed.git_sources?.[w.source]?.commit]);
}

async function cli(args: string[], env: Record<string, string>) {
  return run(process.execPath, [CLI, ...args], {
    env: { ...sb.env, WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false', WORKFLOWLOOKUP_LOG_LEVEL: 'error', ...env },
    cwd: sb.project,
  }).catch((error: { stdout: string; stderr: string; code: number }) => error);
}

describe('git sources: sync from a local bare repository', () => {
  it('serves a new commit after a sync, tells clients, and names repository, ref and commit', async () => {
    sb = sandbox();
    const repo = new GitRepo(sb.root);
    const first = repo.commit({ 'workflows/team-review.yaml': workflowYaml('team-review', 'Team review') });
    repo.push();
    const s = await serve({ WORKFLOWLOOKUP_GIT_SOURCES: `${repo.remote}#main:workflows` });
    // Before any sync there is no checkout: nothing from git, and nothing broken.
    expect((await s.call('workflow_list')).workflows).toEqual([]);

    const [synced] = await s.sync();
    expect(synced?.result).toEqual({ outcome: 'updated', commit: first });
    const listed = await s.call('workflow_list');
    expect(listed.workflows).toEqual([
      expect.objectContaining({ id: 'team-review', source: expect.stringMatching(/^git:/) }),
    ]);
    // Each source's repository, ref and commit once, beside the list.
    expect(listed.git_sources).toEqual({
      [listed.workflows[0].source]: { repository: repo.remote, ref: 'main', commit: first },
    });
    expect(provenance(listed)).toEqual([['team-review', first]]);
    expect(listed.broken).toEqual([]);
    const got = await s.call('workflow_get', { id: 'team-review' });
    expect(got.source).toEqual({ repository: repo.remote, ref: 'main', commit: first });
    const source = await s.call('workflow_get', { id: 'team-review', view: 'source' });
    expect(source.source.commit).toBe(first);

    const before = s.changes();
    const second = repo.commit(
      { 'workflows/release.yaml': workflowYaml('release', 'Release') },
      'add release',
    );
    repo.push();
    expect((await s.sync())[0]?.result).toEqual({ outcome: 'updated', commit: second });
    expect(await heard(s.changes, before + 1, s.call)).toBeGreaterThan(before);
    expect(provenance(await s.call('workflow_list'))).toEqual([
      ['release', second],
      ['team-review', second],
    ]);
    // The same commit again changes nothing.
    expect((await s.sync())[0]?.result).toEqual({ outcome: 'unchanged', commit: second });
  });

  it('a broken commit keeps the last good set, and is reported in workflow_list, `sources`, and the metrics', async () => {
    sb = sandbox();
    const repo = new GitRepo(sb.root);
    const good = repo.commit({ 'wf/a.yaml': workflowYaml('alpha', 'Alpha') });
    repo.push();
    const env = { WORKFLOWLOOKUP_GIT_SOURCES: `${repo.remote}#main:wf` };
    const s = await serve(env);
    await s.sync();
    const bad = repo.commit(
      { 'wf/a.yaml': workflowYaml('alpha', 'Alpha two'), 'wf/b.yaml': 'id: beta\nsteps: [unclosed\n' },
      'half broken',
    );
    repo.push();
    expect((await s.sync())[0]?.result).toEqual({ outcome: 'broken', commit: bad, files: 1 });
    const listed = await s.call('workflow_list');
    // Nothing of the broken commit is served, not even its good file.
    expect(listed.workflows).toEqual([expect.objectContaining({ id: 'alpha', name: 'Alpha' })]);
    expect(provenance(listed)).toEqual([['alpha', good]]);
    expect(listed.broken).toEqual([
      expect.objectContaining({ file: `${repo.remote}@${bad}:b.yaml`, source: 'git' }),
    ]);

    // The metric operators alert on.
    const prometheus = createPrometheus(
      metricSources(s.app, () => new Map()),
      s.app.metrics,
    );
    const { body } = await prometheus.scrape();
    prometheus.close();
    expect(body).toMatch(/workflowlookup_git_source_refused_commit\{source="[^"]+"\} 1/);
    expect(body).toMatch(/workflowlookup_git_source_sync_failing\{source="[^"]+"\} 0/);

    // Another process (the CLI) on the same data dir reads what was kept: the served and the refused commit.
    const shown = await cli(['sources'], env);
    expect(shown.stdout).toContain(`commit ${good}`);
    expect(shown.stdout).toContain(`refused commit ${bad}`);
    expect(shown.stdout).toContain(`${repo.remote}@${bad}:b.yaml`);
    const listedByCli = await cli(['list', '--json'], env);
    expect(JSON.parse(listedByCli.stdout).broken).toEqual([expect.objectContaining({ source: 'git' })]);

    // The dashboard's Workflows page: the source, its commit, the refused commit and its broken file.
    const dash = await startDashboard(sb, { WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false', ...env });
    cleanups.push(async () => {
      await dash.stop();
    });
    const get = (path: string) => raw(dash.port, path, { headers: { host: `127.0.0.1:${dash.port}` } });
    const page = (await get('/workflows')).body;
    expect(page).toContain(`${repo.remote}#main:wf`);
    expect(page).toContain(`Commit <code>${good}</code>`);
    expect(page).toContain(`Refused commit <code>${bad}</code>`);
    expect(page).toContain(`${repo.remote}@${bad}:b.yaml`);
    expect((await get('/workflows/alpha')).body).toContain(`commit <code>${good}</code>`);

    // The fix is served, and the report goes away.
    const fixed = repo.commit({ 'wf/b.yaml': workflowYaml('beta', 'Beta') }, 'fix');
    repo.push();
    expect((await s.sync())[0]?.result).toEqual({ outcome: 'updated', commit: fixed });
    const after = await s.call('workflow_list');
    expect(after.workflows.map((w: Json) => w.id)).toEqual(['alpha', 'beta']);
    expect(after.broken).toEqual([]);
  });

  it('a force-push changes the set but never a running execution; a deleted branch keeps the last good set', async () => {
    sb = sandbox();
    const repo = new GitRepo(sb.root);
    const first = repo.commit({ 'wf/flow.yaml': workflowYaml('flow', 'Flow', ['plan', 'build']) });
    repo.push();
    const s = await serve({ WORKFLOWLOOKUP_GIT_SOURCES: `${repo.remote}#main:wf` });
    await s.sync();
    const started = await s.call('workflow_start', { workflow_name: 'flow' });
    expect(started.step_name).toBe('plan');

    // History rewritten: the same workflow id, other steps.
    repo.resetTo(first);
    const rewritten = repo.commit(
      { 'wf/flow.yaml': workflowYaml('flow', 'Flow', ['other', 'steps']) },
      'rewrite',
    );
    repo.push('main', true);
    expect((await s.sync())[0]?.result).toEqual({ outcome: 'updated', commit: rewritten });
    expect((await s.call('workflow_get', { id: 'flow' })).steps.map((x: Json) => x.id)).toEqual([
      'other',
      'steps',
    ]);

    // The running execution goes on with the definition it started from.
    const next = await s.call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'planned' },
    });
    expect(next.step_name).toBe('build');
    const store = await s.app.services.store();
    const record = await store.getExecution(started.execution_id);
    expect(record?.metadata.source).toEqual({ repository: repo.remote, ref: 'main', commit: first });
    // The execution's hash-chained record names it too (its first event).
    const events = await store.getRecordEvents(started.execution_id);
    expect(JSON.stringify(events)).toContain(first);
    // And so does the signed record's statement, whatever was pushed since.
    const signed = await s.app.services.records.signed(started.execution_id, null);
    const statement = JSON.parse(Buffer.from(signed.dsseEnvelope?.payload ?? '', 'base64').toString('utf8'));
    expect(statement.predicate.workflow.source).toEqual({
      repository: repo.remote,
      ref: 'main',
      commit: first,
    });

    // The folder moves away: not an empty library, a failed sync.
    const moved = repo.commit({ 'wf/flow.yaml': null, 'elsewhere/flow.yaml': workflowYaml('flow', 'Flow') });
    repo.push();
    const [noFolder] = await s.sync();
    expect(noFolder?.source.lastError).toBe(`commit ${moved} has no folder wf`);
    expect((await s.call('workflow_list')).workflows.map((w: Json) => w.id)).toEqual(['flow']);

    // The branch disappears: the sync fails, says why, and what is served stays.
    repo.deleteBranch('main');
    const [gone] = await s.sync();
    expect(gone?.result.outcome).toBe('error');
    expect(gone?.source.lastError).toMatch(/couldn't find remote ref|not found|fatal/i);
    expect(gone?.source.commit).toBe(rewritten);
    expect((await s.call('workflow_list')).workflows.map((w: Json) => w.id)).toEqual(['flow']);
  });

  it('a running server fetches at start, and serves what `workflowlookup sources sync` fetched meanwhile', async () => {
    sb = sandbox();
    const repo = new GitRepo(sb.root);
    const first = repo.commit({ 'wf/a.yaml': workflowYaml('alpha', 'Alpha') });
    repo.push();
    const env = {
      WORKFLOWLOOKUP_GIT_SOURCES: `${repo.remote}#main:wf`,
      WORKFLOWLOOKUP_GIT_SYNC_INTERVAL: '0',
    };
    const { Client: SdkClient } = await import('@modelcontextprotocol/client');
    const client: Client = new SdkClient({ name: 'git-test', version: '1.0.0' });
    let changes = 0;
    client.setNotificationHandler('notifications/resources/list_changed', () => {
      changes++;
    });
    // As `serve` runs it: watching, and fetching on its own once a client is in.
    const session = await inProcessClient(
      sb,
      { WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false', ...env },
      { client, app: { watch: true } },
    );
    cleanups.push(() => session.close());
    const call = (name: string, args: Json = {}) => callTool(client, name, args);
    await call('workflow_list');
    const [source] = session.app.services.gitSources.sources;
    // The start-up fetch (already under way: this waits for the same one).
    expect(await session.app.services.gitSources.sync(source as never)).toEqual({
      outcome: 'updated',
      commit: first,
    });
    expect(provenance(await call('workflow_list'))).toEqual([['alpha', first]]);

    const second = repo.commit({ 'wf/b.yaml': workflowYaml('beta', 'Beta') });
    repo.push();
    const before = changes;
    const synced = await cli(['sources', 'sync'], env);
    expect(synced.stdout).toContain(`updated: ${second}`);
    // The server sees the new state in the data dir (a watch, no timer): wait for its list_changed.
    await expect.poll(() => changes).toBeGreaterThan(before);
    expect(provenance(await call('workflow_list'))).toEqual([
      ['alpha', second],
      ['beta', second],
    ]);
  });

  it('a symbolic link that leaves the checkout refuses the commit', async () => {
    sb = sandbox();
    const secret = join(sb.root, 'secret.yaml');
    writeFileSync(secret, workflowYaml('secret', 'Not for git'));
    const repo = new GitRepo(sb.root);
    const good = repo.commit({ 'wf/a.yaml': workflowYaml('alpha', 'Alpha') });
    repo.push();
    const s = await serve({ WORKFLOWLOOKUP_GIT_SOURCES: `${repo.remote}#main:wf` });
    await s.sync();
    const evil = repo.commit({
      'wf/evil.yaml': { link: secret },
      'wf/up.yaml': { link: '../../../../../secret.yaml' },
    });
    repo.push();
    expect((await s.sync())[0]?.result).toEqual({ outcome: 'broken', commit: evil, files: 2 });
    const listed = await s.call('workflow_list');
    expect(provenance(listed)).toEqual([['alpha', good]]);
    expect(listed.broken.map((b: Json) => b.violations[0].rule)).toEqual(['symlink', 'symlink']);
  });

  it('a repository over the size cap is not served', async () => {
    sb = sandbox();
    const repo = new GitRepo(sb.root);
    repo.commit({
      'wf/a.yaml': workflowYaml('alpha', 'Alpha'),
      // Incompressible: the pack is as large as the file.
      'assets/blob.bin': randomBytes(256 * 1024).toString('base64'),
    });
    repo.push();
    const s = await serve({
      WORKFLOWLOOKUP_GIT_SOURCES: `${repo.remote}#main:wf`,
      WORKFLOWLOOKUP_GIT_MAX_BYTES: String(64 * 1024),
    });
    const [result] = await s.sync();
    expect(result?.result.outcome).toBe('error');
    expect(result?.source.lastError).toContain('larger than 65536 bytes');
    expect((await s.call('workflow_list')).workflows).toEqual([]);
  });

  it('orders git sources above the configured directories and below the runtime dir, later sources first', async () => {
    sb = sandbox();
    const a = new GitRepo(sb.root, 'a.git');
    a.commit({
      'x.yaml': workflowYaml('shared', 'From a'),
      'y.yaml': workflowYaml('runtime-wins', 'From a'),
    });
    a.push();
    const b = new GitRepo(sb.root, 'b.git');
    b.commit({ 'x.yaml': workflowYaml('shared', 'From b') });
    b.push();
    const storage = join(sb.root, 'storage');
    mkdirSync(storage);
    writeFileSync(join(storage, 's.yaml'), workflowYaml('shared', 'From storage'));
    writeFileSync(join(sb.runtime, 'r.yaml'), workflowYaml('runtime-wins', 'From runtime'));
    const s = await serve({
      WORKFLOWLOOKUP_GIT_SOURCES: JSON.stringify([
        { url: a.remote },
        { url: `file://${b.remote}`, ref: 'main' },
      ]),
      WORKFLOW_STORAGE_PATH: storage,
    });
    await s.sync();
    const names = Object.fromEntries(
      (await s.call('workflow_list')).workflows.map((w: Json) => [w.id, w.name]),
    );
    expect(names).toEqual({ shared: 'From b', 'runtime-wins': 'From runtime' });
  });
});

describe('git sources: smart HTTP with a token, tags and pinned commits', () => {
  it('fetches a tag and a pinned commit with the token, which never reaches argv, logs, answers or errors', async () => {
    sb = sandbox();
    const repo = new GitRepo(sb.root);
    const pinned = repo.commit({ 'wf/a.yaml': workflowYaml('alpha', 'Alpha at the pin') });
    repo.push();
    repo.tag('v1');
    repo.commit({
      'wf/a.yaml': workflowYaml('alpha', 'Alpha later'),
      'wf/t.yaml': workflowYaml('tagged', 'T'),
    });
    repo.push();
    repo.tag('v2');
    const token = `tok_${randomBytes(16).toString('hex')}`;
    const http = await smartHttp(join(sb.root, 'remotes'), authorizationOf(token));
    cleanups.push(() => http.close());

    // Every git the server runs goes through this wrapper, which writes down its arguments.
    const bin = join(sb.root, 'bin');
    mkdirSync(bin);
    const argvLog = join(sb.root, 'argv.log');
    const realGit = (await run('sh', ['-c', 'command -v git'])).stdout.trim();
    writeFileSync(
      join(bin, 'git'),
      `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argvLog}'\nexec '${realGit}' "$@"\n`,
    );
    chmodSync(join(bin, 'git'), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    cleanups.push(() => {
      process.env.PATH = path;
    });

    const lines: string[] = [];
    const s = await serve(
      {
        WORKFLOWLOOKUP_GIT_SOURCES: `${http.url}/library.git#v2:wf,${http.url}/library.git#${pinned}:wf`,
        WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: 'http,file',
        WORKFLOWLOOKUP_GIT_TOKEN: token,
      },
      { log: recordingLogger(lines) },
    );
    const results = await s.sync();
    expect(results.map((r) => r.result.outcome)).toEqual(['updated', 'updated']);
    const listed = await s.call('workflow_list');
    // The pinned source comes later, so its alpha wins; the tag brings `tagged`.
    expect(listed.workflows.map((w: Json) => [w.id, w.name, listed.git_sources[w.source].ref])).toEqual([
      ['alpha', 'Alpha at the pin', pinned],
      ['tagged', 'T', 'v2'],
    ]);
    expect(http.requests.some((r) => r.headers.authorization === authorizationOf(token))).toBe(true);
    // A pinned commit already served is not fetched again.
    const requests = http.requests.length;
    await s.app.services.gitSources.sync(s.app.services.gitSources.sources[1] as never);
    expect(http.requests.length).toBe(requests);

    // A wrong token: the failure is reported without any token in it.
    const wrong = await serve(
      {
        WORKFLOWLOOKUP_GIT_SOURCES: `${http.url}/library.git#main:wf`,
        WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: 'http',
        WORKFLOWLOOKUP_GIT_TOKEN_127_0_0_1: `${token}x`,
        WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'other-data'),
      },
      { log: recordingLogger(lines) },
    );
    const [denied] = await wrong.sync();
    expect(denied?.result.outcome).toBe('error');
    const sources = await cli(['sources', '--json'], {
      WORKFLOWLOOKUP_GIT_SOURCES: `${http.url}/library.git#main:wf`,
      WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: 'http',
      WORKFLOWLOOKUP_GIT_TOKEN: token,
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'other-data'),
    });

    const everything = [
      readFileSync(argvLog, 'utf8'),
      lines.join('\n'),
      JSON.stringify(listed),
      JSON.stringify(results),
      JSON.stringify(denied),
      JSON.stringify(s.app.services.gitSources.status()),
      sources.stdout,
      sources.stderr,
    ].join('\n');
    expect(readFileSync(argvLog, 'utf8')).toContain('fetch');
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(authorizationOf(token).slice(6));
  });
});

describe('git sources: a remote that is down or hangs never holds the server', () => {
  it('starts without a checkout when the remote is down, and from the last good one while it hangs', async () => {
    sb = sandbox();
    const repo = new GitRepo(sb.root);
    const commit = repo.commit({ 'wf/a.yaml': workflowYaml('alpha', 'Alpha') });
    repo.push();
    const token = 'secret-token-for-start';
    const http = await smartHttp(join(sb.root, 'remotes'), authorizationOf(token));
    const port = new URL(http.url).port;
    const env = {
      ...sb.env,
      WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false',
      WORKFLOWLOOKUP_GIT_SOURCES: `http://127.0.0.1:${port}/library.git#main:wf`,
      WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: 'http',
      WORKFLOWLOOKUP_GIT_TOKEN: token,
    };
    await http.close();

    // Down: the server starts and answers; the source has nothing yet, and says why.
    const down = new RawServer({ env, cwd: sb.project });
    cleanups.push(() => down.kill());
    await down.initialize();
    expect(((await down.request(1, 'workflow_list', {})).result as Json).workflows).toEqual([]);
    down.kill();

    // Up once: a good checkout is kept in the data dir.
    const up = await smartHttp(join(sb.root, 'remotes'), authorizationOf(token));
    const upPort = new URL(up.url).port;
    const envUp = { ...env, WORKFLOWLOOKUP_GIT_SOURCES: `http://127.0.0.1:${upPort}/library.git#main:wf` };
    const synced = await cli(['sources', 'sync'], envUp);
    expect(synced.stdout).toContain(`updated: ${commit}`);
    await up.close();

    // Now the remote hangs (same address): the server serves the kept checkout while its fetch waits.
    const hang = await hangingServer(Number(upPort));
    cleanups.push(() => hang.close());
    const hung = new RawServer({ env: envUp, cwd: sb.project });
    cleanups.push(() => hung.kill());
    await hung.initialize();
    await hang.connected;
    const listed = (await hung.request(2, 'workflow_list', {})).result as Json;
    expect(provenance(listed)).toEqual([['alpha', commit]]);
    // The fetch is still waiting on the remote.
    expect(hang.open()).toBeGreaterThan(0);
  });
});

describe('git sources: configuration refuses what could make git run anything', () => {
  const attempts: [string, Record<string, string>][] = [
    ['ext:: remote helper', { WORKFLOWLOOKUP_GIT_SOURCES: 'ext::sh%20-c%20touch%20/tmp/pwned' }],
    ['ext:: in JSON', { WORKFLOWLOOKUP_GIT_SOURCES: JSON.stringify([{ url: 'ext::git-upload-pack' }]) }],
    ['fd:: remote helper', { WORKFLOWLOOKUP_GIT_SOURCES: 'fd::3' }],
    ['an option as URL', { WORKFLOWLOOKUP_GIT_SOURCES: '--upload-pack=touch%20/tmp/pwned' }],
    ['an option as ref', { WORKFLOWLOOKUP_GIT_SOURCES: '/srv/repo.git#--upload-pack=touch' }],
    ['a revision expression as ref', { WORKFLOWLOOKUP_GIT_SOURCES: '/srv/repo.git#main..evil' }],
    ['a refspec as ref', { WORKFLOWLOOKUP_GIT_SOURCES: JSON.stringify([{ url: '/srv/r.git', ref: 'a:b' }]) }],
    ['a folder leaving the repository', { WORKFLOWLOOKUP_GIT_SOURCES: '/srv/repo.git#main:../..' }],
    ['credentials in the URL', { WORKFLOWLOOKUP_GIT_SOURCES: 'https://user:pw@example.com/r.git' }],
    ['http unless allowed', { WORKFLOWLOOKUP_GIT_SOURCES: 'http://example.com/r.git' }],
    ['an unknown protocol to allow', { WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: 'https,ext' }],
    ['ext:: through WorkRail', { WORKFLOW_GIT_REPOS: 'ext::sh' }],
  ];
  for (const [what, env] of attempts) {
    it(`refuses ${what}`, () => {
      expect(() => loadConfig({ env: { HOME: '/nonexistent', ...env }, cwd: '/' })).toThrow(ConfigError);
    });
  }

  it('reads WorkRail variables: WORKFLOW_GIT_REPOS (JSON or list), WORKFLOW_GIT_REPO_URL/_BRANCH, WORKFLOW_GIT_SYNC_INTERVAL in minutes', () => {
    const config = loadConfig({
      env: {
        HOME: '/nonexistent',
        WORKFLOW_GIT_REPOS: 'https://example.com/a.git, git@example.com:team/b.git',
        WORKFLOW_GIT_REPO_URL: 'https://example.com/c.git',
        WORKFLOW_GIT_REPO_BRANCH: 'release',
        WORKFLOW_GIT_SYNC_INTERVAL: '2',
        WORKFLOWLOOKUP_GIT_SOURCES: 'https://example.com/d.git#v1.2:lib',
      },
      cwd: '/',
    });
    expect(config.git.sources.map((s) => [s.git?.url, s.git?.ref, s.git?.subdir, s.git?.protocol])).toEqual([
      ['https://example.com/a.git', 'main', 'workflows', 'https'],
      ['git@example.com:team/b.git', 'main', 'workflows', 'ssh'],
      ['https://example.com/c.git', 'release', 'workflows', 'https'],
      ['https://example.com/d.git', 'v1.2', 'lib', 'https'],
    ]);
    expect(config.git.intervalMs).toBe(120_000);
    const kinds = config.sources.map((s) => s.kind);
    expect(kinds.indexOf('git')).toBeLessThan(kinds.indexOf('runtime'));
    expect(existsSync(config.git.sources[0]?.dir as string)).toBe(false);
  });
});
