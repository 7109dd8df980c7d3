import type { CatalogService } from '../../catalogs/catalog-service.js';
import type { ValidationEngine } from '../../engine/validation-engine.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import type { ToolDefinition } from '../tool.js';
import { catalogTools } from './catalog-tools.js';
import { inputTools } from './input-tools.js';

export interface AutomationDeps {
  registry: WorkflowRegistry;
  engine: ValidationEngine;
  catalogs: CatalogService;
  allowedEnv: Record<string, string>;
  allowedEnvNames: ReadonlySet<string>;
}

/** Automation (seed 003 §5): input tools (inputs, templates, plans) and catalog tools (OpenAPI imports). */
export function automationTools(deps: AutomationDeps): ToolDefinition[] {
  return [...inputTools(deps), ...catalogTools(deps.catalogs)];
}
