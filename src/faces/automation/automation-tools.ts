import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import * as z from 'zod';
import { type CatalogConfig, type CatalogRegistry, defaultAuthEnv } from '../../catalogs/catalog-registry.js';
import { CommandFailure, callCommand, DEFAULT_TIMEOUT_MS } from '../../catalogs/http-runner.js';
import {
  catalogIdFromTitle,
  type ImportPlan,
  type LoadedDocument,
  parseOpenApi,
  planImport,
} from '../../catalogs/openapi-import.js';
import { type Context, conditionVariables, evaluateCondition, readPath } from '../../engine/conditions.js';
import { fail } from '../../engine/errors.js';
import { INPUT_STATUSES, type ProviderOutcome, resolveInputs } from '../../engine/inputs.js';
import {
  expressionsIn,
  parseReference,
  renderPreview,
  TemplateError,
  type TemplateScope,
} from '../../engine/templating.js';
import type { ValidationEngine } from '../../engine/validation-engine.js';
import { checkManifest } from '../../workflows/manifest-check.js';
import {
  type ActionStep,
  type Condition,
  IdSchema,
  type InputSpec,
  isCommandStep,
  isLoopStep,
  type Workflow,
} from '../../workflows/model.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { requireWorkflow } from '../guidance/guidance-tools.js';
import { ViolationSchema } from '../schemas.js';
import { defineTool, READ_ONLY, type ToolDefinition } from '../tool.js';

export const MAX_SOURCE_BYTES = 5 * 1024 * 1024;
const URL_TIMEOUT_MS = 10_000;

export interface AutomationDeps {
  registry: WorkflowRegistry;
  engine: ValidationEngine;
  catalogs: CatalogRegistry;
  allowedEnv: Record<string, string>;
  allowedEnvNames: ReadonlySet<string>;
  allowUrlSources: boolean;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

const SubjectShape = {
  workflow_id: IdSchema.optional().describe('A workflow the server serves'),
  content: z.string().min(1).max(1_048_576).optional().describe('Or a manifest as JSON or YAML text'),
};
const subjectRefine = <T extends { workflow_id?: string | undefined; content?: string | undefined }>(v: T) =>
  (v.workflow_id === undefined) !== (v.content === undefined);
const SUBJECT_MESSAGE = { message: 'give exactly one of workflow_id or content', path: ['workflow_id'] };
const InputsSchema = z.record(z.string(), z.unknown()).describe('Input values by name');
const SubjectWithInputs = z
  .strictObject({ ...SubjectShape, inputs: InputsSchema.optional() })
  .refine(subjectRefine, SUBJECT_MESSAGE);

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

const STANDARD = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

/** Automation (seed 003 §5): inputs, templates, plans, and OpenAPI catalogs whose operations become commands. */
export function automationTools(deps: AutomationDeps): ToolDefinition[] {
  const { registry, engine, catalogs } = deps;

  const subject = async (workflowId: string | undefined, content: string | undefined): Promise<Workflow> => {
    await Promise.all([registry.ready(), engine.load()]);
    if (workflowId !== undefined) return requireWorkflow(registry, workflowId).workflow;
    const report = await checkManifest({ content }, engine, undefined, deps.allowedEnvNames);
    if (!report.valid || !report.workflow) {
      fail({
        code: 'manifest_invalid',
        message: 'the manifest does not validate',
        violations: report.errors,
      });
    }
    return report.workflow;
  };

  const providerChoices = async (workflow: Workflow, given: Record<string, unknown>) => {
    await catalogs.ready();
    const outcomes: Record<string, ProviderOutcome> = {};
    for (const [name, spec] of Object.entries(workflow.inputs ?? {})) {
      // A provider decides the choices when no value is given and there is no default, and checks a given value.
      if (!spec.provider || (given[name] === undefined && spec.default !== undefined)) continue;
      outcomes[name] = await runProvider(spec, given);
    }
    return outcomes;
  };

  const runProvider = async (spec: InputSpec, given: Record<string, unknown>): Promise<ProviderOutcome> => {
    const provider = spec.provider as NonNullable<InputSpec['provider']>;
    const found = catalogs.command(provider.command);
    if (!found) return { error: `no enabled catalog provides "${provider.command}"` };
    const contract = found.catalog.manifest.providers.find((p) => p.command === found.command.name);
    let params: Record<string, unknown>;
    try {
      params = renderPreview(provider.with ?? {}, { inputs: given, steps: {}, env: deps.allowedEnv })
        .value as Record<string, unknown>;
    } catch (error) {
      return { error: (error as Error).message };
    }
    try {
      const result = await callCommand(found.catalog.config, found.command, {
        params,
        timeoutMs: DEFAULT_TIMEOUT_MS,
        idempotencyKey: `provider:${provider.command}`,
        env: deps.env,
      });
      const list = contract?.items_path
        ? readPath(result.output as Context, contract.items_path)
        : result.output;
      if (!Array.isArray(list)) return { error: `${provider.command} did not return a list` };
      const valueField = provider.value_field ?? contract?.value_field ?? 'id';
      const labelField = provider.label_field ?? contract?.label_field ?? valueField;
      return {
        choices: list.slice(0, 200).map((item) => {
          const record = (item ?? {}) as Context;
          const value = typeof item === 'object' ? readPath(record, valueField) : item;
          const label = typeof item === 'object' ? readPath(record, labelField) : item;
          return { value, label: String(label ?? value) };
        }),
      };
    } catch (error) {
      if (error instanceof CommandFailure) return { error: error.message };
      throw error;
    }
  };

  const resolved = async (workflow: Workflow, given: Record<string, unknown>, withProviders: boolean) =>
    resolveInputs(workflow.inputs, given, {
      env: deps.allowedEnv,
      matches: (pattern, text) => engine.matches(pattern, text),
      ...(withProviders ? { providers: await providerChoices(workflow, given) } : {}),
    });

  const loadSource = async (source: string, type: 'path' | 'url' | undefined): Promise<string> => {
    const kind = type ?? (/^https?:\/\//i.test(source) ? 'url' : 'path');
    if (kind === 'url') {
      if (!deps.allowUrlSources) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: 'URL sources are disabled; set WORKFLOWLOOKUP_ALLOW_URL_SOURCES=true or use a local path',
        });
      }
      const response = await fetch(source, {
        signal: AbortSignal.timeout(URL_TIMEOUT_MS),
        redirect: 'follow',
      }).catch((error: Error) =>
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: `cannot fetch ${source}: ${error.message}`,
        }),
      );
      const length = Number(response.headers.get('content-length') ?? 0);
      if (!response.ok || length > MAX_SOURCE_BYTES) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: response.ok
            ? `${source} is larger than ${MAX_SOURCE_BYTES} bytes`
            : `${source} answered ${response.status}`,
        });
      }
      const text = await response.text();
      if (Buffer.byteLength(text) > MAX_SOURCE_BYTES) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: `${source} is larger than ${MAX_SOURCE_BYTES} bytes`,
        });
      }
      return text;
    }
    const path = isAbsolute(source) ? source : resolve(deps.cwd, source);
    const info = await stat(path).catch(() =>
      fail({ code: 'invalid_params', message: 'Invalid params', details: `no readable file at ${path}` }),
    );
    if (!info.isFile() || info.size > MAX_SOURCE_BYTES) {
      fail({
        code: 'invalid_params',
        message: 'Invalid params',
        details: info.isFile() ? `${path} is larger than ${MAX_SOURCE_BYTES} bytes` : `${path} is not a file`,
      });
    }
    return readFile(path, 'utf8');
  };

  const planFrom = async (input: {
    source: string;
    source_type?: 'path' | 'url' | undefined;
    catalog_title: string;
    vendor?: string | undefined;
    base_url?: string | undefined;
  }): Promise<{ doc: LoadedDocument; plan: ImportPlan }> => {
    const doc = await parseOpenApi(await loadSource(input.source, input.source_type));
    if (doc.violations.length > 0 || doc.kind === 'unknown') {
      fail({
        code: 'catalog_invalid',
        message: 'the OpenAPI document cannot be imported',
        violations: doc.violations,
      });
    }
    const plan = planImport(doc, {
      title: input.catalog_title,
      ...(input.vendor !== undefined ? { vendor: input.vendor } : {}),
      ...(input.base_url !== undefined ? { base_url: input.base_url } : {}),
    });
    return { doc, plan };
  };

  const findCatalog = async (idOrTitle: string | undefined) => {
    await catalogs.ready();
    const found = idOrTitle === undefined ? undefined : catalogs.find(idOrTitle);
    if (!found)
      fail({
        code: 'catalog_not_found',
        message: `no catalog "${idOrTitle ?? ''}"`,
        catalog: idOrTitle ?? '',
      });
    return found;
  };

  const namesCatalog = (v: { catalog_id?: string | undefined; catalog_title?: string | undefined }) =>
    v.catalog_id !== undefined || v.catalog_title !== undefined;
  const NAMES_CATALOG = { message: 'give catalog_id or catalog_title', path: ['catalog_id'] };
  const CatalogRefShape = {
    catalog_id: z.string().min(1).max(64).optional().describe('Catalog id'),
    catalog_title: z.string().min(1).max(200).optional().describe('Or its title'),
  };

  return [
    defineTool({
      name: 'workflow_preview_inputs',
      title: 'Preview workflow inputs',
      description:
        "Lists a workflow's inputs: type, whether required, default, validation rules and provider.",
      inputSchema: z.strictObject(SubjectShape).refine(subjectRefine, SUBJECT_MESSAGE),
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        inputs: z
          .array(
            z.object({
              name: z.string().describe('Input name, used as ${{ inputs.<name> }}'),
              type: z.string().describe('Value type'),
              description: z.string().describe('What it is for'),
              required: z.boolean().describe('Must be given (no default)'),
              default: z.unknown().optional().describe('Default value, or {env} it reads'),
              rules: z
                .record(z.string(), z.unknown())
                .describe('enum, pattern, minLength, maxLength, minimum, maximum'),
              provider: z
                .record(z.string(), z.unknown())
                .optional()
                .describe('Command whose results are the choices'),
            }),
          )
          .describe('The inputs, in declaration order'),
      }),
      annotations: READ_ONLY,
      handler: async ({ workflow_id, content }) => {
        const workflow = await subject(workflow_id, content);
        return {
          workflow_id: workflow.id,
          inputs: Object.entries(workflow.inputs ?? {}).map(([name, spec]) => ({
            name,
            type: spec.type,
            description: spec.description,
            required: spec.required === true && spec.default === undefined,
            ...(spec.default !== undefined ? { default: spec.default } : {}),
            rules: Object.fromEntries(
              (['enum', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum'] as const)
                .filter((k) => spec[k] !== undefined)
                .map((k) => [k, spec[k]]),
            ),
            ...(spec.provider ? { provider: spec.provider } : {}),
          })),
        };
      },
    }),
    defineTool({
      name: 'workflow_resolve_inputs',
      title: 'Resolve workflow inputs',
      description:
        'Applies defaults, checks values and asks providers for choices. ready is true only when every required input is valid and no provider needs a choice or failed.',
      inputSchema: SubjectWithInputs,
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        ready: z.boolean().describe('True when the workflow can start with these values'),
        values: z
          .record(z.string(), z.unknown())
          .describe('Resolved values (given or default) of valid inputs'),
        inputs: z
          .array(
            z.object({
              name: z.string().describe('Input name'),
              status: z.enum(INPUT_STATUSES).describe('What happened to it'),
              value: z.unknown().optional().describe('Its value'),
              message: z.string().optional().describe('Why it is not ready'),
              choices: z
                .array(z.object({ value: z.unknown(), label: z.string() }))
                .optional()
                .describe('Provider choices'),
            }),
          )
          .describe('Per-input status'),
      }),
      annotations: { ...READ_ONLY, idempotentHint: false, openWorldHint: true },
      handler: async ({ workflow_id, content, inputs }) => {
        const workflow = await subject(workflow_id, content);
        return { workflow_id: workflow.id, ...(await resolved(workflow, inputs ?? {}, true)) };
      },
    }),
    defineTool({
      name: 'workflow_preview_rendered',
      title: 'Preview rendered steps',
      description:
        'Renders the ${{ }} templates of every step with the given inputs; references to step outputs are left as written and listed as deferred.',
      inputSchema: SubjectWithInputs,
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        ready: z.boolean().describe('Whether the inputs are ready'),
        steps: z
          .array(
            z.object({
              step_id: z.string().describe('Step id'),
              kind: z.enum(['agent', 'command']).describe('Who carries it out'),
              rendered: z.record(z.string(), z.unknown()).describe('Fields with templates resolved'),
              deferred: z.array(z.string()).describe('References resolved only at run time'),
              errors: z.array(z.string()).describe('References that cannot be resolved'),
            }),
          )
          .describe('Every prompt and command step'),
        final_output: z.unknown().optional().describe('final_output, rendered as far as possible'),
      }),
      annotations: READ_ONLY,
      handler: async ({ workflow_id, content, inputs }) => {
        const workflow = await subject(workflow_id, content);
        const r = await resolved(workflow, inputs ?? {}, false);
        const scope: TemplateScope = { inputs: r.values, steps: {}, env: deps.allowedEnv };
        const renderField = (value: unknown, deferred: string[], errors: string[]) => {
          try {
            const out = renderPreview(value, scope);
            deferred.push(...out.deferred);
            return out.value;
          } catch (error) {
            if (!(error instanceof TemplateError)) throw error;
            errors.push(error.message);
            return value;
          }
        };
        const steps = actionSteps(workflow).map((step) => {
          const deferred: string[] = [];
          const errors: string[] = [];
          const fields: Record<string, unknown> = isCommandStep(step)
            ? {
                run: step.run,
                with: step.with ?? {},
                ...(step.body !== undefined ? { body: step.body } : {}),
              }
            : {
                title: step.title,
                prompt: step.prompt,
                ...(step.guidance ? { guidance: step.guidance } : {}),
              };
          const rendered = Object.fromEntries(
            Object.entries(fields).map(([k, v]) => [k, k === 'run' ? v : renderField(v, deferred, errors)]),
          );
          return {
            step_id: step.id,
            kind: isCommandStep(step) ? ('command' as const) : ('agent' as const),
            rendered,
            deferred,
            errors,
          };
        });
        const finalDeferred: string[] = [];
        const finalErrors: string[] = [];
        return {
          workflow_id: workflow.id,
          ready: r.ready,
          steps,
          ...(workflow.final_output !== undefined
            ? { final_output: renderField(workflow.final_output, finalDeferred, finalErrors) }
            : {}),
        };
      },
    }),
    defineTool({
      name: 'workflow_step_plan',
      title: 'Plan a workflow run',
      description:
        'The ordered steps with their condition, what they depend on, and whether each will run, be skipped, or can only be decided at run time.',
      inputSchema: z
        .strictObject({
          ...SubjectShape,
          inputs: InputsSchema.optional(),
          context: z.record(z.string(), z.unknown()).optional().describe('Context the run will start with'),
        })
        .refine(subjectRefine, SUBJECT_MESSAGE),
      outputSchema: z.object({
        workflow_id: z.string().describe('Workflow id'),
        ready: z.boolean().describe('Whether the inputs are ready'),
        steps: z
          .array(
            z.object({
              step_id: z.string().describe('Step id'),
              kind: z.enum(['agent', 'command', 'loop']).describe('Agent step, command step or loop'),
              title: z.string().describe('Title'),
              loop: z.string().optional().describe('Enclosing loop, for loop bodies'),
              condition: z.unknown().optional().describe('Its runCondition'),
              condition_result: z
                .union([z.boolean(), z.literal('runtime')])
                .describe('Value of the condition now'),
              depends_on: z
                .array(z.string())
                .describe('Declared depends_on plus steps whose outputs it uses'),
              decision: z.enum(['run', 'skip', 'runtime']).describe('What will happen'),
            }),
          )
          .describe('Steps in order'),
      }),
      annotations: READ_ONLY,
      handler: async ({ workflow_id, content, inputs, context }) => {
        const workflow = await subject(workflow_id, content);
        const r = await resolved(workflow, inputs ?? {}, false);
        const known: Context = { ...(context ?? {}), inputs: r.values };
        const plan: {
          step_id: string;
          kind: 'agent' | 'command' | 'loop';
          title: string;
          loop?: string;
          condition?: unknown;
          condition_result: boolean | 'runtime';
          depends_on: string[];
          decision: 'run' | 'skip' | 'runtime';
        }[] = [];
        const entry = (
          step: Workflow['steps'][number],
          loop: string | undefined,
          inherited: 'run' | 'skip' | 'runtime',
        ) => {
          const result = step.runCondition === undefined ? true : decide(step.runCondition, known);
          const own = result === 'runtime' ? 'runtime' : result ? 'run' : 'skip';
          const decision =
            inherited === 'skip' ? 'skip' : inherited === 'runtime' && own === 'run' ? 'runtime' : own;
          plan.push({
            step_id: step.id,
            kind: isLoopStep(step) ? 'loop' : isCommandStep(step) ? 'command' : 'agent',
            title: step.title,
            ...(loop ? { loop } : {}),
            ...(step.runCondition !== undefined ? { condition: step.runCondition } : {}),
            condition_result: result,
            depends_on: dependencies(step),
            decision,
          });
          return decision;
        };
        const bodyRefs = new Set(
          workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
        );
        for (const step of workflow.steps) {
          if (bodyRefs.has(step.id)) continue;
          const decision = entry(step, undefined, 'run');
          if (!isLoopStep(step)) continue;
          const body = Array.isArray(step.body)
            ? step.body
            : workflow.steps.filter((s) => s.id === step.body);
          // Whether and how often a body runs depends on the loop's own condition or data: run time.
          for (const inner of body) entry(inner, step.id, decision === 'skip' ? 'skip' : 'runtime');
        }
        return { workflow_id: workflow.id, ready: r.ready, steps: plan };
      },
    }),
    defineTool({
      name: 'catalog_validate_openapi',
      title: 'Validate an OpenAPI document',
      description: 'Loads and validates an OpenAPI 2.0 or 3.x document without importing it.',
      inputSchema: z.strictObject(SourceShape),
      outputSchema: z.object({
        valid: z.boolean().describe('Whether it can be imported'),
        document_kind: z.enum(['openapi_2', 'openapi_3', 'unknown']).describe('Detected kind'),
        operation_count: z.number().describe('Operations found'),
        warnings: z.array(z.string()).describe('Things that will be skipped or need attention'),
        violations: z.array(ViolationSchema).describe('Why it is invalid'),
      }),
      annotations: { ...READ_ONLY, openWorldHint: true },
      handler: async ({ source, source_type }) => {
        const doc = await parseOpenApi(await loadSource(source, source_type));
        return {
          valid: doc.violations.length === 0 && doc.kind !== 'unknown',
          document_kind: doc.kind,
          operation_count: doc.operation_count,
          warnings: doc.warnings,
          violations: doc.violations,
        };
      },
    }),
    defineTool({
      name: 'catalog_preview_import',
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
      }),
      annotations: { ...READ_ONLY, openWorldHint: true },
      handler: async (input) => {
        const { plan } = await planFrom(input);
        return {
          catalog: {
            id: catalogIdFromTitle(plan.title),
            title: plan.title,
            vendor: plan.vendor,
            base_url: plan.base_url,
          },
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
        };
      },
    }),
    defineTool({
      name: 'catalog_import_openapi',
      title: 'Import an OpenAPI document as a catalog',
      description:
        'Validates the document, then writes the catalog (config + generated manifest) to the runtime catalogs dir; its operations become commands usable in command steps.',
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
        warnings: z.array(z.string()).describe('Warnings'),
      }),
      annotations: { ...STANDARD, openWorldHint: true },
      handler: async (input) => {
        const { plan } = await planFrom(input);
        const id = catalogIdFromTitle(plan.title);
        await catalogs.ready();
        if (catalogs.get(id) && !input.overwrite) {
          fail({
            code: 'catalog_conflict',
            message: `catalog "${id}" exists; pass overwrite: true to replace it`,
            catalog: id,
          });
        }
        if (plan.base_url === null) {
          fail({
            code: 'invalid_params',
            message: 'Invalid params',
            details: 'the document names no absolute server URL; pass base_url',
          });
        }
        const config: CatalogConfig = {
          id,
          title: plan.title,
          vendor: plan.vendor,
          base_url: plan.base_url,
          auth: plan.auth ? defaultAuthEnv(id, plan.auth.type, plan.auth.header) : null,
          enabled: input.enabled ?? true,
          source: input.source,
          imported_at: new Date().toISOString(),
          manifest: `${id}.manifest.json`,
        };
        const saved = await catalogs.save(config, {
          catalog_id: id,
          commands: plan.commands,
          providers: plan.providers,
          warnings: plan.warnings,
        });
        return {
          catalog_id: id,
          catalog_path: saved.configPath,
          manifest_path: saved.manifestPath,
          command_count: plan.commands.length,
          provider_contract_count: plan.providers.length,
          auth: config.auth,
          warnings: plan.warnings,
        };
      },
    }),
    defineTool({
      name: 'catalog_set_enabled',
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
      }),
      annotations: { ...STANDARD, idempotentHint: true },
      handler: async ({ catalog_id, catalog_title, enabled }) => {
        const found = await findCatalog(catalog_id ?? catalog_title);
        await catalogs.setEnabled(found.config.id, enabled);
        return {
          catalog_id: found.config.id,
          enabled,
          command_count_after_toggle: catalogs
            .all()
            .filter((c) => c.config.enabled)
            .reduce((n, c) => n + c.manifest.commands.length, 0),
        };
      },
    }),
    defineTool({
      name: 'catalog_remove',
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
      }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      },
      handler: async ({ catalog_id, catalog_title, remove_manifest }) => {
        const found = await findCatalog(catalog_id ?? catalog_title);
        await catalogs.remove(found.config.id, remove_manifest === true);
        return {
          removed_catalog_id: found.config.id,
          manifest_removed: remove_manifest === true,
          remaining_catalog_count: catalogs.all().length,
        };
      },
    }),
    defineTool({
      name: 'command_list',
      title: 'List catalog commands',
      description: 'Commands of the enabled catalogs, usable as run: "<catalog> <command>" in command steps.',
      inputSchema: z.strictObject({
        catalog_id: z.string().min(1).max(64).optional().describe('Only this catalog'),
        group: z.string().min(1).max(64).optional().describe('Only this group'),
      }),
      outputSchema: z.object({
        commands: z.array(z.looseObject({})).describe('Commands with their parameters and body schema'),
      }),
      annotations: READ_ONLY,
      handler: async ({ catalog_id, group }) => ({
        commands: await commandCatalog(catalogs, catalog_id, group),
      }),
    }),
    defineTool({
      name: 'provider_list',
      title: 'List input providers',
      description: 'List commands whose results can be the choices of a workflow input (input.provider).',
      inputSchema: z.strictObject({
        catalog_id: z.string().min(1).max(64).optional().describe('Only this catalog'),
      }),
      outputSchema: z.object({ providers: z.array(z.looseObject({})).describe('Provider contracts') }),
      annotations: READ_ONLY,
      handler: async ({ catalog_id }) => ({ providers: await providerCatalog(catalogs, catalog_id) }),
    }),
  ];
}

export async function commandCatalog(catalogs: CatalogRegistry, catalogId?: string, group?: string) {
  await catalogs.ready();
  return catalogs
    .all()
    .filter((c) => c.config.enabled && (catalogId === undefined || c.config.id === catalogId))
    .flatMap((c) =>
      c.manifest.commands
        .filter((cmd) => group === undefined || cmd.group === group)
        .map((cmd) => ({
          run: `${c.config.id} ${cmd.name}`,
          catalog: c.config.id,
          name: cmd.name,
          group: cmd.group,
          method: cmd.method,
          path: cmd.path,
          summary: cmd.summary,
          arguments: cmd.parameters.map((p) => p.name),
          parameters: cmd.parameters,
          ...(cmd.body_schema ? { body_schema: cmd.body_schema, body_required: cmd.body_required } : {}),
        })),
    );
}

export async function providerCatalog(catalogs: CatalogRegistry, catalogId?: string) {
  await catalogs.ready();
  return catalogs
    .all()
    .filter((c) => c.config.enabled && (catalogId === undefined || c.config.id === catalogId))
    .flatMap((c) =>
      c.manifest.providers.map((p) => ({
        provider: `${c.config.id} ${p.command}`,
        catalog: c.config.id,
        ...p,
      })),
    );
}

function actionSteps(workflow: Workflow): ActionStep[] {
  const out: ActionStep[] = [];
  for (const step of workflow.steps) {
    if (isLoopStep(step)) {
      if (Array.isArray(step.body)) out.push(...step.body);
    } else out.push(step);
  }
  return out;
}

/** Declared depends_on plus the steps whose outputs the step's templates read. */
function dependencies(step: Workflow['steps'][number]): string[] {
  const declared = 'depends_on' in step ? (step.depends_on ?? []) : [];
  const values = isCommandStep(step)
    ? [step.with, step.body]
    : isLoopStep(step)
      ? []
      : [step.prompt, step.title, step.guidance];
  const implicit = values
    .flatMap(expressionsIn)
    .map(parseReference)
    .flatMap((r) => (r?.kind === 'steps' ? [r.step] : []));
  return [...new Set([...declared, ...implicit])];
}

/** A condition's value now, or 'runtime' when it reads something only the run will know. */
function decide(condition: Condition, known: Context): boolean | 'runtime' {
  const unknown = conditionVariables(condition).some(
    (v) => v.startsWith('steps.') || readPath(known, v.split('.')[0] as string) === undefined,
  );
  return unknown ? 'runtime' : evaluateCondition(condition, known);
}
