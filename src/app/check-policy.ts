/**
 * Builders of the composition root (re-exported by src/app.ts, which composes them): the operator's
 * checks file, read once, and the one check policy every definition check applies.
 */
import { dirname } from 'node:path';
import type { Config } from '../config.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { CheckDefinition } from '../executions/checks.js';
import type { CheckPolicy } from '../workflows/check.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { WorkflowRegistry } from '../workflows/registry.js';

/** The operator's checks as their file defines them (WORKFLOWLOOKUP_CHECKS_FILE). */
export interface OperatorChecks {
  file: string;
  checks: Map<string, CheckDefinition>;
}

/**
 * Reads the operator's checks file; undefined without one. Throws what makes the file unusable (`serve`
 * refuses to start on it). The app reads it once, on first use (by executions or the check policy).
 */
export async function loadOperatorChecks(config: Config): Promise<OperatorChecks | undefined> {
  if (config.checksFile === undefined) return undefined;
  const { loadChecksFile } = await import('../executions/checks.js');
  const file = config.checksFile;
  return { file, checks: loadChecksFile(file, dirname(file)) };
}

/**
 * The one policy every definition check applies (`workflowlookup validate`, workflow_validate_manifest,
 * workflow_save, workflow_test, the authoring prompts, the input tools): the app's engine, the env
 * allow-list, the installed personas, the operator's checks (a step naming a check the checks file
 * does not define is an error; without a checks file, a warning) and the served workflows (a delegating
 * step's children must be among them, with no cycle).
 */
export function buildCheckPolicy(
  config: Config,
  parts: {
    engine: ValidationEngine;
    personas: PersonaRegistry;
    checks: () => Promise<OperatorChecks | undefined>;
    /** The served workflows: the children a delegating step names must be among them. */
    registry: WorkflowRegistry;
  },
): () => Promise<CheckPolicy> {
  return async () => {
    // A checks file that cannot be used is refused where it is used (`serve` and `validate` stop at
    // start, executions cannot start): here it only leaves the knownCheck rule out.
    const [, operator] = await Promise.all([
      parts.personas.ready(),
      parts.checks().then(
        (checks) => checks ?? ('none' as const),
        () => undefined,
      ),
      parts.registry.ready(),
    ]);
    return {
      engine: parts.engine,
      allowedEnv: config.allowedEnvNames,
      knownAgents: new Set(parts.personas.list().map((p) => p.name)),
      knownChecks: typeof operator === 'object' ? new Set(operator.checks.keys()) : operator,
      workflows: parts.registry,
    };
  };
}
