import { fail } from '../engine/errors.js';
import type { RuntimeDocument, RuntimeDocumentStore } from '../store/runtime-documents.js';
import {
  type CatalogConfig,
  type CatalogManifest,
  type CatalogSnapshot,
  type CatalogStorage,
  type ChangeOptions,
  type CredentialBindings,
  catalogExists,
  type LoadedCatalog,
} from './catalog-registry.js';

/** Who a change is recorded for when the caller gave no principal (server-side changes). */
const SERVER = 'server';

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/**
 * Catalogs and credential bindings kept in the database every replica shares (PostgreSQL): the same
 * config and manifest documents as the files of the catalogs dir, one document per credential
 * binding. Each change is one serializable transaction that acts on what is stored now (not on this
 * replica's view); every replica hears of it (LISTEN) and reads the catalogs again before its next use.
 */
export class DatabaseCatalogStorage implements CatalogStorage {
  private dirty = true;
  private unwatch: (() => void) | undefined;
  readonly dir: string;

  constructor(private readonly documents: RuntimeDocumentStore) {
    this.dir = `${documents.location}#catalogs`;
  }

  get location(): string {
    return this.dir;
  }

  private path(name: string): string {
    return `${this.dir}/${name}`;
  }

  /** Stale when a change was announced, or while announcements cannot arrive. */
  async stale(): Promise<boolean> {
    return this.dirty || !this.documents.listening;
  }

  close(): void {
    this.unwatch?.();
    this.unwatch = undefined;
  }

  async load(): Promise<CatalogSnapshot> {
    this.unwatch ??= this.documents.watch((kind) => {
      if (kind !== 'workflow') this.dirty = true;
    });
    // Cleared before reading: a change announced while reading marks the view stale again.
    this.dirty = false;
    try {
      const [configs, manifests, bound] = await Promise.all([
        this.documents.list('catalog'),
        this.documents.list('catalog_manifest'),
        this.documents.list('credential_binding'),
      ]);
      const byName = new Map(manifests.map((m) => [m.name, m]));
      const catalogs: LoadedCatalog[] = [];
      for (const doc of configs) {
        try {
          const config = JSON.parse(doc.content) as CatalogConfig;
          const manifestDoc = byName.get(config.manifest);
          if (manifestDoc === undefined) continue;
          const manifest = JSON.parse(manifestDoc.content) as CatalogManifest;
          catalogs.push({
            config,
            manifest,
            configPath: this.path(doc.name),
            manifestPath: this.path(manifestDoc.name),
          });
        } catch {
          // A damaged document is skipped, as a damaged file is; an import can recreate it.
        }
      }
      const bindings: CredentialBindings = Object.fromEntries(bound.map((b) => [b.name, b.content]));
      return { catalogs, bindings };
    } catch (error) {
      this.dirty = true;
      throw error;
    }
  }

  async bind(
    names: readonly string[],
    origin: string,
    seen: CredentialBindings,
    options: ChangeOptions = {},
  ): Promise<void> {
    await this.documents.transaction(async (tx) => {
      for (const name of names) {
        const current = await tx.get('credential_binding', name);
        // Decided from a binding another replica changed meanwhile: decide again from the new one.
        if (current !== undefined && current.content !== origin && current.content !== seen[name]) {
          fail({
            code: 'catalog_conflict',
            message: `the credential ${name} was bound to ${current.content} by another server meanwhile; import again`,
            catalog: name,
          });
        }
        await tx.put({
          kind: 'credential_binding',
          name,
          key: name,
          content: origin,
          updated_by: options.by ?? SERVER,
        });
      }
    });
  }

  async save(
    config: CatalogConfig,
    manifest: CatalogManifest,
    options: ChangeOptions & { replace: boolean },
  ): Promise<void> {
    const by = options.by ?? SERVER;
    await this.documents.transaction(async (tx) => {
      const existing = await tx.get('catalog', `${config.id}.json`);
      if (existing !== undefined && !options.replace) catalogExists(config.id);
      // A manifest left behind by a remove that kept it is replaced with the new one.
      await tx.put({
        kind: 'catalog_manifest',
        name: config.manifest,
        key: config.id,
        content: json(manifest),
        updated_by: by,
      });
      await tx.put({
        kind: 'catalog',
        name: `${config.id}.json`,
        key: config.id,
        content: json(config),
        updated_by: by,
      });
    });
    this.dirty = true;
  }

  async setEnabled(catalog: LoadedCatalog, enabled: boolean, options: ChangeOptions = {}): Promise<void> {
    await this.documents.transaction(async (tx) => {
      const current = await this.current(tx.get.bind(tx), catalog);
      const config = { ...(JSON.parse(current.content) as CatalogConfig), enabled };
      await tx.put({
        kind: 'catalog',
        name: current.name,
        key: current.key,
        content: json(config),
        updated_by: options.by ?? SERVER,
      });
    });
    this.dirty = true;
  }

  async remove(catalog: LoadedCatalog, removeManifest: boolean): Promise<void> {
    await this.documents.transaction(async (tx) => {
      const current = await this.current(tx.get.bind(tx), catalog);
      await tx.remove('catalog', current.name);
      if (removeManifest) await tx.remove('catalog_manifest', catalog.config.manifest);
    });
    this.dirty = true;
  }

  /** The stored config of a catalog this replica knows, or catalog_not_found when another removed it. */
  private async current(
    get: (kind: 'catalog', name: string) => Promise<RuntimeDocument | undefined>,
    catalog: LoadedCatalog,
  ): Promise<RuntimeDocument> {
    const id = catalog.config.id;
    const current = await get('catalog', `${id}.json`);
    if (current === undefined)
      fail({ code: 'catalog_not_found', message: `no catalog "${id}"`, catalog: id });
    return current;
  }
}
