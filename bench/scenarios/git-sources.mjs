// Git sources (issue #35): start-up with a git source whose remote never answers (a TCP server that
// accepts and stays silent) against none, as the first workflow_list after spawn (x floor and as a
// ratio); and a library of 1,000 workflows served from git against the same 1,000 from a directory:
// the first workflow_list of a warm start (definition cache filled) and a full workflow_list in a
// running server. The git library is synced once with `workflowlookup sources sync` (its time is
// reported too). Scenario module of `npm run bench`; alone: `node bench/scenarios/git-sources.mjs
// [--rounds 10] [--lists 200]` after `npm run build`.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import {
  firstList,
  generatedWorkflows,
  INIT_PARAMS,
  LineServer,
  measureFloor,
  ratio,
  round,
  stats,
} from '../lib.mjs';
import { numberArg, runAlone } from '../pg-lib.mjs';

export const title =
  'Git sources: start-up with a remote that never answers vs none; 1,000 workflows from git vs from a directory';

export async function skip() {
  return spawnSync('git', ['--version']).status === 0 ? undefined : 'git is not installed';
}

/** Full workflow_list calls (no paging) in one running server: ms per call. */
async function fullLists(cli, env, calls) {
  const server = new LineServer(cli, env);
  try {
    await server.request('initialize', INIT_PARAMS, 0);
    server.notify('notifications/initialized');
    const samples = [];
    let count = 0;
    for (let i = 0; i < calls; i++) {
      const t = performance.now();
      const res = await server.request('tools/call', { name: 'workflow_list', arguments: {} });
      samples.push(performance.now() - t);
      count = res.result?.structuredContent?.workflows?.length ?? -1;
    }
    return { ...stats(samples), count };
  } finally {
    await server.stop();
  }
}

/** A TCP server that accepts and never answers. */
async function silentRemote() {
  const sockets = new Set();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/library.git`,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(r);
      }),
  };
}

function gitLibrary(root, n) {
  const git = (cwd, ...args) =>
    execFileSync('git', args, {
      cwd,
      stdio: 'ignore',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'bench',
        GIT_AUTHOR_EMAIL: 'bench@example.com',
        GIT_COMMITTER_NAME: 'bench',
        GIT_COMMITTER_EMAIL: 'bench@example.com',
        GIT_CONFIG_GLOBAL: '/dev/null',
      },
    });
  const remote = join(root, 'library.git');
  const work = join(root, 'library-work');
  mkdirSync(remote, { recursive: true });
  git(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  generatedWorkflows(join(work, 'workflows'), n);
  git(work, 'init', '--quiet', '--initial-branch=main');
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', 'library');
  git(work, 'push', '--quiet', remote, 'HEAD:main');
  return remote;
}

export async function run(ctx) {
  const rounds = numberArg(ctx.args, 'rounds', 10);
  const lists = numberArg(ctx.args, 'lists', 200);
  const base = {
    PATH: process.env.PATH,
    HOME: join(ctx.tmp, 'home'),
    XDG_CONFIG_HOME: join(ctx.tmp, 'config'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: join(ctx.tmp, 'runtime'),
  };
  const silent = await silentRemote();
  const remote = gitLibrary(ctx.tmp, 1000);
  const directory = join(ctx.tmp, 'directory');
  generatedWorkflows(directory, 1000);
  const gitEnv = {
    ...base,
    WORKFLOWLOOKUP_GIT_SOURCES: `${remote}#main:workflows`,
    WORKFLOWLOOKUP_DATA_DIR: join(ctx.tmp, 'data-git'),
    // The library does not change: only the start-up fetch runs, as at every start.
    WORKFLOWLOOKUP_GIT_SYNC_INTERVAL: '0',
  };
  const dirEnv = {
    ...base,
    WORKFLOW_STORAGE_PATH: directory,
    WORKFLOWLOOKUP_DATA_DIR: join(ctx.tmp, 'data-dir'),
  };
  try {
    ctx.progress('sync of a 1,000-workflow library (workflowlookup sources sync)');
    const t = performance.now();
    execFileSync(process.execPath, [ctx.cli, 'sources', 'sync'], { env: gitEnv, stdio: 'ignore' });
    const syncMs = round(performance.now() - t);
    // Warm both: the definition cache holds every file's verdict.
    await firstList(ctx.cli, gitEnv);
    await firstList(ctx.cli, dirEnv);
    const samples = { floor: [], none: [], silent: [], git1000: [], dir1000: [] };
    for (let r = 0; r < rounds; r++) {
      ctx.progress(
        `round ${r + 1}/${rounds}: floor, no git source, silent remote, 1,000 from git / a directory`,
      );
      samples.floor.push((await measureFloor(1)).medianMs);
      const data = join(ctx.tmp, 'data-start');
      samples.none.push((await firstList(ctx.cli, { ...base, WORKFLOWLOOKUP_DATA_DIR: data })).ms);
      samples.silent.push(
        (
          await firstList(ctx.cli, {
            ...base,
            WORKFLOWLOOKUP_DATA_DIR: data,
            WORKFLOWLOOKUP_GIT_SOURCES: `${silent.url}#main`,
            WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: 'http',
          })
        ).ms,
      );
      const fromGit = await firstList(ctx.cli, gitEnv);
      const fromDir = await firstList(ctx.cli, dirEnv);
      if (fromGit.count < 1000 || fromDir.count < 1000)
        throw new Error(
          `expected 1,000 workflows, got ${fromGit.count} from git, ${fromDir.count} from the directory`,
        );
      samples.git1000.push(fromGit.ms);
      samples.dir1000.push(fromDir.ms);
    }
    ctx.progress(`full workflow_list x ${lists}, from git and from a directory`);
    const listGit = await fullLists(ctx.cli, gitEnv, lists);
    const listDir = await fullLists(ctx.cli, dirEnv, lists);
    const floor = stats(samples.floor);
    const of = (name) => {
      const s = stats(samples[name]);
      return { ...s, xFloor: ratio(s.medianMs, floor.medianMs) };
    };
    const startup = {
      none: of('none'),
      silent: of('silent'),
      git1000: of('git1000'),
      dir1000: of('dir1000'),
    };
    return {
      rounds,
      floor,
      syncMs,
      startup,
      silentVsNone: round(startup.silent.medianMs / startup.none.medianMs),
      gitVsDirStart: round(startup.git1000.medianMs / startup.dir1000.medianMs),
      list: { git: listGit, dir: listDir, gitVsDir: round(listGit.medianMs / listDir.medianMs) },
    };
  } finally {
    await silent.close();
  }
}

export function report(r) {
  const line = (label, s) =>
    `  ${label.padEnd(52)} median ${String(s.medianMs).padStart(8)} ms  ${String(s.xFloor).padStart(5)}x floor`;
  return [
    `  floor (bare node, ${r.rounds} spawns interleaved): median ${r.floor.medianMs} ms`,
    line('first workflow_list, no git source', r.startup.none),
    line('first workflow_list, git source that never answers', r.startup.silent),
    `  silent remote vs none: ${r.silentVsNone}x (goal: about 1x, start-up never waits on the network)`,
    line('first workflow_list, 1,000 from git (warm)', r.startup.git1000),
    line('first workflow_list, 1,000 from a directory (warm)', r.startup.dir1000),
    `  1,000 from git vs from a directory, warm start: ${r.gitVsDirStart}x`,
    `  full workflow_list of 1,000 in a running server: git median ${r.list.git.medianMs} ms (p99 ${r.list.git.p99Ms}), directory median ${r.list.dir.medianMs} ms (p99 ${r.list.dir.p99Ms}): ${r.list.gitVsDir}x`,
    `  one sync of the 1,000-workflow library (sources sync, fresh data dir): ${r.syncMs} ms`,
  ];
}

await runAlone(import.meta.url, { title, skip, run, report }, 'git-sources');
