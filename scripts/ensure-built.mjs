// `npm start`'s prestart: builds dist/ when it is missing or older than what it is built from, so a
// fresh clone runs with `npm install` then `npm start` (the package itself has no prepare script: an
// installed tarball carries dist/ and builds nothing). Quiet when dist/ is current; the build's own
// output goes to stderr, never to stdout, which may be a client's JSON-RPC stream.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

function builtAt() {
  try {
    return statSync(join(root, 'dist', 'cli.js')).mtimeMs;
  } catch {
    return -1;
  }
}

const sources = Math.max(
  ...['src', 'workflows', 'scripts/build.mjs', 'package.json'].map((p) => newest(join(root, p))),
);
if (builtAt() < sources) {
  process.stderr.write('workflowlookup: building dist/ (npm run build)\n');
  const built = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
    cwd: root,
    stdio: ['ignore', process.stderr, process.stderr],
  });
  process.exit(built.status ?? 1);
}
