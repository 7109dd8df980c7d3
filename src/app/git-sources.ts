/**
 * Builder of the composition root (src/app.ts composes it): the git sources of the registry, with
 * the operator's tokens. Only the operator's configuration names sources and tokens; no client and
 * no workflow file can add one.
 */
import type { Config } from '../config.js';
import type { Logger } from '../telemetry/log.js';
import { GitSources } from '../workflows/git/git-sources.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import type { GitSourceSpec } from '../workflows/sources.js';

/** The per-host token variable of a host: `WORKFLOWLOOKUP_GIT_TOKEN_` + the host name, upper case, `_` for the rest. */
export function hostTokenVariable(host: string): string {
  return `WORKFLOWLOOKUP_GIT_TOKEN_${host.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** Hosts a token may be sent to over plain http (nothing but this machine). */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * The token of an http(s) source: WORKFLOWLOOKUP_GIT_TOKEN_<HOST>, else WORKFLOWLOOKUP_GIT_TOKEN. Never
 * sent over plain http to another machine, and never to ssh or file remotes (they have their own keys).
 */
export function tokenFor(spec: GitSourceSpec, env: NodeJS.ProcessEnv): string | undefined {
  if (spec.protocol !== 'https' && spec.protocol !== 'http') return undefined;
  let host: string;
  try {
    host = new URL(spec.url).hostname;
  } catch {
    return undefined;
  }
  if (spec.protocol === 'http' && !LOOPBACK.has(host)) return undefined;
  const token = env[hostTokenVariable(host)] || env.WORKFLOWLOOKUP_GIT_TOKEN || undefined;
  return token?.trim() || undefined;
}

/**
 * The Authorization header a token makes: HTTP Basic, as GitHub, GitLab, Gitea and Bitbucket accept
 * a token over git's smart HTTP (`user:token` given as is; a bare token with the user `x-access-token`).
 */
export function authorizationOf(token: string): string {
  const pair = token.includes(':') ? token : `x-access-token:${token}`;
  return `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
}

export function buildGitSources(
  config: Config,
  parts: { registry: WorkflowRegistry; log: Logger; clock?: (() => number) | undefined },
): GitSources {
  const env = config.env;
  const tokens = config.git.sources.flatMap((s) => {
    const token = s.git === undefined ? undefined : tokenFor(s.git, env);
    return token === undefined ? [] : [token, authorizationOf(token)];
  });
  return new GitSources(config.git.sources, {
    registry: parts.registry,
    protocols: config.git.protocols,
    maxBytes: config.git.maxBytes,
    timeoutMs: config.git.timeoutMs,
    intervalMs: config.git.intervalMs,
    authorization: (spec) => {
      const token = tokenFor(spec, env);
      return token === undefined ? undefined : authorizationOf(token);
    },
    secrets: [...tokens, ...tokens.map((t) => Buffer.from(t).toString('base64'))],
    log: parts.log,
    ...(parts.clock !== undefined ? { clock: parts.clock } : {}),
  });
}
