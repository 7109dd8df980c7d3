import { createHash } from 'node:crypto';
import { basename, dirname, join, relative } from 'node:path';
import { DomainFailure, fail } from '../engine/errors.js';
import { didYouMean, nearestNames } from '../engine/nearest.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import { expandTemplateCalls, routineIdsOf } from '../engine/workrail.js';
import { mapParallelSteps } from '../engine/workrail-parallel.js';
import type { Violation } from '../model/violation.js';
import { DEFAULT_CATEGORY, type Workflow } from '../model/workflow.js';
import type { RuntimeDocumentStore } from '../store/runtime-documents.js';
import { type CheckReport, checkDefinition, DEFINITION_LIMITS, oversize } from './check.js';
import type { DefinitionCache, FileStamp } from './definition-cache.js';
import { registryDelegationFailures } from './delegation.js';
import type { BrokenWorkflow, LoadedWorkflow, RegistryEntry } from './entry.js';
import { type DefinitionFormat, formatOf, isDefinitionFile } from './parse.js';
import {
  listSourceEntries,
  MAX_SOURCE_DEPTH,
  readInside,
  readSourceFile,
  realDir,
  resolveInside,
  UnsafeFileError,
} from './safe-files.js';
import type { ShippedDefinitions } from './shipped-definitions.js';
import type { GitProvenance, SourceKind, WorkflowSource } from './sources.js';
import { DirectoryWatcher } from './watch.js';

// The entry types live in entry.ts, which the definition cache shares without importing the registry.
export type { BrokenWorkflow, LoadedWorkflow, RegistryEntry } from './entry.js';

const UNREADABLE: Record<UnsafeFileError['reason'], string> = {
  outside: 'it links outside its source directory',
  'too-large': 'it is larger than 1 MiB',
  'not-file': 'it is not a regular file',
  changed: 'it changed while it was read; try again',
};

/** Definition files larger than this are reported as broken instead of parsed. */
export const MAX_DEFINITION_BYTES = DEFINITION_LIMITS.maxBytes;

/** The version of a definition file: sha256 of its bytes (pins executions, guards saves). */
export function contentVersion(bytes: string | Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Which variant of a workflow a file is, by its name (WorkRail's `x.v2.json` beside `x.json`). */
type VariantKind = 'v2' | 'agentic' | 'standard' | 'lean';

/**
 * WorkRail's precedence among files of one folder that define the same id (its defaults: v2 tools and
 * agentic routines on, lean workflows off): `.v2.` over `.agentic.` over the plain file. A `.lean.` file
 * is served only when it is the only one (WorkRail serves it only with its lean flag).
 */
const VARIANT_RANK: Record<VariantKind, number> = { v2: 3, agentic: 2, standard: 1, lean: 0 };

function variantOf(file: string): VariantKind {
  const name = basename(file);
  if (name.includes('.lean.')) return 'lean';
  if (name.includes('.v2.')) return 'v2';
  if (name.includes('.agentic.')) return 'agentic';
  return 'standard';
}

export interface WorkflowSummary {
  id: string;
  name: string;
  description: string;
  category: string;
  version: string;
  /**
   * A workflow from a git source: the key (`git:<source id>`) of its repository, ref and commit in the
   * listing's `git_sources` (one entry per source, so a thousand workflows do not repeat them).
   */
  source?: string;
}

/** The file actually read (a link inside the source dir is resolved), with what identifies its version. */
interface CachedFile extends FileStamp {
  entry: RegistryEntry;
}

export interface RegistryOptions {
  /** Watch the sources for changes once the first load completes. */
  watch?: boolean;
  /**
   * The regex and JSON Schema engine the `strict` check needs: the app's one engine (src/app.ts), so
   * that every registry checks with the same worker and limits.
   */
  engine: ValidationEngine;
  /** WORKFLOWLOOKUP_ALLOWED_ENV: the env names definitions may read (default none). */
  allowedEnv?: ReadonlySet<string>;
  /** Checked definitions kept across restarts (files only), so unchanged files are not checked again. */
  cache?: DefinitionCache;
  /** The bundled workflows' verdicts shipped with the build, by content hash (shipped-definitions.ts). */
  shipped?: ShippedDefinitions | undefined;
}

/** How the definition files read so far got their verdicts (tests and diagnostics). */
export interface RegistryCounts {
  /** Checked here (parsed and run through the `strict` check). */
  checked: number;
  /** Taken from the verdicts shipped with the build (same bytes as the build checked). */
  shipped: number;
  /** Taken from the definition cache in the data dir (same file stamp as cached). */
  cached: number;
}

/** What workflow_list serves; rebuilt only when a source changes, so callers may hand it out as is. */
export interface Listing {
  workflows: WorkflowSummary[];
  broken: { file: string; source: SourceKind; id?: string; violations: Violation[] }[];
  /** The repository, ref and commit of each git source a listed workflow comes from, by its key. */
  git_sources?: Record<string, GitProvenance>;
}

interface View {
  byId: Map<string, RegistryEntry>;
  listing: Listing;
}

/** The checkout of one commit of a git source (immutable: a new commit is a new folder). */
export interface GitCheckout extends GitProvenance {
  /** The folder holding the commit's files (its configured subfolder). */
  dir: string;
}

/** What replacing a git source's checkout came to (see `WorkflowRegistry.useCheckout`). */
export type CheckoutOutcome =
  | { outcome: 'served' }
  /** Some file is broken: the last good set stays, and these files are reported. */
  | { outcome: 'broken'; broken: BrokenWorkflow[] }
  /** Some file's rules were not checked in time: no verdict, the next sync tries again. */
  | { outcome: 'not-checked'; files: string[] };

/**
 * Loads definitions from the sources once, keeps them in memory, and refreshes a directory when a
 * watcher reports a change in it. Unchanged files (same mtime and size) are never re-parsed. Every
 * file of every source goes through the same `strict` check as `workflowlookup validate` and
 * `workflow_validate_manifest`, and a link that leads outside its source directory is never followed.
 */
export class WorkflowRegistry {
  private readonly files = new Map<string, Map<string, CachedFile>>();
  private view: View = { byId: new Map(), listing: { workflows: [], broken: [] } };
  private readonly watcher = new DirectoryWatcher((dir) => this.onDirChange(dir));
  private readonly unwatch: (() => void)[] = [];
  /** Watched subfolders and the source directory each belongs to. */
  private readonly folderSource = new Map<string, string>();
  private loading: Promise<void> | undefined;
  private refreshing = Promise.resolve();
  private closed = false;
  /** Called after a refresh changed what the registry serves. */
  onChange: (() => void) | undefined;
  /** How each file read so far got its verdict. */
  readonly counts: RegistryCounts = { checked: 0, shipped: 0, cached: 0 };
  /**
   * Files whose regex and schema rules were not checked in time at their last scan, by source dir: they
   * have no verdict yet (neither served nor broken, never cached) and their source is scanned again.
   */
  private readonly unchecked = new Map<string, Set<string>>();
  /** The scheduled re-scan of each source that has unchecked files, and how many came before it. */
  private readonly rechecks = new Map<string, { timer: NodeJS.Timeout; tries: number }>();
  /** The checkout each git source serves, by source dir (none yet: the source serves nothing). */
  private readonly checkouts = new Map<string, GitCheckout>();
  /** The broken files of the last commit each git source refused, reported beside the list. */
  private readonly refused = new Map<string, BrokenWorkflow[]>();

  private readonly engine: ValidationEngine;
  readonly allowedEnv: ReadonlySet<string>;

  /** With `watch`, the sources are watched for changes as soon as the first load completes. */
  constructor(
    readonly sources: readonly WorkflowSource[],
    private readonly options: RegistryOptions,
  ) {
    this.engine = options.engine;
    this.allowedEnv = options.allowedEnv ?? new Set();
  }

  /** Loads every source (once; later calls wait for the same load). */
  ready(): Promise<void> {
    this.loading ??= (async () => {
      const wasLoaded = this.engine.loaded;
      await Promise.all(this.sources.map((s) => this.scan(s)));
      // Files missing from the definition cache were checked with the regex and JSON Schema worker. That
      // is one burst at start, and most sessions never need the worker again: it is not kept (~15 MB).
      if (!wasLoaded) this.engine.unload();
      this.rebuild();
      this.options.cache?.flush();
      if (this.options.watch) this.watch();
    })();
    return this.loading;
  }

  /** Starts watching every existing source directory. Watchers never keep the process alive. */
  private watch(): void {
    for (const source of this.sources) {
      // A git checkout never changes: a new commit arrives through useCheckout.
      if (source.git !== undefined) continue;
      if (source.documents === undefined) this.watcher.add(source.dir);
      else {
        // Told of every replica's saves (and to read everything after a lost connection).
        this.unwatch.push(
          source.documents.watch((kind) => {
            if (kind === undefined || kind === 'workflow') this.onDirChange(source.dir);
          }),
        );
      }
    }
  }

  /** Watches a source's subfolders as well, each change rescanning the source. */
  private watchFolders(source: WorkflowSource, folders: string[]): void {
    for (const folder of folders) {
      const dir = join(source.dir, folder);
      this.folderSource.set(dir, source.dir);
      this.watcher.add(dir);
    }
  }

  close(): void {
    this.closed = true;
    this.watcher.close();
    for (const stop of this.unwatch.splice(0)) stop();
    for (const { timer } of this.rechecks.values()) clearTimeout(timer);
    this.rechecks.clear();
  }

  /** Files that have no verdict yet because their rules were not checked in time (tests, diagnostics). */
  notCheckedYet(): string[] {
    return [...this.unchecked.values()].flatMap((files) => [...files]).sort();
  }

  /**
   * Records which files of a source were left unchecked by its scan, and scans it again later while any
   * are: one second after the first such scan, doubling up to five minutes. A rule that is too expensive
   * runs out every time; its file then costs one budget of work per try, ever more rarely.
   */
  private noteUnchecked(source: WorkflowSource, files: Set<string>): void {
    const scheduled = this.rechecks.get(source.dir);
    if (files.size === 0) {
      this.unchecked.delete(source.dir);
      if (scheduled !== undefined) clearTimeout(scheduled.timer);
      this.rechecks.delete(source.dir);
      return;
    }
    this.unchecked.set(source.dir, files);
    if (this.closed) return;
    if (scheduled !== undefined) clearTimeout(scheduled.timer);
    const tries = (scheduled?.tries ?? 0) + 1;
    const delay = Math.min(RECHECK_MAX_MS, RECHECK_FIRST_MS * 2 ** (tries - 1));
    const timer = setTimeout(() => this.onDirChange(source.dir), delay).unref();
    this.rechecks.set(source.dir, { timer, tries });
  }

  /** Rescans every source now (after a write through the server, so the change is visible at once). */
  async refresh(): Promise<void> {
    await this.ready();
    this.refreshing = this.refreshing.then(async () => {
      await Promise.all(this.sources.map((s) => this.scan(s)));
      this.rebuild();
      this.options.cache?.flush();
      this.onChange?.();
    });
    await this.refreshing;
  }

  /** The entry a given source defines for an id (even when a later source overrides it). */
  inSource(kind: SourceKind, id: string): RegistryEntry | undefined {
    const source = this.sources.find((s) => s.kind === kind);
    if (source === undefined) return undefined;
    for (const { entry } of this.files.get(source.dir)?.values() ?? []) {
      if ((entry.status === 'valid' ? entry.workflow.id : entry.id) === id) return entry;
    }
    return undefined;
  }

  get(id: string): RegistryEntry | undefined {
    return this.view.byId.get(id);
  }

  /**
   * The seed's -32001 for an id no source serves, naming the nearest served ids (`coding-task` →
   * `coding-task-workflow`); the comparison is bounded (engine/nearest.ts).
   */
  missing(id: string): never {
    const near = nearestNames(id, this.view.byId.keys());
    fail({
      code: 'workflow_not_found',
      message: `Workflow not found${didYouMean(id, near)}`,
      workflowId: id,
      ...(near.length > 0 ? { didYouMean: near } : {}),
    });
  }

  /** A valid workflow by id; "missing" and "broken" become the seed's -32001 / -32002 errors. */
  require(id: string): LoadedWorkflow {
    const entry = this.view.byId.get(id);
    if (entry === undefined) this.missing(id);
    if (entry.status === 'broken') {
      fail({
        code: 'workflow_invalid',
        message: 'Invalid workflow',
        workflowId: id,
        file: entry.file,
        violations: entry.violations,
      });
    }
    return entry;
  }

  list(): Listing {
    return this.view.listing;
  }

  /** Ids of valid workflows starting with a prefix (for completions), sorted. */
  async ids(prefix = ''): Promise<string[]> {
    await this.ready();
    return this.view.listing.workflows.map((w) => w.id).filter((id) => id.startsWith(prefix));
  }

  entries(): IterableIterator<RegistryEntry> {
    return this.view.byId.values();
  }

  /** Every file of every source, overridden ones included, sources in precedence order (lowest first). */
  bySource(): { source: WorkflowSource; entries: RegistryEntry[] }[] {
    return this.sources.map((source) => ({
      source,
      entries: [...(this.files.get(source.dir)?.values() ?? [])]
        .map((f) => f.entry)
        .sort((a, b) => (a.file < b.file ? -1 : 1)),
    }));
  }

  private onDirChange(changed: string): void {
    const dir = this.folderSource.get(changed) ?? changed;
    const source = this.sources.find((s) => s.dir === dir);
    if (source === undefined) return;
    this.refreshing = this.refreshing.then(async () => {
      if (this.closed) return;
      await this.scan(source);
      this.rebuild();
      this.options.cache?.flush();
      this.onChange?.();
    });
  }

  private async scan(source: WorkflowSource): Promise<void> {
    if (source.documents !== undefined) return this.scanDocuments(source, source.documents);
    const checkout = source.git === undefined ? undefined : this.checkouts.get(source.dir);
    if (source.git !== undefined && checkout === undefined) {
      this.files.set(source.dir, new Map());
      return;
    }
    const base = checkout?.dir ?? source.dir;
    const { next, unchecked } = await this.read(source, base, this.files.get(source.dir) ?? new Map());
    if (checkout !== undefined) withProvenance(next, checkout);
    this.options.cache?.prune(base, new Set([...next.keys(), ...unchecked]));
    this.files.set(source.dir, next);
    this.noteUnchecked(source, unchecked);
  }

  /**
   * Serves `checkout` as what git source `source` holds, but only when every definition file in it
   * checks out: one broken file (or one whose rules were not checked in time) keeps the set served now,
   * and the broken files are reported beside the list until a later commit is served. Clients are told
   * (onChange) when what is served or reported changed.
   */
  async useCheckout(
    source: WorkflowSource,
    checkout: GitCheckout,
    /** Files refused before the checkout was written (relative paths, with why): the commit is broken. */
    refusedFiles: { path: string; violation: Violation }[] = [],
  ): Promise<CheckoutOutcome> {
    await this.ready();
    let outcome: CheckoutOutcome = { outcome: 'served' };
    this.refreshing = this.refreshing.then(async () => {
      if (this.closed) return;
      const { next, unchecked } = await this.read(source, checkout.dir, new Map());
      if (unchecked.size > 0) {
        outcome = { outcome: 'not-checked', files: [...unchecked].sort() };
        return;
      }
      const broken = [
        ...refusedFiles.map((f) => brokenEntry(join(checkout.dir, f.path), 'git', [f.violation])),
        ...[...next.values()].flatMap((f) => (f.entry.status === 'broken' ? [f.entry] : [])),
      ];
      if (broken.length > 0) {
        // Named by repository, commit and path: the folder they were read from is removed.
        const named = broken.map((b) => ({
          ...b,
          file: `${checkout.repository}@${checkout.commit}:${relative(checkout.dir, b.file)}`,
        }));
        this.refused.set(source.dir, named);
        outcome = { outcome: 'broken', broken: named };
      } else {
        this.refused.delete(source.dir);
        withProvenance(next, checkout);
        this.checkouts.set(source.dir, checkout);
        this.files.set(source.dir, next);
        this.options.cache?.prune(checkout.dir, new Set(next.keys()));
      }
      this.rebuild();
      this.options.cache?.flush();
      this.onChange?.();
    });
    await this.refreshing;
    return outcome;
  }

  /**
   * The checkout a git source starts from (the last good one kept in the data dir), before the first
   * load; later commits arrive through useCheckout.
   */
  startFrom(source: WorkflowSource, checkout: GitCheckout | undefined, refused: BrokenWorkflow[] = []): void {
    if (checkout !== undefined) this.checkouts.set(source.dir, checkout);
    if (refused.length > 0) this.refused.set(source.dir, refused);
  }

  /** The checkout a git source serves now, if any. */
  checkoutOf(source: WorkflowSource): GitCheckout | undefined {
    return this.checkouts.get(source.dir);
  }

  /** A git source's refused commit stops being reported (the remote went back to the served commit). */
  forgetRefused(source: WorkflowSource): void {
    if (!this.refused.delete(source.dir)) return;
    this.rebuild();
    this.onChange?.();
  }

  /** Reads and checks the definition files below `base`, reusing the verdicts of `previous`. */
  private async read(
    source: WorkflowSource,
    base: string,
    previous: ReadonlyMap<string, CachedFile>,
  ): Promise<{ next: Map<string, CachedFile>; unchecked: Set<string> }> {
    const next = new Map<string, CachedFile>();
    const root = await realDir(base);
    let names: string[] = [];
    if (root !== undefined) {
      // Subfolders too (a WorkRail library keeps routines/ and examples/), except where saves land.
      const depth = source.kind === 'runtime' ? 0 : MAX_SOURCE_DEPTH;
      // Test files (`<id>.test.yaml`) sit beside the workflows they test and are never loaded as workflows.
      const listed = await listSourceEntries(root, isDefinitionFile, depth);
      names = listed.names;
      if (this.options.watch && source.git === undefined) this.watchFolders(source, listed.folders);
    }
    const cache = this.options.cache;
    const misses: [file: string, stamp: FileStamp][] = [];
    await Promise.all(
      names.map(async (name) => {
        const file = join(base, name);
        const target = await resolveInside(root as string, name);
        if (target.kind === 'skip') return;
        if (target.kind === 'outside') {
          const entry = brokenEntry(file, source.kind, [
            {
              path: '',
              rule: 'symlink',
              message:
                'a symbolic link to a file outside its source directory; links that leave it are never followed',
            },
          ]);
          next.set(file, { real: '', mtimeMs: 0, ctimeMs: 0, size: 0, ino: 0, entry });
          return;
        }
        const { info, path: real } = target;
        const stamp: FileStamp = {
          real,
          mtimeMs: info.mtimeMs,
          ctimeMs: info.ctimeMs,
          size: info.size,
          ino: info.ino,
        };
        const cached = previous.get(file);
        if (cached && sameStamp(cached, stamp)) {
          next.set(file, cached);
          return;
        }
        const stored = cache?.get(file, source.kind, stamp);
        if (stored !== undefined) {
          this.counts.cached++;
          next.set(file, { ...stamp, entry: stored });
        } else misses.push([file, stamp]);
      }),
    );
    // The regex and JSON Schema worker starts only when a file that has to be checked has a regex or a
    // schema (checkDefinition starts it); shipped and cached verdicts need none.
    const unchecked = new Set<string>();
    await inBatches(misses, CHECKS_AT_ONCE, async ([file, stamp]) => {
      const entry = await this.load(file, stamp.real, root as string, source.kind, stamp.size);
      if (entry === undefined) return;
      if (entry === NOT_CHECKED) {
        // No verdict: left out of `next` (so the next scan checks it again) and of the cache.
        unchecked.add(file);
        return;
      }
      next.set(file, { ...stamp, entry });
      cache?.set(file, stamp, entry);
    });
    return { next, unchecked };
  }

  /**
   * Reads a database source's definitions, checking only those whose version changed. A database that
   * does not answer leaves what was read before in place; the store's reconnection reads again.
   */
  private async scanDocuments(source: WorkflowSource, documents: RuntimeDocumentStore): Promise<void> {
    let docs: Awaited<ReturnType<RuntimeDocumentStore['list']>>;
    try {
      docs = await documents.list('workflow');
    } catch {
      return;
    }
    const previous = this.files.get(source.dir) ?? new Map<string, CachedFile>();
    const next = new Map<string, CachedFile>();
    const unchecked = new Set<string>();
    await Promise.all(
      docs.map(async (doc) => {
        const file = `${source.dir}/${doc.name}`;
        const cached = previous.get(file);
        if (cached && cached.real === doc.version) {
          next.set(file, cached);
          return;
        }
        const format = formatOf(doc.name) ?? 'json';
        this.counts.checked++;
        const report = await notCheckedAsUndefined(
          checkDefinition({ text: doc.content, format }, 'strict', {
            engine: this.engine,
            allowedEnv: this.allowedEnv,
          }),
        );
        if (report === undefined) {
          unchecked.add(file);
          return;
        }
        const entry = fromReport(file, source.kind, format, doc.version, report);
        next.set(file, { real: doc.version, mtimeMs: 0, ctimeMs: 0, size: 0, ino: 0, entry });
      }),
    );
    this.files.set(source.dir, next);
    this.noteUnchecked(source, unchecked);
  }

  /**
   * Reads and checks one file; undefined when it vanished or turned into something unreadable,
   * NOT_CHECKED when its regex and schema rules were not checked in time (no verdict yet).
   */
  private async load(
    file: string,
    real: string,
    root: string,
    kind: SourceKind,
    size: number,
  ): Promise<RegistryEntry | typeof NOT_CHECKED | undefined> {
    const format = formatOf(file) as DefinitionFormat;
    // Reported from its size alone: such a file is never read.
    const big = oversize(size);
    if (big) return brokenEntry(file, kind, [big]);
    let bytes: Buffer;
    try {
      bytes = await readInside(root, real, DEFINITION_LIMITS.maxBytes);
    } catch (error) {
      if (error instanceof UnsafeFileError && error.reason === 'outside') {
        return brokenEntry(file, kind, [
          { path: '', rule: 'symlink', message: 'the file now leads outside its source directory; not read' },
        ]);
      }
      return undefined;
    }
    const hash = contentVersion(bytes);
    const shipped = this.options.shipped?.get(format, hash);
    if (shipped !== undefined) {
      this.counts.shipped++;
      return { status: 'valid', workflow: shipped, file, source: kind, format, hash };
    }
    this.counts.checked++;
    const report = await notCheckedAsUndefined(
      checkDefinition({ text: bytes, format }, 'strict', {
        engine: this.engine,
        allowedEnv: this.allowedEnv,
      }),
    );
    if (report === undefined) return NOT_CHECKED;
    return fromReport(file, kind, format, hash, report);
  }

  /**
   * The bytes of an entry's file, read the safe way again (a link that now leaves its source dir is
   * refused). Throws a `storage_error` when the file cannot be read.
   */
  async readSource(entry: RegistryEntry): Promise<Buffer> {
    const stored = this.sources.find((s) => s.documents !== undefined && entry.file.startsWith(`${s.dir}/`));
    if (stored?.documents !== undefined) {
      const name = entry.file.slice(stored.dir.length + 1);
      const doc = await stored.documents.get('workflow', name);
      if (doc === undefined) {
        fail({
          code: 'storage_error',
          message: 'Storage error',
          details: `cannot read ${entry.file}: it was removed meanwhile`,
        });
      }
      return Buffer.from(doc.content, 'utf8');
    }
    try {
      return await readSourceFile(dirname(entry.file), basename(entry.file), DEFINITION_LIMITS.maxBytes);
    } catch (error) {
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details:
          error instanceof UnsafeFileError
            ? `cannot read ${entry.file}: ${UNREADABLE[error.reason]}`
            : `cannot read ${entry.file}`,
      });
    }
  }

  /**
   * The `authoring` report of an entry's file as it is now (errors as the registry sees them, plus
   * warnings): what `workflowlookup list --json` shows beside each file.
   */
  async report(entry: RegistryEntry, knownAgents?: ReadonlySet<string>): Promise<CheckReport> {
    const format = formatOf(entry.file) as DefinitionFormat;
    const text = await this.readSource(entry);
    return checkDefinition({ text, format }, 'authoring', {
      engine: this.engine,
      allowedEnv: this.allowedEnv,
      knownAgents,
      workflows: this,
    });
  }

  /**
   * Every file the sources of a kind (default: all sources) hold, as the registry read it, in
   * precedence order: broken, overridden and duplicate ones included.
   */
  filesOf(kind?: SourceKind): RegistryEntry[] {
    return this.sources
      .filter((s) => kind === undefined || s.kind === kind)
      .flatMap((s) => [...(this.files.get(s.dir)?.values() ?? [])].map((f) => f.entry));
  }

  /**
   * Expands the templateCalls of every served workflow into the steps of the routine they name, when
   * that routine (`wr.routine-<name>`) is served too; a workflow whose expansion fails is broken.
   */
  private expandRoutines(
    byId: Map<string, RegistryEntry>,
    broken: BrokenWorkflow[],
    routineOf: (templateId: string) => Workflow | undefined,
  ): void {
    for (const [id, entry] of byId) {
      if (entry.status !== 'valid') continue;
      const result = expandTemplateCalls(entry.workflow, routineOf);
      if (result.violations.length > 0) {
        const failed = brokenEntry(entry.file, entry.source, result.violations, id);
        byId.set(id, failed);
        broken.push(failed);
      } else if (result.expanded) {
        byId.set(id, {
          ...entry,
          workflow: result.workflow,
          definitionHash: contentVersion(JSON.stringify(result.workflow)),
        });
      }
    }
  }

  /**
   * Judges the delegations of the served workflows against each other (as their files define them): a
   * workflow that delegates to one no source serves, or that is broken, or whose delegations lead back to
   * it, is broken. Then the WorkRail parallel steps whose delegations all name served workflows become
   * delegating steps (with their synthesis steps).
   */
  private resolveDelegations(
    byId: Map<string, RegistryEntry>,
    broken: BrokenWorkflow[],
    files: ReadonlyMap<string, Workflow>,
    routineOf: (templateId: string) => Workflow | undefined,
  ): void {
    const valid = new Map([...files].filter(([id]) => byId.get(id)?.status === 'valid'));
    for (const [id, violations] of registryDelegationFailures(valid, byId, routineOf)) {
      const entry = byId.get(id) as RegistryEntry;
      const failed = brokenEntry(entry.file, entry.source, violations, id);
      byId.set(id, failed);
      broken.push(failed);
    }
    const serves = (id: string) => byId.get(id)?.status === 'valid';
    for (const [id, entry] of byId) {
      if (entry.status !== 'valid') continue;
      const result = mapParallelSteps(entry.workflow, serves);
      if (!result.mapped) continue;
      byId.set(id, {
        ...entry,
        workflow: result.workflow,
        definitionHash: contentVersion(JSON.stringify(result.workflow)),
      });
    }
  }

  private rebuild(): void {
    const byId = new Map<string, RegistryEntry>();
    const broken: BrokenWorkflow[] = [];
    const gitKeys = new Map<string, string>();
    const gitSources: Record<string, GitProvenance> = {};
    for (const source of this.sources) {
      const files = [...(this.files.get(source.dir)?.values() ?? [])].sort((a, b) =>
        a.entry.file < b.entry.file ? -1 : 1,
      );
      const seenHere = new Map<string, string>();
      // Variants of one id in this source: the best-ranked valid file stands for the id, the others
      // step aside (neither served nor broken), as WorkRail resolves them.
      const best = new Map<string, string>();
      for (const { entry } of files) {
        if (entry.status !== 'valid') continue;
        const id = entry.workflow.id;
        const current = best.get(id);
        if (current === undefined || VARIANT_RANK[variantOf(entry.file)] > VARIANT_RANK[variantOf(current)])
          best.set(id, entry.file);
      }
      for (const { entry } of files) {
        const id = entry.status === 'valid' ? entry.workflow.id : entry.id;
        if (entry.status === 'broken') broken.push(entry);
        if (id === undefined) continue;
        const chosen = best.get(id);
        if (
          entry.status === 'valid' &&
          chosen !== undefined &&
          chosen !== entry.file &&
          variantOf(chosen) !== variantOf(entry.file)
        )
          continue;
        const clash = seenHere.get(id);
        if (clash !== undefined) {
          broken.push({
            status: 'broken',
            file: entry.file,
            source: entry.source,
            id,
            violations: [
              {
                path: '/id',
                rule: 'uniqueId',
                message: `workflow id "${id}" is already defined by ${clash}`,
                actual: id,
              },
            ],
          });
          continue;
        }
        seenHere.set(id, entry.file);
        byId.set(id, entry);
        if (source.git !== undefined) gitKeys.set(entry.file, `git:${source.git.id}`);
      }
    }
    const routineOf = (templateId: string) => {
      for (const id of routineIdsOf(templateId)) {
        const entry = byId.get(id);
        if (entry?.status === 'valid') return entry.workflow;
      }
      return undefined;
    };
    // The served workflows as their files define them, before templateCalls expand.
    const files = new Map<string, Workflow>();
    for (const [id, entry] of byId) if (entry.status === 'valid') files.set(id, entry.workflow);
    this.expandRoutines(byId, broken, routineOf);
    this.resolveDelegations(byId, broken, files, routineOf);
    const summaries: WorkflowSummary[] = [];
    for (const entry of byId.values()) {
      if (entry.status !== 'valid') continue;
      const w = entry.workflow;
      summaries.push({
        id: w.id,
        name: w.name,
        description: w.description,
        category: w.category ?? DEFAULT_CATEGORY,
        version: w.version,
      });
      const key = gitKeys.get(entry.file);
      if (key !== undefined && entry.provenance !== undefined) {
        (summaries.at(-1) as WorkflowSummary).source = key;
        gitSources[key] = entry.provenance;
      }
    }
    summaries.sort((a, b) => (a.id < b.id ? -1 : 1));
    for (const refused of this.refused.values()) broken.push(...refused);
    broken.sort((a, b) => (a.file < b.file ? -1 : 1));
    const listing: Listing = {
      workflows: summaries,
      broken: broken.map(({ file, source, id, violations }) => ({
        file,
        source,
        ...(id !== undefined ? { id } : {}),
        violations,
      })),
      ...(Object.keys(gitSources).length > 0 ? { git_sources: gitSources } : {}),
    };
    this.view = { byId, listing };
  }
}

/** A file whose check did not finish in time: no verdict, checked again later (never listed as broken). */
const NOT_CHECKED = Symbol('not checked');

/** The first re-scan of a source with unchecked files, and the longest wait between two. */
const RECHECK_FIRST_MS = 1000;
const RECHECK_MAX_MS = 5 * 60_000;

/** A check's report, or undefined when its rules were not checked in time (validation_not_checked). */
async function notCheckedAsUndefined(check: Promise<CheckReport>): Promise<CheckReport | undefined> {
  try {
    return await check;
  } catch (error) {
    if (error instanceof DomainFailure && error.error.code === 'validation_not_checked') return undefined;
    throw error;
  }
}

/**
 * Files read and checked at once. A thousand at once (every file's bytes, text and parse tree alive
 * together) made V8's small young generation (src/cli/entry.ts) copy and promote them scavenge after
 * scavenge: garbage collection was over a third of a cold start with 1,000 workflows.
 */
const CHECKS_AT_ONCE = 16;

/** `run` over `items`, at most `limit` at a time. */
async function inBatches<T>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await run(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return (
    a.real === b.real &&
    a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs &&
    a.size === b.size &&
    a.ino === b.ino
  );
}

function brokenEntry(file: string, source: SourceKind, violations: Violation[], id?: string): BrokenWorkflow {
  return { status: 'broken', file, source, ...(id !== undefined ? { id } : {}), violations };
}

function fromReport(
  file: string,
  source: SourceKind,
  format: DefinitionFormat,
  hash: string,
  report: CheckReport,
): RegistryEntry {
  if (!report.valid || report.workflow === undefined)
    return brokenEntry(file, source, report.errors, report.id);
  return { status: 'valid', workflow: report.workflow, file, source, format, hash };
}

/** Marks the valid entries read from a git checkout with the repository, ref and commit they came from. */
function withProvenance(files: Map<string, CachedFile>, checkout: GitCheckout): void {
  const provenance: GitProvenance = {
    repository: checkout.repository,
    ref: checkout.ref,
    commit: checkout.commit,
  };
  for (const [file, cached] of files) {
    if (cached.entry.status !== 'valid' || cached.entry.provenance?.commit === checkout.commit) continue;
    files.set(file, { ...cached, entry: { ...cached.entry, provenance } });
  }
}
