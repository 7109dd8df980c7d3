import { readFile, unlink } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import * as z from 'zod';
import { fail } from '../../engine/errors.js';
import type { ValidationEngine } from '../../engine/validation-engine.js';
import { checkManifest, detectFormat, type ManifestReport } from '../../workflows/manifest-check.js';
import { IdSchema } from '../../workflows/model.js';
import { type DefinitionFormat, formatOf } from '../../workflows/parse.js';
import type { PersonaRegistry } from '../../workflows/personas.js';
import { contentVersion, type RegistryEntry, type WorkflowRegistry } from '../../workflows/registry.js';
import { insideDir, writeAtomically } from '../../workflows/runtime-files.js';
import { ViolationSchema } from '../schemas.js';
import { defineTool, READ_ONLY, type ToolDefinition } from '../tool.js';

/** Largest manifest accepted for validation or saving. */
export const MAX_MANIFEST_CHARS = 1_048_576;

const ContentSchema = z.string().min(1).max(MAX_MANIFEST_CHARS).describe('The manifest as JSON or YAML text');
const FormatSchema = z.enum(['json', 'yaml']).describe('Format of content (default: detected)');

const STANDARD = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
const DESTRUCTIVE = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: false,
};

const extensionFor = (format: DefinitionFormat) => (format === 'json' ? '.json' : '.yaml');

export interface AuthoringDeps {
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  runtimeDir: string;
  /** Names `${{ env.X }}` may use (WORKFLOWLOOKUP_ALLOWED_ENV). */
  allowedEnvNames: ReadonlySet<string>;
}

/**
 * Authoring (seed 003 §5): check manifests before anything is written, and save, rename and delete
 * workflows in the runtime dir only, atomically, with optimistic concurrency on `expected_version`.
 */
export function authoringTools(deps: AuthoringDeps): ToolDefinition[] {
  const { registry, personas, engine, runtimeDir, allowedEnvNames } = deps;
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

  const report = async (content: string | undefined, manifest: unknown, format?: DefinitionFormat) => {
    await personas.ready();
    const agents = new Set(personas.list().map((p) => p.name));
    return checkManifest({ content, manifest, format }, engine, agents, allowedEnvNames);
  };

  /** The workflow's file in the runtime dir, or a clear error when it lives elsewhere or nowhere. */
  const runtimeEntry = async (id: string): Promise<RegistryEntry> => {
    await registry.ready();
    const own = registry.inSource('runtime', id);
    if (own) return own;
    const other = registry.get(id);
    if (other === undefined)
      fail({ code: 'workflow_not_found', message: 'Workflow not found', workflowId: id });
    fail({
      code: 'workflow_read_only',
      message: `workflow "${id}" comes from the ${other.source} source (${other.file}), which is read-only`,
      workflowId: id,
      source: other.source,
      path: other.file,
    });
  };

  const rejectInvalid = (r: ManifestReport) => {
    if (r.valid) return;
    const id = (r.workflow?.id ?? undefined) as string | undefined;
    fail({
      code: 'manifest_invalid',
      message: `the manifest has ${r.errors.length} violation(s); nothing was written`,
      ...(id !== undefined ? { workflowId: id } : {}),
      violations: r.errors,
    });
  };

  return [
    defineTool({
      name: 'workflow_validate_manifest',
      title: 'Validate a workflow manifest',
      description:
        'Checks a workflow manifest (JSON or YAML text, or an object) without saving it: schema, duplicate step ids, loop bodies, unevaluable criteria (errors) and undocumented variables, unreachable steps, unknown personas (warnings), with line and column.',
      inputSchema: z
        .strictObject({
          content: ContentSchema.optional(),
          manifest: z.record(z.string(), z.unknown()).optional().describe('The manifest as an object'),
          format: FormatSchema.optional(),
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
      }),
      annotations: READ_ONLY,
      handler: async ({ content, manifest, format }) => {
        const r = await report(content, manifest, format);
        return {
          valid: r.valid,
          ...(r.workflow ? { workflow_id: r.workflow.id } : {}),
          format: r.format,
          errors: r.errors.map(
            (e) =>
              `${e.path || '(root)'}${e.line !== undefined ? ` (${e.line}:${e.column ?? 0})` : ''}: ${e.message}`,
          ),
          warnings: r.warnings,
          violations: r.errors,
        };
      },
    }),
    defineTool({
      name: 'workflow_save',
      title: 'Save a workflow',
      description:
        'Validates a manifest and, when valid, writes it atomically to the runtime workflow dir as <id>.json or <id>.yaml. An existing workflow there needs overwrite: true (or a matching expected_version from workflow_get view=source).',
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
          .describe('File name inside the runtime dir (default <id>.json or <id>.yaml); never a path'),
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
      }),
      annotations: STANDARD,
      handler: ({ content, format, overwrite, expected_version, file_name }) =>
        serialized(async () => {
          const target = file_name === undefined ? undefined : insideDir(runtimeDir, file_name);
          if (target !== undefined && formatOf(target) === undefined) {
            fail({
              code: 'invalid_params',
              message: 'Invalid params',
              details: 'file_name must end in .json, .yaml or .yml',
            });
          }
          const r = await report(
            content,
            undefined,
            format ?? (target ? formatOf(target) : detectFormat(content)),
          );
          rejectInvalid(r);
          const id = r.workflow?.id as string;
          const file = target ?? insideDir(runtimeDir, `${id}${extensionFor(r.format)}`);
          await registry.ready();
          const existing = registry.inSource('runtime', id);
          if (existing && !overwrite && expected_version === undefined) {
            fail({
              code: 'workflow_conflict',
              message: 'Conflict',
              workflowId: id,
              path: existing.file,
              details: `workflow "${id}" already exists at ${existing.file}; pass overwrite: true to replace it`,
            });
          }
          if (expected_version !== undefined) {
            const current = existing
              ? contentVersion(await readFile(existing.file).catch(() => ''))
              : undefined;
            if (current !== expected_version) {
              fail({
                code: 'workflow_conflict',
                message: 'Conflict',
                workflowId: id,
                ...(existing ? { path: existing.file } : {}),
                details: existing
                  ? `workflow "${id}" changed since version ${expected_version.slice(0, 12)}…; it is now ${current?.slice(0, 12)}…`
                  : `workflow "${id}" does not exist in the runtime dir, so it cannot be at version ${expected_version.slice(0, 12)}…`,
              });
            }
          }
          const lower = registry.get(id);
          await writeAtomically(file, content);
          if (existing && existing.file !== file) await unlink(existing.file).catch(() => undefined);
          await registry.refresh();
          return {
            path: file,
            workflow_id: id,
            version: contentVersion(content),
            format: r.format,
            created: existing === undefined,
            ...(lower && lower.source !== 'runtime' ? { overrides: lower.source } : {}),
            warnings: r.warnings,
          };
        }),
    }),
    defineTool({
      name: 'workflow_rename',
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
      }),
      annotations: STANDARD,
      handler: ({ workflow_id, new_id }) =>
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
          if (new_id === workflow_id || registry.inSource('runtime', new_id)) {
            fail({
              code: 'workflow_conflict',
              message: 'Conflict',
              workflowId: new_id,
              details: `a workflow "${new_id}" already exists in the runtime dir`,
            });
          }
          const text = await readFile(entry.file, 'utf8');
          const renamed = await withId(text, entry.format, new_id);
          const target = insideDir(
            runtimeDir,
            `${new_id}${extname(entry.file) || extensionFor(entry.format)}`,
          );
          await writeAtomically(target, renamed);
          if (target !== entry.file) await unlink(entry.file);
          await registry.refresh();
          return {
            workflow_id: new_id,
            previous_id: workflow_id,
            path: target,
            version: contentVersion(renamed),
          };
        }),
    }),
    defineTool({
      name: 'workflow_delete',
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
      }),
      annotations: DESTRUCTIVE,
      handler: ({ workflow_id, confirm }, ctx) =>
        serialized(async () => {
          const entry = await runtimeEntry(workflow_id);
          if (confirm !== true) {
            const asked = ctx.confirm
              ? await ctx.confirm(
                  `Delete workflow "${workflow_id}" (${basename(entry.file)}) from the runtime dir?`,
                )
              : false;
            if (!asked) {
              fail({
                code: 'confirmation_required',
                message: ctx.confirm
                  ? `the user did not confirm deleting "${workflow_id}"`
                  : `deleting "${workflow_id}" needs confirm: true`,
                workflowId: workflow_id,
              });
            }
          }
          await unlink(entry.file);
          await registry.refresh();
          const after = registry.get(workflow_id);
          return {
            deleted: true,
            workflow_id,
            path: entry.file,
            ...(after ? { now_served_from: after.source } : {}),
          };
        }),
    }),
  ];
}

/** The manifest text with a new id, keeping YAML comments and layout. */
async function withId(text: string, format: DefinitionFormat, id: string): Promise<string> {
  if (format === 'json') return `${JSON.stringify({ ...JSON.parse(text), id }, null, 2)}\n`;
  const mod = (await import('yaml')) as typeof import('yaml') & { default?: typeof import('yaml') };
  const doc = (mod.default ?? mod).parseDocument(text);
  doc.set('id', id);
  return String(doc);
}
