import * as z from 'zod';
import type { CatalogService } from '../../catalogs/catalog-service.js';
import { NextSchema, next } from '../next.js';
import { ViolationSchema } from '../schemas.js';
import { annotate, defineTool, READ_ONLY, type ToolDefinition } from '../tool.js';

const SourceShape = {
  source: z
    .string()
    .min(1)
    .max(4096)
    .describe('Local path of an OpenAPI 2.0/3.x document (JSON or YAML), or a URL when allowed'),
  source_type: z.enum(['path', 'url']).optional().describe('path or url (inferred when omitted)'),
};
const CatalogMetaShape = {
  catalog_title: z.string().min(1).max(200).describe('Title of the catalog; its id is derived from it'),
  vendor: z.string().min(1).max(200).optional().describe('Who provides the API'),
  base_url: z.string().url().optional().describe('Base URL of the API (default: from the document)'),
};
const CatalogRefShape = {
  catalog_id: z.string().min(1).max(64).optional().describe('Catalog id'),
  catalog_title: z.string().min(1).max(200).optional().describe('Or its title'),
};
const namesCatalog = (v: { catalog_id?: string | undefined; catalog_title?: string | undefined }) =>
  v.catalog_id !== undefined || v.catalog_title !== undefined;
const NAMES_CATALOG = { message: 'give catalog_id or catalog_title', path: ['catalog_id'] };

/** Seed 003 §5 catalog tools: OpenAPI sources become catalogs whose operations are commands. */
export function catalogTools(catalogs: CatalogService): ToolDefinition[] {
  return [
    defineTool({
      name: 'catalog_validate_openapi',
      scope: 'admin',
      aliases: ['catalog.validate_openapi'],
      title: 'Validate an OpenAPI document',
      description: 'Loads and validates an OpenAPI 2.0 or 3.x document without importing it.',
      inputSchema: z.strictObject(SourceShape),
      outputSchema: z.object({
        valid: z.boolean().describe('Whether it can be imported'),
        document_kind: z.enum(['openapi_2', 'openapi_3', 'unknown']).describe('Detected kind'),
        operation_count: z.number().describe('Operations found'),
        warnings: z.array(z.string()).describe('Things that will be skipped or need attention'),
        violations: z.array(ViolationSchema).describe('Why it is invalid'),
        next: NextSchema,
      }),
      annotations: annotate({ changes: 'nothing', repeatable: true, external: true }),
      summarize: (r) =>
        r.valid ? `Valid ${r.document_kind}: ${r.operation_count} operation(s).` : 'Not importable.',
      handler: async (source) => {
        const doc = await catalogs.validate(source);
        const valid = doc.violations.length === 0 && doc.kind !== 'unknown';
        return {
          valid,
          document_kind: doc.kind,
          operation_count: doc.operation_count,
          warnings: doc.warnings,
          violations: doc.violations,
          next: valid
            ? [
                next('catalog_preview_import', source, {
                  catalog_title: 'a title for the catalog (its id is derived from it)',
                }),
              ]
            : [],
        };
      },
    }),
    defineTool({
      name: 'catalog_preview_import',
      scope: 'admin',
      aliases: ['catalog.preview_import'],
      title: 'Preview an OpenAPI import',
      description:
        'Plans an import without writing anything: catalog metadata, commands, groups and providers.',
      inputSchema: z.strictObject({
        ...SourceShape,
        ...CatalogMetaShape,
        include_command_preview: z.boolean().optional().describe('Also list up to 50 commands'),
      }),
      outputSchema: z.object({
        catalog: z
          .object({
            id: z.string().describe('Catalog id'),
            title: z.string().describe('Title'),
            vendor: z.string().nullable().describe('Vendor'),
            base_url: z.string().nullable().describe('Base URL'),
          })
          .describe('The catalog it would create'),
        projected_command_count: z.number().describe('Commands it would create'),
        projected_group_prefixes: z.array(z.string()).describe('Command groups'),
        provider_contract_count: z.number().describe('List commands usable as input providers'),
        warnings: z.array(z.string()).describe('Warnings'),
        command_preview: z
          .array(
            z.object({
              name: z.string(),
              group: z.string(),
              method: z.string(),
              path: z.string(),
              summary: z.string(),
            }),
          )
          .optional()
          .describe('The first 50 commands'),
        next: NextSchema,
      }),
      annotations: annotate({ changes: 'nothing', repeatable: true, external: true }),
      summarize: (r) => `Catalog ${r.catalog.id}: ${r.projected_command_count} command(s) would be created.`,
      handler: async (input) => {
        const { id, plan } = await catalogs.plan(input);
        const { include_command_preview: _preview, ...request } = input;
        return {
          catalog: { id, title: plan.title, vendor: plan.vendor, base_url: plan.base_url },
          projected_command_count: plan.commands.length,
          projected_group_prefixes: [...new Set(plan.commands.map((c) => c.group))].sort(),
          provider_contract_count: plan.providers.length,
          warnings: plan.warnings,
          ...(input.include_command_preview
            ? {
                command_preview: plan.commands
                  .slice(0, 50)
                  .map(({ name, group, method, path, summary }) => ({ name, group, method, path, summary })),
              }
            : {}),
          next: [next('catalog_import_openapi', request)],
        };
      },
    }),
    defineTool({
      name: 'catalog_import_openapi',
      instructions: {
        rank: 50,
        text: (listed) =>
          listed('catalog_import_openapi')
            ? 'catalog_import_openapi turns an OpenAPI document into commands for command steps.'
            : undefined,
      },
      scope: 'admin',
      aliases: ['catalog.import_openapi'],
      title: 'Import an OpenAPI document as a catalog',
      description:
        "Validates the document, then writes the catalog (config + generated manifest) to the runtime catalogs dir; its operations become commands usable in command steps. A catalog's credential stays bound to the origin it was first imported for: moving it elsewhere needs the user's confirmation.",
      inputSchema: z.strictObject({
        ...SourceShape,
        ...CatalogMetaShape,
        overwrite: z.boolean().optional().describe('Replace an existing catalog with the same id'),
        enabled: z.boolean().optional().describe('Available at once (default true)'),
      }),
      outputSchema: z.object({
        catalog_id: z.string().describe('Catalog id'),
        catalog_path: z.string().describe('Config file'),
        manifest_path: z.string().describe('Generated manifest'),
        command_count: z.number().describe('Commands created'),
        provider_contract_count: z.number().describe('Providers created'),
        auth: z
          .record(z.string(), z.unknown())
          .nullable()
          .describe('Credential env var names the commands will read'),
        credential_bound: z
          .boolean()
          .describe(
            'Whether commands may send the credential to the base URL (false: a person must re-bind it)',
          ),
        warnings: z.array(z.string()).describe('Warnings'),
        next: NextSchema,
      }),
      // With overwrite it replaces a catalog; a URL source is fetched.
      annotations: annotate({ changes: 'destructively', repeatable: true, external: true }),
      summarize: (r) => `Imported catalog ${r.catalog_id}: ${r.command_count} command(s).`,
      handler: async (input, ctx) => {
        const confirmer = ctx.confirm;
        const { catalog, plan, credentialBound, warnings } = await catalogs.import(
          { ...input, principal: ctx.caller.principal },
          confirmer && (async (question: string) => (await confirmer(question)).confirmed),
        );
        return {
          catalog_id: catalog.config.id,
          catalog_path: catalog.configPath,
          manifest_path: catalog.manifestPath,
          command_count: plan.commands.length,
          provider_contract_count: plan.providers.length,
          auth: catalog.config.auth,
          credential_bound: credentialBound,
          warnings,
          next: [next('command_list', { catalog_id: catalog.config.id })],
        };
      },
    }),
    defineTool({
      name: 'catalog_set_enabled',
      scope: 'admin',
      aliases: ['catalog.set_enabled'],
      title: 'Enable or disable a catalog',
      description: 'Makes a catalog available to command steps, or not, without deleting it.',
      inputSchema: z
        .strictObject({
          ...CatalogRefShape,
          enabled: z.boolean().describe('Whether its commands are available'),
        })
        .refine(namesCatalog, NAMES_CATALOG),
      outputSchema: z.object({
        catalog_id: z.string().describe('Catalog id'),
        enabled: z.boolean().describe('Now enabled'),
        command_count_after_toggle: z.number().describe('Commands available across enabled catalogs'),
        next: NextSchema,
      }),
      annotations: annotate({ changes: 'reversibly', repeatable: true, external: false }),
      summarize: (r) => `Catalog ${r.catalog_id} ${r.enabled ? 'enabled' : 'disabled'}.`,
      handler: async ({ catalog_id, catalog_title, enabled }, ctx) => {
        const catalog = await catalogs.setEnabled(catalog_id ?? catalog_title, enabled, ctx.caller.principal);
        return {
          catalog_id: catalog.config.id,
          enabled,
          command_count_after_toggle: await catalogs.enabledCommandCount(),
          next: enabled ? [next('command_list', { catalog_id: catalog.config.id })] : [],
        };
      },
    }),
    defineTool({
      name: 'catalog_remove',
      scope: 'admin',
      aliases: ['catalog.remove'],
      title: 'Remove a catalog',
      description:
        'Removes a catalog from the runtime config (and its generated manifest with remove_manifest). Only when the user asks.',
      inputSchema: z
        .strictObject({
          ...CatalogRefShape,
          remove_manifest: z
            .boolean()
            .optional()
            .describe('Also delete the generated manifest (default false)'),
        })
        .refine(namesCatalog, NAMES_CATALOG),
      outputSchema: z.object({
        removed_catalog_id: z.string().describe('Removed catalog'),
        manifest_removed: z.boolean().describe('Whether the manifest was deleted'),
        remaining_catalog_count: z.number().describe('Catalogs left'),
        next: NextSchema,
      }),
      summarize: (r) => `Removed catalog ${r.removed_catalog_id}.`,
      annotations: annotate({ changes: 'destructively', repeatable: true, external: false }),
      handler: async ({ catalog_id, catalog_title, remove_manifest }, ctx) => {
        const removed = await catalogs.remove(
          catalog_id ?? catalog_title,
          remove_manifest === true,
          ctx.caller.principal,
        );
        return {
          removed_catalog_id: removed.config.id,
          manifest_removed: remove_manifest === true,
          remaining_catalog_count: (await catalogs.all()).length,
          next: [],
        };
      },
    }),
    defineTool({
      name: 'command_list',
      scope: 'read',
      aliases: ['command.list'],
      title: 'List catalog commands',
      description: 'Commands of the enabled catalogs, usable as run: "<catalog> <command>" in command steps.',
      inputSchema: z.strictObject({
        catalog_id: z.string().min(1).max(64).optional().describe('Only this catalog'),
        group: z.string().min(1).max(64).optional().describe('Only this group'),
      }),
      outputSchema: z.object({
        commands: z.array(z.looseObject({})).describe('Commands with their parameters and body schema'),
        next: NextSchema,
      }),
      annotations: READ_ONLY,
      summarize: (r) => `${r.commands.length} command(s).`,
      handler: async ({ catalog_id, group }) => ({
        commands: await catalogs.commands(catalog_id, group),
        next: [],
      }),
    }),
    defineTool({
      name: 'provider_list',
      scope: 'read',
      aliases: ['provider.list'],
      title: 'List input providers',
      description: 'List commands whose results can be the choices of a workflow input (input.provider).',
      inputSchema: z.strictObject({
        catalog_id: z.string().min(1).max(64).optional().describe('Only this catalog'),
      }),
      outputSchema: z.object({
        providers: z.array(z.looseObject({})).describe('Provider contracts'),
        next: NextSchema,
      }),
      annotations: READ_ONLY,
      summarize: (r) => `${r.providers.length} provider(s).`,
      handler: async ({ catalog_id }) => ({ providers: await catalogs.providers(catalog_id), next: [] }),
    }),
  ];
}
