// `workflowlookup migrate | export | import`: act on the store `--store` names (a data dir or a
// postgres:// URL; the configured one by default), opened through openStoreAt rather than an app: the
// one place outside the composition root that opens a store, since the target may be another store.
import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { openStoreAt } from '../app/store.js';
import { type Config, ConfigError, type ConfigOptions, loadConfig, storeTargetOf } from '../config.js';
import { existingTokenSecret, type SigningSecret, secretFingerprint } from '../executions/tokens.js';
import { isPostgresUrl } from '../store/open-store.js';
import { DATABASE_FILE } from '../store/sqlite/sqlite-file.js';
import type { ExportHeader } from '../store/transfer.js';
import { type Flags, UsageError } from './usage.js';

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

export async function migrateCommand(options: ConfigOptions, flags: Flags): Promise<number> {
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
export async function exportCommand(options: ConfigOptions, flags: Flags): Promise<number> {
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

export async function importCommand(rest: string[], options: ConfigOptions, flags: Flags): Promise<number> {
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
