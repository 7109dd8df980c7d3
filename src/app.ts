/**
 * The composition root: the one place the server's objects are built. Every transport (stdio, HTTP)
 * and the dashboard adapt what `createApp` returns; nothing else constructs registries, stores or
 * services.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/server';
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
import type { ExecutionService } from './executions/execution-service.js';
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
import type { RunServices } from './runs/run-services.js';
import type { ExecutionStore } from './store/execution-store.js';
import { describeDatabaseUrl, lazyDocumentStore } from './store/runtime-documents.js';
import { DATABASE_FILE } from './store/sqlite/sqlite-file.js';
import { BUILD_CHECKER_ID, DefinitionCache } from './workflows/definition-cache.js';
import { PersonaRegistry } from './workflows/personas.js';
import { WorkflowRegistry } from './workflows/registry.js';
import {
  DatabaseRuntimeWorkflows,
  FileRuntimeWorkflows,
  type RuntimeWorkflows,
} from './workflows/runtime-workflows.js';
import type { WorkflowSource } from './workflows/sources.js';

export interface AppOptions {
  /**
   * Opens the execution store (default: PostgreSQL when `databaseUrl` is set, else SQLite in the data
   * dir). Called on first use, not at start.
   */
  openStore?: (config: Config) => Promise<ExecutionStore>;
  /** Where diagnostics go (default: stderr). */
  log?: (line: string) => void;
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
}

/** Checked workflow definitions, in the data dir (an optimisation only: deleting it is always safe). */
export const DEFINITION_CACHE_FILE = 'definition-cache.json';

/**
 * The tools `tools/list` shows by default: seed 001's four (list, get, next, validate: the seeds'
 * contract), seed 004's durable run (start, next_step, and resume after a context reset) and the way to
 * the other groups. The rest (authoring, execution admin, catalogs, tasks) stay callable and are listed
 * through workflow_tools.
 */
export const CORE_TOOLS: readonly string[] = [
  'workflow_list',
  'workflow_get',
  'workflow_next',
  'workflow_validate',
  'workflow_start',
  'workflow_next_step',
  'workflow_resume',
  'workflow_tools',
];

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
  /** The execution service; opens the store on first use. A store that cannot open is a storage error. */
  executions: () => Promise<ExecutionService>;
  /**
   * Workflow tests (`workflowlookup test`, workflow_test): the same engine and service, each run over a
   * scratch store of its own (never the server's), loaded on first use.
   */
  tests: () => Promise<WorkflowTests>;
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
  log: (line: string) => void;
  /** Closes what was opened, newest first: servers, watchers, the store. */
  close: () => Promise<void>;
}

const stderrLog = (line: string) => process.stderr.write(`[workflowlookup] ${line}\n`);

async function openConfiguredStore(config: Config, log: (line: string) => void): Promise<ExecutionStore> {
  const { openExecutionStore } = await import('./store/open-store.js');
  return openExecutionStore(config.databaseUrl ?? config.dataDir, { log });
}

export function createApp(config: Config, options: AppOptions = {}): App {
  const log = options.log ?? stderrLog;
  const engine = new ValidationEngine(
    options.validationWorker === undefined ? {} : { workerUrl: options.validationWorker },
  );
  const openStore = options.openStore ?? ((c: Config) => openConfiguredStore(c, log));
  // One store for executions and (PostgreSQL) what agents save, opened on first use, not at start-up.
  let store: ExecutionStore | undefined;
  let storing: Promise<ExecutionStore> | undefined;
  const sharedStore = () => {
    storing ??= openStore(config).then((opened) => (store = opened));
    return storing.catch((error: unknown) => {
      storing = undefined;
      throw error;
    });
  };
  // With PostgreSQL, saved workflows and imported catalogs live in the database replicas share.
  const documents =
    config.databaseUrl === undefined
      ? undefined
      : lazyDocumentStore(
          async () => {
            const opened = await sharedStore();
            if (opened.documents === undefined)
              throw new Error(`${opened.location} keeps no shared workflows`);
            return opened.documents;
          },
          describeDatabaseUrl(config.databaseUrl),
          log,
        );
  const databaseSource: WorkflowSource | undefined = documents && {
    kind: 'database',
    dir: `${documents.location}#workflows`,
    documents,
  };
  // Checked definitions survive a restart (built code only: the cache is keyed by the build's checker).
  const checker = options.checkerId ?? BUILD_CHECKER_ID;
  const registry = new WorkflowRegistry(
    databaseSource ? [...config.sources, databaseSource] : config.sources,
    {
      watch: options.watch ?? true,
      engine,
      allowedEnv: config.allowedEnvNames,
      ...(checker === undefined
        ? {}
        : {
            cache: new DefinitionCache(
              join(config.dataDir, DEFINITION_CACHE_FILE),
              checker,
              config.allowedEnvNames,
              log,
            ),
          }),
    },
  );
  const runtime: RuntimeWorkflows =
    documents && databaseSource
      ? new DatabaseRuntimeWorkflows(databaseSource.dir, documents, registry)
      : new FileRuntimeWorkflows(config.runtimeDir, registry);
  const personas = new PersonaRegistry(config.agentDirs);
  const catalogs = new CatalogRegistry(
    documents ? new DatabaseCatalogStorage(documents) : config.catalogsDir,
  );
  const catalogService = new CatalogService({
    registry: catalogs,
    env: config.env,
    policy: new HostPolicy(config.allowPrivateHosts),
    allowUrlSources: config.allowUrlSources,
    cwd: config.cwd,
  });
  const commands = { runner: new CommandStepRunner(catalogService, engine), catalogs };
  const inputs = new InputChecker({ engine, catalogs: catalogService, allowedEnv: config.allowedEnv });

  // The operator's checks (WORKFLOWLOOKUP_CHECKS_FILE), read when executions are first used.
  const loadChecks = async () => {
    if (config.checksFile === undefined) return undefined;
    const { ConfiguredChecks, loadChecksFile } = await import('./executions/checks.js');
    const file = config.checksFile;
    return new ConfiguredChecks(
      {
        file,
        checks: loadChecksFile(file, dirname(file)),
        allowed: options.servesHttp !== true || config.httpChecks,
      },
      { env: config.env, commands: commands.runner },
    );
  };

  // The store (and its driver: the native SQLite module or pg) is opened on first use, not at start-up.
  let opening: Promise<ExecutionService> | undefined;
  const executions = () => {
    opening ??= (async () => {
      const [{ ExecutionService }, { TokenService, loadTokenSecret }] = await Promise.all([
        import('./executions/execution-service.js'),
        import('./executions/tokens.js'),
      ]);
      const opened = await sharedStore();
      const tokens = new TokenService(loadTokenSecret(config.dataDir, config.tokenSecret), config.tokenTtlMs);
      const checks = await loadChecks();
      return new ExecutionService({
        ...(checks ? { checks } : {}),
        ...(options.clock ? { clock: options.clock } : {}),
        store: opened,
        registry,
        personas,
        engine,
        tokens,
        commands,
        allowedEnv: config.allowedEnv,
        inputs,
      });
    })();
    // A store that cannot be opened is a storage error for the caller; the next call tries again.
    return opening.catch((error: unknown) => {
      opening = undefined;
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: `cannot open the execution store: ${(error as Error).message}`,
      });
    });
  };

  // Workflow tests run executions through the same service, in a scratch store per run: loaded on first use.
  let testing: Promise<WorkflowTests> | undefined;
  const tests = () => {
    testing ??= (async () => {
      const [{ WorkflowTests }, { openScratchStore }] = await Promise.all([
        import('./executions/workflow-tests.js'),
        import('./store/scratch-store.js'),
      ]);
      return new WorkflowTests({
        registry,
        personas,
        engine,
        allowedEnv: config.allowedEnv,
        allowedEnvNames: config.allowedEnvNames,
        scratchStore: openScratchStore,
      });
    })();
    return testing.catch((error: unknown) => {
      testing = undefined;
      throw error;
    });
  };

  // Tasks, runs and orchestrations sit on the execution service; built with it, on first use.
  let running: Promise<RunServices> | undefined;
  const runServices = () => {
    running ??= (async () => {
      const service = await executions();
      const { createRunServices } = await import('./runs/run-services.js');
      return createRunServices({
        executions: service,
        store: store as ExecutionStore,
        registry,
        engine,
        personas,
        catalogs,
        runtime,
        allowedEnv: config.allowedEnv,
        allowedEnvNames: config.allowedEnvNames,
        log,
      });
    })();
    return running.catch((error: unknown) => {
      running = undefined;
      throw error;
    });
  };

  const guide = guideLoader(config.packageRoot);
  // Purging history is work on finished executions; runs, their cancellation and the orchestrations
  // need a client with MCP tasks, so they share the one group such a client lists (config.ts).
  const runFace = runTools(runServices);
  const purge = runFace.filter((t) => t.name === 'workflow_purge_history');
  const faces: [Profile, ToolDefinition[]][] = [
    ['guidance', guidanceTools({ registry, engine, catalogs, allowedEnv: config.allowedEnv })],
    ['executions', [...executionTools(executions), ...purge]],
    [
      'authoring',
      authoringTools({
        registry,
        personas,
        engine,
        runtime,
        allowedEnvNames: config.allowedEnvNames,
        tests,
      }),
    ],
    [
      'automation',
      automationTools({
        registry,
        engine,
        catalogs: catalogService,
        allowedEnv: config.allowedEnv,
        allowedEnvNames: config.allowedEnvNames,
      }),
    ],
    ['tasks', [...runFace.filter((t) => !purge.includes(t)), ...orchestrationTools(runServices)]],
  ];
  const faceTools = faces.flatMap(([group, tools]) =>
    tools.map((t) => ({ ...t, groups: CORE_TOOLS.includes(t.name) ? [group, 'core'] : [group] })),
  );
  const describeTools = (names: readonly string[]) =>
    faceTools
      .filter((t) => names.includes(t.name))
      .map((t) => ({ name: t.name, description: t.description, inputSchema: inputJsonSchema(t) }));
  const fixtures = options.conformanceFixtures;
  const runner = createToolRunner(
    [
      ...faceTools,
      { ...toolGroupsTool({ describe: describeTools }), groups: ['core'] },
      ...(fixtures ? fixtures.tools.map((t) => ({ ...t, groups: [fixtures.group] })) : []),
    ],
    log,
  );
  const groupNames: string[] = fixtures ? [...PROFILES, fixtures.group] : [...PROFILES];
  const groups = new Map<string, string[]>(
    groupNames.map((g) => [g, runner.tools.filter((t) => t.groups?.includes(g)).map((t) => t.name)]),
  );
  const toolSwitch = () =>
    new ToolSwitch(groups, fixtures ? [...config.profiles, fixtures.group] : config.profiles);
  const tasks = new TaskDriver({ services: runServices, runner, log, limits: config.limits });
  // The MCP Apps view is a file of the build, read once when a host first asks for it.
  let view: Promise<string> | undefined;
  const viewHtml = () => {
    view ??= readFile(join(config.packageRoot, 'dist', 'views', 'execution-progress.html'), 'utf8');
    return view.catch((error: unknown) => {
      view = undefined;
      throw error;
    });
  };
  const resources = [
    ...executionResources(registry, executions, viewHtml),
    ...authoringResources(registry, guide),
    ...catalogResources(catalogService),
  ];
  // Prompts cost an agent nothing until asked for, and the tools they name stay callable: always served.
  const prompts = authoringPrompts(registry, engine, guide, personas, inputs);
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

  let warm = false;
  const warmUp = () => {
    if (warm) return;
    warm = true;
    // The regex and JSON Schema worker is not started here: it holds ~15 MB, and starts when a check
    // (or a definition that must be checked) needs it.
    registry.ready().catch((error: unknown) => log(`loading workflows failed: ${String(error)}`));
    // Tasks a killed server left behind are resumed (or failed) without waiting for a client to ask.
    if (options.openStore !== undefined || existsSync(join(config.dataDir, DATABASE_FILE))) {
      tasks.services().catch((error: unknown) => log(`recovering tasks failed: ${String(error)}`));
    }
  };

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await Promise.allSettled([...servers].map((s) => s.close()));
      servers.clear();
      registry.close();
      catalogs.close();
      personas.close();
      if (running) (await running.catch(() => undefined))?.tasks.close();
      if (store)
        await store.close().catch((error: unknown) => log(`closing the store failed: ${String(error)}`));
    })();
    return closing;
  };

  return {
    config,
    services: { registry, personas, engine, catalogs, catalogService, executions, tests },
    runner,
    resources,
    prompts,
    serverFactory,
    toolSwitch,
    toolNames: new Set([...runner.tools.map((t) => t.name), ...(fixtures?.plainTools ?? [])]),
    onResourcesChanged,
    onListChanged,
    warmUp,
    log,
    close,
  };
}
