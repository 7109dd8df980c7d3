import { basename, dirname, join } from 'node:path';
import { DomainFailure, fail } from '../engine/errors.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { RuntimeDocumentStore } from '../store/runtime-documents.js';
import { type CheckReport, checkDefinition, DEFINITION_LIMITS, oversize } from './check.js';
import type { DefinitionCache, FileStamp } from './definition-cache.js';
import { brokenEntry, contentVersion, type RegistryEntry } from './entry.js';
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
import type { WorkflowSource } from './sources.js';

// Reading a source's definition files and giving each a verdict: from the previous scan, the verdicts
// shipped with the build, the definition cache, or the `strict` check. Apart from the registry, which
// decides when a source is read and keeps what was read (its state).

/** Definition files larger than this are reported as broken instead of parsed. */
export const MAX_DEFINITION_BYTES = DEFINITION_LIMITS.maxBytes;

/** The file actually read (a link inside the source dir is resolved), with what identifies its version. */
export interface CachedFile extends FileStamp {
  entry: RegistryEntry;
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

/** What a read gives: the files with a verdict, and those whose rules were not checked in time. */
export interface ReadResult {
  next: Map<string, CachedFile>;
  unchecked: Set<string>;
}

const UNREADABLE: Record<UnsafeFileError['reason'], string> = {
  outside: 'it links outside its source directory',
  'too-large': 'it is larger than 1 MiB',
  'not-file': 'it is not a regular file',
  changed: 'it changed while it was read; try again',
};

/** A file whose check did not finish in time: no verdict, checked again later (never listed as broken). */
const NOT_CHECKED = Symbol('not checked');

/**
 * Files read and checked at once. A thousand at once (every file's bytes, text and parse tree alive
 * together) made V8's small young generation (src/cli/entry.ts) copy and promote them scavenge after
 * scavenge: garbage collection was over a third of a cold start with 1,000 workflows.
 */
const CHECKS_AT_ONCE = 16;

/**
 * Reads and checks definitions with the registry's engine, env allow-list, shipped verdicts and cache,
 * counting in `counts` how each file got its verdict.
 */
export class DefinitionLoader {
  constructor(
    private readonly options: {
      engine: ValidationEngine;
      allowedEnv: ReadonlySet<string>;
      cache: DefinitionCache | undefined;
      shipped: ShippedDefinitions | undefined;
      counts: RegistryCounts;
    },
  ) {}

  /**
   * Reads and checks the definition files below `base`, reusing the verdicts of `previous`. `watchFolders`
   * is told of the subfolders listed, before their files are read.
   */
  async read(
    source: WorkflowSource,
    base: string,
    previous: ReadonlyMap<string, CachedFile>,
    watchFolders?: (folders: string[]) => void,
  ): Promise<ReadResult> {
    const next = new Map<string, CachedFile>();
    const root = await realDir(base);
    let names: string[] = [];
    if (root !== undefined) {
      // Subfolders too (a WorkRail library keeps routines/ and examples/), except where saves land.
      const depth = source.kind === 'runtime' ? 0 : MAX_SOURCE_DEPTH;
      // Test files (`<id>.test.yaml`) sit beside the workflows they test and are never loaded as workflows.
      const listed = await listSourceEntries(root, isDefinitionFile, depth);
      names = listed.names;
      watchFolders?.(listed.folders);
    }
    const { cache, counts } = this.options;
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
          counts.cached++;
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
   * Reads a database source's definitions, checking only those whose version changed; undefined when
   * the database does not answer (what was read before stays; the store's reconnection reads again).
   */
  async readDocuments(
    source: WorkflowSource,
    documents: RuntimeDocumentStore,
    previous: ReadonlyMap<string, CachedFile>,
  ): Promise<ReadResult | undefined> {
    let docs: Awaited<ReturnType<RuntimeDocumentStore['list']>>;
    try {
      docs = await documents.list('workflow');
    } catch {
      return undefined;
    }
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
        this.options.counts.checked++;
        const report = await notCheckedAsUndefined(
          checkDefinition({ text: doc.content, format }, 'strict', {
            engine: this.options.engine,
            allowedEnv: this.options.allowedEnv,
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
    return { next, unchecked };
  }

  /**
   * Reads and checks one file; undefined when it vanished or turned into something unreadable,
   * NOT_CHECKED when its regex and schema rules were not checked in time (no verdict yet).
   */
  private async load(
    file: string,
    real: string,
    root: string,
    kind: WorkflowSource['kind'],
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
      this.options.counts.shipped++;
      return { status: 'valid', workflow: shipped, file, source: kind, format, hash };
    }
    this.options.counts.checked++;
    const report = await notCheckedAsUndefined(
      checkDefinition({ text: bytes, format }, 'strict', {
        engine: this.options.engine,
        allowedEnv: this.options.allowedEnv,
      }),
    );
    if (report === undefined) return NOT_CHECKED;
    return fromReport(file, kind, format, hash, report);
  }
}

/**
 * The bytes of an entry's file among `sources`, read the safe way again (a link that now leaves its
 * source dir is refused). Throws a `storage_error` when the file cannot be read.
 */
export async function readEntrySource(
  sources: readonly WorkflowSource[],
  entry: RegistryEntry,
): Promise<Buffer> {
  const stored = sources.find((s) => s.documents !== undefined && entry.file.startsWith(`${s.dir}/`));
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

/** A check's report, or undefined when its rules were not checked in time (validation_not_checked). */
async function notCheckedAsUndefined(check: Promise<CheckReport>): Promise<CheckReport | undefined> {
  try {
    return await check;
  } catch (error) {
    if (error instanceof DomainFailure && error.error.code === 'validation_not_checked') return undefined;
    throw error;
  }
}

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

function fromReport(
  file: string,
  source: WorkflowSource['kind'],
  format: DefinitionFormat,
  hash: string,
  report: CheckReport,
): RegistryEntry {
  if (!report.valid || report.workflow === undefined)
    return brokenEntry(file, source, report.errors, report.id);
  return { status: 'valid', workflow: report.workflow, file, source, format, hash };
}
