import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  LineServer,
  loopServerEnvs,
  peakRssOf,
  requireToken,
  round,
  rpc,
  startHttpServer,
  stats,
} from '../lib.mjs';

export const title = 'Streamable HTTP next to stdio: workflow_next_step with 1, 10 and 50 clients';

const CLIENTS = [1, 10, 50];

/** `clients` clients, each starting an execution and advancing it `steps` times through `call`. */
async function load(call, clients, steps) {
  const starts = await Promise.all(
    Array.from({ length: clients }, () =>
      call('workflow_start', { workflow_id: 'bench-loop', context: { more: true } }),
    ),
  );
  const latencies = [];
  const began = performance.now();
  await Promise.all(
    starts.map(async (started) => {
      let token = requireToken(started);
      for (let s = 0; s < steps; s++) {
        const t = performance.now();
        const res = await call('workflow_next_step', { token, output: { summary: `tick ${s}` } });
        latencies.push(performance.now() - t);
        token = requireToken(res);
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  return { ...stats(latencies), perSecond: Math.round(latencies.length / seconds) };
}

export async function run(ctx) {
  const calls = Number(ctx.args?.['http-calls']) > 0 ? Number(ctx.args['http-calls']) : 1000;
  const env = loopServerEnvs(ctx, 'http');
  const result = { http: {}, stdio: {} };

  const http = await startHttpServer(ctx.cli, env('http'));
  try {
    const call = async (method, params) => rpc(http.url, method, params);
    await load(call, 1, 20); // warm-up
    for (const clients of CLIENTS) {
      ctx.progress?.(`HTTP: ${clients} clients`);
      result.http[clients] = await load(call, clients, Math.ceil(calls / clients));
    }
    result.http.peakRssMb = round(peakRssOf(http.pid));
  } finally {
    await http.stop();
  }

  const stdio = new LineServer(ctx.cli, env('stdio'));
  try {
    const init = await stdio.handshakeThen('ping', {});
    if (init.error) throw new Error(`stdio ping failed: ${JSON.stringify(init.error)}`);
    const call = async (method, params) => {
      const answer = await stdio.request(method, params);
      if (answer.error) throw new Error(`${method} failed: ${JSON.stringify(answer.error).slice(0, 300)}`);
      return answer.result;
    };
    await load(call, 1, 20);
    for (const clients of CLIENTS) {
      ctx.progress?.(`stdio: ${clients} clients`);
      result.stdio[clients] = await load(call, clients, Math.ceil(calls / clients));
    }
    result.stdio.peakRssMb = round(stdio.peakRssMb());
  } finally {
    await stdio.stop();
  }
  return result;
}

export function report(result) {
  const lines = [];
  for (const clients of CLIENTS) {
    for (const transport of ['http', 'stdio']) {
      const r = result[transport][clients];
      lines.push(
        `  ${transport.padEnd(5)} ${String(clients).padStart(2)} clients  p50 ${String(r.medianMs).padStart(7)} ms  p99 ${String(r.p99Ms).padStart(7)} ms  ${String(r.perSecond).padStart(5)}/s  (${r.calls} calls)`,
      );
    }
  }
  lines.push(
    `  peak RSS: HTTP server ${result.http.peakRssMb} MB, stdio server ${result.stdio.peakRssMb} MB`,
  );
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { cliOf } = await import('../lib.mjs');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const tmp = mkdtempSync(join(tmpdir(), 'wl-bench-http-'));
  const args = {};
  for (let i = 2; i < process.argv.length; i += 2)
    args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  try {
    const result = await run({ cli: cliOf(), tmp, args, progress: (m) => console.error(`[http] ${m}`) });
    console.log(report(result).join('\n'));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
