import { join } from 'node:path';
import { fail } from '../engine/errors.js';
import { didYouMean, nearestNames } from '../engine/nearest.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { Violation } from '../model/violation.js';
import type { RuntimeDocumentStore } from '../store/runtime-documents.js';
import { type CheckReport, checkDefinition } from './check.js';
import { composeServed } from './composition.js';
import type { DefinitionCache } from './definition-cache.js';
import {
  type CachedFile,
  DefinitionLoader,
  type ReadResult,
  type RegistryCounts,
  readEntrySource,
} from './definition-loading.js';
import type { BrokenWorkflow, LoadedWorkflow, RegistryEntry } from './entry.js';
import { brokenInCheckout, type CheckoutOutcome, type GitCheckout, withProvenance } from './git/checkout.js';
import { type Listing, listingOf } from './listing.js';
import { type DefinitionFormat, formatOf } from './parse.js';
import type { ShippedDefinitions } from './shipped-definitions.js';
import type { SourceKind, WorkflowSource } from './sources.js';
import { servedInSource } from './variants.js';
import { DirectoryWatcher } from './watch.js';

// The registry is the state of what the sources serve and its public API: which files were read, which
// checkout each git source serves, when a source is read again. Its jobs live beside it, one file each:
// reading and checking files (definition-loading.ts), which file of a source stands for an id
// (variants.ts), what workflows take from each other (composition.ts), the listing (listing.ts) and a
// git source's checkouts (git/checkout.ts).

// The entry types live in entry.ts, which the definition cache shares without importing the registry.
export type { BrokenWorkflow, LoadedWorkflow, RegistryEntry } from './entry.js';

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

interface View {
  byId: Map<string, RegistryEntry>;
  listing: Listing;
}

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
  private readonly loader: DefinitionLoader;

  /** With `watch`, the sources are watched for changes as soon as the first load completes. */
  constructor(
    readonly sources: readonly WorkflowSource[],
    private readonly options: RegistryOptions,
  ) {
    this.engine = options.engine;
    this.allowedEnv = options.allowedEnv ?? new Set();
    this.loader = new DefinitionLoader({
      engine: this.engine,
      allowedEnv: this.allowedEnv,
      cache: options.cache,
      shipped: options.shipped,
      counts: this.counts,
    });
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
      const named = brokenInCheckout(checkout, refusedFiles, next);
      if (named.length > 0) {
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

  /** Reads a source's files below `base` (watching its subfolders when asked to). */
  private read(
    source: WorkflowSource,
    base: string,
    previous: ReadonlyMap<string, CachedFile>,
  ): Promise<ReadResult> {
    const watch = this.options.watch && source.git === undefined;
    return this.loader.read(
      source,
      base,
      previous,
      watch ? (folders) => this.watchFolders(source, folders) : undefined,
    );
  }

  /** Reads a database source's definitions again (what was read stays when the database does not answer). */
  private async scanDocuments(source: WorkflowSource, documents: RuntimeDocumentStore): Promise<void> {
    const read = await this.loader.readDocuments(source, documents, this.files.get(source.dir) ?? new Map());
    if (read === undefined) return;
    this.files.set(source.dir, read.next);
    this.noteUnchecked(source, read.unchecked);
  }

  /**
   * The bytes of an entry's file, read the safe way again (a link that now leaves its source dir is
   * refused). Throws a `storage_error` when the file cannot be read.
   */
  readSource(entry: RegistryEntry): Promise<Buffer> {
    return readEntrySource(this.sources, entry);
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

  /** What the sources serve, made again from the files read: precedence, composition, the listing. */
  private rebuild(): void {
    const byId = new Map<string, RegistryEntry>();
    const broken: BrokenWorkflow[] = [];
    const gitKeys = new Map<string, string>();
    for (const source of this.sources) {
      const files = [...(this.files.get(source.dir)?.values() ?? [])]
        .map((f) => f.entry)
        .sort((a, b) => (a.file < b.file ? -1 : 1));
      const here = servedInSource(files);
      broken.push(...here.broken);
      for (const { id, entry } of here.served) {
        byId.set(id, entry);
        if (source.git !== undefined) gitKeys.set(entry.file, `git:${source.git.id}`);
      }
    }
    composeServed(byId, broken);
    for (const refused of this.refused.values()) broken.push(...refused);
    this.view = { byId, listing: listingOf(byId, broken, gitKeys) };
  }
}

/** The first re-scan of a source with unchecked files, and the longest wait between two. */
const RECHECK_FIRST_MS = 1000;
const RECHECK_MAX_MS = 5 * 60_000;
