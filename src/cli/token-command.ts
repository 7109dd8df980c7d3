// `workflowlookup token add | list | remove`: the bearer tokens of WORKFLOWLOOKUP_AUTH=tokens, in the
// file the HTTP settings name (or the data dir's tokens.json).
import { join } from 'node:path';
import { type ConfigOptions, loadConfig, loadHttpSettings } from '../config.js';
import { addToken, listTokens, parseScopes, removeToken } from '../transports/http-auth.js';
import { type Flags, httpFlags, UsageError } from './usage.js';

export async function token(rest: string[], options: ConfigOptions, flags: Flags): Promise<number> {
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
