// The composition root's protocol builder: the faces' tools, resources and prompts wired to the MCP
// protocol layer (the tool runner and its groups, the task driver, the SDK server factory, notifications).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/server';
import type { CatalogRegistry } from '../catalogs/catalog-registry.js';
import type { CatalogService } from '../catalogs/catalog-service.js';
import type { InputChecker } from '../catalogs/input-check.js';
import { type Config, PROFILES, type Profile } from '../config.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import { LOCAL_PRINCIPAL } from '../executions/execution-model.js';
import type { ExecutionService } from '../executions/execution-service.js';
import type { WorkflowTests } from '../executions/workflow-tests.js';
import { authoringPrompts } from '../faces/authoring/authoring-prompts.js';
import { authoringResources, guideLoader } from '../faces/authoring/authoring-resources.js';
import { authoringTools } from '../faces/authoring/authoring-tools.js';
import { catalogResources } from '../faces/automation/automation-resources.js';
import { automationTools } from '../faces/automation/automation-tools.js';
import { executionResources } from '../faces/executions/executions-resources.js';
import { executionTools } from '../faces/executions/executions-tools.js';
import { guidanceTools } from '../faces/guidance/guidance-tools.js';
import { orchestrationTools, runTools } from '../faces/runs/run-tools.js';
import type { ToolDefinition } from '../faces/tool.js';
import { toolGroupsTool } from '../faces/tool-groups.js';
import type { ConformanceFixtures } from '../protocol/conformance/fixtures.js';
import { Quota } from '../protocol/limits.js';
import { createMcpServer, createToolRunner, inputJsonSchema } from '../protocol/mcp-server.js';
import { TaskDriver } from '../protocol/tasks-protocol.js';
import { ToolSwitch } from '../protocol/tool-switch.js';
import type { Records } from '../record/records.js';
import type { RunServices } from '../runs/run-services.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { CheckPolicy } from '../workflows/check.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import type { RuntimeWorkflows } from '../workflows/runtime-workflows.js';
import { onFirstUse } from './first-use.js';

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
