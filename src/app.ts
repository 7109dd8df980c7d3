/**
 * The composition root: the one place the program's objects are built. Named builders each make one
 * part from the configuration and the parts they are given (buildEngine, buildStore, buildDocuments,
 * buildRegistry, buildCatalogs, buildCheckPolicy, buildServices, buildWorkflowTests; buildProtocol wires
 * the faces' tools, resources and prompts to the protocol), and `createApp` composes them. Everything
 * else takes what `createApp` returns: stdio and HTTP, the dashboard (mounted, or standalone with the
 * read-only SQLite reader `services.readQueries`) and the CLI (`list` runs workflow_list through the
 * app's runner; `sources`, `validate` and `test` use the app's registry, check policy and workflow
 * tests). The process around the app (HTTP with /metrics, probes and the dashboard, stdio, OTLP, the
 * drain) is src/serve.ts's, which `serve` and the in-process tests share. Only the CLI's store commands
 * (migrate, export, import), which act on the store `--store` names, open one themselves, through
 * `openStoreAt`. See docs/architecture.md.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/server';
import { buildCheckPolicy, loadOperatorChecks, type OperatorChecks } from './app/check-policy.js';
import { buildGitSources } from './app/git-sources.js';
import { buildWorkflowTests } from './app/workflow-tests.js';
import { CatalogRegistry } from './catalogs/catalog-registry.js';
import { CatalogService } from './catalogs/catalog-service.js';
import { CommandStepRunner } from './catalogs/command-steps.js';
import { DatabaseCatalogStorage } from './catalogs/database-catalogs.js';
import { HostPolicy } from './catalogs/host-policy.js';
import { InputChecker } from './catalogs/input-check.js';
import { type Config, PROFILES, type Profile } from './config.js';
import { fail } from './engine/errors.js';
import { ValidationEngine } from './engine/validation-engine.js';
import { LOCAL_PRINCIPAL } from './executions/execution-model.js';
import type { ExecutionQueries, ExecutionService } from './executions/execution-service.js';
import type { WorkflowTests } from './executions/workflow-tests.js';
import { authoringPrompts } from './faces/authoring/authoring-prompts.js';
import { authoringResources, guideLoader } from './faces/authoring/authoring-resources.js';
import { authoringTools } from './faces/authoring/authoring-tools.js';
import { catalogResources } from './faces/automation/automation-resources.js';
import { automationTools } from './faces/automation/automation-tools.js';
import { executionResources } from './faces/executions/executions-resources.js';
import { executionTools } from './faces/executions/executions-tools.js';
import { guidanceTools } from './faces/guidance/guidance-tools.js';
import type { PromptDefinition } from './faces/prompt.js';
import type { ResourceDefinition } from './faces/resource.js';
import { runWording } from './faces/runs/run-presenter.js';
import { orchestrationTools, runTools } from './faces/runs/run-tools.js';
import type { ToolDefinition } from './faces/tool.js';
import { toolGroupsTool } from './faces/tool-groups.js';
import type { ConformanceFixtures } from './protocol/conformance-fixtures.js';
import { Quota } from './protocol/limits.js';
import {
  createMcpServer,
  createToolRunner,
  inputJsonSchema,
  type ToolRunner,
} from './protocol/mcp-server.js';
import { TaskDriver } from './protocol/tasks-protocol.js';
import { ToolSwitch } from './protocol/tool-switch.js';
import { RecordKeyring } from './record/keys.js';
import { Records } from './record/records.js';
import type { RunServices } from './runs/run-services.js';
import type { ExecutionStore } from './store/execution-store.js';
import {
  describeDatabaseUrl,
  lazyDocumentStore,
  type RuntimeDocumentStore,
} from './store/runtime-documents.js';
import { DATABASE_FILE } from './store/sqlite/sqlite-file.js';
import { setRequestScopes } from './telemetry/context.js';
import { createLogger, type Logger, logLevelFrom } from './telemetry/log.js';
import { Metrics } from './telemetry/metrics.js';
import type { CheckPolicy } from './workflows/check.js';
import { BUILD_CHECKER_ID, DefinitionCache } from './workflows/definition-cache.js';
import type { GitSources } from './workflows/git/git-sources.js';
import { PersonaRegistry } from './workflows/personas.js';
import { WorkflowRegistry } from './workflows/registry.js';
import {
  DatabaseRuntimeWorkflows,
  FileRuntimeWorkflows,
  type RuntimeWorkflows,
} from './workflows/runtime-workflows.js';
import { ShippedDefinitions } from './workflows/shipped-definitions.js';
import type { WorkflowSource } from './workflows/sources.js';

// Builders kept in files of their own (src/app/), exported with the others.
export { buildCheckPolicy, buildWorkflowTests, loadOperatorChecks, type OperatorChecks };

export interface AppOptions {
  /**
   * Opens the execution store (default: PostgreSQL when `databaseUrl` is set, else SQLite in the data
   * dir). Called on first use, not at start.
   */
  openStore?: (config: Config) => Promise<ExecutionStore>;
  /**
   * Where diagnostics go (default: pino on stderr at WORKFLOWLOOKUP_LOG_LEVEL; tests pass
   * `silentLogger`).
   */
  log?: Logger;
  /** Watch the workflow sources for changes (default true). */
  watch?: boolean;
  /**
   * The validation worker script (default: validation-worker.js beside the bundle). Only code run from
   * the TypeScript sources, such as in-process tests, needs to pass one.
   */
  validationWorker?: URL;
  /**
   * The checker id the definition cache is keyed by (default: the build's; code run from the sources
   * has none and keeps no cache). Tests of the cache pass one.
   */
  checkerId?: string;
  /**
   * The bundled workflows' verdicts shipped with the build (default: dist/bundled-definitions.json when
   * built, none from the sources). Tests of the shipped verdicts pass their own.
   */
  shippedDefinitions?: ShippedDefinitions;
  /**
   * Also serve the official MCP conformance suite's reference tools, prompts and resources
   * (`serve --http --conformance-fixtures`; never on by default): for running the suite only. The
   * CLI loads them (src/protocol/conformance-fixtures.ts) only when asked to.
   */
  conformanceFixtures?: ConformanceFixtures | undefined;
  /**
   * The app serves Streamable HTTP (`serve --http`): checks run only with WORKFLOWLOOKUP_HTTP_CHECKS,
   * since a remote client's submission would make the server host run a command.
   */
  servesHttp?: boolean;
  /** The clock approval timeouts are measured by (tests inject one). */
  clock?: () => number;
  /**
   * Fetch the git sources in the background once warmed up, and on their interval (default: when
   * watching; one-shot commands read the last good checkouts only).
   */
  gitSync?: boolean;
}

/** Checked workflow definitions, in the data dir (an optimisation only: deleting it is always safe). */
export const DEFINITION_CACHE_FILE = 'definition-cache.json';

export interface ServerOptions {
  /** Which tool groups this connection lists (default: a new switch with the configured groups). */
  tools?: ToolSwitch;
  /** Who requests are attributed to when they carry no identity (default: the local user). */
  principal?: string;
  /** The protocol era the server will speak, when the transport knows it (HTTP decides per request). */
  era?: 'legacy' | 'modern';
  /** Lets the transport serve later requests while request `id` waits on the network. */
  detach?: (id: string | number) => void;
  /** Which transport the server is for (approval elicitation is configured per transport). */
  transport?: 'stdio' | 'http';
}

export interface AppServices {
  registry: WorkflowRegistry;
  personas: PersonaRegistry;
  engine: ValidationEngine;
  catalogs: CatalogRegistry;
  /** Catalogs as a service: imports, listings and calls, for the faces and the dashboard. */
  catalogService: CatalogService;
  /**
   * The one policy every definition check applies (`validate`, `list` warnings, the authoring and input
   * tools and prompts): engine, env allow-list, personas, the operator's checks.
   */
  checkPolicy: () => Promise<CheckPolicy>;
  /** The execution service; opens the store on first use. A store that cannot open is a storage error. */
  executions: () => Promise<ExecutionService>;
  /**
   * Workflow tests (`workflowlookup test`, workflow_test): the same engine and service, each run over a
   * scratch store of its own (never the server's), loaded on first use.
   */
  tests: () => Promise<WorkflowTests>;
  /**
   * The standalone dashboard's read side: with SQLite, a read-only connection beside the service's
   * (opened after the service migrated the store); otherwise the service's own queries.
   */
  readQueries: () => Promise<ExecutionQueries>;
  /** The execution store, opened on first use (health checks and metrics read it). */
  store: () => Promise<ExecutionStore>;
  /** Signed execution records and the keys that sign them (src/record/). */
  records: Records;
  /** The git sources: their status, and sync on demand (`workflowlookup sources sync`). */
  gitSources: GitSources;
}

export interface App {
  config: Config;
  services: AppServices;
  runner: ToolRunner;
  resources: readonly ResourceDefinition[];
  prompts: readonly PromptDefinition[];
  /** A new SDK server wired to the app (see ServerOptions). */
  serverFactory: (options?: ServerOptions) => McpServer;
  /** The tool groups of a new connection, listed as configured. */
  toolSwitch: () => ToolSwitch;
  /** Every tool a tools/call may name: the runner's, and the conformance fixtures when served. */
  toolNames: ReadonlySet<string>;
  /** Calls `listener` whenever workflow definitions (and so resources) change; returns an unsubscribe. */
  onResourcesChanged: (listener: () => void) => () => void;
  /**
   * Calls `listener` when the tool or prompt list changed for every client (only the conformance
   * fixtures announce such changes); 2025 sessions are told on their own streams.
   */
  onListChanged: (listener: (kind: 'tools' | 'prompts') => void) => () => void;
  /** Starts loading definitions and libraries in the background (after the handshake). */
  warmUp: () => void;
  log: Logger;
  /**
   * The app's instruments: the parts record through them, and `serve --http` attaches its Prometheus
   * registry to them (one per app, as the logger is).
   */
  metrics: Metrics;
  /** Closes what was opened, newest first: servers, watchers, the store. */
  close: () => Promise<void>;
}

/** The server's logger: JSON lines on stderr (human ones on a terminal) at WORKFLOWLOOKUP_LOG_LEVEL. */
function defaultLogger(config: Config): Logger {
  const { level, problem } = logLevelFrom(config.env);
  // Every line of a request names it only where that is worth its cost (telemetry/context.ts).
  if (level === 'debug' || level === 'trace') setRequestScopes(true);
  const log = createLogger({ level });
  if (problem !== undefined) log.warn(problem);
  return log;
}

// -------------------------------------------------------------------------------------------------
// The builders. Each builds one part from the configuration and the parts it names; createApp composes
// them. They are exported so that what a command needs is built the way the server builds it.

/** Signed records of executions, with the key the configuration names or the data dir's. */
export function buildRecords(config: Config, executions: () => Promise<ExecutionService>): Records {
  const keyring = new RecordKeyring({
    dataDir: config.dataDir,
    ...(config.recordKey.key !== undefined ? { configuredKey: config.recordKey.key } : {}),
    ...(config.recordKey.publicKeys !== undefined ? { publicKeysFile: config.recordKey.publicKeys } : {}),
  });
  return new Records(executions, keyring);
}

/** The regex and JSON Schema engine every check uses: one per app (its worker starts on demand). */
export function buildEngine(options: Pick<AppOptions, 'validationWorker'> = {}): ValidationEngine {
  return new ValidationEngine(
    options.validationWorker === undefined ? {} : { workerUrl: options.validationWorker },
  );
}

/**
 * Opens the store a target names (a SQLite data dir or a postgres:// URL) and brings its schema up to
 * date; `readOnly` opens an existing SQLite store for reading only. For the CLI's store commands
 * (migrate, export, import: `--store` may name another store than the configured one) and the app's
 * own store.
 */
export async function openStoreAt(
  target: string,
  options: { log?: Logger; readOnly?: boolean; metrics?: Metrics } = {},
): Promise<ExecutionStore> {
  const { openExecutionStore } = await import('./store/open-store.js');
  return openExecutionStore(target, options);
}

/** The app's one store (executions and, with PostgreSQL, what agents save), opened on first use. */
export interface SharedStore {
  /** Opens the store once; a failed open is tried again on the next call. */
  open(): Promise<ExecutionStore>;
  /** The store, once opened. */
  opened(): ExecutionStore | undefined;
}

export function buildStore(
  config: Config,
  options: { openStore?: AppOptions['openStore']; log: Logger; metrics?: Metrics },
): SharedStore {
  const openStore =
    options.openStore ??
    ((c: Config) =>
      openStoreAt(c.databaseUrl ?? c.dataDir, {
        log: options.log,
        ...(options.metrics ? { metrics: options.metrics } : {}),
      }));
  let store: ExecutionStore | undefined;
  const opening = onFirstUse(() => openStore(config).then((opened) => (store = opened)));
  return { open: opening.get, opened: () => store };
}

/**
 * With PostgreSQL, saved workflows and imported catalogs live in the database replicas share: its
 * document store (opened with the shared store, on first use) and the workflow source that reads it.
 * Undefined with SQLite (they are files in the runtime and catalogs dirs).
 */
export function buildDocuments(
  config: Config,
  store: SharedStore,
  log: Logger,
): { documents: RuntimeDocumentStore; source: WorkflowSource } | undefined {
  if (config.databaseUrl === undefined) return undefined;
  const documents = lazyDocumentStore(
    async () => {
      const opened = await store.open();
      if (opened.documents === undefined) throw new Error(`${opened.location} keeps no shared workflows`);
      return opened.documents;
    },
    describeDatabaseUrl(config.databaseUrl),
    log,
  );
  return { documents, source: { kind: 'database', dir: `${documents.location}#workflows`, documents } };
}

/**
 * The workflow registry: the configured sources, then (PostgreSQL) the database's, checked with the
 * app's engine. What workflow_list, `workflowlookup list` and `sources` and the dashboard all read.
 */
export function buildRegistry(
  config: Config,
  parts: {
    engine: ValidationEngine;
    database?: WorkflowSource | undefined;
    watch?: boolean | undefined;
    checkerId?: string | undefined;
    shippedDefinitions?: ShippedDefinitions | undefined;
    log: Logger;
  },
): WorkflowRegistry {
  // Checked definitions survive a restart (built code only: the cache is keyed by the build's checker).
  const checker = parts.checkerId ?? BUILD_CHECKER_ID;
  return new WorkflowRegistry(parts.database ? [...config.sources, parts.database] : config.sources, {
    watch: parts.watch ?? true,
    engine: parts.engine,
    allowedEnv: config.allowedEnvNames,
    // The bundled workflows' verdicts from the build: a first run does not check them again.
    shipped:
      parts.shippedDefinitions ??
      (checker === undefined ? undefined : ShippedDefinitions.besideBundle(checker, parts.log)),
    ...(checker === undefined
      ? {}
      : {
          cache: new DefinitionCache(
            join(config.dataDir, DEFINITION_CACHE_FILE),
            checker,
            config.allowedEnvNames,
            parts.log,
          ),
        }),
  });
}

/** Imported catalogs (files, or the database's documents), and what command steps and inputs need of them. */
export function buildCatalogs(
  config: Config,
  parts: { engine: ValidationEngine; documents?: RuntimeDocumentStore | undefined; metrics?: Metrics },
) {
  const catalogs = new CatalogRegistry(
    parts.documents ? new DatabaseCatalogStorage(parts.documents) : config.catalogsDir,
  );
  const catalogService = new CatalogService({
    registry: catalogs,
    env: config.env,
    policy: new HostPolicy(config.allowPrivateHosts),
    allowUrlSources: config.allowUrlSources,
    cwd: config.cwd,
    ...(parts.metrics ? { metrics: parts.metrics } : {}),
  });
  const commands = { runner: new CommandStepRunner(catalogService, parts.engine), catalogs };
  const inputs = new InputChecker({
    engine: parts.engine,
    catalogs: catalogService,
    allowedEnv: config.allowedEnv,
  });
  return { catalogs, catalogService, commands, inputs };
}

/** A value built on first use, once; a failed build is tried again on the next call. */
function onFirstUse<T>(build: () => Promise<T>): {
  get: () => Promise<T>;
  built: () => Promise<T> | undefined;
} {
  let building: Promise<T> | undefined;
  return {
    get: () => {
      building ??= build();
      return building.catch((error: unknown) => {
        building = undefined;
        throw error;
      });
    },
    built: () => building,
  };
}

/**
 * The services over the store: executions, workflow tests, tasks and runs, and the read side of the
 * standalone dashboard. Each is built on first use (the store and its driver load then, never at start).
 */
export function buildServices(
  config: Config,
  parts: {
    store: SharedStore;
    registry: WorkflowRegistry;
    personas: PersonaRegistry;
    engine: ValidationEngine;
    catalogs: ReturnType<typeof buildCatalogs>;
    runtime: RuntimeWorkflows;
    /** The operator's checks, read once (shared with the check policy). */
    checks: () => Promise<OperatorChecks | undefined>;
    /** True when the store is the configured one (not a test's openStore): the dashboard may read beside it. */
    configuredStore: boolean;
    /** The app serves Streamable HTTP: checks run there only with WORKFLOWLOOKUP_HTTP_CHECKS. */
    servesHttp?: boolean | undefined;
    /** The clock approval timeouts are measured by (tests inject one). */
    clock?: (() => number) | undefined;
    /** The app's instruments (step latency). */
    metrics?: Metrics;
    log: Logger;
  },
) {
  const { store, registry, personas, engine, runtime, log } = parts;
  const { catalogs, commands, inputs } = parts.catalogs;
  // The operator's checks (WORKFLOWLOOKUP_CHECKS_FILE), read when executions (or the check policy) first need them.
  const loadChecks = async (secrets: readonly string[]) => {
    const operator = await parts.checks();
    if (operator === undefined) return undefined;
    const { ConfiguredChecks } = await import('./executions/checks.js');
    return new ConfiguredChecks(
      {
        ...operator,
        // A remote client's submission would make the server host run a command: HTTP needs consent.
        allowed: parts.servesHttp !== true || config.httpChecks,
      },
      { env: config.env, commands: commands.runner, secrets, limits: config.checkSlots },
    );
  };
  const execution = onFirstUse(async () => {
    const [{ ExecutionService }, { TokenService, loadTokenSecret }] = await Promise.all([
      import('./executions/execution-service.js'),
      import('./executions/tokens.js'),
    ]);
    const opened = await store.open();
    const secret = loadTokenSecret(config.dataDir, config.tokenSecret);
    const tokens = new TokenService(secret, config.tokenTtlMs);
    // The token secret (generated into the data dir, not an environment variable) is hidden in check output.
    const checks = await loadChecks([secret.toString('utf8')]);
    return new ExecutionService({
      ...(checks ? { checks } : {}),
      ...(parts.clock ? { clock: parts.clock } : {}),
      store: opened,
      registry,
      personas,
      engine,
      tokens,
      commands,
      allowedEnv: config.allowedEnv,
      inputs,
      approvers: config.approvers,
      delegation: config.delegation,
      ...(parts.metrics ? { metrics: parts.metrics } : {}),
    });
  });
  // A store that cannot be opened is a storage error for the caller; the next call tries again.
  const executions = () =>
    execution.get().catch((error: unknown) =>
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: `cannot open the execution store: ${(error as Error).message}`,
      }),
    );

  // Workflow tests run executions through the same service, in a scratch store per run: loaded on first use.
  const tests = onFirstUse(() => buildWorkflowTests(config, { registry, personas, engine }));

  // Tasks, runs and orchestrations sit on the execution service; built with it, on first use.
  const runs = onFirstUse(async () => {
    const service = await executions();
    const { createRunServices } = await import('./runs/run-services.js');
    return createRunServices({
      executions: service,
      store: store.opened() as ExecutionStore,
      registry,
      engine,
      personas,
      catalogs,
      runtime,
      allowedEnv: config.allowedEnv,
      allowedEnvNames: config.allowedEnvNames,
      wording: runWording,
      log,
    });
  });

  // The standalone dashboard reads SQLite through a read-only connection of its own, beside the app's
  // writable one, so that its pages never take the write lock the servers on the same data dir need.
  // The app's store creates and migrates the file first. With PostgreSQL (or a store a test opened),
  // it reads through the service, whose LISTEN/NOTIFY makes the pages live.
  const readOnly = onFirstUse(async () => {
    const service = await executions();
    if (config.databaseUrl !== undefined || !parts.configuredStore) return { queries: service.queries };
    const [{ ExecutionQueries }, reader] = await Promise.all([
      import('./executions/execution-service.js'),
      openStoreAt(config.dataDir, { readOnly: true }),
    ]);
    return { queries: new ExecutionQueries(reader), reader };
  });

  return {
    executions,
    tests: tests.get,
    runServices: runs.get,
    readQueries: async () => (await readOnly.get()).queries,
    /** Closes what the services opened (not the shared store): running tasks, the dashboard's reader. */
    close: async () => {
      (await runs.built()?.catch(() => undefined))?.tasks.close();
      const reader = (await readOnly.built()?.catch(() => undefined))?.reader;
      await reader
        ?.close()
        .catch((error: unknown) => log.error(`closing the reader failed: ${String(error)}`));
    },
  };
}

/** What the protocol wiring takes: the parts createApp built. */
interface ProtocolParts {
  registry: WorkflowRegistry;
  engine: ValidationEngine;
  catalogs: CatalogRegistry;
  catalogService: CatalogService;
  inputs: InputChecker;
  /** The one policy every definition check applies (buildCheckPolicy). */
  checkPolicy: () => Promise<CheckPolicy>;
  runtime: RuntimeWorkflows;
  executions: () => Promise<ExecutionService>;
  tests: () => Promise<WorkflowTests>;
  runServices: () => Promise<RunServices>;
  records: Records;
  fixtures: ConformanceFixtures | undefined;
  /** The app's instruments (tool calls). */
  metrics?: Metrics;
  log: Logger;
}

/**
 * The faces' tools, resources and prompts wired to the protocol: the tool runner and its groups, the
 * task driver, the SDK server factory, and the notifications connected clients get when definitions
 * or lists change.
 */
export function buildProtocol(config: Config, parts: ProtocolParts) {
  const {
    registry,
    engine,
    catalogs,
    catalogService,
    inputs,
    checkPolicy,
    runtime,
    executions,
    tests,
    runServices,
    fixtures,
    log,
  } = parts;
  const guide = guideLoader(config.packageRoot);
  // Purging history is work on finished executions; runs, their cancellation and the orchestrations
  // need a client with MCP tasks, so they share the one group such a client lists (config.ts).
  const runFace = runTools(runServices);
  const purge = runFace.filter((t) => t.name === 'workflow_purge_history');
  const faces: [Profile, ToolDefinition[]][] = [
    ['guidance', guidanceTools({ registry, engine, catalogs, allowedEnv: config.allowedEnv })],
    ['executions', [...executionTools(executions), ...purge]],
    ['authoring', authoringTools({ registry, runtime, checkPolicy, tests })],
    [
      'automation',
      automationTools({
        registry,
        engine,
        catalogs: catalogService,
        allowedEnv: config.allowedEnv,
        checkPolicy,
        inputs,
      }),
    ],
    ['tasks', [...runFace.filter((t) => !purge.includes(t)), ...orchestrationTools(runServices)]],
  ];
  const faceTools = faces.flatMap(([group, tools]) =>
    tools.map((t) => ({ ...t, groups: t.core ? [group, 'core'] : [group] })),
  );
  const describeTools = (names: readonly string[]) =>
    faceTools
      .filter((t) => names.includes(t.name))
      .map((t) => ({ name: t.name, description: t.description, inputSchema: inputJsonSchema(t) }));
  const runner = createToolRunner(
    [
      ...faceTools,
      { ...toolGroupsTool({ describe: describeTools }), groups: ['core'] },
      ...(fixtures ? fixtures.tools.map((t) => ({ ...t, groups: [fixtures.group] })) : []),
    ],
    log,
    parts.metrics,
  );
  const groupNames: string[] = fixtures ? [...PROFILES, fixtures.group] : [...PROFILES];
  const groups = new Map<string, string[]>(
    groupNames.map((g) => [g, runner.tools.filter((t) => t.groups?.includes(g)).map((t) => t.name)]),
  );
  const toolSwitch = () =>
    new ToolSwitch(groups, fixtures ? [...config.profiles, fixtures.group] : config.profiles);
  const tasks = new TaskDriver({ services: runServices, runner, log, limits: config.limits });
  // The MCP Apps view is a file of the build, read once when a host first asks for it.
  const viewHtml = onFirstUse(() =>
    readFile(join(config.packageRoot, 'dist', 'views', 'execution-progress.html'), 'utf8'),
  ).get;
  const resources = [
    ...executionResources(registry, executions, viewHtml, parts.records),
    ...authoringResources(registry, guide),
    ...catalogResources(catalogService),
  ];
  // Prompts cost an agent nothing until asked for, and the tools they name stay callable: always served.
  const prompts = authoringPrompts({ registry, guide, checkPolicy, inputs });
  const workflowIds = (prefix: string) => registry.ids(prefix);

  // Definitions are resources (manifests, workflow details): tell connected clients when they change.
  const servers = new Set<McpServer>();
  const changeListeners = new Set<() => void>();
  registry.onChange = () => {
    for (const server of servers) if (server.isConnected()) server.sendResourceListChanged();
    for (const listener of changeListeners) listener();
  };
  const onResourcesChanged = (listener: () => void) => {
    changeListeners.add(listener);
    return () => changeListeners.delete(listener);
  };
  const listListeners = new Set<(kind: 'tools' | 'prompts') => void>();
  const onListChanged = (listener: (kind: 'tools' | 'prompts') => void) => {
    listListeners.add(listener);
    return () => listListeners.delete(listener);
  };
  const listChanged = (kind: 'tools' | 'prompts') => {
    for (const server of servers) {
      if (!server.isConnected()) continue;
      if (kind === 'tools') void server.sendToolListChanged();
      else void server.sendPromptListChanged();
    }
    for (const listener of listListeners) listener(kind);
  };
  // resources/subscribe: per session, and per principal over every session of this app.
  const subscriptionLimits = {
    perSession: config.limits.subscriptionsPerSession,
    perPrincipal: new Quota(Number.POSITIVE_INFINITY, config.limits.subscriptionsPerPrincipal),
  };

  const serverFactory = (options: ServerOptions = {}): McpServer => {
    const tools = options.tools ?? toolSwitch();
    const server = createMcpServer({
      tools,
      principal: options.principal ?? LOCAL_PRINCIPAL,
      detach: options.detach,
      era: options.era,
      approvalElicitation: config.approvalElicitation[options.transport ?? 'stdio'],
      onDefinitionsChanged: onResourcesChanged,
      subscriptionLimits,
      tasks,
      runner,
      resources,
      prompts,
      workflowIds,
      version: config.version,
      ...(fixtures
        ? {
            fixtures: (s: McpServer) => fixtures.register(s, { listChanged }),
          }
        : {}),
    });
    servers.add(server);
    const previous = server.server.onclose;
    server.server.onclose = () => {
      servers.delete(server);
      previous?.();
    };
    return server;
  };

  return {
    runner,
    resources,
    prompts,
    serverFactory,
    toolSwitch,
    /** Every tool a tools/call may name: the runner's, and the conformance fixtures when served. */
    toolNames: new Set([...runner.tools.map((t) => t.name), ...(fixtures?.plainTools ?? [])]),
    onResourcesChanged,
    onListChanged,
    tasks,
    /** The SDK servers connected now (closed with the app). */
    servers,
  };
}

export function createApp(config: Config, options: AppOptions = {}): App {
  const log = options.log ?? defaultLogger(config);
  const metrics = new Metrics();
  const engine = buildEngine(options);
  // One store for executions and (PostgreSQL) what agents save, opened on first use, not at start-up.
  const store = buildStore(config, { openStore: options.openStore, log, metrics });
  const shared = buildDocuments(config, store, log);
  const documents = shared?.documents;
  const registry = buildRegistry(config, {
    engine,
    database: shared?.source,
    watch: options.watch,
    checkerId: options.checkerId,
    shippedDefinitions: options.shippedDefinitions,
    log,
  });
  // Before the first load: each git source starts from its last good checkout in the data dir.
  const gitSources = buildGitSources(config, { registry, log, clock: options.clock });
  const runtime: RuntimeWorkflows = shared
    ? new DatabaseRuntimeWorkflows(shared.source.dir, shared.documents, registry)
    : new FileRuntimeWorkflows(config.runtimeDir, registry);
  const personas = new PersonaRegistry(config.agentDirs);
  const catalogParts = buildCatalogs(config, { engine, documents, metrics });
  const { catalogs, catalogService, inputs } = catalogParts;
  // The operator's checks, read once on first use: what executions run and what the check policy knows.
  const checks = onFirstUse(() => loadOperatorChecks(config)).get;
  const checkPolicy = buildCheckPolicy(config, { engine, personas, checks, registry });
  const built = buildServices(config, {
    store,
    registry,
    personas,
    engine,
    catalogs: catalogParts,
    runtime,
    checks,
    configuredStore: options.openStore === undefined,
    servesHttp: options.servesHttp,
    clock: options.clock,
    metrics,
    log,
  });
  const { executions, tests, runServices } = built;
  const records = buildRecords(config, executions);
  const protocol = buildProtocol(config, {
    records,
    registry,
    engine,
    catalogs,
    catalogService,
    inputs,
    checkPolicy,
    runtime,
    executions,
    tests,
    runServices,
    fixtures: options.conformanceFixtures,
    metrics,
    log,
  });
  const { runner, tasks, servers } = protocol;

  let warm = false;
  const warmUp = () => {
    if (warm) return;
    warm = true;
    // The regex and JSON Schema worker is not started here: it holds ~15 MB, and starts when a check
    // (or a definition that must be checked) needs it.
    registry.ready().catch((error: unknown) => log.error(`loading workflows failed: ${String(error)}`));
    // Git sources fetch in the background (started once the watched load is under way).
    if (options.gitSync ?? options.watch !== false) gitSources.start();
    // Tasks a killed server left behind are resumed (or failed) without waiting for a client to ask.
    if (options.openStore !== undefined || existsSync(join(config.dataDir, DATABASE_FILE))) {
      tasks.services().catch((error: unknown) => log.error(`recovering tasks failed: ${String(error)}`));
    }
  };

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await Promise.allSettled([...servers].map((s) => s.close()));
      servers.clear();
      gitSources.close();
      registry.close();
      catalogs.close();
      personas.close();
      await built.close();
      await store
        .opened()
        ?.close()
        .catch((error: unknown) => log.error(`closing the store failed: ${String(error)}`));
    })();
    return closing;
  };

  return {
    config,
    services: {
      registry,
      personas,
      engine,
      catalogs,
      catalogService,
      checkPolicy,
      executions,
      tests,
      readQueries: built.readQueries,
      store: store.open,
      records,
      gitSources,
    },
    runner,
    resources: protocol.resources,
    prompts: protocol.prompts,
    serverFactory: protocol.serverFactory,
    toolSwitch: protocol.toolSwitch,
    toolNames: protocol.toolNames,
    onResourcesChanged: protocol.onResourcesChanged,
    onListChanged: protocol.onListChanged,
    warmUp,
    log,
    metrics,
    close,
  };
}
