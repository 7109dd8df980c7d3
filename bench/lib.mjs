// Shared by bench.mjs and the scenario modules: a server spoken to in raw JSON-RPC lines over stdio,
// launched the way MCP clients launch it (`node dist/cli.js`, no extra node flags), the floor process,
// and statistics.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const FLOOR = join(ROOT, 'bench', 'floor-server.mjs');

export const INIT_PARAMS = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'bench', version: '1' },
};

export const round = (n) => Math.round(n * 1000) / 1000;
export const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
export function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    medianMs: round(quantile(sorted, 0.5)),
    p99Ms: round(quantile(sorted, 0.99)),
    calls: samples.length,
  };
}
/** `value` as a multiple of the floor, for the reports ("2.1x floor"). */
export const ratio = (value, floorMs) =>
  floorMs > 0 && Number.isFinite(value) ? Math.round((value / floorMs) * 100) / 100 : null;

/** A process spoken to in JSON lines; `t0` is the moment it was spawned. */
export class LineServer {
  constructor(script, env, args = []) {
    this.t0 = performance.now();
    this.child = spawn(process.execPath, [script, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.pending = new Map();
    this.buffer = '';
    this.stderr = '';
    this.nextId = 1;
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk) => {
      this.stderr += chunk;
    });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => {
      this.buffer += chunk;
      for (let nl = this.buffer.indexOf('\n'); nl !== -1; nl = this.buffer.indexOf('\n')) {
        const msg = JSON.parse(this.buffer.slice(0, nl));
        this.buffer = this.buffer.slice(nl + 1);
        if (msg.id === undefined || msg.id === null) this.onNotification?.(msg);
        const resolve = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        resolve?.({ ...msg, at: performance.now() });
      }
    });
    this.exited = new Promise((r) => this.child.on('exit', r));
  }
  /** Sends one request; resolves with the answer and `at`, the moment it arrived. */
  request(method, params, id = this.nextId++) {
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }
  notify(method, params) {
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}) })}\n`);
  }
  /** What a client does first: initialize, initialized, then its next request in the same breath. */
  async handshakeThen(method, params) {
    const init = this.request('initialize', INIT_PARAMS);
    this.notify('notifications/initialized');
    const next = this.request(method, params);
    const [first, answer] = await Promise.all([init, next]);
    if (first.error) throw new Error(`initialize failed: ${JSON.stringify(first.error)}\n${this.stderr}`);
    return answer;
  }
  peakRssMb() {
    return peakRssOf(this.child.pid);
  }
  async stop() {
    if (this.child.exitCode !== null) return;
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 'bye', method: 'shutdown' })}\n`);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** The floor: spawn → first answer of a bare Node process that answers each JSON line (median of n). */
export async function measureFloor(n = 15) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const floor = new LineServer(FLOOR, { PATH: process.env.PATH ?? '' });
    const answer = await floor.request('initialize', INIT_PARAMS);
    samples.push(answer.at - floor.t0);
    await floor.stop();
  }
  return stats(samples);
}

/** Spawn → answer times of `n` fresh servers, each sent `send(server)` (which resolves with the answer). */
/**
 * Spawn -> the real answer to the first workflow_list (tools/call right after initialize): its ms since
 * spawn and how many workflows it listed.
 */
export async function firstList(cli, env) {
  const server = new LineServer(cli, env);
  try {
    const answer = await server.handshakeThen('tools/call', { name: 'workflow_list', arguments: {} });
    if (answer.error || answer.result?.isError || !Array.isArray(answer.result?.structuredContent?.workflows))
      throw new Error(`workflow_list failed: ${JSON.stringify(answer).slice(0, 300)}\n${server.stderr}`);
    return { ms: answer.at - server.t0, count: answer.result.structuredContent.workflows.length };
  } finally {
    await server.stop();
  }
}

export async function spawnTimes(cli, env, n, send) {
  const samples = [];
  let peak = 0;
  for (let i = 0; i < n; i++) {
    const server = new LineServer(cli, env);
    const answer = await send(server);
    if (answer.error || answer.result?.isError)
      throw new Error(`start-up request failed: ${JSON.stringify(answer).slice(0, 400)}\n${server.stderr}`);
    samples.push(answer.at - server.t0);
    peak = Math.max(peak, server.peakRssMb());
    await server.stop();
  }
  return { ...stats(samples), peakRssMb: round(peak) };
}

export function cliOf(root = ROOT) {
  const cli = join(root, 'dist', 'cli.js');
  readFileSync(cli); // fails early when the build is missing
  return cli;
}

/** The 2026-07-28 envelope of a stateless HTTP request: any server process can answer it. */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** Peak RSS (VmHWM) of a process, in MB. */
export function peakRssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** A workflow of 8 steps with conditions and a length rule, as the bench generates them (a JSON text). */
export function generatedWorkflow(i) {
  const steps = Array.from({ length: 8 }, (_, s) => ({
    id: `step-${s}`,
    title: `Step ${s}`,
    prompt: `Do part ${s} of generated workflow ${i}. `.repeat(4),
    runCondition: s % 2 ? { var: 'taskScope', not_equals: 'small' } : undefined,
    validationCriteria: [{ type: 'length', min: 5, message: 'say something' }],
  }));
  return JSON.stringify({
    id: `generated-${i}`,
    name: `Generated ${i}`,
    description: 'bench',
    version: '1.0.0',
    steps,
  });
}

/** `n` generated workflows as files in `dir`. */
export function generatedWorkflows(dir, n) {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) writeFileSync(join(dir, `generated-${i}.json`), generatedWorkflow(i));
}

/** Writes `bench-loop`, a workflow that loops on one agent step while `more` is true, into `dir`. */
export function loopWorkflow(dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'bench-loop.json'),
    JSON.stringify({
      id: 'bench-loop',
      name: 'Bench loop',
      description: 'A long loop for the execution benchmarks',
      version: '1.0.0',
      steps: [
        {
          id: 'grind',
          type: 'loop',
          title: 'Grind',
          loop: { type: 'while', condition: { var: 'more', equals: true }, maxIterations: 10000 },
          body: [
            {
              id: 'tick',
              title: 'Tick',
              prompt: 'Do one unit of work.',
              validationCriteria: [{ type: 'length', min: 3, message: 'say what you did' }],
            },
          ],
        },
      ],
    }),
  );
}

/**
 * Initializes a stdio server (a LineServer) and gives `call(name, args)`: the tool's structured answer,
 * or an error naming the tool and the answer.
 */
export async function initialized(server) {
  const init = await server.request('initialize', INIT_PARAMS, 0);
  if (init.error) throw new Error(`the server did not start: ${server.stderr}`);
  server.notify('notifications/initialized');
  return async (name, args) => {
    const res = await server.request('tools/call', { name, arguments: args });
    if (res.error || res.result.isError)
      throw new Error(`${name} failed: ${JSON.stringify(res).slice(0, 400)}`);
    return res.result.structuredContent;
  };
}

/** Starts `bench-loop` through `call`: its execution id, and `step(i)`, which takes one more step. */
export async function loopExecution(call) {
  const started = await call('workflow_start', { workflow_name: 'bench-loop', context: { more: true } });
  let token = requireToken(started);
  return {
    executionId: started.execution_id,
    step: async (i) => {
      token = requireToken(await call('workflow_next_step', { token, output: { summary: `tick ${i}` } }));
    },
  };
}

/**
 * Environments for servers that loop on `bench-loop` only (no bundled workflows, no rate limit), sharing
 * one home under `ctx.tmp/<prefix>-*`: `env(name)` gives each server its own fresh data dir.
 */
export function loopServerEnvs(ctx, prefix) {
  const home = join(ctx.tmp, `${prefix}-home`);
  const runtime = join(ctx.tmp, `${prefix}-workflows`);
  mkdirSync(home, { recursive: true });
  loopWorkflow(runtime);
  return (name) => {
    const dataDir = join(ctx.tmp, `${prefix}-data-${name}`);
    mkdirSync(dataDir, { recursive: true });
    return {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      WORKFLOWLOOKUP_WORKFLOWS_PATH: runtime,
      WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false',
      WORKFLOWLOOKUP_DATA_DIR: dataDir,
      WORKFLOWLOOKUP_RATE_LIMIT: '0',
    };
  };
}

/**
 * The MCP URL a `serve --http` announced on stderr: the `mcp_url` of its JSON log line, or the plain
 * line builds wrote before it was one (`--baseline` may run them). Only whole lines are read.
 */
export function announcedUrl(stderr) {
  const whole = stderr.slice(0, stderr.lastIndexOf('\n') + 1);
  for (const line of whole.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const event = JSON.parse(line);
      if (typeof event.mcp_url === 'string') return event.mcp_url;
    } catch {
      // Not a log line: some other output.
    }
  }
  return /Streamable HTTP at (\S+)/.exec(whole)?.[1];
}

/** One `serve --http` process on an ephemeral port; `pid` for its peak RSS. */
export async function startHttpServer(cli, env) {
  const child = spawn(process.execPath, [cli, 'serve', '--http', '--port', '0'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL announced:\n${stderr}`)), 15_000);
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      stderr += chunk;
      const found = announcedUrl(stderr);
      if (found !== undefined) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    child.on('exit', () => reject(new Error(`replica exited:\n${stderr}`)));
  });
  return {
    url,
    pid: child.pid,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.on('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/** A stateless (2026-07-28) request: any replica can serve it. */
export async function rpc(url, method, params, name) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: ENVELOPE } }),
  });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('text/event-stream')
    ? JSON.parse(
        text
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .at(-1)
          .slice(6),
      )
    : JSON.parse(text);
  if (json.error) throw new Error(`${method} failed: ${JSON.stringify(json.error).slice(0, 300)}`);
  return json.result;
}

/** The continuation token of a durable answer: inside its workflow_next_step call in `next`. */
export const tokenOf = (answer) =>
  answer?.next?.find((n) => n.tool === 'workflow_next_step')?.arguments?.token;

/** tokenOf, for a step that must hand out a token: a clear error instead of undefined. */
export function requireToken(answer) {
  const token = tokenOf(answer);
  if (token === undefined)
    throw new Error(`no workflow_next_step in next: ${JSON.stringify(answer).slice(0, 400)}`);
  return token;
}

/**
 * CPU time a process has used so far, in ms, to the nanosecond: the sum of its threads' time on a CPU
 * (Linux: /proc/<pid>/task/<tid>/schedstat), where /proc/<pid>/stat counts 10 ms ticks. Threads that
 * ended are not counted: compare two readings of one long-lived server.
 */
export function cpuMsPreciseOf(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return ns / 1e6;
}
