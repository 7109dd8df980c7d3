import { isCommandStep, isLoopStep, type Workflow } from '../model/workflow.js';
import type { CatalogRegistry } from './catalog-registry.js';

/** The catalogs a workflow needs: those it `requires`, and those its command steps name. */
export function requiredCatalogs(workflow: Workflow): Set<string> {
  const needed = new Set(workflow.requires?.catalogs ?? []);
  const visit = (step: Workflow['steps'][number]) => {
    if (isCommandStep(step)) needed.add(step.run.split(' ')[0] as string);
  };
  for (const step of workflow.steps) {
    visit(step);
    if (isLoopStep(step) && Array.isArray(step.body)) step.body.forEach(visit);
  }
  return needed;
}

/** Why a workflow cannot start for want of catalogs (not imported, or disabled), or undefined. */
export function missingCatalogs(workflow: Workflow, catalogs: CatalogRegistry): string | undefined {
  const missing = [...requiredCatalogs(workflow)].filter((c) => !catalogs.get(c)?.config.enabled);
  if (missing.length === 0) return undefined;
  return `needs catalog${missing.length > 1 ? 's' : ''} ${missing.map((c) => `"${c}"`).join(', ')}, not imported or disabled: import ${missing.length > 1 ? 'them' : 'it'} with catalog_import_openapi`;
}
