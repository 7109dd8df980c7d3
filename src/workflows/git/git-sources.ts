import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Violation } from '../../model/violation.js';
import type { Logger } from '../../telemetry/log.js';
import type { WorkflowRegistry } from '../registry.js';
import type { GitSourceSpec, WorkflowSource } from '../sources.js';
import { DirectoryWatcher } from '../watch.js';
import { materialize } from './materialize.js';
import { GitRunError, runGit } from './run-git.js';
import { isCommitHash } from './spec.js';

/** What is kept per source in its folder of the data dir (state.json), across restarts and processes. */
interface SourceState {
  /** The commit served (every file checked out and parsed), and when it was fetched. */
  good?: { commit: string; at: string };
  /** The last sync that reached the remote, or failed to. */
  lastSync?: string;
  /** Why the last sync failed (the remote is down, the ref is gone…); absent when it worked. */
  lastError?: string;
  /** The newest commit refused because some file in it is broken, and those files. */
  broken?: { commit: string; at: string; files: { file: string; id?: string; violations: Violation[] }[] };
}

/** One source as `workflowlookup sources`, the dashboard and the metrics show it. */
export interface GitSourceStatus {
  id: string;
  repository: string;
  ref: string;
  subdir: string;
  /** The commit served now (undefined: none yet). */
  commit: string | undefined;
  /** When the served commit was fetched. */
  fetchedAt: string | undefined;
  lastSync: string | undefined;
  lastError: string | undefined;
  broken: SourceState['broken'];
  /** Workflows served from it. */
  workflows: number;
}

/** The outcome of one source's sync. */
export type SyncResult =
  | { outcome: 'updated'; commit: string }
  | { outcome: 'unchanged'; commit: string }
  | { outcome: 'broken'; commit: string; files: number }
  | { outcome: 'error'; error: string };

export interface GitSourcesOptions {
  registry: WorkflowRegistry;
  /** Protocols git may use. */
  protocols: readonly string[];
  /** Largest repository (the fetched objects) and largest set of workflow files, in bytes. */
  maxBytes: number;
  /** One fetch's time limit. */
  timeoutMs: number;
  /** Default sync interval (0: only at start and on demand). */
  intervalMs: number;
  /** The Authorization header value for a source, if a token is configured for it. */
  authorization: (spec: GitSourceSpec) => string | undefined;
  /** Secrets that must never appear in a message (the tokens). */
  secrets: readonly string[];
  log: Logger;
  /** The clock timestamps are taken from (tests inject one). */
  clock?: () => number;
}

const STATE_FILE = 'state.json';
const CHECKOUTS = 'checkouts';

/**
 * The git sources of the registry: each one's last good checkout is served at once (from the data
 * dir, never waiting on the network), then fetched again at start, on an interval and on demand. A
 * new commit replaces the source's workflows only when every file in it checks out and parses
 * (WorkflowRegistry.useCheckout); otherwise the served set stays and the commit is reported.
 */
export class GitSources {
  private readonly states = new Map<string, SourceState>();
  private readonly running = new Map<string, Promise<SyncResult>>();
  private readonly timers: NodeJS.Timeout[] = [];
  /** Told when another process (`workflowlookup sources sync`) served a new commit from the same data dir. */
  private readonly watcher = new DirectoryWatcher((dir) => this.onStateChange(dir));
  private closed = false;
  private started = false;
  /** Stops every git still running when the sources close. */
  private readonly stop = new AbortController();

  constructor(
    readonly sources: readonly WorkflowSource[],
    private readonly options: GitSourcesOptions,
  ) {
    for (const source of sources) {
      const state = readState(source.dir);
      this.states.set(source.dir, state);
      // The commit refused last (by this process or another) is reported until a later one is served.
      const refused = (state.broken?.files ?? []).map((f) => ({
        status: 'broken' as const,
        source: 'git' as const,
        ...f,
      }));
      options.registry.startFrom(source, this.checkoutFor(source, state), refused);
    }
  }

  /** Starts the first sync of every source in the background, then the interval; never waits. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    for (const source of this.sources) {
      const spec = source.git as GitSourceSpec;
      this.sync(source).catch(() => undefined);
      this.watcher.add(source.dir);
      const every = spec.intervalMs ?? this.options.intervalMs;
      // A pinned commit never changes: once served, there is nothing more to fetch.
      if (every > 0 && !isCommitHash(spec.ref))
        this.timers.push(setInterval(() => this.sync(source).catch(() => undefined), every).unref());
    }
  }

  /** Syncs every source now (`workflowlookup sources sync`); one sync of a source at a time. */
  async syncAll(): Promise<{ source: GitSourceStatus; result: SyncResult }[]> {
    const results = await Promise.all(this.sources.map((s) => this.sync(s)));
    const statuses = this.status();
    return results.map((result, i) => ({ source: statuses[i] as GitSourceStatus, result }));
  }

  /** Fetches one source and serves its commit if every file in it is good. */
  sync(source: WorkflowSource): Promise<SyncResult> {
    const pending = this.running.get(source.dir);
    if (pending !== undefined) return pending;
    const run = this.fetchAndServe(source).finally(() => this.running.delete(source.dir));
    this.running.set(source.dir, run);
    return run;
  }

  status(): GitSourceStatus[] {
    return this.sources.map((source) => {
      const spec = source.git as GitSourceSpec;
      const state = this.states.get(source.dir) ?? {};
      const served = this.options.registry.checkoutOf(source);
      const workflows = this.options.registry
        .filesOf('git')
        .filter(
          (e) => e.status === 'valid' && served !== undefined && e.file.startsWith(`${served.dir}/`),
        ).length;
      return {
        id: spec.id,
        repository: spec.url,
        ref: spec.ref,
        subdir: spec.subdir,
        commit: served?.commit ?? state.good?.commit,
        fetchedAt: state.good?.at,
        lastSync: state.lastSync,
        lastError: state.lastError,
        broken: state.broken,
        workflows,
      };
    });
  }

  close(): void {
    this.closed = true;
    this.stop.abort();
    this.watcher.close();
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }

  private checkoutFor(source: WorkflowSource, state: SourceState) {
    const spec = source.git as GitSourceSpec;
    if (state.good === undefined) return undefined;
    const dir = join(source.dir, CHECKOUTS, state.good.commit);
    if (!existsSync(dir)) return undefined;
    return { dir, repository: spec.url, ref: spec.ref, commit: state.good.commit };
  }

  private now(): string {
    return new Date((this.options.clock ?? Date.now)()).toISOString();
  }

  /** Scrubs every configured secret from a message (git's stderr, say) before it is kept or shown. */
  private scrub(message: string): string {
    let text = message;
    for (const secret of this.options.secrets) if (secret !== '') text = text.split(secret).join('***');
    return text;
  }

  private async save(source: WorkflowSource, state: SourceState): Promise<void> {
    this.states.set(source.dir, state);
    await mkdir(source.dir, { recursive: true });
    const tmp = join(source.dir, `.${STATE_FILE}.${process.pid}.tmp`);
    await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`);
    await rename(tmp, join(source.dir, STATE_FILE));
  }

  private async fetchAndServe(source: WorkflowSource): Promise<SyncResult> {
    const spec = source.git as GitSourceSpec;
    const { registry, log } = this.options;
    const state: SourceState = { ...readState(source.dir) };
    const served = registry.checkoutOf(source);
    // A pinned commit already served has nothing newer.
    if (isCommitHash(spec.ref) && served?.commit === spec.ref)
      return { outcome: 'unchanged', commit: spec.ref };
    await mkdir(source.dir, { recursive: true });
    const work = await mkdtemp(join(source.dir, 'fetch-'));
    try {
      // Asking the remote where the ref points costs no pack: most syncs end here, nothing new.
      const advertised = isCommitHash(spec.ref) ? spec.ref : await this.remoteCommit(spec);
      const known =
        advertised !== undefined && (advertised === served?.commit || advertised === state.broken?.commit);
      const commit = known ? advertised : await this.fetch(spec, work);
      state.lastSync = this.now();
      delete state.lastError;
      if (commit === served?.commit) {
        // The remote is back on the commit served (a bad commit was reverted): nothing is refused now.
        delete state.broken;
        registry.forgetRefused(source);
        await this.save(source, state);
        return { outcome: 'unchanged', commit };
      }
      if (commit === state.broken?.commit) {
        await this.save(source, state);
        return { outcome: 'broken', commit, files: state.broken.files.length };
      }
      const checkouts = join(source.dir, CHECKOUTS);
      await mkdir(checkouts, { recursive: true });
      const dir = join(checkouts, commit);
      const staging = join(work, 'checkout');
      const { outward } = await materialize(join(work, 'repo.git'), commit, spec.subdir, staging, {
        protocols: this.options.protocols,
        timeoutMs: this.options.timeoutMs,
        maxBytes: this.options.maxBytes,
        signal: this.stop.signal,
      });
      // Another process may have written the same commit meanwhile: either copy is the commit.
      if (!existsSync(dir))
        await rename(staging, dir).catch((error: NodeJS.ErrnoException) => {
          if (!existsSync(dir)) throw error;
        });
      const outcome = await registry.useCheckout(
        source,
        { dir, repository: spec.url, ref: spec.ref, commit },
        outward.map((path) => ({
          path,
          violation: {
            path: '',
            rule: 'symlink',
            message: 'a symbolic link that leaves the checkout; links that leave it are never followed',
          },
        })),
      );
      if (outcome.outcome === 'served') {
        state.good = { commit, at: this.now() };
        delete state.broken;
        await this.save(source, state);
        await this.prune(source, [commit, served?.commit]);
        log.info(`git source ${spec.url}#${spec.ref}: serving ${commit}`);
        return { outcome: 'updated', commit };
      }
      if (outcome.outcome === 'not-checked') {
        // No verdict yet (the machine was too busy to check some rule): the next sync tries again.
        state.lastError = `commit ${commit} not served yet: ${outcome.files.length} file(s) could not be checked in time`;
        await this.save(source, state);
        await rm(dir, { recursive: true, force: true });
        return { outcome: 'error', error: state.lastError };
      }
      state.broken = {
        commit,
        at: this.now(),
        files: outcome.broken.map(({ file, id, violations }) => ({
          file,
          ...(id !== undefined ? { id } : {}),
          violations,
        })),
      };
      await this.save(source, state);
      await rm(dir, { recursive: true, force: true });
      log.warn(
        `git source ${spec.url}#${spec.ref}: commit ${commit} has ${outcome.broken.length} broken file(s); still serving ${served?.commit ?? 'nothing'}`,
      );
      return { outcome: 'broken', commit, files: outcome.broken.length };
    } catch (error) {
      const message = this.scrub(error instanceof Error ? error.message : String(error));
      // Stopped because the server is closing: not the remote's fault, and nothing to report next time.
      if (this.closed) return { outcome: 'error', error: message };
      state.lastSync = this.now();
      state.lastError = message;
      await this.save(source, state).catch(() => undefined);
      log.warn(`git source ${spec.url}#${spec.ref}: sync failed: ${message}`);
      return { outcome: 'error', error: message };
    } finally {
      await rm(work, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /**
   * A shallow fetch of the source's ref into a fresh bare repository in `work` (nothing of an earlier
   * fetch is trusted or grows without bound); the size of what arrives is watched while it arrives.
   * Returns the commit fetched.
   */
  private async fetch(spec: GitSourceSpec, work: string): Promise<string> {
    const gitDir = join(work, 'repo.git');
    const common = {
      protocols: this.options.protocols,
      timeoutMs: this.options.timeoutMs,
      signal: this.stop.signal,
    };
    await runGit({ ...common, args: ['init', '--bare', '--quiet', gitDir] });
    const { maxBytes } = this.options;
    try {
      await runGit({
        ...common,
        authorization: this.options.authorization(spec),
        args: [
          '--git-dir',
          gitDir,
          'fetch',
          '--quiet',
          '--no-tags',
          '--no-recurse-submodules',
          '--no-write-fetch-head',
          '--depth',
          '1',
          '--',
          spec.url,
          // A branch, tag or commit; the `+` lets a force-push through (what it brings is checked).
          `+${spec.ref}:refs/workflowlookup/fetched`,
        ],
        poll: async () => {
          const size = await sizeOf(gitDir);
          return size > maxBytes
            ? `the repository is larger than ${maxBytes} bytes (WORKFLOWLOOKUP_GIT_MAX_BYTES)`
            : undefined;
        },
      });
    } catch (error) {
      if (error instanceof GitRunError && error.reason === 'timeout') throw this.timedOut();
      throw error;
    }
    if ((await sizeOf(gitDir)) > maxBytes)
      throw new Error(`the repository is larger than ${maxBytes} bytes (WORKFLOWLOOKUP_GIT_MAX_BYTES)`);
    const out = await runGit({
      ...common,
      args: ['--git-dir', gitDir, 'rev-parse', '--verify', '--quiet', 'refs/workflowlookup/fetched^{commit}'],
    });
    const commit = out.toString('utf8').trim();
    if (!isCommitHash(commit)) throw new Error(`the ref ${spec.ref} does not name a commit`);
    return commit;
  }

  /**
   * The commit the remote's ref points to, from `git ls-remote` (a branch, the peeled commit of a tag,
   * or HEAD); undefined when it cannot be told (the fetch then says what is wrong).
   */
  private async remoteCommit(spec: GitSourceSpec): Promise<string | undefined> {
    const out = await runGit({
      protocols: this.options.protocols,
      timeoutMs: this.options.timeoutMs,
      signal: this.stop.signal,
      authorization: this.options.authorization(spec),
      args: ['ls-remote', '--', spec.url, spec.ref],
    }).catch((error: unknown) => {
      if (error instanceof GitRunError && error.reason === 'timeout') throw this.timedOut();
      throw error;
    });
    const refs = new Map<string, string>();
    for (const line of out.toString('utf8').split('\n')) {
      const [oid, name] = line.trim().split('\t');
      if (oid !== undefined && name !== undefined && isCommitHash(oid)) refs.set(name, oid);
    }
    if (spec.ref === 'HEAD') return refs.get('HEAD');
    return (
      refs.get(`refs/tags/${spec.ref}^{}`) ??
      refs.get(`refs/heads/${spec.ref}`) ??
      refs.get(`refs/tags/${spec.ref}`) ??
      refs.get(`refs/${spec.ref}`) ??
      refs.get(spec.ref)
    );
  }

  private timedOut(): Error {
    return new Error(`the remote did not answer within ${Math.round(this.options.timeoutMs / 1000)} s`);
  }

  /** Removes checkouts no one serves: all but the commits named (the new one and the one before). */
  private async prune(source: WorkflowSource, keep: (string | undefined)[]): Promise<void> {
    const dir = join(source.dir, CHECKOUTS);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (!keep.includes(name))
        await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /**
   * Another process (the CLI) wrote a source's state: when its good commit is not the one served here,
   * serve it (checked again, as every commit is).
   */
  private onStateChange(dir: string): void {
    if (this.closed) return;
    const source = this.sources.find((s) => s.dir === dir);
    if (source === undefined || this.running.has(source.dir)) return;
    const state = readState(source.dir);
    this.states.set(source.dir, state);
    const checkout = this.checkoutFor(source, state);
    if (checkout !== undefined && checkout.commit !== this.options.registry.checkoutOf(source)?.commit)
      this.options.registry.useCheckout(source, checkout).catch(() => undefined);
  }
}

function readState(dir: string): SourceState {
  try {
    return JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as SourceState;
  } catch {
    return {};
  }
}

/** Bytes below a folder (what a fetch brought so far). */
async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) await walk(path);
      else
        total += await stat(path).then(
          (s) => s.size,
          () => 0,
        );
    }
  };
  await walk(dir);
  return total;
}
