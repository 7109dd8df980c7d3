/** The JSON Schema export: `schema/workflow.schema.json` and `workflowlookup schema` print this. */
import * as z from 'zod';
import { workflowSchemas } from './workflow-definition.js';

/** The JSON Schema (draft 2020-12) of a workflow definition, generated from the zod model. */
export function workflowJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(workflowSchemas().WorkflowSchema, {
    target: 'draft-2020-12',
    unrepresentable: 'any',
  });
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://workflowlookup.dev/schema/workflow.schema.json',
    ...generated,
  };
}
