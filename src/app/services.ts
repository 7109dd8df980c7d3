// The composition root's service builders: the services over the store (executions, workflow tests,
// tasks and runs, the standalone dashboard's read side), each on first use, and the signed records.
import type { Config } from '../config.js';
import { fail } from '../engine/errors.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { ExecutionService } from '../executions/execution-service.js';
import { runWording } from '../faces/runs/run-presenter.js';
import { RecordKeyring } from '../record/keys.js';
import { Records } from '../record/records.js';
import type { ExecutionStore } from '../store/execution-store.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import type { RuntimeWorkflows } from '../workflows/runtime-workflows.js';
import type { buildCatalogs } from './catalogs.js';
import type { OperatorChecks } from './check-policy.js';
import { onFirstUse } from './first-use.js';
import { openStoreAt, type SharedStore } from './store.js';
import { buildWorkflowTests } from './workflow-tests.js';

/** Signed records of executions, with the key the configuration names or the data dir's. */
export function buildRecords(config: Config, executions: () => Promise<ExecutionService>): Records {
  const keyring = new RecordKeyring({
    dataDir: config.dataDir,
    ...(config.recordKey.key !== undefined ? { configuredKey: config.recordKey.key } : {}),
    ...(config.recordKey.publicKeys !== undefined ? { publicKeysFile: config.recordKey.publicKeys } : {}),
  });
  return new Records(executions, keyring);
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
    /** The clock approval and delegation timeouts and token lifetimes are measured by (tests inject one). */
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
    const { ConfiguredChecks } = await import('../executions/checks.js');
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
      import('../executions/execution-service.js'),
      import('../executions/tokens.js'),
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
    const { createRunServices } = await import('../runs/run-services.js');
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
      import('../executions/execution-service.js'),
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
