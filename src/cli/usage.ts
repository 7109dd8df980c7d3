// What every command's implementation shares with the parser (src/cli/main.ts): the parsed flags, the
// usage error main.ts answers with the command's --help (exit 2), and the HTTP flags as config takes
// them. Kept apart so that the command files and main.ts import them without importing each other.
import type { HttpFlags } from '../config.js';

export type Flags = {
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

export class UsageError extends Error {
  constructor(
    readonly command: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

export function httpFlags(flags: Flags): HttpFlags {
  return {
    ...(flags.host !== undefined ? { host: flags.host } : {}),
    ...(flags.port !== undefined ? { port: flags.port } : {}),
    ...(flags.path !== undefined ? { path: flags.path } : {}),
  };
}
