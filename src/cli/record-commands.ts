// `workflowlookup record | verify | keys`: an execution's signed record out of the store, checked
// offline by anyone holding the team's public key, and the keys that sign it. `verify` exits 0 when
// the record holds, 1 naming the first failure, 2 when it is not a record at all (or the keys or
// options cannot be read): what CI needs to tell "the process was not followed" from "wrong input".
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createApp } from '../app.js';
import { ConfigError, type ConfigOptions, loadConfig } from '../config.js';
import { DomainFailure } from '../engine/errors.js';
import { RecordKeyError, trustedKeysFrom } from '../record/keys.js';
import {
  MAX_RECORD_BYTES,
  REQUIREMENTS,
  RecordFormatError,
  type Requirement,
  verifyRecord,
} from '../record/verify.js';
import type { Flags } from './usage.js';

/** Largest key set or workflow file `verify` reads. */
const MAX_SIDE_FILE_BYTES = 4 * 1024 * 1024;

/** The parser's flags that `record`, `verify` and `keys` read. */
export type RecordFlags = Pick<
  Flags,
  'out' | 'key' | 'keys' | 'workflow' | 'require' | 'execution' | 'head' | 'json'
>;

/** Writes the signed record of one execution (any principal's: whoever runs this reads the store). */
export async function recordCommand(
  rest: string[],
  options: ConfigOptions,
  flags: RecordFlags,
): Promise<number> {
  const [id, ...extra] = rest;
  if (id === undefined || extra.length > 0)
    throw new ConfigError(
      'record needs exactly one execution id (exec_…), as `workflowlookup list` or the dashboard shows it',
    );
  const app = createApp(loadConfig(options), { watch: false });
  try {
    const bundle = await app.services.records.signed(id, null);
    const text = `${JSON.stringify(bundle, null, 2)}\n`;
    if (flags.out !== undefined) writeFileSync(flags.out, text, { mode: 0o644 });
    else process.stdout.write(text);
    return 0;
  } catch (error) {
    if (error instanceof DomainFailure && error.error.code === 'execution_not_found') {
      process.stderr.write(`workflowlookup: record ${id}: no such execution in this store\n`);
      return 1;
    }
    if (error instanceof RecordKeyError) throw new ConfigError(error.message);
    throw error;
  } finally {
    await app.close();
  }
}

function readBounded(file: string, max: number, what: string): Buffer {
  let size: number;
  try {
    size = file === '-' ? 0 : statSync(file).size;
  } catch (error) {
    throw new ConfigError(
      `cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  if (size > max) throw new ConfigError(`${what} ${file} is ${size} bytes; at most ${max} are read`);
  try {
    const bytes = readFileSync(file === '-' ? 0 : file);
    if (bytes.length > max) throw new ConfigError(`${what} ${file} is over ${max} bytes`);
    return bytes;
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`cannot read ${what} ${file}: ${(error as Error).message}`);
  }
}

/** The trusted keys: --key (one file), --keys (a file or an http(s) URL serving a JWKS), else this host's. */
async function trustedKeys(options: ConfigOptions, flags: RecordFlags) {
  if (flags.key !== undefined && flags.keys !== undefined)
    throw new ConfigError('verify takes --key or --keys, not both');
  const source = flags.key ?? flags.keys;
  try {
    if (source === undefined) {
      // On the server host: the keys this server publishes (its data dir or configured key).
      const app = createApp(loadConfig(options), { watch: false });
      try {
        const keys = app.services.records.existing();
        if (keys === undefined)
          throw new ConfigError(
            "this host has no record keys to trust: name the team's public keys with --key FILE or --keys URL|FILE",
          );
        return keys;
      } finally {
        await app.close();
      }
    }
    if (flags.keys !== undefined && /^https?:\/\//i.test(source)) {
      const response = await fetch(source, { signal: AbortSignal.timeout(30_000) });
      if (!response.ok) throw new ConfigError(`--keys ${source} answered HTTP ${response.status}`);
      const text = await response.text();
      if (Buffer.byteLength(text) > MAX_SIDE_FILE_BYTES)
        throw new ConfigError(`--keys ${source} is too large`);
      return trustedKeysFrom(text, source);
    }
    return trustedKeysFrom(readBounded(source, MAX_SIDE_FILE_BYTES, 'the key file').toString('utf8'), source);
  } catch (error) {
    if (error instanceof RecordKeyError) throw new ConfigError(error.message);
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`cannot read the keys from ${source ?? 'this host'}: ${(error as Error).message}`);
  }
}

function requirements(list: string | undefined): Requirement[] {
  if (list === undefined) return [];
  const wanted = list
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  for (const r of wanted)
    if (!(REQUIREMENTS as readonly string[]).includes(r))
      throw new ConfigError(`--require: unknown requirement "${r}"; use ${REQUIREMENTS.join(', ')}`);
  return wanted as Requirement[];
}

/** Verifies a record file: exit 0 (it holds), 1 (the first failure, named), 2 (not a record, bad options). */
export async function verifyCommand(
  rest: string[],
  options: ConfigOptions,
  flags: RecordFlags,
): Promise<number> {
  const [file, ...extra] = rest;
  if (file === undefined || extra.length > 0)
    throw new ConfigError('verify needs exactly one record file (or - for stdin)');
  const require = requirements(flags.require);
  const record = readBounded(file, MAX_RECORD_BYTES, 'the record');
  const workflowFile =
    flags.workflow === undefined
      ? undefined
      : readBounded(flags.workflow, MAX_SIDE_FILE_BYTES, 'the workflow file');
  const keys = await trustedKeys(options, flags);
  let result: ReturnType<typeof verifyRecord>;
  try {
    result = verifyRecord(record, {
      keys,
      require,
      ...(workflowFile !== undefined ? { workflowFile } : {}),
      ...(flags.execution !== undefined ? { execution: flags.execution } : {}),
      ...(flags.head !== undefined ? { head: flags.head } : {}),
    });
  } catch (error) {
    if (error instanceof RecordFormatError) throw new ConfigError(`verify ${file}: ${error.message}`);
    throw error;
  }
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return result.ok ? 0 : 1;
  }
  if (!result.ok) {
    process.stderr.write(`workflowlookup: verify ${file}: ${result.failure}\n`);
    return 1;
  }
  const v = result.verified;
  process.stdout.write(
    [
      `verified: execution ${v.execution} of ${v.workflow}, ${v.state}`,
      `  ${v.events} events chained${v.migrated > 0 ? ` (${v.migrated} made by a migration from older telemetry)` : ''}, head ${v.head}`,
      `  signed ${v.signed_at} by key ${v.keyid}`,
      ...v.policy.map((p) => `  ${p}`),
      '',
    ].join('\n'),
  );
  return 0;
}

/** Prints the published keys (JWKS), or rotates or revokes the data dir's. */
export async function keysCommand(rest: string[], options: ConfigOptions): Promise<number> {
  const [action, keyid, ...extra] = rest;
  const app = createApp(loadConfig(options), { watch: false });
  try {
    const { keyring } = app.services.records;
    if (action === undefined) {
      process.stdout.write(`${JSON.stringify(keyring.jwks(), null, 2)}\n`);
      return 0;
    }
    if (action === 'rotate' && keyid === undefined) {
      const { retired, current } = keyring.rotate();
      process.stdout.write(
        `key ${current} signs records from now on (restart running servers); ${retired} is retired and still published, so the records it signed still verify\n`,
      );
      return 0;
    }
    if (action === 'revoke' && keyid !== undefined && extra.length === 0) {
      keyring.revoke(keyid);
      process.stdout.write(
        `key ${keyid} is no longer published: records it signed no longer verify against these keys\n`,
      );
      return 0;
    }
    throw new ConfigError('keys takes nothing (print the public keys), rotate, or revoke KEYID');
  } catch (error) {
    if (error instanceof RecordKeyError) throw new ConfigError(error.message);
    throw error;
  } finally {
    await app.close();
  }
}
