import { spawn } from 'node:child_process';

/**
 * Runs the system `git` (so the user's SSH keys and credential helpers work) without a shell, with a
 * configuration that lets it do nothing but fetch: only the allowed protocols, no hooks, no
 * submodules, no terminal prompt. A token travels in the child's environment (GIT_CONFIG_*), never in
 * its arguments, which any user of the machine can read in the process listing.
 */

/** Variables of the server's environment that would steer git somewhere else; the child never sees them. */
const STEERING =
  /^(?:GIT_(?!SSH$|SSH_COMMAND$|SSH_VARIANT$|SSL_CAINFO$|SSL_CAPATH$|ASKPASS$)|WORKFLOWLOOKUP_)/;

export interface GitRun {
  args: string[];
  /** Protocols git may use (protocol.<name>.allow=always; every other one: never). */
  protocols: readonly string[];
  /** An HTTP Authorization header value, sent through the environment. */
  authorization?: string | undefined;
  cwd?: string;
  /** Abandoned (the whole process group killed) after this long. */
  timeoutMs: number;
  /** Bytes written to stdin, then closed. */
  input?: Buffer | string;
  /** Called every 200 ms while git runs; returning a message kills git and fails the run with it. */
  poll?: () => Promise<string | undefined>;
  /** Largest stdout kept; more fails the run. */
  maxStdoutBytes?: number;
  /** Aborted: git is killed (the server is closing; a fetch is never left running behind it). */
  signal?: AbortSignal | undefined;
}

export class GitRunError extends Error {
  constructor(
    message: string,
    readonly reason: 'failed' | 'timeout' | 'limit' | 'spawn',
  ) {
    super(message);
  }
}

/** The `-c` settings every run starts with (before the subcommand). */
export function safetyConfig(protocols: readonly string[]): string[] {
  return [
    '-c',
    'protocol.allow=never',
    ...protocols.flatMap((p) => ['-c', `protocol.${p}.allow=always`]),
    '-c',
    'core.hooksPath=/dev/null',
    '-c',
    'core.fsmonitor=false',
    '-c',
    'submodule.recurse=false',
    '-c',
    'fetch.recurseSubmodules=false',
    '-c',
    'transfer.fsckObjects=false',
    '-c',
    'advice.detachedHead=false',
  ];
}

/** git's output on success; a GitRunError (with git's last stderr lines) otherwise. */
export function runGit(run: GitRun): Promise<Buffer> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!STEERING.test(k)) env[k] = v;
  Object.assign(env, {
    GIT_TERMINAL_PROMPT: '0',
    GCM_INTERACTIVE: 'never',
    // Protocols named in URLs by a user (submodules, redirects) are refused outright.
    GIT_PROTOCOL_FROM_USER: '0',
    LC_ALL: 'C',
  });
  if (run.authorization !== undefined) {
    env.GIT_CONFIG_COUNT = '1';
    env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
    env.GIT_CONFIG_VALUE_0 = `Authorization: ${run.authorization}`;
  }
  const maxStdout = run.maxStdoutBytes ?? 64 * 1024 * 1024;
  return new Promise((resolvePromise, reject) => {
    const child = spawn('git', [...safetyConfig(run.protocols), ...run.args], {
      cwd: run.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group: a timeout kills git's helpers (git-remote-https, ssh) with it.
      detached: true,
      shell: false,
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let failure: GitRunError | undefined;
    const kill = (error: GitRunError) => {
      failure ??= error;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const abandon = () => kill(new GitRunError('git was stopped: the server is closing', 'timeout'));
    if (run.signal?.aborted) abandon();
    run.signal?.addEventListener('abort', abandon, { once: true });
    const timer = setTimeout(
      () =>
        kill(new GitRunError(`git did not finish within ${Math.round(run.timeoutMs / 1000)} s`, 'timeout')),
      run.timeoutMs,
    );
    let polling = false;
    const poller =
      run.poll === undefined
        ? undefined
        : setInterval(() => {
            if (polling) return;
            polling = true;
            run
              .poll?.()
              .then((message) => {
                if (message !== undefined) kill(new GitRunError(message, 'limit'));
              })
              .catch(() => undefined)
              .finally(() => {
                polling = false;
              });
          }, 200);
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxStdout) kill(new GitRunError('git wrote more than expected', 'limit'));
      else out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      // The last few lines say what went wrong; a chatty remote cannot make the server hold more.
      err = (err + chunk.toString('utf8')).slice(-4000);
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(run.input ?? '');
    child.on('error', (error) => {
      failure ??= new GitRunError(`git could not be run: ${error.message}`, 'spawn');
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      run.signal?.removeEventListener('abort', abandon);
      if (poller !== undefined) clearInterval(poller);
      if (failure !== undefined) reject(failure);
      else if (code !== 0) reject(new GitRunError(lastLines(err) || `git exited with ${code}`, 'failed'));
      else resolvePromise(Buffer.concat(out));
    });
  });
}

/** git's own words, without progress noise: its last three non-empty lines. */
function lastLines(text: string): string {
  return text
    .split(/\r?\n|\r/)
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .slice(-3)
    .join('; ');
}
