import type { ValidationEngine } from '../engine/validation-engine.js';
import type { Violation } from '../model/violation.js';
import type { Workflow } from '../model/workflow.js';
import { checkDefinition } from './check.js';
import type { DefinitionFormat } from './parse.js';

/** A finding with its place in the source text, when the source text is known. */
export type Finding = Violation;

export interface ManifestReport {
  valid: boolean;
  format: DefinitionFormat;
  workflow?: Workflow;
  /** Problems that make the manifest invalid. */
  errors: Finding[];
  /** Legal but probably unintended: unused or undocumented variables, unreachable steps, unknown personas. */
  warnings: Finding[];
}

export interface ManifestSource {
  content?: string | undefined;
  manifest?: unknown;
  format?: DefinitionFormat | undefined;
}

/** JSON when the text starts like JSON, else YAML (JSON text is also valid YAML). */
export function detectFormat(content: string): DefinitionFormat {
  return /^\s*[{[]/.test(content) ? 'json' : 'yaml';
}

/**
 * A manifest given as content or object, checked at the `authoring` level of `checkDefinition` (the
 * check every path shares): errors and warnings, with line and column when there is text.
 */
export async function checkManifest(
  source: ManifestSource,
  engine: ValidationEngine,
  knownAgents?: ReadonlySet<string>,
  allowedEnv?: ReadonlySet<string>,
): Promise<ManifestReport> {
  const format = source.format ?? (source.content !== undefined ? detectFormat(source.content) : 'json');
  const report = await checkDefinition(
    source.content !== undefined ? { text: source.content, format } : { data: source.manifest, format },
    'authoring',
    { engine, allowedEnv, knownAgents },
  );
  return {
    valid: report.valid,
    format: report.format,
    ...(report.workflow ? { workflow: report.workflow } : {}),
    errors: report.errors,
    warnings: report.warnings,
  };
}
