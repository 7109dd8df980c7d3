import { readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fail } from '../engine/errors.js';
import { insideDir, writeAtomically } from '../workflows/runtime-files.js';
import type { RunnableCatalog } from './http-runner.js';
import type { CatalogCommand, ProviderContract } from './openapi-plan.js';

/** The catalog config file (`<id>.json`): small, edited by set_enabled. */
export interface CatalogConfig extends RunnableCatalog {
  title: string;
  vendor: string | null;
  enabled: boolean;
  source: string;
  imported_at: string;
  manifest: string;
  /**
   * The origin (`scheme://host:port`) the credential may be sent to; null when the base URL moved to an
   * origin no person confirmed. Absent in catalogs imported before bindings existed: their own origin.
   */
  credential_origin?: string | null;
}

/** The generated manifest (`<id>.manifest.json`): commands and provider contracts. */
export interface CatalogManifest {
  catalog_id: string;
  commands: CatalogCommand[];
  providers: ProviderContract[];
  warnings: string[];
}

export interface LoadedCatalog {
  config: CatalogConfig;
  manifest: CatalogManifest;
  configPath: string;
  manifestPath: string;
}

/** Credential variable name → the origin it was bound to. Outlives the catalogs that use it. */
export type CredentialBindings = Record<string, string>;

/** Everything stored: the catalogs and the credential bindings. */
export interface CatalogSnapshot {
  catalogs: LoadedCatalog[];
  bindings: CredentialBindings;
}

/** Who made a change and how a save may treat what is there. */
export interface ChangeOptions {
  /** The principal whose call made the change (kept where the storage records it). */
  by?: string | undefined;
}

/**
 * Where imported catalogs and credential bindings are kept: the catalogs dir (files), or with
 * PostgreSQL the database every replica shares (see database-catalogs.ts). Reads are whole
 * snapshots; each change is all-or-nothing.
 */
export interface CatalogStorage {
  /** Where the catalogs live (a directory, or a database location), for messages. */
  readonly location: string;
  load(): Promise<CatalogSnapshot>;
  /** Whether what `load` returned may be out of date (asked before each use, so it is cheap). */
  stale(): Promise<boolean>;
  /**
   * Records that the credential variables `names` may be sent to `origin`. `seen` is what the caller
   * decided from: storage shared by several processes refuses a binding changed meanwhile.
   */
  bind(
    names: readonly string[],
    origin: string,
    seen: CredentialBindings,
    options?: ChangeOptions,
  ): Promise<void>;
  /** Writes a catalog; unless `replace`, a catalog with the same id must not exist (`catalog_conflict`). */
  save(
    config: CatalogConfig,
    manifest: CatalogManifest,
    options: ChangeOptions & { replace: boolean },
  ): Promise<void>;
  setEnabled(catalog: LoadedCatalog, enabled: boolean, options?: ChangeOptions): Promise<void>;
  remove(catalog: LoadedCatalog, removeManifest: boolean, options?: ChangeOptions): Promise<void>;
  close?(): void;
}

/**
 * Imported OpenAPI catalogs and the origins their credentials are bound to, as the storage holds
 * them (the catalogs dir, or the shared database), read on first use and again whenever the storage
 * says they changed, so processes sharing it see each other's imports and bindings. Every change
 * goes through the storage and then replaces the in-memory view.
 */
export class CatalogRegistry {
  private byId = new Map<string, LoadedCatalog>();
  private bound: CredentialBindings = {};
  private loaded = false;
  /** Loads started and the newest one applied: a load never replaces what a later one read. */
  private started = 0;
  private applied = 0;
  readonly storage: CatalogStorage;

  /** A directory (files, as a single machine keeps them) or another storage. */
  constructor(storage: string | CatalogStorage) {
    this.storage = typeof storage === 'string' ? new FileCatalogStorage(storage) : storage;
  }

  /** Loads the catalogs on first use, and again whenever the storage changed since. */
  async ready(): Promise<void> {
    if (!this.loaded || (await this.storage.stale())) await this.reload();
  }

  /** Reads everything the storage holds now. */
  async reload(): Promise<void> {
    const mine = ++this.started;
    const snapshot = await this.storage.load();
    if (mine < this.applied) return;
    this.applied = mine;
    this.byId = new Map(snapshot.catalogs.map((c) => [c.config.id, c]));
    this.bound = snapshot.bindings;
    this.loaded = true;
  }

  close(): void {
    this.storage.close?.();
  }

  all(): LoadedCatalog[] {
    return [...this.byId.values()].sort((a, b) => (a.config.id < b.config.id ? -1 : 1));
  }

  get(id: string): LoadedCatalog | undefined {
    return this.byId.get(id);
  }

  /** Finds a catalog by id or title (case-insensitive title match). */
  find(idOrTitle: string): LoadedCatalog | undefined {
    return (
      this.byId.get(idOrTitle) ??
      this.all().find((c) => c.config.title.toLowerCase() === idOrTitle.toLowerCase())
    );
  }

  /** Resolves `"<catalog> <command>"` among enabled catalogs. */
  command(ref: string): { catalog: LoadedCatalog; command: CatalogCommand } | undefined {
    const [catalogId, name] = ref.split(' ');
    const catalog = catalogId ? this.byId.get(catalogId) : undefined;
    if (!catalog?.config.enabled) return undefined;
    const command = catalog.manifest.commands.find((c) => c.name === name);
    return command ? { catalog, command } : undefined;
  }

  /** The recorded credential bindings. */
  bindings(): Readonly<CredentialBindings> {
    return this.bound;
  }

  /** Records that the credential variables `names` may be sent to `origin`. */
  async bind(names: readonly string[], origin: string, options: ChangeOptions = {}): Promise<void> {
    if (names.length === 0) return;
    await this.storage.bind(names, origin, this.bound, options);
    await this.reload();
  }

  /** Saves a catalog; with `replace: false`, one that exists by now is a `catalog_conflict`. */
  async save(
    config: CatalogConfig,
    manifest: CatalogManifest,
    options: ChangeOptions & { replace?: boolean } = {},
  ): Promise<LoadedCatalog> {
    await this.storage.save(config, manifest, { ...options, replace: options.replace ?? true });
    await this.reload();
    return this.byId.get(config.id) as LoadedCatalog;
  }

  async setEnabled(id: string, enabled: boolean, options: ChangeOptions = {}): Promise<LoadedCatalog> {
    await this.storage.setEnabled(this.byId.get(id) as LoadedCatalog, enabled, options);
    await this.reload();
    return this.byId.get(id) as LoadedCatalog;
  }

  async remove(id: string, removeManifest: boolean, options: ChangeOptions = {}): Promise<void> {
    await this.storage.remove(this.byId.get(id) as LoadedCatalog, removeManifest, options);
    await this.reload();
  }
}

/** A catalog that exists although the caller did not ask to replace one. */
export function catalogExists(id: string): never {
  fail({
    code: 'catalog_conflict',
    message: `catalog "${id}" exists; pass overwrite: true to replace it`,
    catalog: id,
  });
}

/** Not a catalog config: ids never start with an underscore. */
const BINDINGS_FILE = '_credential-bindings.json';

/**
 * The catalogs dir beside the runtime workflow dir: `<id>.json` (config), `<id>.manifest.json`
 * and `_credential-bindings.json`, each written atomically. The directory's modification time
 * (every write is a rename into it) tells when another process changed something.
 */
export class FileCatalogStorage implements CatalogStorage {
  /** The directory's modification time when it was last read. */
  private loadedMtime = -1;

  constructor(readonly dir: string) {}

  get location(): string {
    return this.dir;
  }

  async stale(): Promise<boolean> {
    return (await this.mtime()) !== this.loadedMtime;
  }

  async bind(names: readonly string[], origin: string, seen: CredentialBindings): Promise<void> {
    const next = { ...seen };
    for (const name of names) next[name] = origin;
    await writeAtomically(join(this.dir, BINDINGS_FILE), `${JSON.stringify(next, null, 2)}\n`);
  }

  /**
   * `replace` is not checked here: one process serializes its imports, and a config file the view
   * skipped as damaged may be replaced by a new import of the catalog.
   */
  async save(config: CatalogConfig, manifest: CatalogManifest): Promise<void> {
    const configPath = insideDir(this.dir, `${config.id}.json`);
    const manifestPath = insideDir(this.dir, config.manifest);
    await writeAtomically(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    await writeAtomically(configPath, `${JSON.stringify(config, null, 2)}\n`);
  }

  async setEnabled(catalog: LoadedCatalog, enabled: boolean): Promise<void> {
    await writeAtomically(catalog.configPath, `${JSON.stringify({ ...catalog.config, enabled }, null, 2)}\n`);
  }

  async remove(catalog: LoadedCatalog, removeManifest: boolean): Promise<void> {
    await unlink(catalog.configPath);
    if (removeManifest) await unlink(catalog.manifestPath).catch(() => undefined);
  }

  private async mtime(): Promise<number> {
    return stat(this.dir).then(
      (info) => info.mtimeMs,
      () => 0,
    );
  }

  async load(): Promise<CatalogSnapshot> {
    const mtime = await this.mtime();
    const catalogs: LoadedCatalog[] = [];
    let names: string[] = [];
    try {
      names = (await readdir(this.dir)).filter(
        (n) => n.endsWith('.json') && !n.endsWith('.manifest.json') && !n.startsWith('_'),
      );
    } catch {
      // no catalogs yet
    }
    for (const name of names.sort()) {
      try {
        const configPath = join(this.dir, name);
        const config = JSON.parse(await readFile(configPath, 'utf8')) as CatalogConfig;
        const manifestPath = insideDir(this.dir, config.manifest);
        const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as CatalogManifest;
        catalogs.push({ config, manifest, configPath, manifestPath });
      } catch {
        // A damaged catalog file is skipped; catalog_validate/import can recreate it.
      }
    }
    let bindings: CredentialBindings = {};
    try {
      bindings = parseBindings(JSON.parse(await readFile(join(this.dir, BINDINGS_FILE), 'utf8')));
    } catch {
      // none recorded yet
    }
    this.loadedMtime = mtime;
    return { catalogs, bindings };
  }
}

/** Only string values of a JSON object: what a bindings file may be trusted to hold. */
function parseBindings(parsed: unknown): CredentialBindings {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  return Object.fromEntries(
    Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}
