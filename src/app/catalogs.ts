// The composition root's catalog builder: imported catalogs, and what command steps and inputs need of them.
import { CatalogRegistry } from '../catalogs/catalog-registry.js';
import { CatalogService } from '../catalogs/catalog-service.js';
import { CommandStepRunner } from '../catalogs/command-steps.js';
import { DatabaseCatalogStorage } from '../catalogs/database-catalogs.js';
import { HostPolicy } from '../catalogs/host-policy.js';
import { InputChecker } from '../catalogs/input-check.js';
import type { Config } from '../config.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { RuntimeDocumentStore } from '../store/runtime-documents.js';
import type { Metrics } from '../telemetry/metrics.js';

/** Imported catalogs (files, or the database's documents), and what command steps and inputs need of them. */
export function buildCatalogs(
  config: Config,
  parts: { engine: ValidationEngine; documents?: RuntimeDocumentStore | undefined; metrics?: Metrics },
) {
  const catalogs = new CatalogRegistry(
    parts.documents ? new DatabaseCatalogStorage(parts.documents) : config.catalogsDir,
  );
  const catalogService = new CatalogService({
    registry: catalogs,
    env: config.env,
    policy: new HostPolicy(config.allowPrivateHosts),
    allowUrlSources: config.allowUrlSources,
    cwd: config.cwd,
    ...(parts.metrics ? { metrics: parts.metrics } : {}),
  });
  const commands = { runner: new CommandStepRunner(catalogService, parts.engine), catalogs };
  const inputs = new InputChecker({
    engine: parts.engine,
    catalogs: catalogService,
    allowedEnv: config.allowedEnv,
  });
  return { catalogs, catalogService, commands, inputs };
}
