import { expandTemplateCalls, routineIdsOf } from '../engine/workrail.js';
import { mapParallelSteps } from '../engine/workrail-parallel.js';
import type { Workflow } from '../model/workflow.js';
import { registryDelegationFailures } from './delegation.js';
import { type BrokenWorkflow, brokenEntry, contentVersion, type RegistryEntry } from './entry.js';

// What a served workflow takes from the other served workflows: the routines its templateCalls name
// are expanded in place, and its delegations are judged against them. Apart from the registry because
// it looks across workflows, once every source has said which file serves which id.

/**
 * Expands routines, then judges delegations, over the served workflows `byId` (in place): a workflow
 * that fails either becomes broken (replaced in `byId`, added to `broken`); a changed definition gets
 * the hash executions pin (`definitionHash`).
 */
export function composeServed(byId: Map<string, RegistryEntry>, broken: BrokenWorkflow[]): void {
  const routineOf = (templateId: string) => {
    for (const id of routineIdsOf(templateId)) {
      const entry = byId.get(id);
      if (entry?.status === 'valid') return entry.workflow;
    }
    return undefined;
  };
  // The served workflows as their files define them, before templateCalls expand.
  const files = new Map<string, Workflow>();
  for (const [id, entry] of byId) if (entry.status === 'valid') files.set(id, entry.workflow);
  expandRoutines(byId, broken, routineOf);
  resolveDelegations(byId, broken, files, routineOf);
}

/**
 * Expands the templateCalls of every served workflow into the steps of the routine they name, when
 * that routine (`wr.routine-<name>`) is served too; a workflow whose expansion fails is broken.
 */
function expandRoutines(
  byId: Map<string, RegistryEntry>,
  broken: BrokenWorkflow[],
  routineOf: (templateId: string) => Workflow | undefined,
): void {
  for (const [id, entry] of byId) {
    if (entry.status !== 'valid') continue;
    const result = expandTemplateCalls(entry.workflow, routineOf);
    if (result.violations.length > 0) {
      const failed = brokenEntry(entry.file, entry.source, result.violations, id);
      byId.set(id, failed);
      broken.push(failed);
    } else if (result.expanded) {
      byId.set(id, {
        ...entry,
        workflow: result.workflow,
        definitionHash: contentVersion(JSON.stringify(result.workflow)),
      });
    }
  }
}

/**
 * Judges the delegations of the served workflows against each other (as their files define them): a
 * workflow that delegates to one no source serves, or that is broken, or whose delegations lead back to
 * it, is broken. Then the WorkRail parallel steps whose delegations all name served workflows become
 * delegating steps (with their synthesis steps).
 */
function resolveDelegations(
  byId: Map<string, RegistryEntry>,
  broken: BrokenWorkflow[],
  files: ReadonlyMap<string, Workflow>,
  routineOf: (templateId: string) => Workflow | undefined,
): void {
  const valid = new Map([...files].filter(([id]) => byId.get(id)?.status === 'valid'));
  for (const [id, violations] of registryDelegationFailures(valid, byId, routineOf)) {
    const entry = byId.get(id) as RegistryEntry;
    const failed = brokenEntry(entry.file, entry.source, violations, id);
    byId.set(id, failed);
    broken.push(failed);
  }
  const serves = (id: string) => byId.get(id)?.status === 'valid';
  for (const [id, entry] of byId) {
    if (entry.status !== 'valid') continue;
    const result = mapParallelSteps(entry.workflow, serves);
    if (!result.mapped) continue;
    byId.set(id, {
      ...entry,
      workflow: result.workflow,
      definitionHash: contentVersion(JSON.stringify(result.workflow)),
    });
  }
}
