import { once } from 'node:events';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  type WriteStream,
  writeFileSync,
} from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { type App, createApp, loadOperatorChecks, openStoreAt } from '../app.js';
import {
  type Config,
  ConfigError,
  type ConfigOptions,
  checkSharedSecret,
  ENVIRONMENT,
  type HttpFlags,
  loadConfig,
  loadHttpSettings,
  parsePort,
  storeTargetOf,
} from '../config.js';
import { localCaller } from '../executions/execution-model.js';
import { existingTokenSecret, type SigningSecret, secretFingerprint } from '../executions/tokens.js';
import type { Violation } from '../model/violation.js';
import { workflowJsonSchema } from '../model/workflow.js';
import { type HttpServing, serveProcess } from '../serve.js';
import { isPostgresUrl } from '../store/open-store.js';
import { DATABASE_FILE, refuseDamagedFile, StoreFileError } from '../store/sqlite/sqlite-file.js';
import type { ExportHeader } from '../store/transfer.js';
import { setupTracing } from '../telemetry/setup.js';
import { addToken, listTokens, parseScopes, removeToken } from '../transports/http-auth.js';
import type { StdioPrelude } from '../transports/stdio-prelude.js';
import {
  type CheckPolicy,
  type CheckReport,
  checkDefinition,
  describeViolation,
  oversize,
} from '../workflows/check.js';
import type { Listing } from '../workflows/listing.js';
import { type DefinitionFormat, formatOf } from '../workflows/parse.js';
import { approvalsCommand, decideCommand } from './approvals-command.js';
import { COMMAND_SPECS, type CommandSpec, optionLines, TITLE } from './commands.js';
import { keysCommand, recordCommand, verifyCommand } from './record-commands.js';
import { testCommand } from './test-command.js';

const SAMPLE = `# A sample workflow. Edit it, then run: workflowlookup validate .workflowlookup/workflows/*.yaml
id: my-first-workflow
name: My first workflow
description: Plan, implement and verify a small change
version: 0.1.0
category: development
preconditions:
  - The change is described in a sentence or two
steps:
  - id: plan
    title: Plan the change
    prompt: List the files you will touch and the tests that will prove the change works.
    requireConfirmation: true
    validationCriteria:
      - type: length
        min: 40
        message: The plan should be at least a few sentences long
  - id: implement
    title: Implement
    prompt: Make the change described in the plan.
  - id: verify
    title: Verify
    prompt: Run the tests and report the results.
    validationCriteria:
      - type: regex
        pattern: "(pass|passed|green)"
        flags: i
        message: Report that the tests pass
`;

/** A finding as `workflow_validate_manifest` words it, indented, warnings marked. */
function printViolation(v: Violation, prefix = ''): string {
  return `  ${prefix}${describeViolation(v)}`;
}

type FileReport = Pick<CheckReport, 'valid' | 'errors' | 'warnings'> & {
  format?: DefinitionFormat;
  id?: string;
};

/** One file named on the command line, through the one check every path uses (`authoring` level). */
async function checkFile(file: string, policy: CheckPolicy): Promise<FileReport> {
  const invalid = (violation: Violation): FileReport => ({ valid: false, errors: [violation], warnings: [] });
  const format = formatOf(file);
  if (format === undefined)
    return invalid({ path: '', rule: 'format', message: 'file must end in .json, .yaml or .yml' });
  const info = await stat(file).catch(() => undefined);
  if (info === undefined) return invalid({ path: '', rule: 'exists', message: 'file not found' });
  if (!info.isFile()) return invalid({ path: '', rule: 'exists', message: 'not a regular file' });
  const big = oversize(info.size);
  if (big) return { ...invalid(big), format };
  const report = await checkDefinition({ text: await readFile(file), format }, 'authoring', policy);
  return {
    valid: report.valid,
    format,
    ...(report.id !== undefined ? { id: report.id } : {}),
    errors: report.errors,
    warnings: report.warnings,
  };
}

async function validateFiles(files: string[], options: ConfigOptions, json: boolean): Promise<number> {
  if (files.length === 0) {
    process.stderr.write('workflowlookup: validate: name at least one workflow file (validate FILE...)\n');
    return 2;
  }
  const config = loadConfig(options);
  // The steps' checks are looked up in the operator's checks file, which must be usable (as for serve).
  await refuseUnusableChecks(config);
  // The server's check policy (engine, env allow-list, personas, checks), from the one composition root.
  const app = createApp(config, { watch: false });
  const reports: (FileReport & { file: string })[] = [];
  try {
    const policy = await app.services.checkPolicy();
    for (const file of files) reports.push({ file, ...(await checkFile(file, policy)) });
  } finally {
    await app.close();
  }
  const failures = reports.filter((r) => !r.valid).length;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ files: reports, valid: files.length - failures, invalid: failures }, null, 2)}\n`,
    );
    return failures > 0 ? 1 : 0;
  }
  for (const r of reports) {
    const lines = [
      ...r.errors.map((v) => printViolation(v)),
      ...r.warnings.map((v) => printViolation(v, 'warning: ')),
    ];
    process.stdout.write(`${r.valid ? 'ok  ' : 'FAIL'}  ${r.file}\n${lines.map((l) => `${l}\n`).join('')}`);
  }
  process.stdout.write(`${files.length - failures} valid, ${failures} invalid\n`);
  return failures > 0 ? 1 : 0;
}

/**
 * Runs `use` on an app built as the server builds it (no watchers), closed afterwards: the CLI reads
 * the same registry, with the same sources (the database's too, with PostgreSQL), as the server.
 */
async function withApp<T>(options: ConfigOptions, use: (app: App) => Promise<T>): Promise<T> {
  const app = createApp(loadConfig(options), { watch: false });
  try {
    return await use(app);
  } finally {
    await app.close();
  }
}

/** `list --json`: what workflow_list answers, plus the warnings of every file read. */
async function listing(app: App): Promise<Listing> {
  const outcome = await app.runner.run('workflow_list', {}, { caller: localCaller() });
  if ('error' in outcome) {
    const data = outcome.error.data as { details?: unknown } | undefined;
    throw new Error(
      `workflow_list: ${outcome.error.message}${typeof data?.details === 'string' ? ` (${data.details})` : ''}`,
    );
  }
  return outcome.result as Listing;
}

async function list(options: ConfigOptions, json: boolean): Promise<number> {
  return withApp(options, async (app) => {
    const { registry } = app.services;
    const { workflows, broken } = await listing(app);
    if (json) {
      // Warnings of every file read (workflow_validate_manifest would report the same ones).
      const policy = await app.services.checkPolicy();
      const warnings: { file: string; source: string; id?: string; warnings: Violation[] }[] = [];
      for (const entry of registry.filesOf()) {
        const report = await registry.report(entry, policy.knownAgents).catch(() => undefined);
        if (report === undefined || report.warnings.length === 0) continue;
        warnings.push({
          file: entry.file,
          source: entry.source,
          ...(report.id !== undefined ? { id: report.id } : {}),
          warnings: report.warnings,
        });
      }
      process.stdout.write(`${JSON.stringify({ workflows, broken, warnings }, null, 2)}\n`);
      return 0;
    }
    const width = Math.max(2, ...workflows.map((w) => w.id.length));
    for (const w of workflows) {
      process.stdout.write(
        `${w.id.padEnd(width)}  ${w.version.padEnd(8)} ${w.category.padEnd(14)} ${w.name}\n`,
      );
    }
    for (const b of broken) {
      process.stdout.write(
        `broken: ${b.file}${b.id ? ` (${b.id})` : ''}\n${b.violations.map((v) => printViolation(v)).join('\n')}\n`,
      );
    }
    return 0;
  });
}

/** `sources sync`: fetches every git source now, as the server does on its interval; 1 if any failed. */
async function syncSources(options: ConfigOptions, json: boolean): Promise<number> {
  return withApp(options, async (app) => {
    await app.services.registry.ready();
    const results = await app.services.gitSources.syncAll();
    if (json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    else {
      if (results.length === 0)
        process.stdout.write('No git sources configured (WORKFLOWLOOKUP_GIT_SOURCES).\n');
      for (const { source, result } of results) {
        const what =
          result.outcome === 'error'
            ? `error: ${result.error}`
            : result.outcome === 'broken'
              ? `commit ${result.commit} refused: ${result.files} broken file(s); still serving ${source.commit ?? 'nothing'}`
              : `${result.outcome}: ${result.commit}`;
        process.stdout.write(`${source.repository}#${source.ref}  ${what}\n`);
      }
    }
    return results.some((r) => r.result.outcome === 'error' || r.result.outcome === 'broken') ? 1 : 0;
  });
}

/** The git sources' lines of `workflowlookup sources`: ref, commit, last sync, last error, broken files. */
function printGitSources(app: App): void {
  const statuses = app.services.gitSources.status();
  if (statuses.length === 0) return;
  process.stdout.write('\nGit sources (`workflowlookup sources sync` fetches them now):\n');
  for (const s of statuses) {
    process.stdout.write(
      `  ${s.repository}  ref ${s.ref}${s.subdir ? `  folder ${s.subdir}` : ''}\n    commit ${s.commit ?? '(none yet)'}${s.fetchedAt ? ` fetched ${s.fetchedAt}` : ''}, ${s.workflows} workflow(s)\n    last sync ${s.lastSync ?? 'never'}${s.lastError ? `, last error: ${s.lastError}` : ''}\n`,
    );
    if (s.broken !== undefined) {
      process.stdout.write(`    refused commit ${s.broken.commit} (${s.broken.at}), broken files:\n`);
      for (const f of s.broken.files) {
        process.stdout.write(
          `      ${f.file}\n${f.violations.map((v) => `        ${printViolation(v)}`).join('\n')}\n`,
        );
      }
    }
  }
}

async function sources(options: ConfigOptions, rest: string[], json: boolean): Promise<number> {
  const [action] = rest;
  if (action === 'sync') return syncSources(options, json);
  if (action !== undefined) throw new UsageError('sources', 'expected: sources | sources sync');
  return withApp(options, async (app) => {
    const { registry } = app.services;
    await registry.ready();
    if (json) {
      process.stdout.write(
        `${JSON.stringify({ sources: registry.sources.map((s) => ({ kind: s.kind, dir: s.dir })), git: app.services.gitSources.status() }, null, 2)}\n`,
      );
      return 0;
    }
    process.stdout.write('Sources, lowest precedence first:\n');
    for (const s of registry.sources) {
      // The database's source is no directory (it is the store's `workflow` documents).
      const missing = s.kind !== 'database' && !existsSync(s.dir);
      const label =
        s.git !== undefined ? `${s.git.url}#${s.git.ref}${s.git.subdir ? `:${s.git.subdir}` : ''}` : s.dir;
      process.stdout.write(`  ${s.kind.padEnd(8)} ${label}${missing ? '  (missing)' : ''}\n`);
    }
    process.stdout.write(`Runtime (writable) dir: ${app.config.runtimeDir}\n\nWorkflows:\n`);
    for (const entry of registry.entries()) {
      const id = entry.status === 'valid' ? entry.workflow.id : (entry.id ?? basename(entry.file));
      process.stdout.write(
        `  ${id}  ${entry.source}  ${entry.file}${entry.status === 'broken' ? '  (broken)' : ''}${entry.status === 'valid' && entry.provenance ? `  (${entry.provenance.repository}@${entry.provenance.commit})` : ''}\n`,
      );
    }
    printGitSources(app);
    return 0;
  });
}

function init(): number {
  const dir = resolve('.workflowlookup', 'workflows');
  const file = join(dir, 'my-first-workflow.yaml');
  if (existsSync(file)) {
    process.stderr.write(`init: ${file} already exists; nothing written\n`);
    return 1;
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, SAMPLE, { flag: 'wx' });
  process.stdout.write(
    `Created ${file}\nThe server picks it up from ./.workflowlookup/workflows when started here.\n`,
  );
  return 0;
}

/** A checks file that cannot be used is a setting that cannot work: refused before anything runs. */
async function refuseUnusableChecks(config: Config): Promise<void> {
  try {
    await loadOperatorChecks(config);
  } catch (error) {
    throw new ConfigError(`WORKFLOWLOOKUP_CHECKS_FILE: ${(error as Error).message}`);
  }
}

/** The stdio prelude that answered the client while this module loaded (entry.ts), if any. */
let prelude: StdioPrelude | undefined;

/**
 * Serves MCP until the clients leave or a signal arrives: stdio by default, Streamable HTTP with
 * `--http`, both with `--http --stdio`. Exits once everything opened is closed and stdout drained.
 */
async function serve(options: ConfigOptions, flags: Flags): Promise<number> {
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
          conformanceFixtures: (await import('../protocol/conformance-fixtures.js')).conformanceFixtures(),
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
async function dashboard(options: ConfigOptions, flags: Flags): Promise<number> {
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

/** The store a command acts on: `--store` (a data dir or postgres:// URL), else the configured one. */
function storeTarget(
  options: ConfigOptions,
  flags: Flags,
): { config: Config; target: string; dataDir?: string } {
  const config = loadConfig(options);
  const target =
    flags.store !== undefined
      ? storeTargetOf(flags.store, '--store', config.cwd)
      : (config.databaseUrl ?? config.dataDir);
  return isPostgresUrl(target) ? { config, target } : { config, target, dataDir: target };
}

/** The secret the servers of a store sign continuation tokens with, if it has one yet. */
function signingSecretOf(store: { config: Config; dataDir?: string }): SigningSecret | undefined {
  return existingTokenSecret(store.dataDir, store.config.tokenSecret);
}

async function migrateCommand(options: ConfigOptions, flags: Flags): Promise<number> {
  // Opening a store brings its schema up to date (and refuses one a newer version wrote).
  const store = await openStoreAt(storeTarget(options, flags).target);
  let version: number;
  try {
    version = await store.schemaVersion();
  } finally {
    await store.close();
  }
  process.stdout.write(`schema version ${version}\n`);
  return 0;
}

/** Every execution as JSON lines (one bundle each): to move between SQLite and PostgreSQL, or to back up. */
async function exportCommand(options: ConfigOptions, flags: Flags): Promise<number> {
  const source = storeTarget(options, flags);
  // Exporting reads a store; it never creates one where a mistyped path points.
  if (source.dataDir !== undefined && !existsSync(join(source.dataDir, DATABASE_FILE))) {
    throw new ConfigError(
      `export: no execution store in ${source.dataDir} (${DATABASE_FILE} is missing); name a server's data dir or a postgres:// URL with --store`,
    );
  }
  const { exportExecutions, exportHeader } = await import('../store/transfer.js');
  const signing = signingSecretOf(source);
  const store = await openStoreAt(source.target);
  const out = flags.out ? createWriteStream(flags.out, { mode: 0o600 }) : process.stdout;
  let count = 0;
  try {
    const header = exportHeader(
      signing ? { fingerprint: secretFingerprint(signing.secret), source: signing.source } : undefined,
    );
    out.write(`${JSON.stringify(header)}\n`);
    for await (const bundle of exportExecutions(store)) {
      if (!out.write(`${JSON.stringify(bundle)}\n`)) await once(out, 'drain');
      count++;
    }
  } finally {
    await store.close();
    if (out !== process.stdout) await new Promise<void>((resolve) => (out as WriteStream).end(resolve));
  }
  process.stderr.write(`exported ${count} execution(s)\n`);
  if (signing !== undefined && count > 0) {
    process.stderr.write(
      `Their continuation tokens are signed with ${signing.source === 'WORKFLOWLOOKUP_TOKEN_SECRET' ? 'WORKFLOWLOOKUP_TOKEN_SECRET' : `the secret in ${signing.source}`}. To keep them valid, run import and every server of the target with WORKFLOWLOOKUP_TOKEN_SECRET set to ${signing.source === 'WORKFLOWLOOKUP_TOKEN_SECRET' ? 'the same value' : `that secret: WORKFLOWLOOKUP_TOKEN_SECRET="$(cat ${signing.source})"`}.\n`,
    );
  }
  return 0;
}

/**
 * Refuses an import whose live tokens the target would reject (TOKEN_INVALID), before anything is
 * written, and says which secret to configure; `--new-tokens` imports anyway, and then refuses every
 * old token whatever the secret (importExecutions gives each execution a new one).
 */
function checkSigningSecret(
  header: ExportHeader | undefined,
  file: string,
  target: { config: Config; dataDir?: string },
  newTokens: boolean,
): void {
  const wanted = header?.token_secret;
  if (wanted === undefined || newTokens) return;
  const have = signingSecretOf(target);
  if (have !== undefined && secretFingerprint(have.secret) === wanted.fingerprint) return;
  const from =
    wanted.source === 'WORKFLOWLOOKUP_TOKEN_SECRET'
      ? 'the WORKFLOWLOOKUP_TOKEN_SECRET of the servers it was exported from'
      : `the secret in ${wanted.source} (WORKFLOWLOOKUP_TOKEN_SECRET="$(cat ${wanted.source})")`;
  throw new ConfigError(
    `import: the continuation tokens in ${file} were signed with another secret than the target's ${
      have === undefined ? '(it has none yet)' : `(${have.source})`
    }, so agents holding them would get TOKEN_INVALID. Set WORKFLOWLOOKUP_TOKEN_SECRET to ${from}, for this import and for every server of the target, then run import again; or pass --new-tokens to import anyway (every token handed out before is then refused, and agents call workflow_resume {"execution_id": "…"} for a fresh one). Nothing was imported`,
  );
}

async function importCommand(rest: string[], options: ConfigOptions, flags: Flags): Promise<number> {
  const [file] = rest;
  if (file === undefined) throw new UsageError('import', 'name the file that export wrote (or - for stdin)');
  const target = storeTarget(options, flags);
  if (file !== '-') {
    const info = await stat(file).catch((error: NodeJS.ErrnoException) => error);
    if (info instanceof Error) {
      throw new ConfigError(
        `import: cannot read ${file}: ${info.code === 'ENOENT' ? 'no such file' : info.code === 'EACCES' ? 'permission denied' : info.message}; name the file that export wrote (or - for stdin)`,
      );
    }
    if (!info.isFile())
      throw new ConfigError(`import: ${file} is not a file; name the file that export wrote`);
  }
  const { importExecutions, isExportHeader, ExportHeaderSchema } = await import('../store/transfer.js');
  const lines = createInterface({
    input: file === '-' ? process.stdin : createReadStream(file),
    crlfDelay: Infinity,
  })[Symbol.asyncIterator]();
  let number = 0;
  const name = file === '-' ? 'stdin' : file;
  const nextValue = async (): Promise<{ value: unknown } | undefined> => {
    for (let line = await lines.next(); !line.done; line = await lines.next()) {
      number++;
      if (line.value.trim() === '') continue;
      try {
        return { value: JSON.parse(line.value) as unknown };
      } catch (error) {
        throw new Error(
          `${name} line ${number} is not JSON (${(error as Error).message}); is it a file export wrote?`,
        );
      }
    }
    return undefined;
  };
  const first = await nextValue();
  let header: ExportHeader | undefined;
  if (first !== undefined && isExportHeader(first.value)) {
    const parsed = ExportHeaderSchema.safeParse(first.value);
    if (!parsed.success)
      throw new ConfigError(`import: ${name} has a header this version cannot read; upgrade workflowlookup`);
    header = parsed.data;
  } else if (first !== undefined) {
    process.stderr.write(
      `${name} has no header (written by an older export): whether its tokens stay valid depends on WORKFLOWLOOKUP_TOKEN_SECRET being the secret that signed them\n`,
    );
  }
  checkSigningSecret(header, name, target, flags['new-tokens'] === true);
  async function* bundles() {
    if (first !== undefined && header === undefined) yield first.value;
    for (let next = await nextValue(); next !== undefined; next = await nextValue()) yield next.value;
  }
  const newTokens = flags['new-tokens'] === true;
  const store = await openStoreAt(target.target);
  try {
    // --new-tokens: no token handed out before the export works after it, even under the same secret.
    const report = await importExecutions(store, bundles(), { newTokens });
    process.stdout.write(
      `imported ${report.executions} execution(s), ${report.steps} step(s), ${report.artifacts} artifact(s), ${report.telemetry} event(s), ${report.definitions} definition(s); ${report.skipped.length} already present and left as they were\n`,
    );
    if (newTokens && report.retokened > 0)
      process.stdout.write(
        `${report.retokened} execution(s) got new continuation tokens: the old ones are refused, and agents get the new ones from workflow_resume {"execution_id": "…"}\n`,
      );
  } finally {
    await store.close();
  }
  return 0;
}

async function token(rest: string[], options: ConfigOptions, flags: Flags): Promise<number> {
  const config = loadConfig(options);
  const settings = loadHttpSettings(config, httpFlags(flags));
  const file = settings.auth.mode === 'tokens' ? settings.auth.file : join(config.dataDir, 'tokens.json');
  const [action, name] = rest;
  if (action === 'add' && name) {
    const secret = await addToken(file, name, parseScopes(flags.scopes), flags.principal ?? name);
    process.stdout.write(`${secret}\n`);
    process.stderr.write(
      `Token ${name} added to ${file}. It is shown this once; only its hash is kept. Serve with WORKFLOWLOOKUP_AUTH=tokens.\n`,
    );
    return 0;
  }
  if (action === 'list') {
    const tokens = listTokens(file);
    for (const t of tokens) {
      process.stdout.write(`${t.name}\t${t.principal}\t${t.scopes.join(',')}\t${t.created_at}\n`);
    }
    // On stderr: stdout stays the list (empty), for scripts; a person learns where it looked.
    if (tokens.length === 0)
      process.stderr.write(
        `No tokens in ${file}. Add one with: workflowlookup token add NAME --scopes read,run [--principal WHO]\n`,
      );
    return 0;
  }
  if (action === 'remove' && name) {
    const removed = await removeToken(file, name);
    process.stderr.write(removed ? `Token ${name} removed.\n` : `No token named ${name}.\n`);
    return removed ? 0 : 1;
  }
  throw new UsageError('token', 'expected: token add NAME | token list | token remove NAME');
}

// -------------------------------------------------------------------------------------------------
// Commands and options: one table, from which parsing and every --help text are made.

type Flags = {
  json?: boolean;
  http?: boolean;
  stdio?: boolean;
  host?: string;
  port?: string;
  path?: string;
  tools?: string;
  'conformance-fixtures'?: boolean;
  'no-bundled'?: boolean;
  'no-user'?: boolean;
  'no-project'?: boolean;
  scopes?: string;
  principal?: string;
  store?: string;
  out?: string;
  'new-tokens'?: boolean;
  reason?: string;
  key?: string;
  keys?: string;
  workflow?: string;
  require?: string;
  execution?: string;
  head?: string;
  help?: boolean;
  version?: boolean;
};

interface Command extends CommandSpec {
  run: (rest: string[], options: ConfigOptions, flags: Flags) => Promise<number> | number;
}

const COMMANDS: Record<string, Command> = {
  serve: { ...COMMAND_SPECS.serve, run: (_rest, options, flags) => serve(options, flags) },
  dashboard: { ...COMMAND_SPECS.dashboard, run: (_rest, options, flags) => dashboard(options, flags) },
  list: { ...COMMAND_SPECS.list, run: (_rest, options, flags) => list(options, flags.json === true) },
  validate: {
    ...COMMAND_SPECS.validate,
    run: (rest, options, flags) => validateFiles(rest, options, flags.json === true),
  },
  test: {
    ...COMMAND_SPECS.test,
    run: (rest, options, flags) => testCommand(rest, options, flags.json === true),
  },
  init: { ...COMMAND_SPECS.init, run: () => init() },
  sources: {
    ...COMMAND_SPECS.sources,
    run: (rest, options, flags) => sources(options, rest, flags.json === true),
  },
  schema: {
    ...COMMAND_SPECS.schema,
    run: () => {
      process.stdout.write(`${JSON.stringify(workflowJsonSchema(), null, 2)}\n`);
      return 0;
    },
  },
  migrate: { ...COMMAND_SPECS.migrate, run: (_rest, options, flags) => migrateCommand(options, flags) },
  export: { ...COMMAND_SPECS.export, run: (_rest, options, flags) => exportCommand(options, flags) },
  import: { ...COMMAND_SPECS.import, run: (rest, options, flags) => importCommand(rest, options, flags) },
  approvals: {
    ...COMMAND_SPECS.approvals,
    run: (_rest, options, flags) => approvalsCommand(options, flags.json === true),
  },
  approve: {
    ...COMMAND_SPECS.approve,
    run: (rest, options, flags) => decideCommand('approve', rest, options, flags.reason),
  },
  reject: {
    ...COMMAND_SPECS.reject,
    run: (rest, options, flags) => decideCommand('reject', rest, options, flags.reason),
  },
  record: { ...COMMAND_SPECS.record, run: (rest, options, flags) => recordCommand(rest, options, flags) },
  verify: { ...COMMAND_SPECS.verify, run: (rest, options, flags) => verifyCommand(rest, options, flags) },
  keys: { ...COMMAND_SPECS.keys, run: (rest, options) => keysCommand(rest, options) },
  token: { ...COMMAND_SPECS.token, run: (rest, options, flags) => token(rest, options, flags) },
};

function mainHelp(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  return [
    TITLE,
    '',
    'Usage: workflowlookup [command] [options]   (the command defaults to serve)',
    '',
    'Commands:',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(Math.min(width, 40))}  ${c.summary}`),
    '  --help | --version',
    '',
    'Run `workflowlookup <command> --help` for its options.',
    '',
    'Environment:',
    ...ENVIRONMENT.map((e) => `  ${e.name}\n      ${e.description.replaceAll('`', '')}`),
  ].join('\n');
}

function commandHelp(command: Command): string {
  const options = optionLines(command.options);
  return [
    `Usage: workflowlookup ${command.usage}`,
    '',
    command.summary,
    ...(options.length > 0 ? ['', 'Options:', ...options] : []),
  ].join('\n');
}

class UsageError extends Error {
  constructor(
    readonly command: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

function httpFlags(flags: Flags): HttpFlags {
  return {
    ...(flags.host !== undefined ? { host: flags.host } : {}),
    ...(flags.port !== undefined ? { port: flags.port } : {}),
    ...(flags.path !== undefined ? { path: flags.path } : {}),
  };
}

/**
 * node:util's parseArgs error in our words: its unknown-option message ends in an unbalanced quote
 * (`as in '-- "--bogus"`), printed as it is it reads as a broken command line.
 */
function parseArgsMessage(error: NodeJS.ErrnoException): string {
  const option = /^Unknown option '([^']*)'/.exec(error.message)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option !== undefined)
    return `unknown option ${option} (a value that starts with "-" goes after --, as in: -- ${option})`;
  return error.message;
}

async function main(argv: string[]): Promise<number> {
  const first = argv[0];
  const named = first !== undefined && !first.startsWith('-') ? first : undefined;
  if (named !== undefined && !(named in COMMANDS)) {
    throw new UsageError(undefined, `Unknown command "${named}"`);
  }
  const name = named ?? 'serve';
  const command = COMMANDS[name] as Command;
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: named === undefined ? argv : argv.slice(1),
      options: {
        ...Object.fromEntries(Object.entries(command.options).map(([k, o]) => [k, { type: o.type }])),
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(name, parseArgsMessage(error as NodeJS.ErrnoException));
  }
  const flags = parsed.values as Flags;
  if (flags.help) {
    process.stdout.write(`${named === undefined ? mainHelp() : commandHelp(command)}\n`);
    return 0;
  }
  if (flags.version) {
    process.stdout.write(`${loadConfig().version}\n`);
    return 0;
  }
  const options: ConfigOptions = {
    ...(flags.tools !== undefined ? { tools: flags.tools } : {}),
    ...(flags['no-bundled'] ? { includeBundled: false } : {}),
    ...(flags['no-user'] ? { includeUser: false } : {}),
    ...(flags['no-project'] ? { includeProject: false } : {}),
  };
  return command.run(parsed.positionals, options, flags);
}

/** Runs the command line (entry.ts calls it once this module is loaded). */
export function run(argv: string[], started?: StdioPrelude): void {
  prelude = started;
  // A reader that goes away (`workflowlookup --help | head`) is not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
  });

  main(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      // Nobody will serve what the prelude would hand over: stop reading, so that the process ends.
      prelude?.close();
      if (error instanceof UsageError) {
        const help = error.command ? commandHelp(COMMANDS[error.command] as Command) : mainHelp();
        process.stderr.write(`workflowlookup: ${error.message}\n\n${help}\n`);
        process.exitCode = 2;
        return;
      }
      process.stderr.write(`workflowlookup: ${(error as Error)?.message ?? String(error)}\n`);
      // Settings that cannot work (bad configuration, a damaged store file) are usage errors.
      process.exitCode = error instanceof ConfigError || error instanceof StoreFileError ? 2 : 1;
    },
  );
}
