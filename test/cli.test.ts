import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isDefinitionFile } from '../src/workflows/parse.js';
import { CLI, FIXTURES, ROOT, type Sandbox, sandbox } from './helpers/server.js';

let sb: Sandbox;
afterEach(() => sb?.cleanup());

function run(args: string[], cwd?: string) {
  sb ??= sandbox();
  const res = spawnSync(process.execPath, [CLI, ...args], {
    env: sb.env,
    cwd: cwd ?? sb.project,
    encoding: 'utf8',
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('cli', () => {
  it('--version prints the package version and --help lists every command', () => {
    sb = sandbox();
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(run(['--version']).stdout.trim()).toBe(pkg.version);
    const help = run(['--help']);
    expect(help.code).toBe(0);
    for (const cmd of ['serve', 'list', 'validate', 'init', 'sources', 'schema'])
      expect(help.stdout).toContain(cmd);
  });

  it('list prints the bundled workflows, --json in the workflow_list shape', () => {
    sb = sandbox();
    const text = run(['list']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('ai-task-implementation');
    const json = JSON.parse(run(['list', '--json']).stdout) as {
      workflows: { id: string }[];
      broken: unknown[];
    };
    expect(json.workflows.length).toBeGreaterThanOrEqual(7);
    expect(json.broken).toEqual([]);
  });

  it('validate passes valid files and fails invalid ones with readable violations', () => {
    sb = sandbox();
    const ok = run([
      'validate',
      join(FIXTURES, 'valid', 'loops-demo.yaml'),
      join(FIXTURES, 'valid', 'conditions-demo.json'),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('2 valid, 0 invalid');
    const bad = run([
      'validate',
      join(FIXTURES, 'invalid', 'broken-schema.yaml'),
      join(FIXTURES, 'invalid', 'broken-syntax.json'),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/FAIL .*broken-schema\.yaml/);
    expect(bad.stdout).toContain('/version');
    expect(bad.stdout).toMatch(/broken-syntax\.json\n {2}\(root\) \(\d+:\d+\): invalid JSON/);
    const criteria = run(['validate', join(FIXTURES, 'invalid', 'unevaluable-criteria.json')]);
    expect(criteria.code).toBe(1);
    expect(criteria.stdout).toContain('regex pattern');
    expect(run(['validate']).code).toBe(2);
    expect(run(['validate', join(sb.root, 'missing.json')]).stdout).toContain('file not found');
  });

  it('validate accepts every bundled workflow', () => {
    sb = sandbox();
    const dir = join(ROOT, 'workflows');
    // The workflows, not their tests (<id>.test.yaml, which `workflowlookup test` runs).
    const files = readdirSync(dir)
      .filter(isDefinitionFile)
      .map((f) => join(dir, f));
    expect(files.length).toBeGreaterThanOrEqual(8);
    const res = run(['validate', ...files]);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(`${files.length} valid, 0 invalid`);
  });

  it('init scaffolds a project workflow the server then serves, and never overwrites', () => {
    sb = sandbox();
    const first = run(['init']);
    expect(first.code).toBe(0);
    const file = join(sb.project, '.workflowlookup', 'workflows', 'my-first-workflow.yaml');
    expect(existsSync(file)).toBe(true);
    expect(run(['validate', file]).code).toBe(0);
    expect(run(['list']).stdout).toContain('my-first-workflow');
    expect(run(['init']).code).toBe(1);
  });

  it('sources shows each source and where every workflow comes from', () => {
    sb = sandbox();
    run(['init']);
    const res = run(['sources']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/bundled\s+\S+workflows/);
    expect(res.stdout).toMatch(/my-first-workflow\s+project/);
    expect(res.stdout).toContain(`Runtime (writable) dir: ${sb.runtime}`);
  });

  it('schema prints the committed workflow JSON Schema', () => {
    sb = sandbox();
    const printed = JSON.parse(run(['schema']).stdout);
    const committed = JSON.parse(readFileSync(join(ROOT, 'schema', 'workflow.schema.json'), 'utf8'));
    expect(printed).toEqual(committed);
  });

  it('rejects an unknown command', () => {
    sb = sandbox();
    const res = run(['frobnicate']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('Unknown command');
  });
});

describe('cli arguments and configuration', () => {
  it('refuses unknown flags, prints per-command help, and --help names every environment variable', () => {
    sb = sandbox();
    const bogus = run(['serve', '--bogus']);
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toContain('unknown option --bogus');
    const validateHelp = run(['validate', '--help']);
    expect(validateHelp.code).toBe(0);
    expect(validateHelp.stdout).toMatch(/^Usage: workflowlookup validate \[--json\] <files\.\.\.>/);
    const help = run(['--help']).stdout;
    const doc = readFileSync(join(ROOT, 'docs', 'environment.md'), 'utf8');
    // The Environment table (other tables list error codes in the same shape).
    const table = doc.slice(doc.indexOf('<!-- environment:start'), doc.indexOf('<!-- environment:end'));
    const documented = [...table.matchAll(/^\| `([A-Z_<>]+)` \|/gm)].map((m) => m[1] as string);
    expect(documented.length).toBeGreaterThan(20);
    for (const name of documented) expect(help, name).toContain(name);
  });

  it('refuses bad configuration at start with a clear message and exit code 2', () => {
    sb = sandbox();
    const short = spawnSync(process.execPath, [CLI], {
      env: { ...sb.env, WORKFLOWLOOKUP_TOKEN_SECRET: 'too-short' },
      cwd: sb.project,
      encoding: 'utf8',
      input: '',
    });
    expect(short.status).toBe(2);
    expect(short.stderr).toContain('WORKFLOWLOOKUP_TOKEN_SECRET must be at least 32 characters');
    const tools = run(['serve', '--tools', 'everything']);
    expect(tools.code).toBe(2);
    expect(tools.stderr).toContain('unknown tool group');
  });

  it('writes no stack trace when its reader goes away (piped into head)', () => {
    sb = sandbox();
    const res = spawnSync('sh', ['-c', `"${process.execPath}" "${CLI}" --help | head -1`], {
      env: sb.env,
      encoding: 'utf8',
    });
    expect(res.stdout).toContain('workflowlookup');
    expect(res.stderr).toBe('');
  });
});

describe('the messages of a command used wrongly', () => {
  it('name the command, exit 2 on a usage error, and never print nothing', () => {
    sb = sandbox();
    const validate = run(['validate']);
    expect([validate.code, validate.stderr]).toEqual([
      2,
      'workflowlookup: validate: name at least one workflow file (validate FILE...)\n',
    ]);
    const approve = run(['approve']);
    expect(approve.code).toBe(2);
    expect(approve.stderr).toMatch(/^workflowlookup: approve needs exactly one approval id/);
    // No tokens: stdout stays the (empty) list; stderr says where it looked and how to add one.
    const tokens = run(['token', 'list']);
    expect([tokens.code, tokens.stdout]).toEqual([0, '']);
    expect(tokens.stderr).toMatch(
      /^No tokens in .*tokens\.json\. Add one with: workflowlookup token add NAME/,
    );
    const bogus = run(['list', '--bogus']);
    expect(bogus.code).toBe(2);
    const said = bogus.stderr.split('\n')[0] as string;
    expect(said).toBe(
      'workflowlookup: unknown option --bogus (a value that starts with "-" goes after --, as in: -- --bogus)',
    );
    for (const quote of ["'", '"']) expect(said.split(quote).length % 2, `balanced ${quote}`).toBe(1);
  });

  it('a port in use names the flag and the variable that choose another (exit 2)', async () => {
    sb = sandbox();
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    try {
      const serve = run(['serve', '--http', '--port', String(port)]);
      expect(serve.code).toBe(2);
      expect(serve.stderr).toContain(
        `workflowlookup: port ${port} on 127.0.0.1 is in use: choose another with --port or WORKFLOWLOOKUP_HTTP_PORT (0 picks a free one)`,
      );
      expect(serve.stderr).not.toContain('EADDRINUSE');
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });
});
