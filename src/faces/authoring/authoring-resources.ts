import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { workflowJsonSchema } from '../../model/workflow.js';
import { formatOf } from '../../workflows/parse.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { testFileJsonSchema } from '../../workflows/test-format.js';
import type { ResourceDefinition } from '../resource.js';

export const AUTHORING_BASE = 'workflowlookup://authoring';
export const GUIDE_URI = `${AUTHORING_BASE}/spec`;
export const SCHEMA_URI = `${AUTHORING_BASE}/schema`;
export const TEST_SCHEMA_URI = `${AUTHORING_BASE}/test-schema`;

/** The authoring guide shipped in docs/ (read once, then kept). */
export function guideLoader(packageRoot: string): () => Promise<string> {
  let guide: Promise<string> | undefined;
  return () => {
    guide ??= readFile(join(packageRoot, 'docs', 'authoring-guide.md'), 'utf8');
    return guide;
  };
}

/** Seed 003 §3 resources: the format spec, the JSON Schema, and the manifests. */
export function authoringResources(
  registry: WorkflowRegistry,
  guide: () => Promise<string>,
): ResourceDefinition[] {
  const ids = async (prefix: string) => {
    await registry.ready();
    return [...registry.entries()]
      .map((e) => (e.status === 'valid' ? e.workflow.id : e.id))
      .filter((id): id is string => id?.startsWith(prefix) === true)
      .sort();
  };
  return [
    {
      name: 'workflow.spec',
      uri: GUIDE_URI,
      title: 'Workflow authoring guide',
      description:
        'How to write a workflowlookup workflow: every field, conditions, validation rules, loops, examples',
      mimeType: 'text/markdown',
      read: () => guide(),
    },
    {
      name: 'workflow.schema',
      uri: SCHEMA_URI,
      title: 'Workflow JSON Schema',
      description: 'JSON Schema (draft 2020-12) every workflow manifest must satisfy',
      mimeType: 'application/schema+json',
      read: async () => JSON.stringify(workflowJsonSchema(), null, 2),
    },
    {
      name: 'workflow.test-schema',
      uri: TEST_SCHEMA_URI,
      title: 'Workflow test JSON Schema',
      description:
        'JSON Schema (draft 2020-12) of a workflow test file (<id>.test.yaml): scenarios workflow_test and `workflowlookup test` run',
      mimeType: 'application/schema+json',
      read: async () => JSON.stringify(testFileJsonSchema(), null, 2),
    },
    {
      name: 'workflow.manifests',
      uri: `${AUTHORING_BASE}/manifests`,
      title: 'Workflow manifests',
      description:
        'Every workflow file the server serves: id, title, description, path, format, version hash, source',
      read: async () => {
        await registry.ready();
        return [...registry.entries()]
          .map((e) => ({
            id: e.status === 'valid' ? e.workflow.id : (e.id ?? null),
            title: e.status === 'valid' ? e.workflow.name : null,
            description: e.status === 'valid' ? e.workflow.description : null,
            path: e.file,
            format: formatOf(e.file) ?? null,
            version: e.status === 'valid' ? e.hash : null,
            source: e.source,
            valid: e.status === 'valid',
          }))
          .sort((a, b) => String(a.id).localeCompare(String(b.id)));
      },
    },
    {
      name: 'workflow.manifest',
      uri: `${AUTHORING_BASE}/manifests/{workflowId}`,
      title: 'Workflow manifest',
      description: 'The manifest file of one workflow, as written (YAML or JSON)',
      mimeType: 'text/plain',
      list: async () =>
        (await ids('')).map((id) => ({ uri: `${AUTHORING_BASE}/manifests/${id}`, name: `manifest ${id}` })),
      complete: { workflowId: ids },
      read: async (vars) => {
        await registry.ready();
        const id = decodeURIComponent(vars.workflowId ?? '');
        const entry = registry.get(id);
        if (entry === undefined) return registry.missing(id);
        return (await registry.readSource(entry)).toString('utf8');
      },
    },
  ];
}
