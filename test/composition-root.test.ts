import { spawnSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessClient } from './helpers/in-process.js';
import { postgresFor } from './helpers/postgres.js';
import { CLI, callTool, FIXTURES, type Sandbox, sandbox } from './helpers/server.js';

// One composition root (src/app.ts): the CLI reads the workflows through the app the server builds, so
// `workflowlookup list --json` answers what workflow_list answers in every store mode, the database's
// workflows included when the store is PostgreSQL.

type Json = Record<string, any>;

const pgServer = await postgresFor('CLI on PostgreSQL suite');

let sb: Sandbox | undefined;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  sb?.cleanup();
  sb = undefined;
});

function cli(box: Sandbox, args: string[], env: Record<string, string> = {}) {
  const res = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...box.env, ...env },
    cwd: box.project,
    encoding: 'utf8',
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** `list --json` on `box`: it succeeds and lists what `workflow_list` listed (`listed`). */
function listsAsTheServer(box: Sandbox, listed: Json, env: Record<string, string> = {}) {
  const printed = cli(box, ['list', '--json'], env);
  expect(printed.code, printed.stderr).toBe(0);
  const json = JSON.parse(printed.stdout) as Json;
  expect({ workflows: json.workflows, broken: json.broken }).toEqual({
    workflows: listed.workflows,
    broken: listed.broken,
  });
  return { json, stderr: printed.stderr };
}

/** workflow_list through the real protocol, on the app the server builds (in-process). */
async function workflowList(box: Sandbox, env: Record<string, string> = {}): Promise<Json> {
  const { client, close } = await inProcessClient(box, env);
  closers.push(close);
  return callTool(client, 'workflow_list', {});
}

const manifest = (id: string) =>
  [
    `id: ${id}`,
    `name: ${id}`,
    'description: A workflow saved in the database',
    'version: 1.0.0',
    'steps:',
    '  - { id: design, title: Design, prompt: Design it. }',
    '',
  ].join('\n');

describe('the CLI reads the workflows the server serves', () => {
  it('with SQLite, list --json equals workflow_list (readiness marks and broken files included)', async () => {
    sb = sandbox();
    cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
    // A broken file and a workflow whose command step needs a catalog nobody imported (ready: false).
    writeFileSync(join(sb.runtime, 'broken.yaml'), 'id: broken\nname: [unclosed\n');
    writeFileSync(
      join(sb.runtime, 'needs-catalog.yaml'),
      [
        'id: needs-catalog',
        'name: Needs a catalog',
        'description: Calls an API no catalog describes yet',
        'version: 1.0.0',
        'requires: { catalogs: [nowhere] }',
        'steps:',
        '  - { id: call, title: Call, prompt: Call the API. }',
        '',
      ].join('\n'),
    );
    const listed = await workflowList(sb);
    const { json } = listsAsTheServer(sb, listed);
    expect(json.broken.map((b: Json) => b.file)).toContain(join(sb.runtime, 'broken.yaml'));
    expect(json.workflows.find((w: Json) => w.id === 'needs-catalog')).toMatchObject({ ready: false });
  });
});

describe('the CLI when the PostgreSQL store cannot be reached', () => {
  it('lists what the server lists (the files), and says on stderr why the database is left out, without the password', async () => {
    sb = sandbox();
    // Port 1 refuses connections: the database's workflows are unavailable, the files' are not.
    const env = { WORKFLOWLOOKUP_DATABASE_URL: 'postgres://postgres:hunter2-secret@127.0.0.1:1/nowhere' };
    const listed = await workflowList(sb, env);
    const { json, stderr } = listsAsTheServer(sb, listed, env);
    expect(json.workflows.length).toBeGreaterThanOrEqual(7);
    expect(stderr).toContain('cannot connect to PostgreSQL at 127.0.0.1:1');
    expect(stderr).not.toContain('hunter2-secret');
  });
});

describe.skipIf(pgServer.url === undefined)('the CLI on a PostgreSQL store', () => {
  it('list --json equals workflow_list, the workflow saved in the database included; sources names it', async () => {
    sb = sandbox({ WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' });
    const { url } = await pgServer.database().schema();
    const env = { WORKFLOWLOOKUP_DATABASE_URL: url };
    const { client, close } = await inProcessClient(sb, env);
    closers.push(close);
    const saved = await callTool(client, 'workflow_save', { content: manifest('saved-in-db') });
    expect(saved.error).toBeUndefined();
    const listed = await callTool(client, 'workflow_list', {});
    expect((listed.workflows as Json[]).map((w) => w.id)).toContain('saved-in-db');

    listsAsTheServer(sb, listed, env);
    expect(cli(sb, ['list'], env).stdout).toMatch(/^saved-in-db\s/m);

    const sources = cli(sb, ['sources'], env);
    expect(sources.code, sources.stderr).toBe(0);
    expect(sources.stdout).toMatch(/database\s+\S+#workflows\n/);
    expect(sources.stdout).toMatch(/saved-in-db\s+database/);
  });
});

// One check policy (app.ts, buildCheckPolicy): `workflowlookup validate` and the authoring tools judge a
// step's `verify: {check}` against the operator's checks file alike.
describe('one check policy: a check the checks file does not define', () => {
  const verified = [
    'id: verified',
    'name: Verified',
    'description: Steps the server checks',
    'version: 1.0.0',
    'steps:',
    '  - id: fix',
    '    title: Fix it',
    '    prompt: Fix the bug.',
    '    verify: { check: unit-tests }',
    '  - id: lint',
    '    title: Lint it',
    '    prompt: Tidy up.',
    '    verify: { check: lint }',
    '',
  ].join('\n');

  /** A sandbox whose checks file defines `unit-tests` only, and the workflow file to validate. */
  function withChecks(configured: boolean) {
    const box = sandbox();
    const file = join(box.project, 'verified.yaml');
    writeFileSync(file, verified);
    const env: Record<string, string> = {};
    if (configured) {
      env.WORKFLOWLOOKUP_CHECKS_FILE = join(box.root, 'checks.json');
      writeFileSync(
        env.WORKFLOWLOOKUP_CHECKS_FILE,
        JSON.stringify({ checks: { 'unit-tests': { command: process.execPath, args: ['-e', ''] } } }),
      );
    }
    return { box, file, env };
  }

  it('with a checks file, validate and workflow_validate_manifest report the same knownCheck error; workflow_save refuses it', async () => {
    const { box, file, env } = withChecks(true);
    sb = box;
    const printed = cli(box, ['validate', '--json', file], env);
    expect(printed.code, printed.stderr).toBe(1);
    const report = (JSON.parse(printed.stdout) as Json).files[0];
    const unknown = {
      path: '/steps/1/verify/check',
      rule: 'knownCheck',
      message: `step "lint" names check "lint", which the server's checks file does not define`,
      actual: 'lint',
      line: 13,
      column: 15,
    };
    expect(report).toMatchObject({ valid: false, errors: [unknown] });

    const { client, close } = await inProcessClient(box, env);
    closers.push(close);
    const checked = await callTool(client, 'workflow_validate_manifest', { content: verified });
    expect(checked).toMatchObject({ valid: false, violations: report.errors, warnings: report.warnings });
    expect(checked.errors).toEqual([
      `/steps/1/verify/check (13:15): step "lint" names check "lint", which the server's checks file does not define`,
    ]);
    const saved = await callTool(client, 'workflow_save', { content: verified });
    expect(saved.error.data).toMatchObject({
      error_code: 'WORKFLOW_VALIDATION_FAILED',
      violations: [unknown],
    });
    // The text form: the file fails, with the finding on its line.
    const text = cli(box, ['validate', file], env);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `FAIL  ${file}\n  /steps/1/verify/check (13:15): step "lint" names check "lint"`,
    );
  });

  it('without a checks file, each step naming a check is a warning: valid, saved, and said to be unable to run here', async () => {
    const { box, file, env } = withChecks(false);
    sb = box;
    const printed = cli(box, ['validate', '--json', file], env);
    expect(printed.code, printed.stderr).toBe(0);
    const report = (JSON.parse(printed.stdout) as Json).files[0];
    expect(report.valid).toBe(true);
    const warned = (report.warnings as Json[]).filter((w) => w.rule === 'knownCheck');
    expect(warned.map((w) => [w.path, w.actual])).toEqual([
      ['/steps/0/verify/check', 'unit-tests'],
      ['/steps/1/verify/check', 'lint'],
    ]);
    expect(warned[0]?.message).toContain('cannot run here: this server has no checks');

    const { client, close } = await inProcessClient(box, env);
    closers.push(close);
    const checked = await callTool(client, 'workflow_validate_manifest', { content: verified });
    expect(checked).toMatchObject({ valid: true, warnings: report.warnings });
    const saved = await callTool(client, 'workflow_save', { content: verified });
    expect(saved).toMatchObject({ workflow_id: 'verified', warnings: report.warnings });
  });

  it('validate refuses a checks file that cannot be used, as serve does (exit 2, the setting named)', () => {
    const { box, file } = withChecks(false);
    sb = box;
    const broken = join(box.root, 'broken.yaml');
    writeFileSync(broken, 'checks: [unclosed');
    const printed = cli(box, ['validate', file], { WORKFLOWLOOKUP_CHECKS_FILE: broken });
    expect(printed.code).toBe(2);
    expect(printed.stderr).toContain('WORKFLOWLOOKUP_CHECKS_FILE');
    expect(printed.stderr).toContain('not valid YAML');
  });
});
