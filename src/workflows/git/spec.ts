import { createHash } from 'node:crypto';
import { isAbsolute, posix, resolve } from 'node:path';
import type { GitSourceSpec } from '../sources.js';

/**
 * Git sources as the operator configures them (WORKFLOWLOOKUP_GIT_SOURCES, WorkRail's WORKFLOW_GIT_*),
 * checked before anything runs: a URL, ref or folder that could make `git` do anything but fetch
 * (options, remote helpers such as `ext::`, protocols not allowed) is refused here, and again where
 * git is run (run-git.ts passes them after `--` and with `protocol.allow`).
 */

/** Protocols a git source may use unless WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS says otherwise. */
export const DEFAULT_GIT_PROTOCOLS: readonly string[] = ['https', 'ssh', 'file'];
/** Protocols WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS may name (git's own names for `protocol.<name>.allow`). */
export const KNOWN_GIT_PROTOCOLS: readonly string[] = ['https', 'http', 'ssh', 'git', 'file'];
/** Default sync interval (WORKFLOWLOOKUP_GIT_SYNC_INTERVAL, seconds). */
export const DEFAULT_GIT_SYNC_SECONDS = 300;
/** Default size cap per repository (WORKFLOWLOOKUP_GIT_MAX_BYTES): what one fetch may bring. */
export const DEFAULT_GIT_MAX_BYTES = 50 * 1024 * 1024;
/** How long one fetch may take before it is abandoned (the last good set stays). */
export const DEFAULT_GIT_FETCH_TIMEOUT_MS = 60_000;

/** A setting that cannot work; config.ts turns it into a ConfigError. */
export class GitSourceError extends Error {}

/** A full commit hash (SHA-1 or SHA-256): the ref of a pinned source. */
export function isCommitHash(ref: string): boolean {
  return /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(ref);
}

/**
 * A branch or tag name git would accept, and nothing that reads as an option (`-…`), a revision
 * expression (`..`, `@{`, `^`, `~`, `:`) or a pattern. `HEAD` is the remote's default branch.
 */
export function checkRef(ref: string): string {
  const ok =
    ref === 'HEAD' ||
    isCommitHash(ref) ||
    (/^[A-Za-z0-9._/-]{1,200}$/.test(ref) &&
      !ref.startsWith('-') &&
      !ref.startsWith('/') &&
      !ref.endsWith('/') &&
      !ref.endsWith('.') &&
      !ref.endsWith('.lock') &&
      !ref.includes('..') &&
      !ref.includes('//') &&
      !ref.split('/').some((part) => part.startsWith('.') || part.startsWith('-')));
  if (!ok) throw new GitSourceError(`ref ${JSON.stringify(ref)} is not a branch, tag or full commit hash`);
  return ref;
}

/** A folder inside the repository: relative, no `..`, no option-like or hidden part. */
export function checkSubdir(subdir: string): string {
  const trimmed = subdir.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  const parts = trimmed.split('/');
  if (
    !/^[A-Za-z0-9._ /-]{1,300}$/.test(trimmed) ||
    parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('-') || p.startsWith('.'))
  )
    throw new GitSourceError(
      `folder ${JSON.stringify(subdir)} is not a plain relative path in the repository`,
    );
  return posix.normalize(trimmed);
}

/**
 * The protocol a remote uses, or a GitSourceError: `<transport>::<address>` (git's remote helpers,
 * `ext::` among them, which runs a command), anything starting with `-`, spaces and control
 * characters, and URLs that carry credentials are refused.
 */
export function protocolOf(url: string): string {
  if (url === '' || url.length > 2000) throw new GitSourceError('the repository URL is empty or too long');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u0020\u007f]/.test(url))
    throw new GitSourceError('the repository URL contains spaces or control characters');
  if (url.startsWith('-')) throw new GitSourceError('the repository URL starts with "-" (an option to git)');
  if (/^[A-Za-z0-9+.-]*::/.test(url))
    throw new GitSourceError(
      'the repository URL names a remote helper (`<transport>::`, such as ext::); not allowed',
    );
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    if (scheme === 'file') return 'file';
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new GitSourceError('the repository URL cannot be parsed');
    }
    if (parsed.password !== '' || (parsed.username !== '' && scheme.startsWith('http')))
      throw new GitSourceError(
        'the repository URL carries credentials; give a token through WORKFLOWLOOKUP_GIT_TOKEN instead',
      );
    if (scheme === 'git+ssh' || scheme === 'ssh+git') return 'ssh';
    return scheme;
  }
  if (isAbsolute(url) || url.startsWith('./') || url.startsWith('../')) return 'file';
  // scp-like `[user@]host:path` (no slash before the colon) is ssh.
  if (
    /^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:[^/]/.test(url) ||
    /^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:\//.test(url)
  )
    return 'ssh';
  throw new GitSourceError('the repository is neither a URL, `user@host:path` nor an absolute path');
}

/** The id (folder in the data dir) of a source: the same URL, ref and folder always map to it. */
function sourceId(url: string, ref: string, subdir: string): string {
  return createHash('sha256').update(`${url}\n${ref}\n${subdir}`).digest('hex').slice(0, 16);
}

/** One source, checked; `allowed`: the protocols allowed. */
export function gitSource(
  raw: {
    url: string;
    ref?: string | undefined;
    subdir?: string | undefined;
    intervalMs?: number | undefined;
  },
  allowed: readonly string[],
  cwd: string,
): GitSourceSpec {
  let url = raw.url.trim();
  const protocol = protocolOf(url);
  if (!allowed.includes(protocol))
    throw new GitSourceError(
      `${JSON.stringify(url)} uses the ${protocol} protocol, which is not allowed (WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS: ${allowed.join(',')})`,
    );
  // A relative path is the operator's, relative to where the server starts.
  if (protocol === 'file' && !url.startsWith('file://')) url = resolve(cwd, url);
  const ref = checkRef((raw.ref ?? '').trim() || 'HEAD');
  const subdir = checkSubdir(raw.subdir ?? '');
  return {
    url,
    ref,
    subdir,
    id: sourceId(url, ref, subdir),
    protocol,
    ...(raw.intervalMs !== undefined ? { intervalMs: raw.intervalMs } : {}),
  };
}

/**
 * WORKFLOWLOOKUP_GIT_SOURCES: a JSON array of `{"url", "ref"?, "path"?}` (also WorkRail's
 * `repositoryUrl`/`branch`), or a comma-separated list of `url[#ref[:path]]`.
 */
export function parseGitSources(text: string, allowed: readonly string[], cwd: string): GitSourceSpec[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  if (trimmed.startsWith('[')) {
    let items: unknown;
    try {
      items = JSON.parse(trimmed);
    } catch (error) {
      throw new GitSourceError(`not valid JSON (${(error as Error).message})`);
    }
    if (!Array.isArray(items)) throw new GitSourceError('a JSON value must be an array of sources');
    return items.map((item, i) => {
      if (typeof item === 'string') return gitSource(splitEntry(item), allowed, cwd);
      const o = (item ?? {}) as Record<string, unknown>;
      const url = o.url ?? o.repositoryUrl;
      const ref = o.ref ?? o.branch;
      const subdir = o.path ?? o.subdir;
      if (
        typeof url !== 'string' ||
        (ref !== undefined && typeof ref !== 'string') ||
        (subdir !== undefined && typeof subdir !== 'string')
      )
        throw new GitSourceError(`source ${i + 1} needs a string "url" (and string "ref", "path" if given)`);
      return gitSource({ url, ref, subdir }, allowed, cwd);
    });
  }
  return trimmed
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => gitSource(splitEntry(entry), allowed, cwd));
}

/** `url#ref:path`: the ref after the last `#` (a ref never holds `:`), the folder after its first `:`. */
function splitEntry(entry: string): { url: string; ref?: string; subdir?: string } {
  const hash = entry.lastIndexOf('#');
  if (hash < 0) return { url: entry };
  const tail = entry.slice(hash + 1);
  const colon = tail.indexOf(':');
  return colon < 0
    ? { url: entry.slice(0, hash), ref: tail }
    : { url: entry.slice(0, hash), ref: tail.slice(0, colon), subdir: tail.slice(colon + 1) };
}

/**
 * WorkRail's variables (docs/workrail-compatibility.md): WORKFLOW_GIT_REPOS (a JSON array of
 * `{repositoryUrl, branch?, syncInterval?}` or a comma-separated list of URLs, branch `main`), and
 * WORKFLOW_GIT_REPO_URL with WORKFLOW_GIT_REPO_BRANCH and WORKFLOW_GIT_SYNC_INTERVAL (minutes). WorkRail
 * reads the `workflows` folder of each repository, so these sources do too.
 */
export function workrailGitSources(
  env: NodeJS.ProcessEnv,
  allowed: readonly string[],
  cwd: string,
): GitSourceSpec[] {
  const specs: GitSourceSpec[] = [];
  const repos = env.WORKFLOW_GIT_REPOS?.trim() ?? '';
  if (repos.startsWith('[')) {
    let items: unknown;
    try {
      items = JSON.parse(repos);
    } catch (error) {
      throw new GitSourceError(`WORKFLOW_GIT_REPOS is not valid JSON (${(error as Error).message})`);
    }
    if (!Array.isArray(items)) throw new GitSourceError('WORKFLOW_GIT_REPOS must be a JSON array');
    for (const item of items as Record<string, unknown>[]) {
      if (typeof item?.repositoryUrl !== 'string')
        throw new GitSourceError('each WORKFLOW_GIT_REPOS entry needs a string repositoryUrl');
      const minutes = typeof item.syncInterval === 'number' ? item.syncInterval : undefined;
      specs.push(
        gitSource(
          {
            url: item.repositoryUrl,
            ref: typeof item.branch === 'string' ? item.branch : 'main',
            subdir: 'workflows',
            ...(minutes !== undefined ? { intervalMs: Math.max(0, minutes) * 60_000 } : {}),
          },
          allowed,
          cwd,
        ),
      );
    }
  } else if (repos !== '') {
    for (const url of repos.split(',').map((u) => u.trim())) {
      if (url !== '') specs.push(gitSource({ url, ref: 'main', subdir: 'workflows' }, allowed, cwd));
    }
  }
  const single = env.WORKFLOW_GIT_REPO_URL?.trim();
  if (single) {
    specs.push(
      gitSource(
        { url: single, ref: env.WORKFLOW_GIT_REPO_BRANCH?.trim() || 'main', subdir: 'workflows' },
        allowed,
        cwd,
      ),
    );
  }
  return specs;
}
