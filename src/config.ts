import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type SourceKind = 'bundled' | 'user' | 'project' | 'storage' | 'runtime';

/** A directory of workflow definitions; later sources override earlier ones by id. */
export interface WorkflowSource {
  kind: SourceKind;
  dir: string;
}

export interface Config {
  packageRoot: string;
  version: string;
  sources: WorkflowSource[];
  runtimeDir: string;
  /** Persona directories: the `agents` directory beside each workflow source, same precedence. */
  agentDirs: string[];
  /** Where executions live (SQLite file, token secret). */
  dataDir: string;
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
  /** The server's environment, for catalog credentials (read only when a command runs). */
  env: NodeJS.ProcessEnv;
}

export const DEFAULT_TOKEN_TTL_SECONDS = 24 * 60 * 60;

/** Tool groups a user can expose (`--tools` / `WORKFLOWLOOKUP_TOOLS`). */
export const PROFILES = ['guidance', 'executions', 'authoring', 'automation'] as const;
export type Profile = (typeof PROFILES)[number];

export function parseProfiles(value: string | undefined): Set<Profile> {
  if (value === undefined || value.trim() === '' || value.trim() === 'all') return new Set(PROFILES);
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(PROFILES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new Error(
      `unknown tool profile(s) ${unknown.join(', ')}; choose from ${PROFILES.join(', ')} (or all)`,
    );
  }
  return new Set(names as Profile[]);
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

function flag(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  return !/^(0|false|no|off)$/i.test(value.trim());
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

function userDataDir(env: NodeJS.ProcessEnv): string {
  if (process.platform === 'win32') return env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support');
  return env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
}

function userConfigDir(env: NodeJS.ProcessEnv): string {
  if (process.platform === 'win32') return env.APPDATA ?? join(homedir(), 'AppData', 'Roaming');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support');
  return env.XDG_CONFIG_HOME || join(homedir(), '.config');
}

/** Resolves the workflow sources and runtime dir from the environment (see README, "Configuration"). */
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
  if (options.includeBundled ?? flag(env.WORKFLOWLOOKUP_INCLUDE_BUNDLED, true)) {
    sources.push({ kind: 'bundled', dir: join(packageRoot, 'workflows') });
  }
  if (options.includeUser ?? flag(env.WORKFLOWLOOKUP_INCLUDE_USER, true)) {
    sources.push({ kind: 'user', dir: join(homedir(), '.workflowlookup', 'workflows') });
  }
  if (options.includeProject ?? flag(env.WORKFLOWLOOKUP_INCLUDE_PROJECT, true)) {
    sources.push({ kind: 'project', dir: resolve(cwd, '.workflowlookup', 'workflows') });
  }
  for (const dir of (env.WORKFLOW_STORAGE_PATH ?? '').split(delimiter)) {
    if (dir.trim() !== '') sources.push({ kind: 'storage', dir: resolve(cwd, dir.trim()) });
  }
  sources.push({ kind: 'runtime', dir: runtimeDir });

  // The same directory named twice keeps only its highest-precedence position.
  const deduped = sources.filter((s, i) => !sources.slice(i + 1).some((later) => later.dir === s.dir));
  const allowedNames = new Set(
    (env.WORKFLOWLOOKUP_ALLOWED_ENV ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== ''),
  );
  const ttl = Number(env.WORKFLOWLOOKUP_TOKEN_TTL_SECONDS || DEFAULT_TOKEN_TTL_SECONDS);
  if (!Number.isFinite(ttl) || ttl <= 0) {
    throw new Error('WORKFLOWLOOKUP_TOKEN_TTL_SECONDS must be a positive number of seconds');
  }
  return {
    packageRoot,
    version,
    sources: deduped,
    runtimeDir,
    agentDirs: deduped.map((s) => join(dirname(s.dir), 'agents')),
    dataDir: resolve(cwd, env.WORKFLOWLOOKUP_DATA_DIR || join(userDataDir(env), 'workflowlookup')),
    tokenTtlMs: ttl * 1000,
    tokenSecret: env.WORKFLOWLOOKUP_TOKEN_SECRET,
    profiles: parseProfiles(options.tools ?? env.WORKFLOWLOOKUP_TOOLS),
    catalogsDir: join(dirname(runtimeDir), 'catalogs'),
    allowedEnv: Object.fromEntries(
      [...allowedNames].filter((n) => env[n] !== undefined).map((n) => [n, env[n] as string]),
    ),
    allowedEnvNames: allowedNames,
    allowUrlSources: flag(env.WORKFLOWLOOKUP_ALLOW_URL_SOURCES, false),
    env,
  };
}
