import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { SourceKind, WorkflowSource } from '../config.js';
import { DEFAULT_CATEGORY, type Workflow } from './model.js';
import { type DefinitionFormat, formatOf, parseDefinition } from './parse.js';
import { type Violation, validateDefinition } from './validate-definition.js';
import { DirectoryWatcher } from './watch.js';

/** Definition files larger than this are reported as broken instead of parsed. */
export const MAX_DEFINITION_BYTES = 1024 * 1024;

/** The version of a definition file: sha256 of its bytes (pins executions, guards saves). */
export function contentVersion(bytes: string | Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export interface LoadedWorkflow {
  status: 'valid';
  workflow: Workflow;
  file: string;
  source: SourceKind;
  format: DefinitionFormat;
  /** sha256 of the file bytes. */
  hash: string;
}

export interface BrokenWorkflow {
  status: 'broken';
  file: string;
  source: SourceKind;
  id?: string;
  violations: Violation[];
}

export type RegistryEntry = LoadedWorkflow | BrokenWorkflow;

export interface WorkflowSummary {
  id: string;
  name: string;
  description: string;
  category: string;
  version: string;
}

interface CachedFile {
  mtimeMs: number;
  size: number;
  entry: RegistryEntry;
}

/** What workflow_list serves; rebuilt only when a source changes, so callers may hand it out as is. */
export interface Listing {
  workflows: WorkflowSummary[];
  broken: { file: string; source: SourceKind; id?: string; violations: Violation[] }[];
}

interface View {
  byId: Map<string, RegistryEntry>;
  listing: Listing;
}

/**
 * Loads definitions from the sources once, keeps them in memory, and refreshes a directory when a
 * watcher reports a change in it. Unchanged files (same mtime and size) are never re-parsed.
 */
export class WorkflowRegistry {
  private readonly files = new Map<string, Map<string, CachedFile>>();
  private view: View = { byId: new Map(), listing: { workflows: [], broken: [] } };
  private readonly watcher = new DirectoryWatcher((dir) => this.onDirChange(dir));
  private loading: Promise<void> | undefined;
  private refreshing = Promise.resolve();
  private closed = false;
  /** Called after a refresh changed what the registry serves. */
  onChange: (() => void) | undefined;

  /** With `watch`, the sources are watched for changes as soon as the first load completes. */
  constructor(
    readonly sources: readonly WorkflowSource[],
    private readonly options: { watch?: boolean } = {},
  ) {}

  /** Loads every source (once; later calls wait for the same load). */
  ready(): Promise<void> {
    this.loading ??= (async () => {
      await Promise.all(this.sources.map((s) => this.scan(s)));
      this.rebuild();
      if (this.options.watch) this.watch();
    })();
    return this.loading;
  }

  /** Starts watching every existing source directory. Watchers never keep the process alive. */
  private watch(): void {
    for (const source of this.sources) this.watcher.add(source.dir);
  }

  close(): void {
    this.closed = true;
    this.watcher.close();
  }

  /** Rescans every source now (after a write through the server, so the change is visible at once). */
  async refresh(): Promise<void> {
    await this.ready();
    this.refreshing = this.refreshing.then(async () => {
      await Promise.all(this.sources.map((s) => this.scan(s)));
      this.rebuild();
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

  private onDirChange(dir: string): void {
    const source = this.sources.find((s) => s.dir === dir);
    if (source === undefined) return;
    this.refreshing = this.refreshing.then(async () => {
      if (this.closed) return;
      await this.scan(source);
      this.rebuild();
      this.onChange?.();
    });
  }

  private async scan(source: WorkflowSource): Promise<void> {
    const previous = this.files.get(source.dir) ?? new Map<string, CachedFile>();
    const next = new Map<string, CachedFile>();
    let names: string[];
    try {
      names = (await readdir(source.dir))
        .filter((n) => formatOf(n) !== undefined && !n.startsWith('.'))
        .sort();
    } catch {
      names = [];
    }
    await Promise.all(
      names.map(async (name) => {
        const file = join(source.dir, name);
        try {
          const info = await stat(file);
          if (!info.isFile()) return;
          const cached = previous.get(file);
          if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) {
            next.set(file, cached);
            return;
          }
          next.set(file, {
            mtimeMs: info.mtimeMs,
            size: info.size,
            entry: await loadFile(file, source, info.size),
          });
        } catch {
          // Deleted between readdir and stat/read: it is simply gone.
        }
      }),
    );
    this.files.set(source.dir, next);
  }

  private rebuild(): void {
    const byId = new Map<string, RegistryEntry>();
    const broken: BrokenWorkflow[] = [];
    for (const source of this.sources) {
      const files = [...(this.files.get(source.dir)?.values() ?? [])].sort((a, b) =>
        a.entry.file < b.entry.file ? -1 : 1,
      );
      const seenHere = new Map<string, string>();
      for (const { entry } of files) {
        const id = entry.status === 'valid' ? entry.workflow.id : entry.id;
        if (entry.status === 'broken') broken.push(entry);
        if (id === undefined) continue;
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
      }
    }
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
    }
    summaries.sort((a, b) => (a.id < b.id ? -1 : 1));
    broken.sort((a, b) => (a.file < b.file ? -1 : 1));
    const listing: Listing = {
      workflows: summaries,
      broken: broken.map(({ file, source, id, violations }) => ({
        file,
        source,
        ...(id !== undefined ? { id } : {}),
        violations,
      })),
    };
    this.view = { byId, listing };
  }
}

async function loadFile(file: string, source: WorkflowSource, size: number): Promise<RegistryEntry> {
  const format = formatOf(file) as DefinitionFormat;
  const broken = (violations: Violation[], id?: string): BrokenWorkflow => ({
    status: 'broken',
    file,
    source: source.kind,
    ...(id !== undefined ? { id } : {}),
    violations,
  });
  if (size > MAX_DEFINITION_BYTES) {
    return broken([
      {
        path: '',
        rule: 'maxFileSize',
        message: `file is ${size} bytes; definitions are limited to ${MAX_DEFINITION_BYTES} bytes`,
        expected: `<= ${MAX_DEFINITION_BYTES}`,
        actual: String(size),
      },
    ]);
  }
  const bytes = await readFile(file);
  const parsed = await parseDefinition(bytes.toString('utf8'), format);
  if (!parsed.ok) return broken(parsed.violations);
  const result = validateDefinition(parsed.data);
  if (!result.ok) {
    const rawId = (parsed.data as { id?: unknown } | null)?.id;
    return broken(result.violations, typeof rawId === 'string' && rawId.length <= 64 ? rawId : undefined);
  }
  return {
    status: 'valid',
    workflow: result.workflow,
    file,
    source: source.kind,
    format,
    hash: contentVersion(bytes),
  };
}
