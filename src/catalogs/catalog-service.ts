import { asRecord, type Context, readPath } from '../engine/conditions.js';
import { fail } from '../engine/errors.js';
import type { ProviderOutcome } from '../engine/inputs.js';
import { renderPreview } from '../engine/templating.js';
import type { InputSpec } from '../model/workflow.js';
import type { Metrics } from '../telemetry/metrics.js';
import {
  type CatalogConfig,
  type CatalogRegistry,
  catalogExists,
  type LoadedCatalog,
} from './catalog-registry.js';
import { readSource, type SourceType } from './catalog-sources.js';
import { authEnvNames, configuredSecrets, defaultAuthEnv, originOf, originSetting } from './credentials.js';
import type { HostPolicy } from './host-policy.js';
import {
  type CallOptions,
  type CallTarget,
  CommandFailure,
  type CommandResult,
  callCommand,
  DEFAULT_TIMEOUT_MS,
} from './http-runner.js';
import { type LoadedDocument, parseOpenApi } from './openapi-load.js';
import { catalogIdFromTitle } from './openapi-names.js';
import type { CatalogCommand, ImportPlan } from './openapi-plan.js';
import { planImport } from './openapi-plan.js';

export interface CatalogServiceOptions {
  registry: CatalogRegistry;
  /** The server's environment: credentials and operator bindings are read from it when needed. */
  env: NodeJS.ProcessEnv;
  policy: HostPolicy;
  allowUrlSources: boolean;
  /** Relative source paths are resolved against it. */
  cwd: string;
  /** The app's instruments (command calls by status class). */
  metrics?: Metrics;
}

export interface SourceRef {
  source: string;
  source_type?: SourceType | undefined;
}

export interface PlanRequest extends SourceRef {
  catalog_title: string;
  vendor?: string | undefined;
  base_url?: string | undefined;
}

export interface ImportRequest extends PlanRequest {
  overwrite?: boolean | undefined;
  enabled?: boolean | undefined;
  /** Who imports (recorded where the storage keeps authors). */
  principal?: string | undefined;
}

export interface ImportOutcome {
  catalog: LoadedCatalog;
  plan: ImportPlan;
  /** Whether commands may send the credential to the catalog's origin. */
  credentialBound: boolean;
  warnings: string[];
}

/** Asks the user a yes/no question (MCP elicitation); absent when nobody can be asked. */
export type Confirm = (message: string) => Promise<boolean>;

export type CommandEntry = {
  run: string;
  catalog: string;
  name: string;
  group: string;
  method: string;
  path: string;
  summary: string;
  arguments: string[];
  parameters: CatalogCommand['parameters'];
  body_schema?: Record<string, unknown>;
  body_required?: boolean;
};

const PROVIDER_CHOICES = 200;

/**
 * Catalogs as a service, for the MCP faces and the dashboard alike: reading and validating OpenAPI
 * sources, planning and importing catalogs (binding their credentials to an origin), enabling and
 * removing them, listing commands and providers, and calling commands with the host policy, the
 * credential binding and secret scrubbing applied. Persistence stays behind the CatalogRegistry.
 */
export class CatalogService {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: CatalogServiceOptions) {}

  get registry(): CatalogRegistry {
    return this.options.registry;
  }

  ready(): Promise<void> {
    return this.options.registry.ready();
  }

  async all(): Promise<LoadedCatalog[]> {
    await this.ready();
    return this.options.registry.all();
  }

  /** A catalog by id or title, or a catalog_not_found failure. */
  async require(idOrTitle: string | undefined): Promise<LoadedCatalog> {
    await this.ready();
    const found = idOrTitle === undefined ? undefined : this.options.registry.find(idOrTitle);
    if (!found) {
      fail({
        code: 'catalog_not_found',
        message: `no catalog "${idOrTitle ?? ''}"`,
        catalog: idOrTitle ?? '',
      });
    }
    return found;
  }

  /** Loads and validates a source without importing it. */
  async validate(ref: SourceRef): Promise<LoadedDocument> {
    return parseOpenApi(await this.read(ref));
  }

  /** Plans an import without writing anything; an invalid document is a catalog_invalid failure. */
  async plan(request: PlanRequest): Promise<{ id: string; plan: ImportPlan }> {
    const doc = await this.validate(request);
    if (doc.violations.length > 0 || doc.kind === 'unknown') {
      fail({
        code: 'catalog_invalid',
        message: 'the OpenAPI document cannot be imported',
        violations: doc.violations,
      });
    }
    const plan = planImport(doc, {
      title: request.catalog_title,
      ...(request.vendor !== undefined ? { vendor: request.vendor } : {}),
      ...(request.base_url !== undefined ? { base_url: request.base_url } : {}),
    });
    return { id: catalogIdFromTitle(plan.title), plan };
  }

  /**
   * Imports (or with `overwrite`, replaces) a catalog. Its credential stays bound to the origin it was
   * first imported for: an import that points the catalog elsewhere keeps the catalog but leaves the
   * credential unbound, unless the user confirms the move (`confirm`) or the operator bound the new
   * origin in WORKFLOWLOOKUP_CATALOG_<ID>_ORIGIN.
   */
  async import(request: ImportRequest, confirm?: Confirm): Promise<ImportOutcome> {
    const { id, plan } = await this.plan(request);
    return this.exclusive(async () => {
      const { registry } = this.options;
      await registry.ready();
      const existing = registry.get(id);
      if (existing && !request.overwrite) catalogExists(id);
      if (plan.base_url === null) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: 'the document names no absolute server URL; pass base_url',
        });
      }
      const origin = originOf(plan.base_url);
      if (origin === undefined) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: `the base URL ${plan.base_url} is not an absolute http(s) URL`,
        });
      }
      const auth = plan.auth ? defaultAuthEnv(id, plan.auth.type, plan.auth.header) : null;
      const names = authEnvNames(auth);
      for (const other of registry.all()) {
        if (other.config.id === id) continue;
        const shared = authEnvNames(other.config.auth).filter((n) => names.includes(n));
        if (shared.length > 0 && originOf(other.config.base_url) !== origin) {
          fail({
            code: 'catalog_conflict',
            message: `catalog "${other.config.id}" uses the credential ${shared.join(', ')} for another origin; an import cannot reuse it for ${origin}`,
            catalog: other.config.id,
          });
        }
      }
      const binding = await this.bindingFor(id, names, origin, existing, confirm);
      const by = { by: request.principal };
      if (binding.bound && binding.record) await registry.bind(names, origin, by);
      const warnings = [...plan.warnings];
      if (!binding.bound) warnings.push(binding.why);
      const config: CatalogConfig = {
        id,
        title: plan.title,
        vendor: plan.vendor,
        base_url: plan.base_url,
        auth,
        enabled: request.enabled ?? true,
        source: request.source,
        imported_at: new Date().toISOString(),
        manifest: `${id}.manifest.json`,
        credential_origin: binding.bound ? origin : binding.boundTo,
      };
      // Unless replacing, a catalog another process imported meanwhile is a conflict, not overwritten.
      const catalog = await registry.save(
        config,
        { catalog_id: id, commands: plan.commands, providers: plan.providers, warnings: plan.warnings },
        { ...by, replace: request.overwrite === true },
      );
      return { catalog, plan, credentialBound: binding.bound, warnings };
    });
  }

  async setEnabled(idOrTitle: string | undefined, enabled: boolean, by?: string): Promise<LoadedCatalog> {
    const found = await this.require(idOrTitle);
    return this.exclusive(() => this.options.registry.setEnabled(found.config.id, enabled, { by }));
  }

  async remove(idOrTitle: string | undefined, removeManifest: boolean, by?: string): Promise<LoadedCatalog> {
    const found = await this.require(idOrTitle);
    await this.exclusive(() => this.options.registry.remove(found.config.id, removeManifest, { by }));
    return found;
  }

  /** Commands of the enabled catalogs, optionally of one catalog and one group. */
  async commands(catalogId?: string, group?: string): Promise<CommandEntry[]> {
    return (await this.enabled(catalogId)).flatMap((c) =>
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

  /** Provider contracts of the enabled catalogs. */
  async providers(catalogId?: string) {
    return (await this.enabled(catalogId)).flatMap((c) =>
      c.manifest.providers.map((p) => ({
        provider: `${c.config.id} ${p.command}`,
        catalog: c.config.id,
        ...p,
      })),
    );
  }

  /** Commands available across the enabled catalogs. */
  async enabledCommandCount(): Promise<number> {
    return (await this.enabled()).reduce((n, c) => n + c.manifest.commands.length, 0);
  }

  /** `"<catalog> <command>"` among the enabled catalogs. */
  async resolve(ref: string): Promise<{ catalog: LoadedCatalog; command: CatalogCommand } | undefined> {
    await this.ready();
    return this.options.registry.command(ref);
  }

  /**
   * The choices an input provider offers: its command is called with `with` rendered against the given
   * inputs, and the list in the answer becomes `{value, label}` pairs.
   */
  async providerChoices(
    provider: NonNullable<InputSpec['provider']>,
    given: Record<string, unknown>,
    allowedEnv: Record<string, string>,
  ): Promise<ProviderOutcome> {
    const found = await this.resolve(provider.command);
    if (!found) return { error: `no enabled catalog provides "${provider.command}"` };
    const contract = found.catalog.manifest.providers.find((p) => p.command === found.command.name);
    let params: Record<string, unknown>;
    try {
      params = asRecord(
        renderPreview(provider.with ?? {}, { inputs: given, steps: {}, env: allowedEnv }).value,
      );
    } catch (error) {
      return { error: (error as Error).message };
    }
    let result: CommandResult;
    try {
      result = await this.call(found.catalog, found.command, {
        params,
        timeoutMs: DEFAULT_TIMEOUT_MS,
        idempotencyKey: `provider:${provider.command}`,
      });
    } catch (error) {
      if (error instanceof CommandFailure) return { error: error.message };
      throw error;
    }
    const list = contract?.items_path
      ? readPath(result.output as Context, contract.items_path)
      : result.output;
    if (!Array.isArray(list)) return { error: `${provider.command} did not return a list` };
    const valueField = provider.value_field ?? contract?.value_field ?? 'id';
    const labelField = provider.label_field ?? contract?.label_field ?? valueField;
    return {
      choices: list.slice(0, PROVIDER_CHOICES).map((item) => {
        const record = (item ?? {}) as Context;
        const value = typeof item === 'object' ? readPath(record, valueField) : item;
        const label = typeof item === 'object' ? readPath(record, labelField) : item;
        return { value, label: String(label ?? value) };
      }),
    };
  }

  /** Calls a command of a catalog with the host policy, its credential binding and secret scrubbing. */
  call(
    catalog: LoadedCatalog,
    command: CatalogCommand,
    options: Omit<CallOptions, 'env' | 'policy' | 'secrets' | 'metrics'>,
  ): Promise<CommandResult> {
    const { env, policy, registry, metrics } = this.options;
    const secrets = configuredSecrets(
      registry.all().map((c) => c.config.auth),
      env,
    );
    return callCommand(this.target(catalog), command, {
      ...options,
      env,
      policy,
      secrets,
      ...(metrics ? { metrics } : {}),
    });
  }

  /** The catalog as the runner sees it: the origin its credential is bound to right now. */
  target(catalog: LoadedCatalog): CallTarget {
    const { id, base_url, auth } = catalog.config;
    const set = this.options.env[originSetting(id)];
    // The operator's setting wins; one that does not parse binds nothing rather than falling back.
    const credential_origin =
      set !== undefined && set !== ''
        ? (originOf(set) ?? null)
        : catalog.config.credential_origin === undefined
          ? (originOf(base_url) ?? null)
          : catalog.config.credential_origin;
    return { id, base_url, auth, credential_origin };
  }

  private async enabled(catalogId?: string): Promise<LoadedCatalog[]> {
    return (await this.all()).filter(
      (c) => c.config.enabled && (catalogId === undefined || c.config.id === catalogId),
    );
  }

  private read(ref: SourceRef): Promise<string> {
    const { allowUrlSources, policy, cwd } = this.options;
    return readSource(ref.source, ref.source_type, { allowUrls: allowUrlSources, policy, cwd });
  }

  /**
   * Whether an import for `origin` may keep using the credential variables `names`: yes when nothing
   * bound them yet (first import) or they are bound to this origin; otherwise only when the operator's
   * setting names it or the user confirms.
   */
  private async bindingFor(
    id: string,
    names: readonly string[],
    origin: string,
    existing: LoadedCatalog | undefined,
    confirm: Confirm | undefined,
  ): Promise<{ bound: true; record: boolean } | { bound: false; boundTo: string | null; why: string }> {
    if (names.length === 0) return { bound: true, record: false };
    const setting = originSetting(id);
    const set = this.options.env[setting];
    if (set !== undefined && set !== '') {
      const operator = originOf(set) ?? null;
      if (operator === origin) return { bound: true, record: true };
      return {
        bound: false,
        boundTo: operator,
        why: `the credential ${names.join(', ')} stays unbound: ${setting} binds it to ${operator ?? `"${set}" (not an origin)`}, not ${origin}; change that setting to use it here`,
      };
    }
    const recorded = this.options.registry.bindings();
    const previous = new Set(names.flatMap((n) => (recorded[n] !== undefined ? [recorded[n]] : [])));
    if (existing?.config.auth) {
      const was = this.target(existing).credential_origin;
      if (was !== null) previous.add(was);
    }
    if (previous.size === 0 || (previous.size === 1 && previous.has(origin)))
      return { bound: true, record: true };
    const before = [...previous].filter((o) => o !== origin);
    const question = `Catalog "${id}" is being imported with its API at ${origin}; its credential (${names.join(', ')}) was bound to ${before.join(', ')}. Send the credential to ${origin} from now on? Only accept if you expect this API to move there.`;
    const accepted = confirm ? await confirm(question).catch(() => false) : false;
    if (accepted) return { bound: true, record: true };
    return {
      bound: false,
      boundTo: before[0] ?? null,
      why: `the credential ${names.join(', ')} stays bound to ${before.join(', ')} and is not sent to ${origin}${confirm ? ' (the user did not confirm the move)' : ''}; commands fail with credential_unbound until a person re-binds it: set ${setting}=${origin} in the server's environment, or import again from a client that can ask the user (elicitation)`,
    };
  }

  /** Runs catalog changes one at a time, so concurrent imports cannot interleave their checks and writes. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }
}
