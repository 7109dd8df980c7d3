/**
 * The composition root: the one place the program's objects are built. Named builders each make one
 * part from the configuration and the parts they are given, each in a file of src/app/ by job
 * (registry.ts: buildEngine, buildRegistry; store.ts: buildStore, buildDocuments, openStoreAt;
 * catalogs.ts: buildCatalogs; check-policy.ts: buildCheckPolicy; services.ts: buildServices,
 * buildRecords; workflow-tests.ts: buildWorkflowTests; git-sources.ts: buildGitSources; protocol.ts:
 * buildProtocol, which wires the faces' tools, resources and prompts to the protocol), and `createApp`
 * here composes them. src/app.ts and src/app/ are one node (test/architecture.test.ts): the builders
 * never import this file, so that composing stays here and building there. Everything else takes what
 * `createApp` returns: stdio and HTTP, the dashboard (mounted, or standalone with the read-only SQLite
 * reader `services.readQueries`) and the CLI (`list` runs workflow_list through the app's runner;
 * `sources`, `validate` and `test` use the app's registry, check policy and workflow tests). The
 * process around the app (HTTP with /metrics, probes and the dashboard, stdio, OTLP, the drain) is
 * src/serve.ts's, which `serve` and the in-process tests share. Only the CLI's store commands (migrate,
 * export, import), which act on the store `--store` names, open one themselves, through `openStoreAt`
 * (src/app/store.ts). See docs/architecture.md.
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/server';
import { buildCatalogs } from './app/catalogs.js';
import { buildCheckPolicy, loadOperatorChecks } from './app/check-policy.js';
import { onFirstUse } from './app/first-use.js';
import { buildGitSources } from './app/git-sources.js';
import { buildProtocol, type ServerOptions } from './app/protocol.js';
import { buildEngine, buildRegistry } from './app/registry.js';
import { buildRecords, buildServices } from './app/services.js';
import { buildDocuments, buildStore } from './app/store.js';
import type { CatalogRegistry } from './catalogs/catalog-registry.js';
import type { CatalogService } from './catalogs/catalog-service.js';
import type { Config } from './config.js';
import type { ValidationEngine } from './engine/validation-engine.js';
import type { ExecutionQueries, ExecutionService } from './executions/execution-service.js';
import type { WorkflowTests } from './executions/workflow-tests.js';
import type { PromptDefinition } from './faces/prompt.js';
import type { ResourceDefinition } from './faces/resource.js';
import type { ConformanceFixtures } from './protocol/conformance/fixtures.js';
import type { ToolRunner } from './protocol/mcp-server.js';
import type { ToolSwitch } from './protocol/tool-switch.js';
import type { Records } from './record/records.js';
import type { ExecutionStore } from './store/execution-store.js';
import { DATABASE_FILE } from './store/sqlite/sqlite-file.js';
import { setRequestScopes } from './telemetry/context.js';
import { createLogger, type Logger, logLevelFrom } from './telemetry/log.js';
import { Metrics } from './telemetry/metrics.js';
import type { CheckPolicy } from './workflows/check.js';
import type { GitSources } from './workflows/git/git-sources.js';
import { PersonaRegistry } from './workflows/personas.js';
import type { WorkflowRegistry } from './workflows/registry.js';
import {
  DatabaseRuntimeWorkflows,
  FileRuntimeWorkflows,
  type RuntimeWorkflows,
} from './workflows/runtime-workflows.js';
import type { ShippedDefinitions } from './workflows/shipped-definitions.js';

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
   * CLI loads them (src/protocol/conformance/fixtures.ts) only when asked to.
   */
  conformanceFixtures?: ConformanceFixtures | undefined;
  /**
   * The app serves Streamable HTTP (`serve --http`): checks run only with WORKFLOWLOOKUP_HTTP_CHECKS,
   * since a remote client's submission would make the server host run a command.
   */
  servesHttp?: boolean;
  /** The clock approval and delegation timeouts and token lifetimes are measured by (tests inject one). */
  clock?: () => number;
  /**
   * Fetch the git sources in the background once warmed up, and on their interval (default: when
   * watching; one-shot commands read the last good checkouts only).
   */
  gitSync?: boolean;
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
