// `workflowlookup serve | dashboard`: the long-running commands. The process around the app is
// src/serve.ts's (the composition root's); these say where it listens and when it stops.
import { join } from 'node:path';
import { type App, createApp } from '../app.js';
import { type ConfigOptions, checkSharedSecret, loadConfig, loadHttpSettings, parsePort } from '../config.js';
import { type HttpServing, serveProcess } from '../serve.js';
import { DATABASE_FILE, refuseDamagedFile } from '../store/sqlite/sqlite-file.js';
import { setupTracing } from '../telemetry/setup.js';
import type { StdioPrelude } from '../transports/stdio-prelude.js';
import { type Flags, httpFlags, UsageError } from './usage.js';
import { refuseUnusableChecks } from './workflow-commands.js';

/**
 * Serves MCP until the clients leave or a signal arrives: stdio by default, Streamable HTTP with
 * `--http`, both with `--http --stdio`. Exits once everything opened is closed and stdout drained.
 */
export async function serve(
  options: ConfigOptions,
  flags: Flags,
  prelude: StdioPrelude | undefined,
): Promise<number> {
  const config = loadConfig(options);
  checkSharedSecret(config);
  refuseDamagedFile(join(config.dataDir, DATABASE_FILE));
  const withHttp = flags.http === true;
  const withStdio = !withHttp || flags.stdio === true;
  await refuseUnusableChecks(config);
  const settings = withHttp ? loadHttpSettings(config, httpFlags(flags)) : undefined;
  if (flags['conformance-fixtures'] && !withHttp) {
    throw new UsageError('serve', '--conformance-fixtures needs --http (the suite speaks Streamable HTTP)');
  }
  // The suite's fixtures are loaded only when asked for: a served workflowlookup never has them.
  const app = createApp(config, {
    servesHttp: withHttp,
    ...(flags['conformance-fixtures']
      ? {
          conformanceFixtures: (await import('../protocol/conformance/fixtures.js')).conformanceFixtures(),
        }
      : {}),
  });
  // The process around the app (HTTP, /metrics, probes, the dashboard, OTLP, stdio, the drain) is the
  // composition root's (src/serve.ts); the CLI only says where it listens.
  const started = prelude;
  const serving = await serveProcess(app, {
    http: settings,
    stdio: withStdio ? { prelude: started && (() => started.handoff()) } : undefined,
    onListening: (http) => announce(app, http),
    onStdio: () => {
      if (process.stdin.isTTY && !withHttp) {
        process.stderr.write(
          `workflowlookup ${config.version}: MCP server on stdio; waiting for a client (Ctrl-C to quit)\n`,
        );
      }
    },
  });
  process.on('SIGTERM', serving.stop);
  process.on('SIGINT', serving.stop);
  process.stdout.on('error', () => undefined);
  await serving.done;
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  process.exit(0);
}

/** Where `serve --http` listens: lines for a person at a terminal, else one JSON log line. */
function announce(app: App, http: HttpServing): void {
  const { version } = app.config;
  const { url, dashboardUrl, metricsUrl } = http;
  if (process.stderr.isTTY) {
    process.stderr.write(
      `workflowlookup ${version}: MCP over Streamable HTTP at ${url}\n${dashboardUrl ? `workflowlookup: dashboard at ${dashboardUrl}\n` : ''}${metricsUrl ? `workflowlookup: metrics at ${metricsUrl}\n` : ''}`,
    );
    return;
  }
  // Off a terminal stderr is read by log shippers (and by scripts after the port): the announcement is
  // one JSON line like every other event, its addresses as fields.
  app.log.info(
    {
      version,
      mcp_url: url,
      ...(dashboardUrl ? { dashboard_url: dashboardUrl } : {}),
      ...(metricsUrl ? { metrics_url: metricsUrl } : {}),
    },
    `MCP over Streamable HTTP at ${url}${dashboardUrl ? `, dashboard at ${dashboardUrl}` : ''}${metricsUrl ? `, metrics at ${metricsUrl}` : ''}`,
  );
}

/**
 * Serves the dashboard on 127.0.0.1 until SIGINT/SIGTERM, beside any servers on the same store: with
 * SQLite, pages read through a read-only connection; pause, resume and abandon go through the service.
 */
export async function dashboard(options: ConfigOptions, flags: Flags): Promise<number> {
  const config = loadConfig(options);
  checkSharedSecret(config);
  const port = flags.port === undefined ? config.dashboardPort : parsePort(flags.port, '--port');
  if (config.databaseUrl === undefined) refuseDamagedFile(join(config.dataDir, DATABASE_FILE));
  const app = createApp(config);
  // Its actions (pause, resume, abandon, approvals) are traced like a server's when OTEL_* asks.
  const tracing = await setupTracing(config.env, { version: config.version }, (m) => app.log.warn(m));
  app.warmUp();
  // The app's service creates and migrates the store (and takes the actions), here, so that a store
  // that cannot be opened stops the command at start; pages read beside it (services.readQueries: a
  // read-only connection with SQLite, opened with the first page; the service's with PostgreSQL).
  await app.services.executions();
  const { createDashboard, serveDashboard } = await import('../dashboard/dashboard.js');
  const running = await serveDashboard(createDashboard(app, { queries: app.services.readQueries }), port);
  process.stdout.write(`workflowlookup dashboard: ${running.url} (Ctrl-C to stop)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await running.close();
  await app.close();
  await tracing?.shutdown().catch((error: unknown) => app.log.warn(`traces: ${String(error)}`));
  return 0;
}
