// What an agent pays in context: the bytes of tools/list per tool profile and of typical answers
// (successes and failures), as a client receives them (the whole tools/call result: content text and
// structuredContent). Runs alone too: node bench/scenarios/answer-sizes.mjs [--cli path/to/cli.js] [--dump]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LineServer, tokenOf } from '../lib.mjs';

export const title = 'Answer sizes: tools/list per profile and typical answers (bytes)';

const PROFILES = ['core', 'guidance', 'executions', 'authoring', 'automation', 'tasks', 'all'];

/** One server over stdio, launched the way a client launches it, after the handshake. */
async function server(cli, env) {
  const s = new LineServer(cli, env);
  const init = await s.handshakeThen('ping', {});
  if (init.error) throw new Error(`the server did not start: ${s.stderr}`);
  return s;
}

const bytes = (value) => Buffer.byteLength(JSON.stringify(value));

/** Bytes of a tools/call result, split into what the text copy and the structured copy cost. */
function measure(result) {
  const text = (result.content ?? []).reduce((n, c) => n + Buffer.byteLength(c.text ?? ''), 0);
  return {
    total: bytes(result),
    text,
    structured: result.structuredContent === undefined ? 0 : bytes(result.structuredContent),
  };
}

async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

const INPUTS_WORKFLOW = `id: bench-inputs
name: Needs a project
description: A workflow with a required, pattern-checked input
version: 1.0.0
inputs:
  project: { type: string, required: true, pattern: "^p[0-9]+$", description: Project id }
steps:
  - { id: work, title: "Work on \${{ inputs.project }}", prompt: Do the work. }
`;

const COMMAND_WORKFLOW = `id: bench-command
name: Calls an API that is down
description: One command step against an unreachable API
version: 1.0.0
steps:
  - { id: fetch, title: Fetch a task, run: tasks-api get-task, with: { taskId: t1 } }
  - { id: read, title: Read it, prompt: Read the task. }
`;

/** ctx: see notes/bench-convention (cli, root, tmp, progress, args). */
export async function run(ctx) {
  const runtime = join(ctx.tmp, 'runtime');
  mkdirSync(runtime, { recursive: true });
  writeFileSync(join(runtime, 'bench-inputs.yaml'), INPUTS_WORKFLOW);
  writeFileSync(join(runtime, 'bench-command.yaml'), COMMAND_WORKFLOW);
  const downPort = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: join(ctx.tmp, 'home'),
    XDG_CONFIG_HOME: join(ctx.tmp, 'config'),
    WORKFLOWLOOKUP_WORKFLOWS_PATH: runtime,
    WORKFLOWLOOKUP_DATA_DIR: join(ctx.tmp, 'data'),
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${downPort}`,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: 'bench-token',
  };

  ctx.progress('tools/list per profile');
  const toolsList = {};
  for (const profile of PROFILES) {
    const s = await server(ctx.cli, { ...env, WORKFLOWLOOKUP_TOOLS: profile });
    const res = await s.request('tools/list', {});
    toolsList[profile] = { tools: res.result.tools.length, bytes: bytes(res.result) };
    await s.stop();
  }

  ctx.progress('typical answers');
  const stdio = await server(ctx.cli, env);
  const answers = {};
  const dump = {};
  const call = async (label, name, args) => {
    const res = await stdio.request('tools/call', { name, arguments: args });
    if (res.error) throw new Error(`${label}: ${JSON.stringify(res.error)}`);
    answers[label] = { ...measure(res.result), error: res.result.isError === true };
    dump[label] = res.result;
    return res.result.structuredContent ?? {};
  };
  try {
    await call('workflow_list (bundled)', 'workflow_list', {});
    await call('workflow_get coding-task-workflow', 'workflow_get', { id: 'coding-task-workflow' });
    await call('workflow_next (guidance)', 'workflow_next', {
      workflowId: 'coding-task-workflow',
      completedSteps: [],
    });
    const started = await call('workflow_start', 'workflow_start', { workflow_name: 'coding-task-workflow' });
    const rejected = await call('workflow_next_step (rejected)', 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'too short' },
    });
    const summary =
      'Goal: add the endpoint. Relevant code: src/routes/tasks.ts (routing), src/store/tasks.ts (queries). ' +
      'Existing tests: test/tasks.test.ts covers listing. Risks: the public API shape. Open questions: none.';
    await call('workflow_next_step (next step)', 'workflow_next_step', {
      token: tokenOf(rejected),
      output: { summary },
    });
    await call('workflow_resume', 'workflow_resume', { execution_id: started.execution_id });
    await call('catalog_import_openapi', 'catalog_import_openapi', {
      source: join(ctx.root, 'test', 'fixtures', 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: `http://127.0.0.1:${downPort}/api`,
    });
    await call('fail: workflow_get unknown id', 'workflow_get', { id: 'no-such-workflow' });
    await call('fail: unknown argument', 'workflow_start', {
      workflow_name: 'coding-task-workflow',
      contxt: {},
    });
    await call('fail: forged token', 'workflow_next_step', {
      token: 'eyJmb3JnZWQiOnRydWV9.c2lnbmF0dXJl',
      output: { summary: 'x' },
    });
    await call('fail: inputs not ready', 'workflow_start', {
      workflow_name: 'bench-inputs',
      inputs: { project: 'zz' },
    });
    await call('fail: command step, API down', 'workflow_start', { workflow_name: 'bench-command' });
  } finally {
    await stdio.stop();
  }
  if (ctx.args?.dump !== undefined) {
    process.stderr.write(`${JSON.stringify(dump, null, 2)}\n`);
  }
  return { toolsList, answers };
}

export function report(result) {
  const lines = ['  tools/list (bytes)'];
  for (const [profile, r] of Object.entries(result.toolsList)) {
    lines.push(
      `    ${profile.padEnd(11)} ${String(r.tools).padStart(2)} tools  ${String(r.bytes).padStart(6)}`,
    );
  }
  lines.push('  answers (bytes: whole result = text copy + structured copy + framing)');
  for (const [label, r] of Object.entries(result.answers)) {
    lines.push(
      `    ${label.padEnd(38)} ${String(r.total).padStart(6)}  text ${String(r.text).padStart(6)}  structured ${String(r.structured).padStart(6)}`,
    );
  }
  return lines;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const argv = process.argv.slice(2);
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]?.replace(/^--/, '') ?? '';
    const value = argv[i + 1];
    if (value !== undefined && !value.startsWith('--')) {
      args[name] = value;
      i++;
    } else args[name] = 'true';
  }
  const tmp = mkdtempSync(join(tmpdir(), 'wl-answer-sizes-'));
  const ctx = {
    cli: resolve(args.cli ?? join(root, 'dist', 'cli.js')),
    root,
    tmp,
    floor: null,
    args,
    progress: (message) => process.stderr.write(`${message}\n`),
  };
  try {
    const result = await run(ctx);
    console.log(title);
    for (const line of report(result, ctx)) console.log(line);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
