// Delegation's cost (issue "Orchestrator and workers"): a parent whose step hands its work to 50 child
// executions, over stdio: the step that creates the 50 (time and the server's CPU), each child's
// workflow_next_step (p50/p99; the goal: about what any step costs), each child's last step (it tells its
// parent), the join (the last child's last step, which completes the parent's step), the orchestrator's
// wait while children run, and a whole walk (start to the parent completed). An ordinary step (the
// bench-loop workflow, the same length rule) is measured in the same server, interleaved with the
// children's steps, so the two are side by side under the same load. Then the same walk over Streamable
// HTTP with one worker per child, all at once, and the orchestrator polling its wait.
// Scenario module of `npm run bench`; alone: `node bench/scenarios/delegation.mjs [--walks 10]
// [--children 50] [--http-walks 3] [--cli path/to/dist/cli.js]` after `npm run build`.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cpuMsPreciseOf,
  initialized,
  LineServer,
  loopServerEnvs,
  peakRssOf,
  requireToken,
  round,
  rpc,
  startHttpServer,
  stats,
} from '../lib.mjs';
import { numberArg, runAlone } from '../pg-lib.mjs';

export const title =
  'Delegation: a parent with 50 children over stdio (creating them, child steps, the join, a whole walk) next to an ordinary step, and over HTTP with a worker per child';

/** Nothing external is needed. */
export async function skip() {
  return undefined;
}

const RULE = [{ type: 'length', min: 3, message: 'say what you did' }];

/** bench-child (three agent steps, each with the ordinary step's length rule) and bench-fan (plan, fan, after). */
function delegationWorkflows(dir, children) {
  const step = (id) => ({ id, title: id, prompt: `Do the ${id} part.`, validationCriteria: RULE });
  writeFileSync(
    join(dir, 'bench-child.json'),
    JSON.stringify({
      id: 'bench-child',
      name: 'Bench child',
      description: 'What one worker does for the delegation benchmark',
      version: '1.0.0',
      steps: [step('read'), step('change'), step('report')],
    }),
  );
  writeFileSync(
    join(dir, 'bench-fan.json'),
    JSON.stringify({
      id: 'bench-fan',
      name: 'Bench fan-out',
      description: `A plan, ${children} children, then one more step`,
      version: '1.0.0',
      steps: [
        step('plan'),
        {
          id: 'fan',
          title: 'Fan out',
          prompt: 'One worker per part.',
          delegate: { workflow: 'bench-child', count: children, join: 'all' },
        },
        step('after'),
      ],
    }),
  );
}

/** The server's CPU time (ms, all its threads) spent while `work` ran. */
async function withCpu(pid, work) {
  const before = cpuMsPreciseOf(pid);
  const t = performance.now();
  const value = await work();
  return { value, ms: performance.now() - t, cpuMs: cpuMsPreciseOf(pid) - before };
}

/**
 * Walks of one parent over stdio, one call at a time (an orchestrator doing its children one after
 * another): each child step timed, and after each an ordinary step of a looping execution.
 */
async function stdioWalks(ctx, env, walks, children) {
  const server = new LineServer(ctx.cli, env);
  const pid = server.child.pid;
  try {
    const call = await initialized(server);
    let loopToken = requireToken(
      await call('workflow_start', { workflow_name: 'bench-loop', context: { more: true } }),
    );
    let ticks = 0;
    const ordinary = [];
    const ordinaryCpu = [];
    const tick = async () => {
      const step = await withCpu(pid, () =>
        call('workflow_next_step', { token: loopToken, output: { summary: `tick ${ticks++}` } }),
      );
      loopToken = requireToken(step.value);
      ordinary.push(step.ms);
      ordinaryCpu.push(step.cpuMs);
    };
    // Warm-up: the first steps of a fresh server are slower (TurboFan tiering up); not measured.
    for (let i = 0; i < 500; i++) await tick();
    ordinary.length = 0;
    ordinaryCpu.length = 0;
    const m = {
      create: [],
      createCpu: [],
      delegatedBytes: [],
      resume: [],
      childStep: [],
      childStepCpu: [],
      childLast: [],
      join: [],
      joinCpu: [],
      waitOpen: [],
      waitJoined: [],
      walk: [],
      walkCpu: [],
    };
    // Walks alternate: one with an ordinary step after each child step (the steps side by side), one
    // without (the whole walk's time and CPU).
    for (let w = 0; w < walks * 2; w++) {
      const interleaved = w % 2 === 0;
      const step = interleaved ? tick : async () => undefined;
      const sample = (key, value) => {
        if (interleaved) m[key].push(value);
      };
      const walk = await withCpu(pid, async () => {
        const started = await call('workflow_start', { workflow_name: 'bench-fan' });
        const created = await withCpu(pid, () =>
          call('workflow_next_step', { token: requireToken(started), output: { summary: 'planned it all' } }),
        );
        const delegated = created.value;
        if (delegated.step_status !== 'delegated')
          throw new Error(`not delegated: ${JSON.stringify(delegated).slice(0, 400)}`);
        sample('create', created.ms);
        sample('createCpu', created.cpuMs);
        sample('delegatedBytes', JSON.stringify(delegated).length);
        const handed = delegated.next.slice(0, -1);
        const wait = delegated.next.at(-1);
        if (handed.length !== children) throw new Error(`${handed.length} children handed out`);
        for (const [i, h] of handed.entries()) {
          let t = performance.now();
          let answer = await call(h.tool, h.arguments);
          sample('resume', performance.now() - t);
          for (let s = 0; s < 3; s++) {
            const last = s === 2;
            const joins = last && i === children - 1;
            const args = { token: requireToken(answer), output: { summary: `child ${i} part ${s}` } };
            if (joins) {
              const joined = await withCpu(pid, () => call('workflow_next_step', args));
              answer = joined.value;
              sample('join', joined.ms);
              sample('joinCpu', joined.cpuMs);
            } else {
              const stepped = await withCpu(pid, () => call('workflow_next_step', args));
              answer = stepped.value;
              sample(last ? 'childLast' : 'childStep', stepped.ms);
              if (!last) sample('childStepCpu', stepped.cpuMs);
            }
            await step();
          }
          if (answer.workflow_state !== 'completed')
            throw new Error(`child ${i} not completed: ${JSON.stringify(answer).slice(0, 300)}`);
          if (i === Math.floor(children / 2)) {
            // The orchestrator's wait with half the children still open.
            t = performance.now();
            const waiting = await call(wait.tool, wait.arguments);
            sample('waitOpen', performance.now() - t);
            if (waiting.step_status !== 'delegated') throw new Error('the wait moved before the join');
          }
        }
        let t = performance.now();
        const after = await call(wait.tool, wait.arguments);
        sample('waitJoined', performance.now() - t);
        if (after.step_name !== 'after') throw new Error(`no join: ${JSON.stringify(after).slice(0, 400)}`);
        t = performance.now();
        const done = await call('workflow_next_step', {
          token: requireToken(after),
          output: { summary: 'combined the parts' },
        });
        if (done.workflow_state !== 'completed') throw new Error('the parent did not complete');
      });
      if (!interleaved) {
        m.walk.push(walk.ms);
        m.walkCpu.push(walk.cpuMs);
      }
      ctx.progress(
        `stdio walk ${w + 1}/${walks * 2}${interleaved ? ' (interleaved)' : ''}: ${Math.round(walk.ms)} ms`,
      );
    }
    const mean = (xs) => round(xs.reduce((a, b) => a + b, 0) / xs.length);
    return {
      walks,
      children,
      ordinaryStep: { ...stats(ordinary), cpuMs: stats(ordinaryCpu) },
      create: { ...stats(m.create), cpuMsMean: mean(m.createCpu), answerBytes: m.delegatedBytes[0] },
      resume: stats(m.resume),
      childStep: { ...stats(m.childStep), cpuMs: stats(m.childStepCpu) },
      childLastStep: stats(m.childLast),
      join: { ...stats(m.join), cpuMsMean: mean(m.joinCpu) },
      waitWhileOpen: stats(m.waitOpen),
      waitJoined: stats(m.waitJoined),
      // Of the walks without ordinary steps in between.
      // Its calls: start, plan, per child a resume and three steps, the wait, the last step.
      walk: {
        ...stats(m.walk),
        cpuMsMean: mean(m.walkCpu),
        callsPerWalk: 4 + children * 4,
        cpuMsPerCall: round(mean(m.walkCpu) / (4 + children * 4)),
      },
      peakRssMb: round(server.peakRssMb()),
    };
  } finally {
    await server.stop();
  }
}

/**
 * Walks over Streamable HTTP (stateless requests, one `serve --http`): the orchestrator starts the parent
 * and submits the plan, one worker per child walks its child (all at once), and the orchestrator polls
 * its wait every `pollMs` until the join hands out the next step.
 */
async function httpWalks(ctx, env, walks, children, pollMs = 50) {
  const server = await startHttpServer(ctx.cli, env);
  try {
    const call = (method, params) => rpc(server.url, method, params);
    // Warm-up: one ordinary execution's steps.
    let token = requireToken(
      await call('workflow_start', { workflow_id: 'bench-loop', context: { more: true } }),
    );
    for (let i = 0; i < 200; i++)
      token = requireToken(await call('workflow_next_step', { token, output: { summary: `tick ${i}` } }));
    const childSteps = [];
    const walkMs = [];
    const walkCpu = [];
    const polls = [];
    const ordinarySteps = [];
    const burstMs = [];
    for (let w = 0; w < walks; w++) {
      // Side by side: as many ordinary executions as children, each three steps, all at once.
      const starts = await Promise.all(
        Array.from({ length: children }, () =>
          call('workflow_start', { workflow_id: 'bench-loop', context: { more: true } }),
        ),
      );
      const burst = performance.now();
      await Promise.all(
        starts.map(async (started, i) => {
          let t = requireToken(started);
          for (let s = 0; s < 3; s++) {
            const at = performance.now();
            t = requireToken(
              await call('workflow_next_step', { token: t, output: { summary: `${i} ${s}` } }),
            );
            ordinarySteps.push(performance.now() - at);
          }
        }),
      );
      burstMs.push(performance.now() - burst);
      const walk = await withCpu(server.pid, async () => {
        const started = await call('workflow_start', { workflow_id: 'bench-fan' });
        const delegated = await call('workflow_next_step', {
          token: requireToken(started),
          output: { summary: 'planned it all' },
        });
        const handed = delegated.next.slice(0, -1);
        const wait = delegated.next.at(-1);
        const workers = Promise.all(
          handed.map(async (h, i) => {
            let answer = await call(h.tool, h.arguments);
            for (let s = 0; s < 3; s++) {
              const t = performance.now();
              answer = await call('workflow_next_step', {
                token: requireToken(answer),
                output: { summary: `child ${i} part ${s}` },
              });
              childSteps.push(performance.now() - t);
            }
          }),
        );
        let joined;
        let n = 0;
        for (; ; n++) {
          joined = await call(wait.tool, wait.arguments);
          if (joined.step_name === 'after') break;
          await new Promise((r) => setTimeout(r, pollMs));
        }
        polls.push(n + 1);
        await workers;
        await call('workflow_next_step', { token: requireToken(joined), output: { summary: 'combined' } });
      });
      walkMs.push(walk.ms);
      walkCpu.push(walk.cpuMs);
      ctx.progress(`HTTP walk ${w + 1}/${walks}: ${Math.round(walk.ms)} ms`);
    }
    return {
      walks,
      children,
      pollMs,
      childStep: stats(childSteps),
      ordinaryStep: stats(ordinarySteps),
      ordinaryBurst: stats(burstMs),
      walk: stats(walkMs),
      walkCpuMsMean: round(walkCpu.reduce((a, b) => a + b, 0) / walkCpu.length),
      pollsMean: round(polls.reduce((a, b) => a + b, 0) / polls.length),
      peakRssMb: round(peakRssOf(server.pid)),
    };
  } finally {
    await server.stop();
  }
}

export async function run(ctx) {
  const walks = numberArg(ctx.args, 'walks', 10);
  const children = numberArg(ctx.args, 'children', 50);
  const httpWalksCount = numberArg(ctx.args, 'http-walks', 3);
  const env = loopServerEnvs(ctx, 'delegation');
  delegationWorkflows(join(ctx.tmp, 'delegation-workflows'), children);
  ctx.progress(`${walks} walks of a parent with ${children} children over stdio`);
  const stdio = await stdioWalks(ctx, env('stdio'), walks, children);
  ctx.progress(`${httpWalksCount} walks over HTTP, a worker per child`);
  const http = await httpWalks(ctx, env('http'), httpWalksCount, children);
  return { stdio, http };
}

export function report(result) {
  const { stdio: s, http: h } = result;
  const ms = (r) => `p50 ${round(r.medianMs)} ms, p99 ${round(r.p99Ms)} ms`;
  return [
    `  stdio, ${s.walks} walks of a parent with ${s.children} children, one call at a time:`,
    `    ordinary step (bench-loop, interleaved):  ${ms(s.ordinaryStep)} (${s.ordinaryStep.calls} steps); server CPU ${ms(s.ordinaryStep.cpuMs)}`,
    `    child step (not its last):                ${ms(s.childStep)} (${s.childStep.calls} steps); server CPU ${ms(s.childStep.cpuMs)}`,
    `    child's last step (tells its parent):     ${ms(s.childLastStep)} (${s.childLastStep.calls} steps)`,
    `    creating the ${s.children} children (the plan step): ${ms(s.create)}, server CPU ${s.create.cpuMsMean} ms; its answer ${s.create.answerBytes} bytes`,
    `    the join (the last child's last step):    ${ms(s.join)}, server CPU ${s.join.cpuMsMean} ms`,
    `    a child's workflow_resume (its first step): ${ms(s.resume)}`,
    `    the wait, half the children open:         ${ms(s.waitWhileOpen)}; after the join: ${ms(s.waitJoined)}`,
    `    a whole walk (start to the parent completed, ${s.walk.callsPerWalk} calls; ${s.walk.calls} walks without ordinary steps): median ${round(s.walk.medianMs)} ms, server CPU ${s.walk.cpuMsMean} ms (${s.walk.cpuMsPerCall} ms a call); peak RSS ${s.peakRssMb} MB`,
    `  HTTP, ${h.walks} walks, ${h.children} workers at once (one per child), the wait polled every ${h.pollMs} ms:`,
    `    child step: ${ms(h.childStep)} (${h.childStep.calls} steps); a whole walk: median ${round(h.walk.medianMs)} ms, server CPU ${h.walkCpuMsMean} ms, ${h.pollsMean} polls; peak RSS ${h.peakRssMb} MB`,
    `    side by side, ${h.children} ordinary executions at once, three steps each: step ${ms(h.ordinaryStep)}; all ${h.ordinaryStep.calls / h.walks} steps in a median ${round(h.ordinaryBurst.medianMs)} ms`,
  ];
}

await runAlone(import.meta.url, { title, skip, run, report }, 'delegation');
