import { type InputResolution, type ProviderOutcome, resolveInputs } from '../engine/inputs.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { Workflow } from '../model/workflow.js';
import type { CatalogService } from './catalog-service.js';

export interface InputCheckDeps {
  engine: ValidationEngine;
  /** Asks input providers for their choices (absent: providers are not consulted). */
  catalogs?: CatalogService | undefined;
  /** Environment variables defaults may read (already filtered by the allow-list). */
  allowedEnv: Record<string, string>;
}

export interface InputCheck {
  ready: boolean;
  values: Record<string, unknown>;
  inputs: InputResolution[];
}

/**
 * The one inputs check: `workflow_resolve_inputs` reports it, `workflow_start` (and every run) refuses
 * to start unless it says ready. Defaults apply, values are checked against their rules, and an input
 * with a provider is checked against the provider's values (or offered them when no value is given).
 */
export class InputChecker {
  constructor(private readonly deps: InputCheckDeps) {}

  async check(
    workflow: Workflow,
    given: Record<string, unknown>,
    options: { providers?: boolean } = {},
  ): Promise<InputCheck> {
    const { engine, allowedEnv } = this.deps;
    // Only a `pattern` needs the regex worker; most workflows declare none, and it costs ~15 MB running.
    if (Object.values(workflow.inputs ?? {}).some((spec) => spec.pattern !== undefined)) await engine.load();
    return resolveInputs(workflow.inputs, given, {
      env: allowedEnv,
      matches: (pattern, text) => engine.matches(pattern, text),
      ...(options.providers === false ? {} : { providers: await this.providerChoices(workflow, given) }),
    });
  }

  private async providerChoices(workflow: Workflow, given: Record<string, unknown>) {
    const outcomes: Record<string, ProviderOutcome> = {};
    const catalogs = this.deps.catalogs;
    if (catalogs === undefined) return outcomes;
    for (const [name, spec] of Object.entries(workflow.inputs ?? {})) {
      // A provider decides the choices when no value is given and there is no default, and checks a given value.
      if (!spec.provider || (given[name] === undefined && spec.default !== undefined)) continue;
      outcomes[name] = await catalogs.providerChoices(spec.provider, given, this.deps.allowedEnv);
    }
    return outcomes;
  }
}
