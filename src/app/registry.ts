// The composition root's definition builders: the regex and JSON Schema engine every check uses, and
// the workflow registry over the configured sources (with its on-disk cache of checked definitions).
import { join } from 'node:path';
import type { Config } from '../config.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import type { Logger } from '../telemetry/log.js';
import { BUILD_CHECKER_ID, DefinitionCache } from '../workflows/definition-cache.js';
import { WorkflowRegistry } from '../workflows/registry.js';
import { ShippedDefinitions } from '../workflows/shipped-definitions.js';
import type { WorkflowSource } from '../workflows/sources.js';

/** The regex and JSON Schema engine every check uses: one per app (its worker starts on demand). */
export function buildEngine(options: { validationWorker?: URL | undefined } = {}): ValidationEngine {
  return new ValidationEngine(
    options.validationWorker === undefined ? {} : { workerUrl: options.validationWorker },
  );
}

/** Checked workflow definitions, in the data dir (an optimisation only: deleting it is always safe). */
export const DEFINITION_CACHE_FILE = 'definition-cache.json';

/**
 * The workflow registry: the configured sources, then (PostgreSQL) the database's, checked with the
 * app's engine. What workflow_list, `workflowlookup list` and `sources` and the dashboard all read.
 */
export function buildRegistry(
  config: Config,
  parts: {
    engine: ValidationEngine;
    database?: WorkflowSource | undefined;
    watch?: boolean | undefined;
    checkerId?: string | undefined;
    shippedDefinitions?: ShippedDefinitions | undefined;
    log: Logger;
  },
): WorkflowRegistry {
  // Checked definitions survive a restart (built code only: the cache is keyed by the build's checker).
  const checker = parts.checkerId ?? BUILD_CHECKER_ID;
  return new WorkflowRegistry(parts.database ? [...config.sources, parts.database] : config.sources, {
    watch: parts.watch ?? true,
    engine: parts.engine,
    allowedEnv: config.allowedEnvNames,
    // The bundled workflows' verdicts from the build: a first run does not check them again.
    shipped:
      parts.shippedDefinitions ??
      (checker === undefined ? undefined : ShippedDefinitions.besideBundle(checker, parts.log)),
    ...(checker === undefined
      ? {}
      : {
          cache: new DefinitionCache(
            join(config.dataDir, DEFINITION_CACHE_FILE),
            checker,
            config.allowedEnvNames,
            parts.log,
          ),
        }),
  });
}
