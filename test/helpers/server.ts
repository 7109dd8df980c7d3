import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI = join(ROOT, 'dist', 'cli.js');
export const FIXTURES = join(ROOT, 'test', 'fixtures');

/** An isolated home, project dir and runtime dir, so no test sees the developer's own workflows. */
export interface Sandbox {
  root: string;
  home: string;
  project: string;
  runtime: string;
  env: Record<string, string>;
  cleanup(): void;
}

/** A workflow of two agent steps (`first`, `second`), as YAML: the smallest one that advances. */
export function twoSteps(id: string, name: string): string {
  return [
    `id: ${id}`,
    `name: ${name}`,
    'description: Two agent steps',
    'version: 1.0.0',
    'steps:',
    '  - {id: first, title: First, prompt: Do the first thing.}',
    '  - {id: second, title: Second, prompt: Do the second thing.}',
    '',
  ].join('\n');
}

export function sandbox(extraEnv: Record<string, string> = {}): Sandbox {
  const root = mkdtempSync(join(tmpdir(), 'wl-test-'));
  const home = join(root, 'home');
  const project = join(root, 'project');
  const runtime = join(root, 'runtime');
  for (const d of [home, project, runtime]) mkdirSync(d, { recursive: true });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    // In-process apps read the data dir from this env, not from the process's HOME.
    XDG_DATA_HOME: join(home, '.local', 'share'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: runtime,
    ...extraEnv,
  };
  return { root, home, project, runtime, env, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export const INIT = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '1.0.0' } },
};

/**
 * How long a test waits on a spawned process that is alive but has not given the signal awaited yet (a
 * line, its announced URL): a hang detector, not a speed check. Every wait is on the process's own
 * signal, and one that exits fails the wait at once with its stderr, so a slow machine only waits
 * longer. It stays below the integration tests' own timeout (vitest.config.ts) so that a hang reports
 * what the process said rather than vitest's bare "timed out".
 */
export const SPAWNED_WAIT_MS = 100_000;

/** A server spoken to in raw JSON-RPC lines. */
export class RawServer {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: string[] = [];
  stderr = '';
  private waiters: (() => void)[] = [];
  private partial = '';
  private dead = false;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  /** `shell`: POSIX shell commands run before the server replaces the shell (e.g. `ulimit -f 8`). */
  constructor(opts: { env: Record<string, string>; cwd: string; args?: string[]; shell?: string }) {
    const argv = [CLI, ...(opts.args ?? [])];
    this.child = opts.shell
      ? spawn('/bin/sh', ['-c', `${opts.shell}; exec "$0" "$@"`, process.execPath, ...argv], {
          env: opts.env,
          cwd: opts.cwd,
        })
      : spawn(process.execPath, argv, { env: opts.env, cwd: opts.cwd });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.partial += chunk;
      const parts = this.partial.split('\n');
      this.partial = parts.pop() ?? '';
      this.lines.push(...parts);
      for (const w of this.waiters.splice(0)) w();
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((res) =>
      this.child.on('exit', (code, signal) => {
        this.dead = true;
        for (const w of this.waiters.splice(0)) w();
        res({ code, signal });
      }),
    );
    // Writes still buffered when a test kills the server fail with EPIPE; that is expected.
    this.child.stdin.on('error', () => undefined);
  }

  send(message: unknown): void {
    this.child.stdin.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  }

  /** Waits until at least `count` lines arrived and returns them parsed (all must be JSON). */
  async read(count: number, timeoutMs = SPAWNED_WAIT_MS): Promise<Record<string, unknown>[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length < count) {
      if (this.dead)
        throw new Error(
          `server exited before answering (${this.lines.length}/${count} lines); stderr:\n${this.stderr.slice(-2000)}`,
        );
      if (Date.now() > deadline) {
        throw new Error(
          `timed out waiting for ${count} lines; got ${this.lines.length}: ${this.lines.join('\n')}\n${this.stderr}`,
        );
      }
      await new Promise<void>((res) => {
        this.waiters.push(res);
        setTimeout(res, 50);
      });
    }
    return this.lines.slice(0, count).map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /** Sends a request and returns the response with the same id. */
  async request(id: string | number, method: string, params?: unknown): Promise<Record<string, unknown>> {
    const before = this.lines.length;
    this.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    const all = await this.read(before + 1);
    for (let i = before; ; i++) {
      const msg = all[i] ?? (await this.read(i + 1))[i];
      if (msg && msg.id === id) return msg;
    }
  }

  async initialize(): Promise<Record<string, unknown>> {
    return this.request(INIT.id, INIT.method, INIT.params);
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/**
 * A real SDK client connected to the server. By default in this process, through the same composition
 * root, protocol rules and SDK server the stdio entry builds (test/helpers/in-process.ts): a test file
 * pays no process start per client. `process: true` spawns `dist/cli.js` over stdio instead, for the
 * few tests where the process itself is under test (stdio framing, start-up, exit).
 */
export async function connectClient(
  sb: Sandbox,
  options: {
    args?: string[];
    env?: Record<string, string>;
    pin?: string;
    /** Spawn `dist/cli.js` and speak stdio to it instead of running the app in this process. */
    process?: boolean;
    /** Declare elicitation and answer every elicitation/create with this. */
    elicit?: (message: string) => {
      action: 'accept' | 'decline' | 'cancel';
      content?: Record<string, boolean>;
    };
    onResourceListChanged?: () => void;
  } = {},
): Promise<{ client: Client; close: () => Promise<void> }> {
  const client = new Client(
    { name: 'workflowlookup-tests', version: '1.0.0' },
    {
      ...(options.pin ? { versionNegotiation: { mode: { pin: options.pin } } } : {}),
      ...(options.elicit ? { capabilities: { elicitation: { form: {} } } } : {}),
    },
  );
  const elicit = options.elicit;
  if (elicit) {
    client.setRequestHandler('elicitation/create', async (request) =>
      elicit((request.params as { message: string }).message),
    );
  }
  const onChanged = options.onResourceListChanged;
  if (onChanged) client.setNotificationHandler('notifications/resources/list_changed', () => onChanged());
  if (!options.process) {
    const { inProcessClient } = await import('./in-process.js');
    // Watching the sources, as the served process does (live reload, list_changed).
    const { close } = await inProcessClient(
      sb,
      { ...(options.env ?? {}), ...envOfArgs(options.args) },
      {
        client,
        app: { watch: true },
      },
    );
    return { client, close };
  }
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...(options.args ?? [])],
    env: { ...sb.env, ...(options.env ?? {}) },
    cwd: sb.project,
    stderr: 'pipe',
  });
  await client.connect(transport);
  return { client, close: () => client.close() };
}

/** The env equivalent of the `serve` flags an in-process client is given (`--tools LIST`). */
function envOfArgs(args: string[] = []): Record<string, string> {
  const env: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--tools' && args[i + 1] !== undefined) env.WORKFLOWLOOKUP_TOOLS = args[++i] as string;
    else if (arg.startsWith('--tools=')) env.WORKFLOWLOOKUP_TOOLS = arg.slice('--tools='.length);
    else throw new Error(`connectClient: ${arg} has no in-process equivalent; pass process: true`);
  }
  return env;
}

/** Calls a tool through tools/call; a failure comes back as `{ error }` (the structured error payload). */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, any>> {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) return { error: (res.structuredContent as { error: unknown }).error };
  return res.structuredContent as Record<string, unknown>;
}

/**
 * The continuation token of a durable answer (workflow_start, workflow_next_step, workflow_resume, the
 * current_step resource): the token of the workflow_next_step call in its `next`, its one place.
 */
export function tokenOf(answer: Record<string, any> | undefined): string {
  const submit = (answer?.next as { tool: string; arguments: { token?: string } }[] | undefined)?.find(
    (n) => n.tool === 'workflow_next_step',
  );
  return submit?.arguments.token as string;
}
