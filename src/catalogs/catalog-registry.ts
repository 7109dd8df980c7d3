import { readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { insideDir, writeAtomically } from '../workflows/runtime-files.js';
import type { CatalogAuth, RunnableCatalog } from './http-runner.js';
import type { CatalogCommand, ProviderContract } from './openapi-import.js';

/** The catalog config file (`<id>.json`): small, edited by set_enabled. */
export interface CatalogConfig extends RunnableCatalog {
  title: string;
  vendor: string | null;
  enabled: boolean;
  source: string;
  imported_at: string;
  manifest: string;
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

/**
 * Imported OpenAPI catalogs, persisted in the runtime catalogs dir and loaded at start. Every change is
 * written atomically and the in-memory view replaced.
 */
export class CatalogRegistry {
  private byId = new Map<string, LoadedCatalog>();
  private loading: Promise<void> | undefined;

  constructor(readonly dir: string) {}

  ready(): Promise<void> {
    this.loading ??= this.load();
    return this.loading;
  }

  async reload(): Promise<void> {
    this.loading = this.load();
    await this.loading;
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

  async save(config: CatalogConfig, manifest: CatalogManifest): Promise<LoadedCatalog> {
    const configPath = insideDir(this.dir, `${config.id}.json`);
    const manifestPath = insideDir(this.dir, config.manifest);
    await writeAtomically(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    await writeAtomically(configPath, `${JSON.stringify(config, null, 2)}\n`);
    await this.reload();
    return this.byId.get(config.id) as LoadedCatalog;
  }

  async setEnabled(id: string, enabled: boolean): Promise<LoadedCatalog> {
    const catalog = this.byId.get(id) as LoadedCatalog;
    await writeAtomically(catalog.configPath, `${JSON.stringify({ ...catalog.config, enabled }, null, 2)}\n`);
    await this.reload();
    return this.byId.get(id) as LoadedCatalog;
  }

  async remove(id: string, removeManifest: boolean): Promise<void> {
    const catalog = this.byId.get(id) as LoadedCatalog;
    await unlink(catalog.configPath);
    if (removeManifest) await unlink(catalog.manifestPath).catch(() => undefined);
    await this.reload();
  }

  private async load(): Promise<void> {
    const next = new Map<string, LoadedCatalog>();
    let names: string[] = [];
    try {
      names = (await readdir(this.dir)).filter((n) => n.endsWith('.json') && !n.endsWith('.manifest.json'));
    } catch {
      // no catalogs yet
    }
    for (const name of names.sort()) {
      try {
        const configPath = join(this.dir, name);
        const config = JSON.parse(await readFile(configPath, 'utf8')) as CatalogConfig;
        const manifestPath = insideDir(this.dir, config.manifest);
        const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as CatalogManifest;
        next.set(config.id, { config, manifest, configPath, manifestPath });
      } catch {
        // A damaged catalog file is skipped; catalog_validate/import can recreate it.
      }
    }
    this.byId = next;
  }
}

/** Environment variable names a catalog's credentials are read from, by convention. */
export function defaultAuthEnv(
  catalogId: string,
  type: CatalogAuth['type'],
  header = 'X-API-Key',
): CatalogAuth {
  const prefix = `WORKFLOWLOOKUP_CATALOG_${catalogId.toUpperCase().replaceAll('-', '_')}`;
  if (type === 'bearer') return { type, token_env: `${prefix}_TOKEN` };
  if (type === 'basic')
    return { type, username_env: `${prefix}_USERNAME`, password_env: `${prefix}_PASSWORD` };
  return { type, header, value_env: `${prefix}_API_KEY` };
}
