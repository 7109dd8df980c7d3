import { join } from 'node:path';
import {
  DEFAULT_GIT_FETCH_TIMEOUT_MS,
  DEFAULT_GIT_MAX_BYTES,
  DEFAULT_GIT_PROTOCOLS,
  DEFAULT_GIT_SYNC_SECONDS,
  GitSourceError,
  KNOWN_GIT_PROTOCOLS,
  parseGitSources,
  workrailGitSources,
} from '../workflows/git/spec.js';
import type { WorkflowSource } from '../workflows/sources.js';

/** The git sources' settings (docs/git-sources.md). */
export interface GitConfig {
  /** The git sources, in precedence order (lowest first), as workflow sources. */
  sources: WorkflowSource[];
  protocols: string[];
  /** Default sync interval in ms (0: at start and on `workflowlookup sources sync` only). */
  intervalMs: number;
  maxBytes: number;
  timeoutMs: number;
}

/** Where each git source's checkouts and state live: `<data dir>/git-sources/<id>`. */
export const GIT_SOURCES_DIR = 'git-sources';

/**
 * Reads WORKFLOWLOOKUP_GIT_* (and WorkRail's WORKFLOW_GIT_*, placed before ours); a setting that
 * cannot work throws with the variable's name (config.ts makes it a ConfigError).
 */
export function loadGitConfig(
  env: NodeJS.ProcessEnv,
  cwd: string,
  dataDir: string,
  whole: (name: string, fallback: number, min: number) => number,
): GitConfig {
  const allowText = env.WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS?.trim() ?? '';
  const protocols =
    allowText === ''
      ? [...DEFAULT_GIT_PROTOCOLS]
      : allowText
          .split(',')
          .map((p) => p.trim().toLowerCase())
          .filter((p) => p !== '');
  const unknown = protocols.filter((p) => !KNOWN_GIT_PROTOCOLS.includes(p));
  if (unknown.length > 0)
    throw new GitSourceError(
      `WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: ${unknown.join(', ')} is not one of ${KNOWN_GIT_PROTOCOLS.join(', ')}`,
    );
  const named = (name: string, read: () => ReturnType<typeof parseGitSources>) => {
    try {
      return read();
    } catch (error) {
      throw new GitSourceError(`${name}: ${(error as Error).message}`);
    }
  };
  const specs = [
    ...named('WORKFLOW_GIT_REPOS', () => workrailGitSources(env, protocols, cwd)),
    ...named('WORKFLOWLOOKUP_GIT_SOURCES', () =>
      parseGitSources(env.WORKFLOWLOOKUP_GIT_SOURCES ?? '', protocols, cwd),
    ),
  ];
  // Ours in seconds; WorkRail's in minutes.
  const workrailMinutes = env.WORKFLOW_GIT_SYNC_INTERVAL?.trim();
  const seconds =
    env.WORKFLOWLOOKUP_GIT_SYNC_INTERVAL?.trim() || !workrailMinutes
      ? whole('WORKFLOWLOOKUP_GIT_SYNC_INTERVAL', DEFAULT_GIT_SYNC_SECONDS, 0)
      : whole('WORKFLOW_GIT_SYNC_INTERVAL', DEFAULT_GIT_SYNC_SECONDS / 60, 0) * 60;
  // The same repository, ref and folder named twice keeps its later (higher) place.
  const unique = specs.filter((s, i) => !specs.slice(i + 1).some((later) => later.id === s.id));
  return {
    sources: unique.map((git) => ({
      kind: 'git' as const,
      dir: join(dataDir, GIT_SOURCES_DIR, git.id),
      git,
    })),
    protocols,
    intervalMs: seconds * 1000,
    maxBytes: whole('WORKFLOWLOOKUP_GIT_MAX_BYTES', DEFAULT_GIT_MAX_BYTES, 1024),
    timeoutMs: whole('WORKFLOWLOOKUP_GIT_TIMEOUT', DEFAULT_GIT_FETCH_TIMEOUT_MS / 1000, 1) * 1000,
  };
}
