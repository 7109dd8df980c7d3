import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { PRIVATE_HOSTS_SETTING, parseAllowList } from './catalogs/host-policy.js';
import { type GitConfig, loadGitConfig } from './config/git.js';
import { nearestNames } from './engine/nearest.js';
import { DEFAULT_LIMITS, DEFAULT_MAX_MESSAGE_BYTES, type Limits } from './protocol/limits.js';
import type { WorkflowSource } from './workflows/sources.js';

/** Settings that cannot work: the CLI reports them and exits with code 2 before serving anything. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

import {
  DEFAULT_AUTH_FAILURE_LIMIT,
  DEFAULT_CHECK_SLOTS,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_SESSIONS_PER_PRINCIPAL,
} from './config/defaults.js';

// The table of every environment variable (declarative: the source of --help and docs/environment.md).
export { ENVIRONMENT } from './config/environment.js';
export {
  DEFAULT_AUTH_FAILURE_LIMIT,
  DEFAULT_CHECK_SLOTS,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_SESSIONS_PER_PRINCIPAL,
};

export interface Config {
  packageRoot: string;
  version: string;
  /** The directory relative paths (sources, catalog files) are resolved against. */
  cwd: string;
  /** Largest JSON-RPC message a transport accepts, in bytes. */
  maxMessageBytes: number;
  sources: WorkflowSource[];
  runtimeDir: string;
  /** Persona directories: the `agents` directory beside each workflow source, same precedence. */
  agentDirs: string[];
  /** Where executions live (SQLite file, token secret). */
  dataDir: string;
  /** A `postgres://` URL: executions live in PostgreSQL instead of the SQLite file in `dataDir`. */
  databaseUrl: string | undefined;
  tokenTtlMs: number;
  tokenSecret: string | undefined;
  profiles: Set<Profile>;
  /** Imported OpenAPI catalogs: `catalogs` beside the runtime workflow dir. */
  catalogsDir: string;
  /** Environment variables templates (`${{ env.X }}`) and input defaults may read, with their values. */
  allowedEnv: Record<string, string>;
  /** The names listed in WORKFLOWLOOKUP_ALLOWED_ENV (set or not): what manifests may reference. */
  allowedEnvNames: Set<string>;
  /** Whether catalog sources may be URLs (off by default). */
  allowUrlSources: boolean;
  /** Private, loopback and link-local hosts catalog calls and URL sources may reach (none by default). */
  allowPrivateHosts: string[];
  /** The server's environment, for catalog credentials (read only when a command runs). */
  env: NodeJS.ProcessEnv;
  /** Port of the standalone dashboard (`workflowlookup dashboard`). */
  dashboardPort: number;
  /** What clients may hold open at once, per principal and in total (docs/http.md, "Limits"). */
  limits: Limits;
  /** Whether approvals are asked of the client's user through elicitation, per transport. */
  approvalElicitation: { stdio: boolean; http: boolean };
  /**
   * Principals who may decide other principals' approvals where a step names them
   * (WORKFLOWLOOKUP_APPROVERS): the operator's grant, never a workflow author's.
   */
  approvers: ReadonlySet<string>;
  /**
   * The key execution records are signed with (WORKFLOWLOOKUP_RECORD_KEY: a PEM Ed25519 private key or
   * its file; default generated into the data dir) and older public keys still published
   * (WORKFLOWLOOKUP_RECORD_PUBLIC_KEYS), both as given.
   */
  recordKey: { key?: string; publicKeys?: string };
  /** The operator's checks file (WORKFLOWLOOKUP_CHECKS_FILE), absolute; undefined: no checks. */
  checksFile: string | undefined;
  /** Whether `serve --http` may run checks (WORKFLOWLOOKUP_HTTP_CHECKS). */
  httpChecks: boolean;
  /** How many checks run at once, per principal, and wait (WORKFLOWLOOKUP_CHECKS_MAX_*). */
  checkSlots: { maxConcurrent: number; maxPerPrincipal: number; maxQueued: number };
  /** How deep child executions may nest, and how many a principal may have open at once. */
  delegation: { maxDepth: number; maxOpenChildren: number };
  /** Git sources and their settings (WORKFLOWLOOKUP_GIT_*); their sources are in `sources` too. */
  git: GitConfig;
}

export const DEFAULT_TOKEN_TTL_SECONDS = 24 * 60 * 60;

/** A whole number from the environment (its default when unset), parsed strictly (integerSetting). */
function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  return integerSetting(env[name], name, { min, fallback });
}
export const DEFAULT_DASHBOARD_PORT = 3928;
export const DEFAULT_HTTP_PORT = 3927;

const TRUE = /^(true|1|yes|on)$/i;
const FALSE = /^(false|0|no|off)$/i;

/**
 * A boolean setting: `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`, any case), unset or empty for
 * the default; anything else is a ConfigError naming the variable, never a silent guess.
 */
export function booleanSetting(value: string | undefined, where: string, fallback: boolean): boolean {
  const text = value?.trim() ?? '';
  if (text === '') return fallback;
  if (TRUE.test(text)) return true;
  if (FALSE.test(text)) return false;
  throw new ConfigError(
    `${where} must be true or false (also 1/0, yes/no, on/off), not ${JSON.stringify(value)}`,
  );
}

/**
 * A whole-number setting within bounds (digits only: no sign, fraction, exponent or hex), unset or empty
 * for the default; anything else is a ConfigError naming the variable and what it accepts.
 */
export function integerSetting(
  value: string | undefined,
  where: string,
  bounds: { min: number; max?: number; fallback: number; unit?: string; zero?: string },
): number {
  const text = value?.trim() ?? '';
  if (text === '') return bounds.fallback;
  const n = /^\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
  if (Number.isSafeInteger(n) && n >= bounds.min && (bounds.max === undefined || n <= bounds.max)) return n;
  const range = bounds.max === undefined ? `at least ${bounds.min}` : `${bounds.min}-${bounds.max}`;
  throw new ConfigError(
    `${where} must be a whole number${bounds.unit ? ` of ${bounds.unit}` : ''}, ${range}${bounds.zero ? ` (0: ${bounds.zero})` : ''}, not ${JSON.stringify(value)}`,
  );
}

/** A TCP port number (0 lets the system choose), or a ConfigError naming where it came from. */
export function parsePort(value: string, where: string): number {
  const text = value.trim();
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) {
    throw new ConfigError(
      `${where} must be a port number 0-65535 (0 picks a free port), not ${JSON.stringify(value)}`,
    );
  }
  return port;
}

/**
 * Tool groups (`--tools` / `WORKFLOWLOOKUP_TOOLS`): which tools `tools/list` shows. Every tool stays
 * callable whatever is listed. `core`, the small set most agents need, is always listed (it holds
 * `workflow_tools`, through which an agent lists the others); each group named adds its tools to it.
 * One group per kind of client need, so a client lists only what it can use: `tasks` holds every tool
 * that needs a client with MCP tasks (and sampling or elicitation for the orchestrations).
 */
export const TOOL_GROUPS = {
  core: 'always listed: find workflows, walk them (stateless or durable), resume one, and list more groups',
  guidance: 'stateless guidance: the client keeps the state',
  executions: 'durable executions: start, advance, pause, resume, find and purge them',
  authoring: 'check, save, rename and delete workflow definitions',
  automation: 'inputs, templates, step plans and OpenAPI catalogs for command steps',
  tasks:
    'runs as MCP tasks the server drives, their cancellation, and the orchestrations (need a client with tasks)',
} as const;
export type Profile = keyof typeof TOOL_GROUPS;
export const PROFILES = Object.keys(TOOL_GROUPS) as Profile[];

/** The groups a `--tools` value lists: `core` plus those named (`all`: every group). */
export function parseProfiles(value: string | undefined): Set<Profile> {
  const names = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.includes('all')) return new Set(PROFILES);
  const unknown = names.filter((n) => !(PROFILES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new ConfigError(
      `unknown tool group(s) ${unknown.join(', ')} in --tools / WORKFLOWLOOKUP_TOOLS; choose from ${PROFILES.join(', ')} (or all), comma-separated`,
    );
  }
  return new Set(['core', ...(names as Profile[])]);
}

export interface ConfigOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** CLI switches; each overrides the matching env var when set. */
  includeBundled?: boolean;
  includeUser?: boolean;
  includeProject?: boolean;
  /** Comma-separated tool profiles (overrides WORKFLOWLOOKUP_TOOLS). */
  tools?: string;
}

/** The package root, found by walking up from this module (works from src/ and from the bundle). */
export function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'workflowlookup')
          return dir;
      } catch {
        // not ours; keep walking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('workflowlookup: cannot find the package root');
    dir = parent;
  }
}

/**
 * The user's home as the configuration's environment names it: os.homedir() reads the process's own
 * HOME, so a configuration loaded for another environment (a test's sandbox) would see the real home.
 */
function homeOf(env: NodeJS.ProcessEnv): string {
  return (process.platform === 'win32' ? env.USERPROFILE : env.HOME) || homedir();
}

function userDataDir(env: NodeJS.ProcessEnv): string {
  if (process.platform === 'win32') return env.LOCALAPPDATA ?? join(homeOf(env), 'AppData', 'Local');
  if (process.platform === 'darwin') return join(homeOf(env), 'Library', 'Application Support');
  return env.XDG_DATA_HOME || join(homeOf(env), '.local', 'share');
}

function userConfigDir(env: NodeJS.ProcessEnv): string {
  if (process.platform === 'win32') return env.APPDATA ?? join(homeOf(env), 'AppData', 'Roaming');
  if (process.platform === 'darwin') return join(homeOf(env), 'Library', 'Application Support');
  return env.XDG_CONFIG_HOME || join(homeOf(env), '.config');
}

/** The scheme of a URL-looking value (`ftp://x` → `ftp`); a path (even `C:\\dir`) has none. */
function schemeOf(value: string): string | undefined {
  return /^([a-z][a-z0-9+.-]+):\/\//i.exec(value)?.[1]?.toLowerCase();
}

/** ` (did you mean postgres://?)` for a near miss of the PostgreSQL schemes, else nothing. */
function schemeHint(scheme: string): string {
  const near = nearestNames(scheme, ['postgres', 'postgresql'], 1)[0];
  return near ? ` (did you mean ${near}://?)` : '';
}

/** A PostgreSQL URL that can be parsed; the message never repeats the URL, which may hold a password. */
function checkDatabaseUrl(url: string, where = 'WORKFLOWLOOKUP_DATABASE_URL'): void {
  const scheme = schemeOf(url) ?? /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme !== 'postgres' && scheme !== 'postgresql') {
    throw new ConfigError(
      `${where} must be a postgres:// or postgresql:// URL${scheme ? `, not ${scheme}:${schemeHint(scheme)}` : ''}; unset it to keep executions in SQLite`,
    );
  }
  try {
    new URL(url);
  } catch {
    throw new ConfigError(
      `${where} is not a valid URL (characters such as @ : / # in the password must be percent-encoded)`,
    );
  }
}

/**
 * The store a command names (`--store`): a postgres:// URL, or a SQLite data directory (resolved
 * against `cwd`). Any other URL scheme is a ConfigError, never a directory named after it.
 */
export function storeTargetOf(value: string, where: string, cwd: string): string {
  const text = value.trim();
  if (text === '') throw new ConfigError(`${where} must name a SQLite data directory or a postgres:// URL`);
  const scheme = schemeOf(text);
  if (scheme === undefined) return resolve(cwd, text);
  if (scheme !== 'postgres' && scheme !== 'postgresql') {
    throw new ConfigError(
      `${where}: unknown scheme ${scheme}://${schemeHint(scheme)}; a store is a SQLite data directory (a path) or a postgres:// (postgresql://) URL`,
    );
  }
  checkDatabaseUrl(text, where);
  return text;
}

/** Resolves the workflow sources and runtime dir from the environment (see docs/workflow-format.md, "Where workflows come from"). */
export function loadConfig(options: ConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const packageRoot = findPackageRoot();
  const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string })
    .version;

  const runtimeDir = resolve(
    cwd,
    env.WORKFLOWLOOKUP_WORKFLOWS_PATH ||
      (env.WORKFLOWLOOKUP_CONFIG_PATH
        ? join(dirname(env.WORKFLOWLOOKUP_CONFIG_PATH), 'workflows')
        : join(userConfigDir(env), 'workflowlookup', 'workflows')),
  );

  const sources: WorkflowSource[] = [];
  if (
    options.includeBundled ??
    booleanSetting(env.WORKFLOWLOOKUP_INCLUDE_BUNDLED, 'WORKFLOWLOOKUP_INCLUDE_BUNDLED', true)
  ) {
    sources.push({ kind: 'bundled', dir: join(packageRoot, 'workflows') });
  }
  if (
    options.includeUser ??
    booleanSetting(env.WORKFLOWLOOKUP_INCLUDE_USER, 'WORKFLOWLOOKUP_INCLUDE_USER', true)
  ) {
    sources.push({ kind: 'user', dir: join(homeOf(env), '.workflowlookup', 'workflows') });
  }
  if (
    options.includeProject ??
    booleanSetting(env.WORKFLOWLOOKUP_INCLUDE_PROJECT, 'WORKFLOWLOOKUP_INCLUDE_PROJECT', true)
  ) {
    sources.push({ kind: 'project', dir: resolve(cwd, '.workflowlookup', 'workflows') });
  }
  for (const dir of (env.WORKFLOW_STORAGE_PATH ?? '').split(delimiter)) {
    if (dir.trim() !== '') sources.push({ kind: 'storage', dir: resolve(cwd, dir.trim()) });
  }
  // Git sources rank above the directories an operator names and below where saves land.
  const dataDir = resolve(cwd, env.WORKFLOWLOOKUP_DATA_DIR || join(userDataDir(env), 'workflowlookup'));
  let git: GitConfig;
  try {
    git = loadGitConfig(env, cwd, dataDir, (name, fallback, min) => wholeNumber(env, name, fallback, min));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError((error as Error).message);
  }
  sources.push(...git.sources);
  sources.push({ kind: 'runtime', dir: runtimeDir });

  // The same directory named twice keeps only its highest-precedence position.
  const deduped = sources.filter((s, i) => !sources.slice(i + 1).some((later) => later.dir === s.dir));
  const allowedNames = new Set(
    (env.WORKFLOWLOOKUP_ALLOWED_ENV ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== ''),
  );
  const ttl = integerSetting(env.WORKFLOWLOOKUP_TOKEN_TTL_SECONDS, 'WORKFLOWLOOKUP_TOKEN_TTL_SECONDS', {
    min: 1,
    fallback: DEFAULT_TOKEN_TTL_SECONDS,
    unit: 'seconds',
  });
  const secret = env.WORKFLOWLOOKUP_TOKEN_SECRET || undefined;
  if (secret !== undefined && secret.length < 32) {
    throw new ConfigError(
      `WORKFLOWLOOKUP_TOKEN_SECRET must be at least 32 characters (it has ${secret.length}); unset it to use a generated one`,
    );
  }
  const databaseUrl = env.WORKFLOWLOOKUP_DATABASE_URL?.trim() || undefined;
  if (databaseUrl !== undefined) checkDatabaseUrl(databaseUrl);
  const maxMessageBytes = integerSetting(
    env.WORKFLOWLOOKUP_MAX_MESSAGE_BYTES,
    'WORKFLOWLOOKUP_MAX_MESSAGE_BYTES',
    { min: 1024, fallback: DEFAULT_MAX_MESSAGE_BYTES, unit: 'bytes' },
  );
  const privateHosts = parseAllowList(env[PRIVATE_HOSTS_SETTING]);
  if (privateHosts.problems.length > 0) {
    throw new ConfigError(`${PRIVATE_HOSTS_SETTING}: ${privateHosts.problems.join('; ')}`);
  }
  const config: Config = {
    packageRoot,
    version,
    cwd,
    maxMessageBytes,
    sources: deduped,
    runtimeDir,
    agentDirs: deduped.filter((s) => s.kind !== 'git').map((s) => join(dirname(s.dir), 'agents')),
    dataDir,
    databaseUrl,
    tokenTtlMs: ttl * 1000,
    tokenSecret: secret,
    profiles: parseProfiles(options.tools ?? env.WORKFLOWLOOKUP_TOOLS),
    catalogsDir: join(dirname(runtimeDir), 'catalogs'),
    allowedEnv: Object.fromEntries(
      [...allowedNames].filter((n) => env[n] !== undefined).map((n) => [n, env[n] as string]),
    ),
    allowedEnvNames: allowedNames,
    allowUrlSources: booleanSetting(
      env.WORKFLOWLOOKUP_ALLOW_URL_SOURCES,
      'WORKFLOWLOOKUP_ALLOW_URL_SOURCES',
      false,
    ),
    allowPrivateHosts: privateHosts.entries,
    env,
    dashboardPort: env.WORKFLOWLOOKUP_DASHBOARD_PORT?.trim()
      ? parsePort(env.WORKFLOWLOOKUP_DASHBOARD_PORT, 'WORKFLOWLOOKUP_DASHBOARD_PORT')
      : DEFAULT_DASHBOARD_PORT,
    limits: {
      subscriptionsPerSession: wholeNumber(
        env,
        'WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS',
        DEFAULT_LIMITS.subscriptionsPerSession,
      ),
      subscriptionsPerPrincipal: wholeNumber(
        env,
        'WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS_PER_PRINCIPAL',
        DEFAULT_LIMITS.subscriptionsPerPrincipal,
      ),
      tasks: wholeNumber(env, 'WORKFLOWLOOKUP_MAX_TASKS', DEFAULT_LIMITS.tasks),
      tasksPerPrincipal: wholeNumber(
        env,
        'WORKFLOWLOOKUP_MAX_TASKS_PER_PRINCIPAL',
        DEFAULT_LIMITS.tasksPerPrincipal,
      ),
      streams: wholeNumber(env, 'WORKFLOWLOOKUP_DASHBOARD_MAX_STREAMS', DEFAULT_LIMITS.streams),
      streamsPerPrincipal: wholeNumber(
        env,
        'WORKFLOWLOOKUP_DASHBOARD_MAX_STREAMS_PER_PRINCIPAL',
        DEFAULT_LIMITS.streamsPerPrincipal,
      ),
    },
    approvalElicitation: { stdio: true, http: false },
    approvers: new Set(list(env.WORKFLOWLOOKUP_APPROVERS)),
    recordKey: {
      ...(env.WORKFLOWLOOKUP_RECORD_KEY ? { key: recordKeyValue(cwd, env.WORKFLOWLOOKUP_RECORD_KEY) } : {}),
      ...(env.WORKFLOWLOOKUP_RECORD_PUBLIC_KEYS
        ? { publicKeys: resolve(cwd, env.WORKFLOWLOOKUP_RECORD_PUBLIC_KEYS) }
        : {}),
    },
    checksFile: undefined,
    httpChecks: false,
    delegation: {
      maxDepth: wholeNumber(env, 'WORKFLOWLOOKUP_MAX_DELEGATION_DEPTH', 3),
      maxOpenChildren: wholeNumber(env, 'WORKFLOWLOOKUP_MAX_OPEN_CHILDREN', 200),
    },
    checkSlots: {
      maxConcurrent: wholeNumber(
        env,
        'WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT',
        DEFAULT_CHECK_SLOTS.maxConcurrent,
      ),
      maxPerPrincipal: wholeNumber(
        env,
        'WORKFLOWLOOKUP_CHECKS_MAX_PER_PRINCIPAL',
        DEFAULT_CHECK_SLOTS.maxPerPrincipal,
      ),
      maxQueued: wholeNumber(env, 'WORKFLOWLOOKUP_CHECKS_MAX_QUEUED', DEFAULT_CHECK_SLOTS.maxQueued, 0),
    },
    git,
  };
  const elicit = env.WORKFLOWLOOKUP_APPROVAL_ELICITATION?.trim() ?? '';
  config.approvalElicitation =
    elicit === ''
      ? // A stdio client is the user's own; an HTTP client may be a shared agent host (docs).
        { stdio: true, http: false }
      : (() => {
          const on = booleanSetting(elicit, 'WORKFLOWLOOKUP_APPROVAL_ELICITATION', false);
          return { stdio: on, http: on };
        })();
  config.checksFile = env.WORKFLOWLOOKUP_CHECKS_FILE?.trim()
    ? resolve(cwd, env.WORKFLOWLOOKUP_CHECKS_FILE.trim())
    : undefined;
  if (config.checksFile !== undefined && !existsSync(config.checksFile)) {
    throw new ConfigError(`WORKFLOWLOOKUP_CHECKS_FILE: ${config.checksFile} does not exist`);
  }
  config.httpChecks = booleanSetting(env.WORKFLOWLOOKUP_HTTP_CHECKS, 'WORKFLOWLOOKUP_HTTP_CHECKS', false);
  // The HTTP settings are read by `serve --http` only, but a bad value is refused by every command:
  // a typo in a shell profile surfaces at once, not when the server is first run over HTTP.
  httpNumbersAndFlags(env);
  return config;
}

/**
 * Refuses to serve a PostgreSQL database without WORKFLOWLOOKUP_TOKEN_SECRET. Replicas sharing the
 * database must sign continuation tokens with one secret, or a token issued by one is refused by the
 * others (only when a load balancer sends the next call elsewhere: a failure that hides in testing).
 * The secret is not kept in the database, where anyone who can read it (a backup, a reporting role)
 * could forge tokens for any principal's executions: it comes from the configuration, like the
 * database password.
 */
export function checkSharedSecret(config: Config): void {
  if (config.databaseUrl !== undefined && config.tokenSecret === undefined) {
    throw new ConfigError(
      'WORKFLOWLOOKUP_DATABASE_URL is set but WORKFLOWLOOKUP_TOKEN_SECRET is not: every server on a shared database must sign continuation tokens with the same secret, or a token issued by one replica is refused by another. Set WORKFLOWLOOKUP_TOKEN_SECRET (at least 32 random characters, e.g. from `openssl rand -hex 32`) to the same value on every replica',
    );
  }
}

export type AuthMode = 'none' | 'jwt' | 'tokens';

/** Settings of `serve --http` (and the dashboard under it). */
export interface HttpSettings {
  host: string;
  port: number;
  path: string;
  /** The endpoint's public URL: the protected resource clients name in their tokens. */
  publicUrl: string;
  allowedHosts: string[];
  allowedOrigins: string[];
  auth:
    | { mode: 'none' }
    | {
        mode: 'jwt';
        issuer: string;
        audience: string;
        jwksUrl: string | undefined;
        jwksFile: string | undefined;
        principalClaim: string;
      }
    | { mode: 'tokens'; file: string };
  /** Requests per minute per principal (0: no limit). */
  rateLimit: number;
  maxSessions: number;
  /** Sessions of one principal (the whole cap without authentication: everyone is the local user). */
  maxSessionsPerPrincipal: number;
  /** Largest request head in bytes (node:http's maxHeaderSize); larger ones get 431. */
  maxHeaderBytes: number;
  /** Failed bearer tokens per minute per client address (0: no limit). */
  authFailureLimit: number;
  /** Serve the dashboard under /dashboard (WORKFLOWLOOKUP_HTTP_DASHBOARD, default on). */
  dashboard: boolean;
}

export interface HttpFlags {
  host?: string;
  port?: string;
  path?: string;
}

/** The numbers and switches of `serve --http`, parsed strictly. */
function httpNumbersAndFlags(env: NodeJS.ProcessEnv) {
  return {
    port: env.WORKFLOWLOOKUP_HTTP_PORT?.trim()
      ? parsePort(env.WORKFLOWLOOKUP_HTTP_PORT, 'WORKFLOWLOOKUP_HTTP_PORT')
      : DEFAULT_HTTP_PORT,
    rateLimit: integerSetting(env.WORKFLOWLOOKUP_RATE_LIMIT, 'WORKFLOWLOOKUP_RATE_LIMIT', {
      min: 0,
      fallback: 600,
      unit: 'requests per minute',
      zero: 'no limit',
    }),
    maxSessions: integerSetting(env.WORKFLOWLOOKUP_HTTP_MAX_SESSIONS, 'WORKFLOWLOOKUP_HTTP_MAX_SESSIONS', {
      min: 1,
      fallback: 256,
      unit: 'sessions',
    }),
    perPrincipal: wholeNumber(
      env,
      'WORKFLOWLOOKUP_HTTP_MAX_SESSIONS_PER_PRINCIPAL',
      DEFAULT_SESSIONS_PER_PRINCIPAL,
    ),
    maxHeaderBytes: wholeNumber(env, 'WORKFLOWLOOKUP_HTTP_MAX_HEADER_BYTES', DEFAULT_MAX_HEADER_BYTES, 1024),
    authFailureLimit: wholeNumber(env, 'WORKFLOWLOOKUP_AUTH_FAILURE_LIMIT', DEFAULT_AUTH_FAILURE_LIMIT, 0),
    dashboard: booleanSetting(env.WORKFLOWLOOKUP_HTTP_DASHBOARD, 'WORKFLOWLOOKUP_HTTP_DASHBOARD', true),
  };
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** Whether a bind address only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

const list = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');

/**
 * HTTP settings from flags and the environment. Safe by default: loopback only, and a server reachable
 * from other machines must authenticate its callers (a ConfigError otherwise).
 */
export function loadHttpSettings(config: Config, flags: HttpFlags = {}): HttpSettings {
  const env = config.env;
  const host = flags.host ?? env.WORKFLOWLOOKUP_HTTP_HOST ?? '127.0.0.1';
  const port = flags.port !== undefined ? parsePort(flags.port, '--port') : httpNumbersAndFlags(env).port;
  const path = flags.path ?? env.WORKFLOWLOOKUP_HTTP_PATH ?? '/mcp';
  if (!/^\/[A-Za-z0-9/_.-]*$/.test(path) || path.endsWith('/') || path.startsWith('/dashboard')) {
    throw new ConfigError(
      `the HTTP path must look like /mcp (no trailing slash, not under /dashboard), not ${path}`,
    );
  }
  const mode = (env.WORKFLOWLOOKUP_AUTH || 'none').trim();
  let auth: HttpSettings['auth'];
  if (mode === 'none') auth = { mode: 'none' };
  else if (mode === 'tokens') {
    auth = {
      mode: 'tokens',
      file: resolve(config.cwd, env.WORKFLOWLOOKUP_TOKENS_FILE || join(config.dataDir, 'tokens.json')),
    };
  } else if (mode === 'jwt') {
    const issuer = env.WORKFLOWLOOKUP_JWT_ISSUER;
    const audience = env.WORKFLOWLOOKUP_JWT_AUDIENCE;
    const jwksUrl = env.WORKFLOWLOOKUP_JWKS_URL || undefined;
    const jwksFile = env.WORKFLOWLOOKUP_JWKS_FILE
      ? resolve(config.cwd, env.WORKFLOWLOOKUP_JWKS_FILE)
      : undefined;
    if (!issuer || !audience || (jwksUrl === undefined) === (jwksFile === undefined)) {
      throw new ConfigError(
        'WORKFLOWLOOKUP_AUTH=jwt needs WORKFLOWLOOKUP_JWT_ISSUER, WORKFLOWLOOKUP_JWT_AUDIENCE and exactly one of WORKFLOWLOOKUP_JWKS_URL or WORKFLOWLOOKUP_JWKS_FILE',
      );
    }
    auth = {
      mode: 'jwt',
      issuer,
      audience,
      jwksUrl,
      jwksFile,
      principalClaim: env.WORKFLOWLOOKUP_JWT_PRINCIPAL_CLAIM || 'sub',
    };
  } else {
    throw new ConfigError(
      `WORKFLOWLOOKUP_AUTH must be jwt or tokens (or unset), not ${JSON.stringify(mode)}`,
    );
  }
  if (auth.mode === 'none' && !isLoopback(host)) {
    throw new ConfigError(
      `refusing to serve ${host} without authentication: anyone who can reach it could run workflows. Set WORKFLOWLOOKUP_AUTH (jwt or tokens), or bind 127.0.0.1`,
    );
  }
  const { rateLimit, maxSessions, perPrincipal, maxHeaderBytes, authFailureLimit, dashboard } =
    httpNumbersAndFlags(env);
  const bindName = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const allowedHosts = list(env.WORKFLOWLOOKUP_ALLOWED_HOSTS);
  const hosts = allowedHosts.length > 0 ? allowedHosts : [...new Set([...LOOPBACK_NAMES, bindName])];
  const origins = list(env.WORKFLOWLOOKUP_ALLOWED_ORIGINS);
  return {
    host,
    port,
    path,
    publicUrl:
      env.WORKFLOWLOOKUP_PUBLIC_URL ||
      `http://${bindName === '0.0.0.0' ? 'localhost' : bindName}:${port}${path}`,
    allowedHosts: hosts,
    allowedOrigins: origins.length > 0 ? origins : hosts,
    auth,
    rateLimit,
    maxSessions,
    maxSessionsPerPrincipal: auth.mode === 'none' ? maxSessions : Math.min(perPrincipal, maxSessions),
    maxHeaderBytes,
    authFailureLimit,
    dashboard,
  };
}

/** WORKFLOWLOOKUP_RECORD_KEY: a PEM key as text stays text; anything else is a path, from cwd. */
function recordKeyValue(cwd: string, value: string): string {
  return value.trimStart().startsWith('-----BEGIN') ? value : resolve(cwd, value);
}
