import { basename } from 'node:path';
import * as z from 'zod';
import { fail } from '../../engine/errors.js';
import type { WorkflowTests } from '../../executions/workflow-tests.js';
import { IdSchema, type Workflow } from '../../model/workflow.js';
import {
  type CheckPolicy,
  type CheckReport,
  checkDefinition,
  DEFINITION_LIMITS,
  describeViolation,
} from '../../workflows/check.js';
import { contentVersion, type RegistryEntry } from '../../workflows/entry.js';
import { detectFormat } from '../../workflows/manifest-check.js';
import { type DefinitionFormat, formatOf } from '../../workflows/parse.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import type { RuntimeWorkflows } from '../../workflows/runtime-workflows.js';
import { NextSchema, next, startCall } from '../next.js';
import { retryingNotChecked } from '../not-checked.js';
import { ViolationSchema } from '../schemas.js';
import { annotate, defineTool, READ_ONLY, requireConfirmation, type ToolDefinition } from '../tool.js';
import { TestsSchema, testHint, workflowTestTool } from './workflow-test-tool.js';

// No length limit here: the check measures every definition in UTF-8 bytes, whatever path it takes.
const ContentSchema = z
  .string()
  .min(1)
  .describe(`The manifest as JSON or YAML text (at most ${DEFINITION_LIMITS.maxBytes} bytes as UTF-8)`);
const FormatSchema = z.enum(['json', 'yaml']).describe('Format of content (default: detected)');

export interface AuthoringDeps {
  registry: WorkflowRegistry;
  /** Where saves land (the runtime dir, or the database replicas share) and the rules for changing it. */
  runtime: RuntimeWorkflows;
  /**
   * The app's one check policy (engine, WORKFLOWLOOKUP_ALLOWED_ENV, personas, the operator's checks), as
   * `workflowlookup validate` applies it.
   */
  checkPolicy: () => Promise<CheckPolicy>;
  /** Runs workflow tests (workflow_test, and the untested-paths hint of workflow_validate_manifest). */
  tests?: () => Promise<WorkflowTests>;
}

/**
 * Authoring (seed 003 §5): check manifests before anything is written, and save, rename and delete
 * workflows in the runtime source only (the runtime dir, or the database replicas share),
 * atomically, with optimistic concurrency on `expected_version`.
 */
export function authoringTools(deps: AuthoringDeps): ToolDefinition[] {
  const { registry, runtime, checkPolicy } = deps;
  let writes = Promise.resolve();
  /** One write at a time in this process, so check-then-write sequences cannot interleave. */
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = writes.then(fn);
    writes = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };

  /** The `authoring` check every path shares, with this server's policy. */
  const report = async (content: string | undefined, manifest: unknown, format?: DefinitionFormat) => {
    const policy = await checkPolicy();
    return content !== undefined
      ? checkDefinition({ text: content, format: format ?? detectFormat(content) }, 'authoring', policy)
      : checkDefinition({ data: manifest, format: format ?? 'json' }, 'authoring', policy);
  };

  /** The workflow in the runtime source, or a clear error when it lives elsewhere or nowhere. */
  const runtimeEntry = async (id: string): Promise<RegistryEntry> => {
    await registry.ready();
    const own = registry.inSource(runtime.kind, id);
    if (own) return own;
    const other = registry.get(id);
    if (other === undefined) return registry.missing(id);
    fail({
      code: 'workflow_read_only',
      message: `workflow "${id}" comes from the ${other.source} source (${other.file}), which is read-only`,
      workflowId: id,
      source: other.source,
      path: other.file,
    });
  };

  const rejectInvalid = (r: CheckReport) => {
    if (r.valid) return;
    const id = r.workflow?.id;
    fail({
      code: 'manifest_invalid',
      message: `the manifest has ${r.errors.length} violation(s); nothing was written`,
      ...(id !== undefined ? { workflowId: id } : {}),
      violations: r.errors,
    });
  };

  const tests = deps.tests;
  return [
    defineTool({
      name: 'workflow_validate_manifest',
      scope: 'read',
      aliases: ['workflow.validate'],
      title: 'Validate a workflow manifest',
      description:
        "Checks a workflow manifest (JSON/YAML text or an object) without saving it, exactly as the server judges its files: errors (limits, schema, step ids, loops, templates, criteria, env names) and warnings, with line and column. Seed 003's workflow.validate; a step's output is checked by workflow_validate.",
      inputSchema: z
        .strictObject({
          content: ContentSchema.optional(),
          manifest: z.record(z.string(), z.unknown()).optional().describe('The manifest as an object'),
          format: FormatSchema.optional(),
          tests: TestsSchema.optional().describe(
            'Tests to run against a valid manifest (default: the test file beside the saved workflow of its id, if any); their untested paths come back as a hint',
          ),
        })
        .refine((v) => (v.content === undefined) !== (v.manifest === undefined), {
          message: 'give exactly one of content or manifest',
          path: ['content'],
        }),
      outputSchema: z.object({
        valid: z.boolean().describe('True when there are no errors'),
        workflow_id: z.string().optional().describe('The manifest id, when readable'),
        format: FormatSchema,
        errors: z.array(z.string()).describe('Each error as one line: "path (line:column): message"'),
        warnings: z.array(ViolationSchema).describe('Legal but probably unintended constructs'),
        violations: z.array(ViolationSchema).describe('The errors, structured (seed 003 §10.2)'),
        tests: z
          .object({
            passed: z.number(),
            failed: z.number(),
            file: z.string().optional().describe('The test file, when the tests came from one'),
            errors: z.array(z.string()).describe('Why the tests could not run'),
          })
          .optional()
          .describe('How the workflow tests fare, when there are tests (see workflow_test)'),
        untested: z
          .array(z.string())
          .optional()
          .describe('Hint: the paths (steps, condition outcomes, loop exits) no scenario of the tests walks'),
        next: NextSchema,
      }),
      annotations: READ_ONLY,
      summarize: (r) =>
        r.valid
          ? `Valid${r.warnings.length > 0 ? `, ${r.warnings.length} warning(s)` : ''}.`
          : `${r.errors.length} error(s).`,
      handler: async ({ content, manifest, format, tests: given }, ctx) => {
        const again = {
          tool: 'workflow_validate_manifest',
          arguments: format !== undefined ? { format } : {},
          fill: {
            [content !== undefined ? 'content' : 'manifest']: 'the same manifest, unchanged',
            ...(given !== undefined ? { tests: 'the same tests, unchanged' } : {}),
          },
        };
        const r = await retryingNotChecked(again, () => report(content, manifest, format));
        // A valid manifest with tests: how they fare, and the paths none walks (a hint, not an error).
        const hint =
          r.valid && r.workflow !== undefined && tests !== undefined
            ? await testHint(
                { registry, tests },
                r.workflow,
                contentVersion(content ?? JSON.stringify(manifest)),
                given,
                ctx.caller.signal,
                again,
                ctx.caller.principal,
              )
            : undefined;
        // The manifest itself is not repeated: the agent has it, and fills it in.
        const text =
          content !== undefined ? 'the manifest text you just checked' : 'the manifest as JSON or YAML text';
        return {
          valid: r.valid,
          ...(r.workflow ? { workflow_id: r.workflow.id } : {}),
          format: r.format,
          errors: r.errors.map(describeViolation),
          warnings: r.warnings,
          violations: r.errors,
          ...(hint ?? {}),
          next: r.valid
            ? [next('workflow_save', {}, { content: text })]
            : [next('workflow_validate_manifest', {}, { content: `${text}, with the errors fixed` })],
        };
      },
    }),
    defineTool({
      name: 'workflow_save',
      instructions: {
        rank: 30,
        text: (listed) =>
          listed('workflow_validate_manifest') && listed('workflow_save')
            ? 'To author a workflow, check it with workflow_validate_manifest {content}, then workflow_save {content}; the format is the resource workflowlookup://authoring/spec.'
            : undefined,
      },
      scope: 'author',
      aliases: ['workflow.save'],
      title: 'Save a workflow',
      description:
        'Validates a manifest and, when valid, writes it atomically to the runtime workflow dir as <id>.json or <id>.yaml. An existing workflow there needs overwrite: true (or a matching expected_version from workflow_get view=source); a file holding another workflow is never replaced.',
      inputSchema: z.strictObject({
        content: ContentSchema,
        format: FormatSchema.optional(),
        overwrite: z.boolean().optional().describe('Replace an existing workflow with the same id'),
        expected_version: z
          .string()
          .regex(/^[0-9a-f]{64}$/)
          .optional()
          .describe('Version the caller last read; the save fails if the file changed since'),
        file_name: z
          .string()
          .min(1)
          .max(255)
          .optional()
          .describe(
            'Plain file name in the runtime dir (default <id>.json or <id>.yaml): ASCII letters, digits, - _ and dots, ending in .json, .yaml or .yml',
          ),
      }),
      outputSchema: z.object({
        path: z.string().describe('Where the workflow was written'),
        workflow_id: z.string().describe('Its id'),
        version: z.string().describe('sha256 of the written bytes'),
        format: FormatSchema,
        created: z.boolean().describe('False when an existing workflow was replaced'),
        overrides: z
          .string()
          .optional()
          .describe('Source of a definition with the same id that this one now overrides'),
        warnings: z.array(ViolationSchema).describe('Warnings from validation'),
        next: NextSchema,
      }),
      // With overwrite (or expected_version) it replaces a workflow's content; saving the same again changes nothing.
      annotations: annotate({ changes: 'destructively', repeatable: true, external: false }),
      summarize: (r) => `Saved ${r.workflow_id} to ${r.path}.`,
      handler: ({ content, format, overwrite, expected_version, file_name }, ctx) =>
        serialized(async () => {
          const target = file_name === undefined ? undefined : runtime.target(file_name);
          // Rules not checked in time are no violation: the retryable error, with this call to send again.
          const again = {
            tool: 'workflow_save',
            arguments: Object.fromEntries(
              Object.entries({ format, overwrite, expected_version, file_name }).filter(
                ([, v]) => v !== undefined,
              ),
            ),
            fill: { content: 'the same manifest text, unchanged' },
          };
          const r = await retryingNotChecked(again, () =>
            report(content, undefined, format ?? (target ? formatOf(target) : detectFormat(content))),
          );
          rejectInvalid(r);
          const id = r.workflow?.id as string;
          await registry.ready();
          const lower = registry.get(id);
          const saved = await runtime.save({
            id,
            content,
            format: r.format,
            fileName: file_name,
            overwrite,
            expectedVersion: expected_version,
            principal: ctx.caller.principal,
          });
          return {
            path: saved.path,
            workflow_id: id,
            version: saved.version,
            format: r.format,
            created: saved.created,
            ...(lower && lower.source !== runtime.kind ? { overrides: lower.source } : {}),
            warnings: r.warnings,
            next: [startCall(r.workflow as Workflow)],
          };
        }),
    }),
    defineTool({
      name: 'workflow_rename',
      scope: 'author',
      aliases: ['workflow.rename'],
      title: 'Rename a workflow',
      description:
        'Changes the id (and file name) of a workflow in the runtime dir. Bundled and other sources are read-only.',
      inputSchema: z.strictObject({
        workflow_id: IdSchema.describe('Current id'),
        new_id: IdSchema.describe('New id'),
      }),
      outputSchema: z.object({
        workflow_id: z.string().describe('The new id'),
        previous_id: z.string().describe('The old id'),
        path: z.string().describe('The new file'),
        version: z.string().describe('sha256 of the new file'),
        next: NextSchema,
      }),
      // Never over another workflow, and renaming back restores it: nothing is lost.
      annotations: annotate({ changes: 'reversibly', repeatable: true, external: false }),
      summarize: (r) => `Renamed ${r.previous_id} to ${r.workflow_id}.`,
      handler: ({ workflow_id, new_id }, ctx) =>
        serialized(async () => {
          const entry = await runtimeEntry(workflow_id);
          if (entry.status !== 'valid') {
            fail({
              code: 'workflow_invalid',
              message: 'Invalid workflow',
              workflowId: workflow_id,
              file: entry.file,
              violations: entry.violations,
            });
          }
          if (new_id === workflow_id || registry.inSource(runtime.kind, new_id)) {
            fail({
              code: 'workflow_conflict',
              message: 'Conflict',
              workflowId: new_id,
              details: `a workflow "${new_id}" already exists in ${runtime.where}`,
            });
          }
          const bytes = await registry.readSource(entry);
          const renamed = await withId(bytes.toString('utf8'), entry.format, new_id);
          const moved = await runtime.rename({
            entry,
            newId: new_id,
            content: renamed,
            readVersion: contentVersion(bytes),
            principal: ctx.caller.principal,
          });
          return {
            workflow_id: new_id,
            previous_id: workflow_id,
            path: moved.path,
            version: moved.version,
            next: [],
          };
        }),
    }),
    defineTool({
      name: 'workflow_delete',
      scope: 'author',
      aliases: ['workflow.delete'],
      title: 'Delete a workflow',
      description:
        'Deletes a workflow file from the runtime dir. Needs confirm: true (or the user confirms when the client supports elicitation). Running executions keep their pinned copy.',
      inputSchema: z.strictObject({
        workflow_id: IdSchema.describe('Workflow to delete'),
        confirm: z.boolean().optional().describe('Must be true unless the user is asked through elicitation'),
      }),
      outputSchema: z.object({
        deleted: z.boolean().describe('True when the file was removed'),
        workflow_id: z.string().describe('Its id'),
        path: z.string().describe('The removed file'),
        now_served_from: z.string().optional().describe('Source that now provides this id, if any'),
        next: NextSchema,
      }),
      annotations: annotate({ changes: 'destructively', repeatable: true, external: false }),
      summarize: (r) => `Deleted ${r.workflow_id} (${r.path}).`,
      handler: ({ workflow_id, confirm }, ctx) =>
        serialized(async () => {
          const entry = await runtimeEntry(workflow_id);
          await requireConfirmation(ctx, confirm, {
            question: `Delete workflow "${workflow_id}" (${basename(entry.file)}) from ${runtime.where}?`,
            doing: `deleting "${workflow_id}"`,
            tool: 'workflow_delete',
            arguments: { workflow_id },
            workflowId: workflow_id,
          });
          await runtime.remove(entry, workflow_id, ctx.caller.principal);
          const after = registry.get(workflow_id);
          return {
            deleted: true,
            workflow_id,
            path: entry.file,
            ...(after ? { now_served_from: after.source } : {}),
            next: [],
          };
        }),
    }),
    ...(tests === undefined
      ? []
      : [
          workflowTestTool({
            registry,
            tests,
            check: (content, format) => report(content, undefined, format),
          }),
        ]),
  ];
}

/** The manifest text with a new id, keeping YAML comments and layout. */
async function withId(text: string, format: DefinitionFormat, id: string): Promise<string> {
  if (format === 'json') return `${JSON.stringify({ ...JSON.parse(text), id }, null, 2)}\n`;
  const mod = (await import('yaml')) as typeof import('yaml') & { default?: typeof import('yaml') };
  const doc = (mod.default ?? mod).parseDocument(text, { uniqueKeys: false });
  doc.set('id', id);
  return String(doc);
}
