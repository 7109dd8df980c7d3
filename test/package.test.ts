import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/server.js';

// The package as a newcomer gets it: `npm pack` → install the tarball into an empty project without
// the registry's help (`--prefer-offline`: the packages come from npm's cache, as after `npm ci`) →
// `npx workflowlookup`. Install scripts are skipped and better-sqlite3's native module is copied from
// this checkout's own build (the same version, the same Node): compiling SQLite from source takes
// minutes here and is better-sqlite3's own install step, which `npm ci` in .ci/run exercises.

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
};
const npm = (args: string[], cwd: string, extra: { input?: string } = {}) =>
  spawnSync('npm', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    },
    timeout: 120_000,
    ...extra,
  });

let work: string;
let project: string;
let tarball: string;
let packedFiles: Set<string>;
beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'cli.js'))) throw new Error('build first: node scripts/build.mjs');
  work = mkdtempSync(join(tmpdir(), 'wl-pack-'));
  // Scripts are skipped: the suite has built dist/ already, and `prepack` would only build it again
  // (replacing the chunks under every other test's running servers).
  const packed = npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT);
  expect(packed.status, packed.stderr).toBe(0);
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, info?.filename as string);
  const files = new Set(info?.files.map((f) => f.path));
  packedFiles = files;
  for (const needed of [
    'dist/cli.js',
    'dist/prelude.json',
    'dist/bundled-definitions.json',
    'dist/validation-worker.js',
    'dist/checkpoint-worker.js',
    'dist/dashboard/dashboard.js',
    'dist/views/execution-progress.html',
    'docs/authoring-guide.md',
    'schema/workflow.schema.json',
    'workflows/coding-task-workflow.json',
    'agents/architect.md',
  ]) {
    expect(files.has(needed), needed).toBe(true);
  }
  for (const path of files)
    expect(path, 'nothing from src/, test/ or bench/').not.toMatch(/^(src|test|bench)\//);

  project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), '{"name": "newcomer", "private": true}\n');
  const installed = npm(['install', '--prefer-offline', '--ignore-scripts', tarball], project);
  expect(installed.status, installed.stderr).toBe(0);
  // The native module this checkout built, for the same better-sqlite3 version.
  const here = createRequire(join(ROOT, 'package.json'));
  const ours = dirname(here.resolve('better-sqlite3/package.json'));
  const theirs = join(project, 'node_modules', 'better-sqlite3');
  const version = (dir: string) =>
    (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  expect(version(theirs)).toBe(version(ours));
  mkdirSync(join(theirs, 'build', 'Release'), { recursive: true });
  copyFileSync(
    join(ours, 'build', 'Release', 'better_sqlite3.node'),
    join(theirs, 'build', 'Release', 'better_sqlite3.node'),
  );
}, 180_000);
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A newcomer's environment: an empty home, nothing of this checkout's settings. */
function newcomer(): NodeJS.ProcessEnv {
  const home = join(work, 'home');
  mkdirSync(home, { recursive: true });
  return { PATH: process.env.PATH ?? '', HOME: home, npm_config_update_notifier: 'false' };
}

/** Every module specifier the built dist/ loads from node_modules (Node's built-ins left out). */
function bareImports(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  const builtins = new Set(builtinModules);
  // `from 'x'`, `import 'x'`, `import('x')` and `require('x')`, but not the text of generated code
  // (ajv's code generator writes strings such as `'require("ajv/dist/runtime/equal")'`, never run).
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*|(?<![`'"\w.])require\s*\(\s*)(['"])([^'"\s]+)\1/g;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(c|m)?js$/.test(name))
        for (const [, , spec] of readFileSync(path, 'utf8').matchAll(pattern)) {
          if (spec === undefined || spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:'))
            continue;
          const name = spec.startsWith('@')
            ? spec.split('/').slice(0, 2).join('/')
            : (spec.split('/')[0] ?? spec);
          if (!builtins.has(name)) found.set(name, path.slice(dir.length + 1));
        }
    }
  };
  walk(dir);
  return found;
}

/** Bare imports in dist/ that never run, and why (each is a library's optional path we switch off). */
const NEVER_LOADED: Record<string, string> = {
  // pg's libpq binding, required only under NODE_PG_FORCE_NATIVE; we use pg's JavaScript client.
  'pg-native': 'pg',
  // json-schema-ref-parser's HTTP resolver; openapi-load.ts switches external resolution off.
  undici: 'json-schema-ref-parser',
};

/** Packages and bytes under a node_modules directory. */
function treeSize(dir: string): { packages: number; bytes: number } {
  let packages = 0;
  let bytes = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const stat = statSync(path);
      if (stat.isDirectory()) {
        if (d.endsWith('node_modules') && !name.startsWith('.') && !name.startsWith('@')) packages++;
        if (d.split('/').at(-2) === 'node_modules' && d.split('/').at(-1)?.startsWith('@')) packages++;
        walk(path);
      } else bytes += stat.size;
    }
  };
  walk(dir);
  return { packages, bytes };
}

describe('what the package depends on', () => {
  it('ships as dependencies exactly what dist/ loads from node_modules: better-sqlite3', () => {
    const loaded = bareImports(join(ROOT, 'dist'));
    const unexplained = [...loaded].filter(
      ([name]) => !(name in pkg.dependencies) && !(name in NEVER_LOADED),
    );
    expect(unexplained, 'imported by dist/ but not a dependency').toEqual([]);
    const unused = Object.keys(pkg.dependencies).filter((name) => !loaded.has(name));
    expect(unused, 'a dependency dist/ never loads: bundle it, list it in devDependencies').toEqual([]);
    expect(Object.keys(pkg.dependencies)).toEqual(['better-sqlite3']);
  });
});

describe('the packed tarball', () => {
  it('carries no install-time script and no source maps, and installs a small tree', () => {
    const manifest = JSON.parse(
      spawnSync('tar', ['xzf', tarball, '-O', 'package/package.json'], { encoding: 'utf8' }).stdout,
    ) as { scripts?: Record<string, string> };
    // npm 11 warns about these on install ("not yet covered by allowScripts"); ours only build dist/.
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(manifest.scripts?.[script], script).toBeUndefined();
    expect([...packedFiles].filter((f) => f.endsWith('.map'))).toEqual([]);
    // better-sqlite3 alone is 38 packages and ~13 MB; the rest is this package.
    const { packages, bytes } = treeSize(join(project, 'node_modules'));
    expect(packages).toBeLessThanOrEqual(45);
    expect(bytes).toBeLessThanOrEqual(30 * 1024 * 1024);
    expect(existsSync(join(project, 'node_modules', 'pino')), 'pino is bundled').toBe(false);
  });

  it('installs offline into an empty project and `npx workflowlookup` runs its commands', () => {
    const env = newcomer();
    const run = (args: string[]) =>
      spawnSync('npx', ['--no-install', 'workflowlookup', ...args], { cwd: project, env, encoding: 'utf8' });
    const version = run(['--version']);
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe(pkg.version);
    const listed = run(['list']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('coding-task-workflow');
    const sample = run(['init']);
    expect(sample.status).toBe(0);
    expect(run(['validate', '.workflowlookup/workflows/my-first-workflow.yaml']).stdout).toContain(
      '1 valid, 0 invalid',
    );
  });

  it('serves MCP on stdio from the installed package, executions (SQLite) included', async () => {
    const child = spawn('npx', ['--no-install', 'workflowlookup'], { cwd: project, env: newcomer() });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const answers = async (count: number) => {
      for (let i = 0; i < 400 && out.split('\n').filter(Boolean).length < count; i++)
        await new Promise((r) => setTimeout(r, 50));
      return out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, any>);
    };
    const send = (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'newcomer', version: '1' },
      },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    send({
      jsonrpc: '2.0',
      id: 3,
      method: 'workflow_start',
      params: { workflow_id: 'coding-task-workflow' },
    });
    // A line of the log: pino, bundled into dist/vendor (the install has no pino of its own).
    send({ jsonrpc: '2.0', id: 4, method: 'workflow_get', params: { id: 'no-such-workflow' } });
    const [init, list, started, missing] = await answers(4);
    expect(missing?.error?.code).toBe(-32001);
    expect(init?.result?.serverInfo?.name, err).toBe('workflowlookup');
    expect(list?.result?.tools.map((t: { name: string }) => t.name)).toContain('workflow_tools');
    expect(started?.result, JSON.stringify(started) + err).toMatchObject({
      success: true,
      workflow_state: 'running',
    });
    child.stdin.end();
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(0);
    expect(err).toContain('"msg":"Workflow not found: no-such-workflow"');
  });
});

describe('a clone', () => {
  it('runs the workflowlookup command through npx in the checkout (npm link puts it on PATH)', () => {
    // The checkout has no `prepare` script (dist/ is built by `npm run build`), so npx runs dist/cli.js
    // as it is; scripts stay off in case one comes back: a rebuild here replaced the chunks under every
    // other test's running servers (ERR_MODULE_NOT_FOUND).
    const res = spawnSync('npx', ['--no-install', 'workflowlookup', '--version'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: newcomer().HOME,
        npm_config_update_notifier: 'false',
        npm_config_ignore_scripts: 'true',
      },
      encoding: 'utf8',
    });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout.trim()).toBe(pkg.version);
  });
});
