import type { CatalogService } from '../../catalogs/catalog-service.js';
import type { ToolDefinition } from '../tool.js';
import { catalogTools } from './catalog-tools.js';
import { type InputToolDeps, inputTools } from './input-tools.js';

export interface AutomationDeps extends InputToolDeps {
  catalogs: CatalogService;
}

/** Automation (seed 003 §5): input tools (inputs, templates, plans) and catalog tools (OpenAPI imports). */
export function automationTools(deps: AutomationDeps): ToolDefinition[] {
  return [...inputTools(deps), ...catalogTools(deps.catalogs)];
}
