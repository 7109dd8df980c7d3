import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Workflow } from '../model/workflow.js';
import { type Logger, silentLogger } from '../telemetry/log.js';
import type { DefinitionFormat } from './parse.js';

/** The bundled workflows' checked definitions, written beside the bundle by scripts/build.mjs. */
export const SHIPPED_DEFINITIONS_FILE = 'bundled-definitions.json';

/** What the build writes: the models of the definitions that passed the `strict` check. */
export interface ShippedDefinitionsFile {
  /** The checker id of the build that checked them (definition-cache.ts): another build's are ignored. */
  checker: string;
  /** By `<format>:<sha256 of the file's bytes>`. */
  definitions: Record<string, Workflow>;
}

const keyOf = (format: DefinitionFormat, hash: string) => `${format}:${hash}`;

/**
 * The verdicts of the bundled workflows, checked once at build time, so that a first start (a fresh data
 * dir, a CI job, a new container) neither parses their YAML nor starts the regex and JSON Schema worker
 * to check them again. Keyed by the sha256 of a file's bytes: a file that differs from the one the build
 * checked in any byte is checked as usual. Only verdicts of valid definitions checked with no
 * WORKFLOWLOOKUP_ALLOWED_ENV names are shipped, and those hold under every policy: allowing names only
 * removes findings. Read on first use (a start served from the definition cache never reads it).
 */
export class ShippedDefinitions {
  private definitions: Record<string, Workflow> | undefined;

  constructor(
    private readonly read: () => ShippedDefinitionsFile | undefined,
    private readonly checker: string,
  ) {}

  /** The file beside the bundle (dist/), when the build wrote one; undefined when there is none. */
  static besideBundle(checker: string, log: Logger = silentLogger): ShippedDefinitions {
    // This module is bundled into dist/ or into a chunk under dist/chunks/: both places are tried.
    const path = [`./${SHIPPED_DEFINITIONS_FILE}`, `../${SHIPPED_DEFINITIONS_FILE}`]
      .map((p) => fileURLToPath(new URL(p, import.meta.url)))
      .find((p) => existsSync(p));
    return new ShippedDefinitions(() => {
      if (path === undefined) return undefined;
      try {
        return JSON.parse(readFileSync(path, 'utf8')) as ShippedDefinitionsFile;
      } catch (error) {
        log.warn(
          `${path} is unreadable (${(error as Error).message}); the bundled workflows are checked instead`,
        );
        return undefined;
      }
    }, checker);
  }

  /** From a value (tests, and the build's own record). */
  static of(file: ShippedDefinitionsFile, checker: string): ShippedDefinitions {
    return new ShippedDefinitions(() => file, checker);
  }

  /** The checked model of the file whose bytes hash to `hash`, when the build checked exactly those bytes. */
  get(format: DefinitionFormat, hash: string): Workflow | undefined {
    if (this.definitions === undefined) {
      const file = this.read();
      this.definitions =
        file !== undefined &&
        file.checker === this.checker &&
        file.definitions !== null &&
        typeof file.definitions === 'object'
          ? file.definitions
          : {};
    }
    const key = keyOf(format, hash);
    return Object.hasOwn(this.definitions, key) ? this.definitions[key] : undefined;
  }
}

/** The record of `entries` (the build's check of the bundled folder): the valid ones, by content hash. */
export function shippedRecord(
  checker: string,
  entries: Iterable<{ status: string; format?: DefinitionFormat; hash?: string; workflow?: Workflow }>,
): ShippedDefinitionsFile {
  const definitions: Record<string, Workflow> = {};
  for (const entry of entries) {
    if (entry.status !== 'valid' || !entry.format || !entry.hash || !entry.workflow) continue;
    definitions[keyOf(entry.format, entry.hash)] = entry.workflow;
  }
  return { checker, definitions };
}
