// What Streamable HTTP costs beyond an HTTP round trip (issue #27.1): workflow_next_step through
// tools/call, p50 with 1 client and the step rate with 10 and 50 clients (each advancing its own
// execution), over a bare node:http echo server (the floor), stdio, 2025-11-25 HTTP sessions and
// stateless 2026-07-28 HTTP requests, measured in one run. The targets take turns in short rounds, so a
// loaded machine slows them alike and the ratios stay comparable. Goals: HTTP adds <= 1 ms over the echo
// floor at p50 and keeps >= 80 % of stdio's rate with 10 and 50 clients.
// Scenario module of `npm run bench`; alone: `node bench/scenarios/http-cost.mjs [--rounds 5]
// [--steps 60] [--baseline /path/to/other/dist/cli.js]` after `npm run build` (--baseline measures
// another build's transports in the same rounds, for before/after).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LineServer, loopServerEnvs, ROOT, round, startHttpServer } from '../lib.mjs';

export const title = 'HTTP cost: echo floor, stdio, HTTP sessions and stateless HTTP, interleaved';

const CLIENTS = [1, 10, 50];
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};
const SESSION_VERSION = '2025-11-25';

/**
 * CPU time (user + system, ms) a process has used: the server's cost per step, which a loaded machine
 * stretches far less than it stretches latencies (10 ms resolution; divided over hundreds of steps).
 */
function cpuMsOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The JSON-RPC answer of an HTTP response, whether JSON or an SSE stream (its last data line). */
async function answerOf(res) {
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const data = text.split('\n').filter((l) => l.startsWith('data: '));
  return JSON.parse(data.at(-1).slice(6));
}

function tokenOfResult(result) {
  const next = result?.structuredContent?.next ?? [];
  const token = next.find((n) => n.tool === 'workflow_next_step')?.arguments?.token;
  if (token === undefined) throw new Error(`no token in ${JSON.stringify(result).slice(0, 300)}`);
  return token;
}

const post = (url, body, headers) =>
  fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });

/** A client of one target: `call(tool, args)` resolves with the tools/call result. */
const clients = {
  async echo(url) {
    return {
      call: async (name, args) =>
        (
          await answerOf(
            await post(url, {
              jsonrpc: '2.0',
              id: 1,
              method: 'tools/call',
              params: { name, arguments: args },
            }),
          )
        ).result,
      close: async () => undefined,
    };
  },
  async stateless(url) {
    return {
      async call(name, args) {
        const res = await post(
          url,
          { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: ENVELOPE } },
          { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
        );
        const json = await answerOf(res);
        if (json.error) throw new Error(`${name}: ${JSON.stringify(json.error).slice(0, 300)}`);
        return json.result;
      },
      close: async () => undefined,
    };
  },
  async sessions(url) {
    const init = await post(url, {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: SESSION_VERSION,
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    });
    const sid = init.headers.get('mcp-session-id');
    await answerOf(init);
    const headers = { 'mcp-session-id': sid, 'mcp-protocol-version': SESSION_VERSION };
    await (await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).text();
    let id = 0;
    return {
      async call(name, args) {
        const json = await answerOf(
          await post(
            url,
            { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } },
            headers,
          ),
        );
        if (json.error) throw new Error(`${name}: ${JSON.stringify(json.error).slice(0, 300)}`);
        return json.result;
      },
      close: async () => void (await fetch(url, { method: 'DELETE', headers })),
    };
  },
};

/** A target: a process and a way to open clients on it. */
async function startTarget(kind, cli, env) {
  if (kind === 'echo') {
    const child = spawn(process.execPath, [join(ROOT, 'bench', 'echo-http.mjs')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const url = await new Promise((resolve) => {
      child.stderr.setEncoding('utf8').on('data', (c) => {
        const m = /echo at (\S+)/.exec(c);
        if (m) resolve(m[1]);
      });
    });
    return { pid: child.pid, open: () => clients.echo(url), stop: () => child.kill('SIGTERM') };
  }
  if (kind === 'stdio') {
    const server = new LineServer(cli, env);
    const init = await server.handshakeThen('ping', {});
    if (init.error) throw new Error(`stdio: ${JSON.stringify(init.error)}`);
    // One pipe, as one agent's client; several clients share it (ids keep their answers apart).
    const client = {
      async call(name, args) {
        const answer = await server.request('tools/call', { name, arguments: args });
        if (answer.error) throw new Error(`${name}: ${JSON.stringify(answer.error).slice(0, 300)}`);
        return answer.result;
      },
      close: async () => undefined,
    };
    return { pid: server.child.pid, open: async () => client, stop: () => server.stop() };
  }
  const http = await startHttpServer(cli, env);
  return { pid: http.pid, open: () => clients[kind](http.url), stop: () => http.stop() };
}

/** `n` clients of `target`, each starting an execution and advancing it `steps` times. */
async function load(target, n, steps, echo) {
  const opened = await Promise.all(Array.from({ length: n }, () => target.open()));
  const tokens = await Promise.all(
    opened.map(async (c) =>
      echo
        ? 'echo'
        : tokenOfResult(
            await c.call('workflow_start', { workflow_id: 'bench-loop', context: { more: true } }),
          ),
    ),
  );
  const latencies = [];
  const began = performance.now();
  await Promise.all(
    opened.map(async (c, i) => {
      let token = tokens[i];
      for (let s = 0; s < steps; s++) {
        const t = performance.now();
        const result = await c.call('workflow_next_step', { token, output: { summary: `tick ${s}` } });
        latencies.push(performance.now() - t);
        token = tokenOfResult(result);
      }
    }),
  );
  const ms = performance.now() - began;
  await Promise.all(opened.map((c) => c.close()));
  return { latencies, ms };
}

export async function run(ctx) {
  const rounds = Number(ctx.args?.rounds) > 0 ? Number(ctx.args.rounds) : 4;
  const steps = Number(ctx.args?.steps) > 0 ? Number(ctx.args.steps) : 60;
  const builds = { after: ctx.cli, ...(ctx.args?.baseline ? { before: ctx.args.baseline } : {}) };
  const env = loopServerEnvs(ctx, 'cost');
  const targets = [['echo', 'echo', undefined]];
  for (const [build, cli] of Object.entries(builds)) {
    for (const kind of ['stdio', 'sessions', 'stateless']) targets.push([`${kind} (${build})`, kind, cli]);
  }
  const started = [];
  const samples = {};
  try {
    for (const [name, kind, cli] of targets) {
      const target = await startTarget(kind, cli, env(name.replace(/\W+/g, '-')));
      started.push(target);
      await load(target, 1, 20, kind === 'echo'); // warm-up
      samples[name] = Object.fromEntries(
        CLIENTS.map((c) => [c, { latencies: [], ms: 0, steps: 0, cpuMs: 0 }]),
      );
    }
    for (let r = 0; r < rounds; r++) {
      for (const clientsN of CLIENTS) {
        // Each round visits the targets in a different order, so none always runs on a warm (or cold) machine.
        const order = targets.map((_, i) => targets[(i + r) % targets.length]);
        for (const [name, kind] of order) {
          const target = started[targets.findIndex((t) => t[0] === name)];
          ctx.progress?.(`round ${r + 1}/${rounds}: ${name}, ${clientsN} clients`);
          const perClient = Math.max(2, Math.ceil(steps / Math.sqrt(clientsN)));
          const cpuBefore = cpuMsOf(target.pid);
          const { latencies, ms } = await load(target, clientsN, perClient, kind === 'echo');
          const s = samples[name][clientsN];
          s.cpuMs += cpuMsOf(target.pid) - cpuBefore;
          s.latencies.push(...latencies);
          s.ms += ms;
          s.steps += latencies.length;
        }
      }
    }
  } finally {
    await Promise.allSettled(started.map((t) => t.stop()));
  }
  const result = { rounds, steps, targets: {} };
  for (const [name, byClients] of Object.entries(samples)) {
    result.targets[name] = Object.fromEntries(
      Object.entries(byClients).map(([c, s]) => {
        const sorted = [...s.latencies].sort((a, b) => a - b);
        return [
          c,
          {
            p50Ms: round(sorted[Math.floor(sorted.length / 2)]),
            perSecond: Math.round(s.steps / (s.ms / 1000)),
            // The server's CPU per step (the clients' own work is outside it): what a loaded machine
            // stretches far less than latencies.
            cpuMsPerStep: round(s.cpuMs / s.steps),
            steps: s.steps,
          },
        ];
      }),
    );
  }
  return result;
}

export function report(result) {
  const t = result.targets;
  const echo = t.echo;
  const lines = [
    `  ${result.rounds} interleaved rounds; p50 with 1 client, rate with 10 and 50 clients (ratios: to the echo floor and to stdio of the same build)`,
  ];
  for (const [name, r] of Object.entries(t)) {
    const build = /\((\w+)\)/.exec(name)?.[1];
    const stdio = build ? t[`stdio (${build})`] : undefined;
    const over = round(r[1].p50Ms - echo[1].p50Ms);
    const share = (c) =>
      stdio && !name.startsWith('stdio')
        ? ` (${Math.round((r[c].perSecond / stdio[c].perSecond) * 100)} % of stdio)`
        : '';
    const cpu = round((r[1].cpuMsPerStep + r[10].cpuMsPerStep + r[50].cpuMsPerStep) / 3);
    lines.push(
      `  ${name.padEnd(20)} p50 ${String(r[1].p50Ms).padStart(6)} ms${name === 'echo' ? '' : ` (+${over} ms over echo)`}  10 clients ${String(r[10].perSecond).padStart(5)}/s${share(10)}  50 clients ${String(r[50].perSecond).padStart(5)}/s${share(50)}  server CPU ${cpu} ms/step`,
    );
  }
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { cliOf } = await import('../lib.mjs');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const tmp = mkdtempSync(join(tmpdir(), 'wl-bench-http-cost-'));
  const args = {};
  for (let i = 2; i < process.argv.length; i += 2)
    args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  try {
    const result = await run({ cli: cliOf(), tmp, args, progress: (m) => console.error(`[http-cost] ${m}`) });
    console.log(report(result).join('\n'));
    if (args.json) console.log(JSON.stringify(result));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
