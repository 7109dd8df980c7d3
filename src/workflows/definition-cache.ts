import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Logger, silentLogger } from '../telemetry/log.js';
import type { RegistryEntry } from './entry.js';

/**
 * The id of the checker that produced cached verdicts: the build writes a hash of the sources and the
 * locked dependency versions here (scripts/build.mjs), so any code change invalidates every entry.
 * Code run from the TypeScript sources has none and keeps no cache unless a test passes a version.
 */
declare const __WORKFLOWLOOKUP_CHECKER_ID__: string | undefined;
export const BUILD_CHECKER_ID: string | undefined =
  typeof __WORKFLOWLOOKUP_CHECKER_ID__ === 'string' ? __WORKFLOWLOOKUP_CHECKER_ID__ : undefined;

/** What identifies the version of a definition file without reading it. */
export interface FileStamp {
  real: string;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

interface Stored extends FileStamp {
  entry: RegistryEntry;
}

interface CacheFile {
  checker: string;
  policy: string;
  files: Record<string, Stored>;
}

/**
 * Parsed and checked definitions kept across restarts, keyed by path, size, times and inode, so a
 * start does not parse and re-check a thousand unchanged files. Only an optimisation: a cache that is
 * missing, unreadable, corrupt, from another build or for another policy (env allow-list) is ignored
 * and rewritten; a file whose stamp differs in any way is read and checked again.
 */
export class DefinitionCache {
  private files: Record<string, Stored> = {};
  private loaded = false;
  private dirty = false;
  private readonly policy: string;

  constructor(
    /** The cache file (in the data dir). */
    readonly path: string,
    private readonly checker: string,
    allowedEnv: ReadonlySet<string>,
    private readonly log: Logger = silentLogger,
  ) {
    this.policy = [...allowedEnv].sort().join(',');
  }

  private load(): void {
    if (this.loaded) return;
    this.loaded = true;
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch {
      return; // no cache yet
    }
    try {
      const data = JSON.parse(text) as Partial<CacheFile>;
      if (
        data.checker === this.checker &&
        data.policy === this.policy &&
        data.files !== null &&
        typeof data.files === 'object' &&
        !Array.isArray(data.files)
      ) {
        this.files = data.files;
      }
    } catch {
      this.log.warn(`the definition cache ${this.path} is unreadable; it will be rebuilt`);
    }
  }

  /** The cached entry of `file` when its stamp is exactly the one cached, else undefined. */
  get(file: string, source: string, stamp: FileStamp): RegistryEntry | undefined {
    this.load();
    const hit = Object.hasOwn(this.files, file) ? this.files[file] : undefined;
    if (
      hit === undefined ||
      typeof hit !== 'object' ||
      hit === null ||
      hit.real !== stamp.real ||
      hit.size !== stamp.size ||
      hit.mtimeMs !== stamp.mtimeMs ||
      hit.ctimeMs !== stamp.ctimeMs ||
      hit.ino !== stamp.ino ||
      !plausible(hit.entry, file, source)
    ) {
      return undefined;
    }
    return hit.entry;
  }

  set(file: string, stamp: FileStamp, entry: RegistryEntry): void {
    this.load();
    this.files[file] = { ...stamp, entry };
    this.dirty = true;
  }

  /** Forgets files of `dir` that are not in `present` (deleted or renamed). */
  prune(dir: string, present: ReadonlySet<string>): void {
    this.load();
    const prefix = dir.endsWith('/') ? dir : `${dir}/`;
    for (const file of Object.keys(this.files)) {
      if (file.startsWith(prefix) && !file.slice(prefix.length).includes('/') && !present.has(file)) {
        delete this.files[file];
        this.dirty = true;
      }
    }
  }

  /** Writes the cache when it changed (atomically: a crash leaves the old file or the new one). */
  flush(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const data: CacheFile = { checker: this.checker, policy: this.policy, files: this.files };
    const tmp = `${this.path}.${process.pid}.tmp`;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      writeFileSync(tmp, asciiJson(data));
      renameSync(tmp, this.path);
    } catch (error) {
      this.log.warn(
        `the definition cache could not be written (${(error as Error).message}); it is only an optimisation`,
      );
    }
  }
}

/**
 * JSON with every non-ASCII character escaped. Read back, an ASCII file is a one-byte string, while a
 * single "→" in any definition makes the whole text a UTF-16 one: twice the memory at start (6 MB
 * instead of 3 for 1,000 workflows), held until the next full garbage collection.
 */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** A cached entry that has the shape the registry serves (a hand-edited cache must not crash it). */
function plausible(entry: unknown, file: string, source: string): entry is RegistryEntry {
  if (entry === null || typeof entry !== 'object') return false;
  const e = entry as Partial<RegistryEntry> & Record<string, unknown>;
  if (e.file !== file || e.source !== source) return false;
  if (e.status === 'broken') return Array.isArray(e.violations);
  if (e.status !== 'valid') return false;
  const w = e.workflow as unknown as Record<string, unknown> | undefined;
  return (
    typeof e.hash === 'string' &&
    (e.format === 'json' || e.format === 'yaml') &&
    w !== null &&
    typeof w === 'object' &&
    typeof w.id === 'string' &&
    Array.isArray(w.steps)
  );
}
