// Proof of process (issue #34): what chaining the record costs a step, and what signing and verifying
// a 1,000-event record take. Chaining: stdio workflow_next_step p50 of this build against a build
// without records (`--before path/to/dist/cli.js`), the two servers stepped in turn, as a ratio. Signing: p50 of reading the execution_record resource (the chain read in one transaction,
// the statement built and signed) of an execution with 1,000+ events, against workflow_status of the
// same execution (the read alone). Verifying: `workflowlookup verify` on that record, against
// `workflowlookup --version` (the process start alone). Scenario module of `npm run bench`; alone:
// `node bench/scenarios/records.mjs [--steps 1500] [--rounds 3] [--before path/to/dist/cli.js]`.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { initialized, LineServer, loopExecution, loopServerEnvs, round, stats } from '../lib.mjs';
import { numberArg, runAlone } from '../pg-lib.mjs';

export const title = 'Execution records: chaining per step, signing and verifying a 1,000-event record';

export async function skip() {
  return undefined;
}

async function session(cli, env) {
  const server = new LineServer(cli, env);
  const call = await initialized(server);
  return { server, call, ...(await loopExecution(call)) };
}

/**
 * p50 of `steps` steps on each build, the two servers running side by side and stepped in turn (one step
 * on one, then one on the other), so both see the same machine at the same moments; after 200 to warm up.
 */
async function pairedP50(beforeCli, afterCli, envOf, round, steps) {
  const before = await session(beforeCli, envOf(`before-${round}`));
  const after = await session(afterCli, envOf(`after-${round}`));
  try {
    for (let i = 0; i < 200; i++) {
      await before.step(i);
      await after.step(i);
    }
    const samples = { before: [], after: [] };
    for (let i = 0; i < steps; i++) {
      // Alternate which goes first, so neither always follows the other.
      const order = i % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
      for (const which of order) {
        const s = which === 'before' ? before : after;
        const t = performance.now();
        await s.step(i);
        samples[which].push(performance.now() - t);
      }
    }
    return { before: stats(samples.before).medianMs, after: stats(samples.after).medianMs };
  } finally {
    await before.server.stop();
    await after.server.stop();
  }
}

function timeIt(work, n) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    work();
    samples.push(performance.now() - t);
  }
  return stats(samples).medianMs;
}

export async function run(ctx) {
  const steps = numberArg(ctx.args, 'steps', 1500);
  const rounds = numberArg(ctx.args, 'rounds', 3);
  const envOf = loopServerEnvs(ctx, 'records');
  const chaining = [];
  if (ctx.args.before) {
    for (let r = 0; r < rounds; r++) {
      ctx.progress(`round ${r + 1}/${rounds}: ${steps} steps on each build`);
      const { before, after } = await pairedP50(ctx.args.before, ctx.cli, envOf, r, steps);
      chaining.push({ before, after, ratio: round(after / before) });
    }
  }
  ctx.progress('an execution with 1,000+ events, then its record read and signed');
  const env = envOf('signing');
  const s = await session(ctx.cli, env);
  let record;
  let readMs;
  let statusMs;
  try {
    // Each step chains output_submitted and step_completed (and the first, workflow_created and more).
    for (let i = 0; i < 520; i++) await s.step(i);
    const read = async () =>
      s.server.request('resources/read', {
        uri: `workflowlookup://workflow/execution_record/${s.executionId}`,
      });
    const status = async () =>
      s.server.request('resources/read', {
        uri: `workflowlookup://workflow/workflow_status/${s.executionId}`,
      });
    const time = async (work, n) => {
      const samples = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        const res = await work();
        samples.push(performance.now() - t);
        if (res.error) throw new Error(JSON.stringify(res.error));
        record ??= res.result.contents[0].text;
      }
      return stats(samples).medianMs;
    };
    readMs = await time(read, 20);
    record = undefined;
    statusMs = await time(status, 20);
    record = (await read()).result.contents[0].text;
  } finally {
    await s.server.stop();
  }
  const file = join(ctx.tmp, 'record.json');
  writeFileSync(file, record);
  const events = JSON.parse(Buffer.from(JSON.parse(record).dsseEnvelope.payload, 'base64').toString('utf8'))
    .predicate.event_count;
  const cliEnv = { ...process.env, ...env };
  const verifyMs = timeIt(
    () => execFileSync(process.execPath, [ctx.cli, 'verify', file], { env: cliEnv }),
    5,
  );
  const startMs = timeIt(() => execFileSync(process.execPath, [ctx.cli, '--version'], { env: cliEnv }), 5);
  return {
    chaining,
    signing: { events, bytes: Buffer.byteLength(record), readMs, statusMs },
    verifying: { verifyMs: round(verifyMs), startMs: round(startMs) },
  };
}

export function report(result) {
  const { chaining, signing, verifying } = result;
  return [
    ...(chaining.length > 0
      ? [
          `  step p50 with records / without (goal <= 1.05): ${chaining.map((c) => `${c.after} / ${c.before} ms = ${c.ratio}`).join('; ')}`,
        ]
      : ['  chaining: pass --before <dist/cli.js of a build without records> to compare']),
    `  a record of ${signing.events} events (${(signing.bytes / 1024).toFixed(0)} KB): read and signed in ${signing.readMs} ms p50 (workflow_status of the same execution: ${signing.statusMs} ms)`,
    `  workflowlookup verify on it: ${verifying.verifyMs} ms, of which the process start (--version) ${verifying.startMs} ms`,
  ];
}

await runAlone(import.meta.url, { title, skip, run, report }, 'records');
