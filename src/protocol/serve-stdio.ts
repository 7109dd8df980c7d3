import type { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { CatalogRegistry } from '../catalogs/catalog-registry.js';
import { CommandStepRunner } from '../catalogs/command-steps.js';
import type { Config } from '../config.js';
import { fail } from '../engine/errors.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import { authoringPrompts } from '../faces/authoring/authoring-prompts.js';
import { authoringResources, guideLoader } from '../faces/authoring/authoring-resources.js';
import { authoringTools } from '../faces/authoring/authoring-tools.js';
import { catalogResources } from '../faces/automation/automation-resources.js';
import { automationTools } from '../faces/automation/automation-tools.js';
import type { ExecutionService } from '../faces/executions/execution-service.js';
import { executionResources } from '../faces/executions/executions-resources.js';
import { executionTools } from '../faces/executions/executions-tools.js';
import { guidanceTools } from '../faces/guidance/guidance-tools.js';
import type { ExecutionStore } from '../store/execution-store.js';
import { PersonaRegistry } from '../workflows/personas.js';
import { WorkflowRegistry } from '../workflows/registry.js';
import { createMcpServer, createToolRunner } from './mcp-server.js';
import { StdioWire } from './stdio-wire.js';

const log = (line: string) => process.stderr.write(`[workflowlookup] ${line}\n`);

/** Dotted names of seeds 003/004, accepted on tools/call and as direct methods. */
export const TOOL_ALIASES: Readonly<Record<string, string>> = {
  'workflow.validate': 'workflow_validate_manifest',
  'workflow.save': 'workflow_save',
  'workflow.rename': 'workflow_rename',
  'workflow.delete': 'workflow_delete',
  'workflow.list': 'workflow_list',
  'workflow.get': 'workflow_get',
  'workflow.preview_inputs': 'workflow_preview_inputs',
  'workflow.resolve_inputs': 'workflow_resolve_inputs',
  'workflow.preview_rendered': 'workflow_preview_rendered',
  'workflow.step_plan': 'workflow_step_plan',
  'catalog.validate_openapi': 'catalog_validate_openapi',
  'catalog.preview_import': 'catalog_preview_import',
  'catalog.import_openapi': 'catalog_import_openapi',
  'catalog.set_enabled': 'catalog_set_enabled',
  'catalog.remove': 'catalog_remove',
  'command.list': 'command_list',
  'provider.list': 'provider_list',
  'workflow.start': 'workflow_start',
  'workflow.next_step': 'workflow_next_step',
  'workflow.set_state': 'workflow_set_state',
  'workflow.resume': 'workflow_resume',
  'workflow.executions': 'workflow_executions',
};

/** Runs the MCP server on stdin/stdout until `shutdown`, end of input, or SIGTERM/SIGINT. */
export function runStdioServer(config: Config, options: { maxMessageBytes?: number } = {}): void {
  const registry = new WorkflowRegistry(config.sources, { watch: true });
  const personas = new PersonaRegistry(config.agentDirs);
  const engine = new ValidationEngine();
  const catalogs = new CatalogRegistry(config.catalogsDir);
  const commands = { runner: new CommandStepRunner(catalogs, engine, config.env), catalogs };

  // The store (and the native SQLite module) is opened on first use, not at start-up.
  let store: ExecutionStore | undefined;
  let servicePromise: Promise<ExecutionService> | undefined;
  const service = () => {
    servicePromise ??= (async () => {
      const [{ SqliteExecutionStore }, { ExecutionService }, { TokenService, loadTokenSecret }] =
        await Promise.all([
          import('../store/sqlite/sqlite-store.js'),
          import('../faces/executions/execution-service.js'),
          import('../faces/executions/tokens.js'),
        ]);
      store = new SqliteExecutionStore(config.dataDir);
      const tokens = new TokenService(loadTokenSecret(config.dataDir, config.tokenSecret), config.tokenTtlMs);
      return new ExecutionService({
        store,
        registry,
        personas,
        engine,
        tokens,
        commands,
        allowedEnv: config.allowedEnv,
      });
    })();
    // A store that cannot be opened is a storage error for the caller; the next call tries again.
    return servicePromise.catch((error: unknown) => {
      servicePromise = undefined;
      fail({
        code: 'storage_error',
        message: 'Storage error',
        details: `cannot open the execution store in ${config.dataDir}: ${(error as Error).message}`,
      });
    });
  };

  const { profiles } = config;
  const guide = guideLoader(config.packageRoot);
  const runner = createToolRunner(
    [
      ...(profiles.has('guidance') ? guidanceTools({ registry, engine, allowedEnv: config.allowedEnv }) : []),
      ...(profiles.has('executions') ? executionTools(service) : []),
      ...(profiles.has('authoring')
        ? authoringTools({
            registry,
            personas,
            engine,
            runtimeDir: config.runtimeDir,
            allowedEnvNames: config.allowedEnvNames,
          })
        : []),
      ...(profiles.has('automation')
        ? automationTools({
            registry,
            engine,
            catalogs,
            allowedEnv: config.allowedEnv,
            allowedEnvNames: config.allowedEnvNames,
            allowUrlSources: config.allowUrlSources,
            env: config.env,
            cwd: process.cwd(),
          })
        : []),
    ],
    log,
  );
  const resources = [
    ...(profiles.has('executions') ? executionResources(registry, service) : []),
    ...(profiles.has('authoring') ? authoringResources(registry, guide) : []),
    ...(profiles.has('automation') ? catalogResources(catalogs) : []),
  ];
  const prompts = profiles.has('authoring') ? authoringPrompts(registry, engine, guide) : [];
  const workflowIds = (prefix: string) => registry.ids(prefix);

  // Definitions are resources (manifests, workflow details): tell connected clients when they change.
  const servers = new Set<McpServer>();
  registry.onChange = () => {
    for (const server of servers) if (server.isConnected()) server.sendResourceListChanged();
  };

  let exiting = false;
  const exit = (code: number) => {
    if (exiting) return;
    exiting = true;
    registry.close();
    personas.close();
    const closing = store ? store.close() : Promise.resolve();
    closing
      .catch(() => undefined)
      // Let stdout drain so the last response (e.g. to shutdown) is not lost.
      .then(() => process.stdout.write('', () => process.exit(code)));
  };

  const wire = new StdioWire({
    stdin: process.stdin,
    stdout: process.stdout,
    directMethods: new Set(runner.tools.map((t) => t.name)),
    aliases: TOOL_ALIASES,
    direct: (method, params) => runner.run(method, params),
    onExit: () => exit(0),
    onInitialized: () => setImmediate(warmUp),
    log,
    ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
  });

  serveStdio(
    () => {
      const server = createMcpServer({ runner, resources, prompts, workflowIds, version: config.version });
      servers.add(server);
      return server;
    },
    {
      transport: wire,
      onerror: (error) => log(`protocol: ${error.message}`),
    },
  );

  process.on('SIGTERM', () => exit(0));
  process.on('SIGINT', () => exit(0));
  process.stdout.on('error', () => exit(0));

  // Definitions and the validation libraries load once `initialize` has been answered (or on the first
  // request that needs them), so loading 1,000 workflows never delays the handshake.
  function warmUp(): void {
    registry.ready().catch((error: unknown) => log(`loading workflows failed: ${String(error)}`));
    engine.load().catch((error: unknown) => log(`loading the validation engine failed: ${String(error)}`));
  }
}
