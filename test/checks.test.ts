import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { CLI, callTool, FIXTURES, ROOT, type Sandbox, sandbox, tokenOf } from './helpers/server.js';
import { apiSandbox } from './helpers/tasks-api.js';

// Checks the server runs itself (verify: {check}), through the real protocol: the operator's file says
// what runs; a workflow names a check; the agent's submission makes the server run it, and only a pass
// moves the execution on. Hangs are killed (with what they started), floods are capped, and only the
// allowed environment reaches the command.

type Json = Record<string, any>;

const NODE = process.execPath;

const script = (body: string) => ({ command: NODE, args: ['-e', body] });

function workflow(id: string, check: string): string {
  return `id: ${id}
name: ${id}
description: a step verified by the server
version: 1.0.0
steps:
  - id: fix
    title: Fix it
    prompt: Fix the bug.
    verify:
      check: ${check}
  - id: done
    title: Done
    prompt: Summarize.
`;
}

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

function prepare(
  checks: Record<string, Json> | ((work: string) => Record<string, Json>),
  workflows: Record<string, string>,
) {
  const sb = sandbox();
  boxes.push(sb);
  const work = join(sb.root, 'work');
  mkdirSync(work);
  const checksFile = join(sb.root, 'checks.json');
  writeFileSync(checksFile, JSON.stringify({ checks: typeof checks === 'function' ? checks(work) : checks }));
  for (const [id, check] of Object.entries(workflows))
    writeFileSync(join(sb.runtime, `${id}.yaml`), workflow(id, check));
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  sb.env.WORKFLOWLOOKUP_CHECKS_FILE = checksFile;
  return { sb, work };
}

async function connect(sb: Sandbox, env: Record<string, string> = {}, client?: Client) {
  const conn = await inProcessClient(sb, env, client ? { client } : {});
  open.push(conn);
  return (name: string, args: Json) => callTool(conn.client, name, args);
}

describe('server-run checks', () => {
  it('advances only when the check passes; a failure hands back a fresh token and the output tail', async () => {
    const { sb, work } = prepare(
      (dir) => ({
        tests: {
          ...script(
            "const ok=require('fs').existsSync('fixed');console.log(ok?'all 12 tests pass':'1 failing: expected 2, got 3');process.exit(ok?0:1)",
          ),
          cwd: 'directory',
          directory: dir,
          env: [],
        },
      }),
      { 'verified-fix': 'tests' },
    );
    const call = await connect(sb);
    const started = await call('workflow_start', { workflow_id: 'verified-fix' });
    const failed = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'fixed it, the tests pass' },
    });
    expect(failed).toMatchObject({
      success: false,
      step_name: 'fix',
      check: { check: 'tests', passed: false, exit_code: 1, timed_out: false, cwd: work },
    });
    expect(failed.check.tail).toContain('expected 2, got 3');
    expect(failed.validation.issues).toContain('CHECK_FAILED: check "tests" exited with 1');
    // The agent fixes it for real, then resubmits with the fresh token.
    writeFileSync(join(work, 'fixed'), '');
    const passed = await call('workflow_next_step', { token: tokenOf(failed), output: { summary: 'fixed' } });
    expect(passed).toMatchObject({ success: true, step_name: 'done' });
  });

  it('a check with no project to run in names the missing setting, not a tool error (nothing runs)', async () => {
    // As the examples' checks file was: `cwd: roots` and a client that declares no roots, with no
    // `directory` (a message naming it), or with one inside this package (whose `npm test` is not the
    // user's: it answered `biome: not found`).
    const { sb, work } = prepare({}, { nodir: 'nodir', ours: 'ours' });
    const ran = join(work, 'ran');
    const body = `require('fs').writeFileSync(${JSON.stringify(ran)}, 'ran')`;
    const checksFile = sb.env.WORKFLOWLOOKUP_CHECKS_FILE as string;
    writeFileSync(
      checksFile,
      JSON.stringify({
        checks: {
          nodir: { ...script(body), cwd: 'roots' },
          ours: { ...script(body), cwd: 'roots', directory: join(ROOT, 'examples', 'checks') },
        },
      }),
    );
    const call = await connect(sb);
    for (const [id, says] of [
      [
        'nodir',
        `could not run: no working directory: the client declared no MCP roots and checks.nodir in ${checksFile} sets no \`directory\`; the operator sets \`directory\` to the project to check, or uses a client that declares its roots`,
      ],
      [
        'ours',
        `could not run: not a project: the working directory ${join(ROOT, 'examples', 'checks')} (checks.ours in ${checksFile}'s \`directory\`, as the client declared no MCP roots) is inside workflowlookup's own package`,
      ],
    ] as const) {
      const started = await call('workflow_start', { workflow_id: id });
      const refused = await call('workflow_next_step', {
        token: tokenOf(started),
        output: { summary: 'done' },
      });
      expect(refused).toMatchObject({
        success: false,
        step_name: 'fix',
        check: { passed: false, exit_code: null },
      });
      expect(refused.validation.issues.join('\n')).toContain(`CHECK_FAILED: check "${id}" ${says}`);
      const hint = refused.validation.suggestions.join('\n');
      expect(hint).toContain('no change to the work fixes that: tell the user what the issue says');
      expect(hint).not.toContain("Fix what the check's output");
    }
    expect(existsSync(ran), 'the command never ran').toBe(false);
  });

  it('kills a check that hangs (its process group too), and caps one that floods', async () => {
    const { sb, work } = prepare({}, { hangs: 'hang', floods: 'flood' });
    const pidFile = join(work, 'child.pid');
    const checks = {
      // sh, not node: its first act is to start the child, a fork away from exec, so the
      // timeout cannot fire before there is a child to kill however busy the machine is.
      hang: {
        command: '/bin/sh',
        args: ['-c', `sleep 1000 & echo $! > '${pidFile}'; echo started; wait`],
        cwd: 'directory',
        directory: work,
        timeout: 2000,
      },
      flood: {
        ...script(
          "const l='x'.repeat(99)+'\\n';for(let i=0;i<100000;i++)process.stdout.write(l);console.log('THE END')",
        ),
        cwd: 'directory',
        directory: work,
        max_output: 1024,
      },
    };
    writeFileSync(sb.env.WORKFLOWLOOKUP_CHECKS_FILE as string, JSON.stringify({ checks }));
    const call = await connect(sb);
    const hang = await call('workflow_start', { workflow_id: 'hangs' });
    const stopped = await call('workflow_next_step', { token: tokenOf(hang), output: { summary: 'done' } });
    expect(stopped).toMatchObject({ success: false, check: { timed_out: true, passed: false } });
    expect(stopped.validation.issues[0]).toContain('timed out');
    // What the check started ended with it (gone, or a zombie nobody has reaped yet).
    expect(existsSync(pidFile), 'the check was stopped before it started its child').toBe(true);
    const child = Number(readFileSync(pidFile, 'utf8'));
    const running = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${child}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    await expect.poll(running).toBe(false);

    const flood = await call('workflow_start', { workflow_id: 'floods' });
    const capped = await call('workflow_next_step', { token: tokenOf(flood), output: { summary: 'done' } });
    expect(capped).toMatchObject({ success: true, step_name: 'done' });
    const status = await call('workflow_resume', { execution_id: flood.execution_id });
    expect(status.current_step).toBe('done');
    const app = open[0] as unknown as { app: { services: { executions(): Promise<any> } } };
    const events = await (await app.app.services.executions()).queries.telemetry(
      { execution_id: flood.execution_id, limit: 50 },
      { principal: 'local' },
    );
    const run = events.find((e: Json) => e.event_type === 'check_run')?.metadata;
    expect(run).toMatchObject({ passed: true, truncated: true });
    expect(run.output_bytes).toBeGreaterThan(10_000_000);
    expect(Buffer.byteLength(run.tail)).toBeLessThanOrEqual(1024);
    expect(run.tail).toContain('THE END');
  });

  it('passes only the allowed environment, hides secrets in the tail, and uses the client root', async () => {
    const { sb, work } = prepare({}, { envs: 'env' });
    const root = join(sb.root, 'client-root');
    mkdirSync(root);
    writeFileSync(
      sb.env.WORKFLOWLOOKUP_CHECKS_FILE as string,
      JSON.stringify({
        checks: {
          env: {
            ...script('console.log(process.cwd());console.log(JSON.stringify(process.env))'),
            cwd: 'roots',
            directory: work,
            env: ['ALLOWED_ONE', 'DEPLOY_TOKEN'],
          },
        },
      }),
    );
    const client = new Client({ name: 'with-roots', version: '1.0.0' }, { capabilities: { roots: {} } });
    client.setRequestHandler('roots/list', async () => ({
      roots: [{ uri: pathToFileURL(root).href, name: 'project' }],
    }));
    const call = await connect(
      sb,
      { ALLOWED_ONE: 'visible-value', NOT_ALLOWED: 'must-not-leak', DEPLOY_TOKEN: 'sup3r-s3cret-value' },
      client,
    );
    const started = await call('workflow_start', { workflow_id: 'envs' });
    const done = await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'ok' } });
    expect(done.success).toBe(true);
    const app = open[0] as unknown as { app: { services: { executions(): Promise<any> } } };
    const events = await (await app.app.services.executions()).queries.telemetry(
      { execution_id: started.execution_id, limit: 50 },
      { principal: 'local' },
    );
    const run = events.find((e: Json) => e.event_type === 'check_run')?.metadata;
    expect(run.cwd).toBe(root);
    expect(run.tail).toContain(root);
    expect(run.tail).toContain('visible-value');
    expect(run.tail).not.toContain('must-not-leak');
    expect(run.tail).not.toContain('NOT_ALLOWED');
    expect(run.tail).not.toContain('sup3r-s3cret-value');
    expect(run.tail).toContain('[hidden]');
  });

  it('strips terminal controls from the tail and hides wlt_ tokens and the token secret in any form', async () => {
    const { sb, work } = prepare({}, { noisy: 'noisy' });
    const data = sb.env.WORKFLOWLOOKUP_DATA_DIR as string;
    const staticToken = `wlt_${Buffer.alloc(32, 9).toString('base64url')}`;
    const envSecret = 'env-secret-value-0123456789';
    // What the check prints: escapes of every kind, controls, a bidi override, CR line ends, and the
    // server's secrets as they are, in hex, upper case and split over lines. Raw: the escapes are the
    // child's to write (a NUL cannot travel in an argument).
    const body = String.raw`
      const fs = require('fs');
      const secret = fs.readFileSync(${JSON.stringify(join(data, 'token-secret'))}, 'utf8').trim();
      const env = process.env.DEPLOY_TOKEN;
      const hex = (s) => Buffer.from(s).toString('hex');
      const out = [
        '\x1b[2J\x1b[H\x1b[1;31mFAIL\x1b[0m 1 failing',
        '\x1b]0;owned-title\x07\x1b]52;c;Y2xpcGJvYXJk\x07\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\',
        'name: \u202egnp.exe\u2066x\u2069 nul:\x00: bell:\x07: c1:\x9b31m:',
        'progress 10%\rprogress 100%\r\nstatic ' + ${JSON.stringify(staticToken)},
        'plain ' + secret, 'hex ' + hex(secret).toUpperCase(), 'upper ' + secret.toUpperCase(),
        'wrapped ' + secret.replace(/(.{16})/g, '$1\n'), 'crlf ' + secret.slice(0, 5) + '\r\n' + secret.slice(5),
        'env hex ' + hex(env), 'env split ' + env.slice(0, 7) + '\n' + env.slice(7),
      ];
      process.stdout.write(out.join('\n') + '\n');
      process.exit(1);`;
    writeFileSync(
      sb.env.WORKFLOWLOOKUP_CHECKS_FILE as string,
      JSON.stringify({
        checks: { noisy: { ...script(body), cwd: 'directory', directory: work, env: ['DEPLOY_TOKEN'] } },
      }),
    );
    const call = await connect(sb, { DEPLOY_TOKEN: envSecret });
    const started = await call('workflow_start', { workflow_id: 'noisy' });
    const failed = await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'done' } });
    expect(failed).toMatchObject({ success: false, check: { passed: false, exit_code: 1 } });
    const secret = readFileSync(join(data, 'token-secret'), 'utf8').trim();
    const app = open[0] as unknown as { app: { services: { executions(): Promise<any> } } };
    const events = await (await app.app.services.executions()).queries.telemetry(
      { execution_id: started.execution_id, limit: 50 },
      { principal: 'local' },
    );
    const recorded = events.find((e: Json) => e.event_type === 'check_run')?.metadata.tail as string;
    for (const [where, tail] of [
      ['answer', failed.check.tail as string],
      ['telemetry', recorded],
    ] as const) {
      expect(tail, where).toContain('FAIL 1 failing\nclick\nname: gnp.exex nul:: bell:: c1::');
      expect(tail, where).toContain('progress 10%\nprogress 100%\nstatic [hidden]');
      // No control character but newline, no C1 control, no bidi control is left.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is looked for
      expect(tail, where).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
      expect(tail, where).not.toContain('owned-title');
      expect(tail, where).not.toContain('evil.example');
      expect(tail, where).not.toContain('Y2xpcGJvYXJk');
      const flat = tail.replace(/\s/g, '').toLowerCase();
      for (const hidden of [secret, Buffer.from(secret).toString('hex'), staticToken, envSecret]) {
        expect(flat, where).not.toContain(hidden.slice(4, 20).toLowerCase());
      }
      expect(flat, where).not.toContain(Buffer.from(envSecret).toString('hex').slice(4, 20));
      for (const label of ['plain', 'hex', 'upper', 'wrapped', 'crlf', 'envhex', 'envsplit'])
        expect(flat, `${where} ${label}`).toMatch(new RegExp(`${label}\\[hidden\\]`));
    }
  });

  it('strips terminal controls from HTTP check tails and from command step outputs', async () => {
    const { api, sb } = await apiSandbox();
    boxes.push(sb);
    open.push({ close: () => api.stop() });
    const noisy = 'Title \x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example/\x07link\u202egnp.exe\r\nend';
    const checksFile = join(sb.root, 'checks.json');
    writeFileSync(
      checksFile,
      JSON.stringify({
        checks: {
          'api-echo': {
            http: { run: 'tasks-api create-task', with: { projectId: 'p1' }, body: { title: noisy } },
          },
        },
      }),
    );
    writeFileSync(
      join(sb.runtime, 'noisy-api.yaml'),
      `id: noisy-api
name: noisy-api
description: a command step whose API answers with terminal controls
version: 1.0.0
steps:
  - id: make
    title: Make a task
    run: tasks-api create-task
    with: { projectId: p1 }
    body: { title: ${JSON.stringify(noisy)} }
  - id: fix
    title: Fix it
    prompt: "Fix the task titled: \${{ steps.make.output.title }}"
    verify:
      check: api-echo
  - id: done
    title: Done
    prompt: Summarize.
`,
    );
    const call = await connect(sb, { WORKFLOWLOOKUP_CHECKS_FILE: checksFile });
    await call('catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is looked for
    const controls = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\\u001b|\\u0007/;
    const started = await call('workflow_start', { workflow_id: 'noisy-api' });
    expect(started).toMatchObject({ success: true, step_name: 'fix' });
    expect(started.commands[0].output.title).toBe('Title linkgnp.exe\nend');
    expect(started.agent_content).toContain('Title linkgnp.exe\nend');
    expect(started.agent_content).not.toMatch(controls);
    const done = await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'ok' } });
    expect(done).toMatchObject({ success: true, step_name: 'done' });
    const app = open[1] as unknown as { app: { services: { executions(): Promise<any> } } };
    const events = await (await app.app.services.executions()).queries.telemetry(
      { execution_id: started.execution_id, limit: 50 },
      { principal: 'local' },
    );
    const tail = events.find((e: Json) => e.event_type === 'check_run')?.metadata.tail as string;
    expect(tail).toContain('Title linkgnp.exe');
    expect(tail).not.toMatch(controls);
    expect(tail).not.toContain('owned');
  });

  it('ends what a passing check left running in the background', async () => {
    const { sb, work } = prepare(
      (dir) => ({
        leaves: {
          command: '/bin/sh',
          // One grandchild holds the output pipe, one does not; both would write a marker later.
          args: [
            '-c',
            '(sleep 2; touch held) & echo $! > held.pid; (sleep 2; touch loose) >/dev/null 2>&1 & echo $! > loose.pid; echo started; exit 0',
          ],
          cwd: 'directory',
          directory: dir,
          env: ['PATH'],
        },
      }),
      { leaves: 'leaves' },
    );
    const call = await connect(sb);
    const started = await call('workflow_start', { workflow_id: 'leaves' });
    const done = await call('workflow_next_step', { token: tokenOf(started), output: { summary: 'ok' } });
    expect(done).toMatchObject({ success: true, step_name: 'done' });
    const running = (pid: number) => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    const pids = ['held.pid', 'loose.pid'].map((f) => Number(readFileSync(join(work, f), 'utf8')));
    // Waits (bounded) for the grandchildren to be gone, rather than for their delay to pass: once
    // they are, a marker either was written or never will be.
    await expect.poll(() => pids.filter(running), { timeout: 15_000, interval: 50 }).toEqual([]);
    expect(existsSync(join(work, 'held'))).toBe(false);
    expect(existsSync(join(work, 'loose'))).toBe(false);
  });

  it('runs at most the allowed number of checks of one principal at once; the others wait their turn', async () => {
    const { sb, work } = prepare({}, {});
    const log = join(work, 'runs.log');
    // Each run notes its start and end in one file (appends are atomic); overlaps are counted from it.
    const body = `
      const fs = require('fs');
      fs.appendFileSync(${JSON.stringify(log)}, 'start\\n');
      setTimeout(() => { fs.appendFileSync(${JSON.stringify(log)}, 'end\\n'); process.exit(0); }, 400);`;
    writeFileSync(
      sb.env.WORKFLOWLOOKUP_CHECKS_FILE as string,
      JSON.stringify({ checks: { slow: { ...script(body), cwd: 'directory', directory: work } } }),
    );
    const n = 6;
    for (let i = 0; i < n; i++)
      writeFileSync(join(sb.runtime, `capped-${i}.yaml`), workflow(`capped-${i}`, 'slow'));
    // Three at once in all, two per principal: the per-principal limit is the one that binds here.
    const call = await connect(sb, {
      WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT: '3',
      WORKFLOWLOOKUP_CHECKS_MAX_PER_PRINCIPAL: '2',
    });
    const starts = await Promise.all(
      Array.from({ length: n }, (_, i) => call('workflow_start', { workflow_id: `capped-${i}` })),
    );
    const answers = await Promise.all(
      starts.map((s) => call('workflow_next_step', { token: tokenOf(s), output: { summary: 'ok' } })),
    );
    for (const a of answers) expect(a).toMatchObject({ success: true, step_name: 'done' });
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines.filter((l) => l === 'start')).toHaveLength(n);
    let alive = 0;
    let most = 0;
    for (const line of lines) {
      alive += line === 'start' ? 1 : -1;
      most = Math.max(most, alive);
    }
    expect(most).toBeLessThanOrEqual(2);
  });

  it('reads the check limits strictly: defaults, zero queue allowed, anything else refused by name', () => {
    const sb = sandbox();
    boxes.push(sb);
    const slots = (env: Record<string, string>) =>
      loadConfig({ env: { ...sb.env, ...env }, cwd: sb.project }).checkSlots;
    expect(slots({})).toEqual({ maxConcurrent: 2, maxPerPrincipal: 1, maxQueued: 32 });
    expect(
      slots({
        WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT: '8',
        WORKFLOWLOOKUP_CHECKS_MAX_PER_PRINCIPAL: '3',
        WORKFLOWLOOKUP_CHECKS_MAX_QUEUED: '0',
      }),
    ).toEqual({ maxConcurrent: 8, maxPerPrincipal: 3, maxQueued: 0 });
    for (const [name, value] of [
      ['WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT', '0'],
      ['WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT', '2.5'],
      ['WORKFLOWLOOKUP_CHECKS_MAX_PER_PRINCIPAL', '-1'],
      ['WORKFLOWLOOKUP_CHECKS_MAX_QUEUED', 'lots'],
    ] as const) {
      expect(() => slots({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      expect(() => slots({ [name]: value }), `${name}=${value}`).toThrow(name);
    }
  });

  it('refuses an unknown check name (validation error) and a disabled one (CHECK_UNAVAILABLE)', async () => {
    const { sb } = prepare(
      { off: { ...script('process.exit(0)'), cwd: 'directory', directory: '.', enabled: false } },
      { typo: 'unit-tets', disabled: 'off' },
    );
    const call = await connect(sb);
    const typo = await call('workflow_start', { workflow_id: 'typo' });
    expect(typo.error.code).toBe(-32002);
    expect(typo.error.data).toMatchObject({ error_code: 'WORKFLOW_INVALID' });
    expect(typo.error.data.violations[0]).toMatchObject({ rule: 'knownCheck', actual: 'unit-tets' });
    const disabled = await call('workflow_start', { workflow_id: 'disabled' });
    expect(disabled.error.data).toMatchObject({ error_code: 'CHECK_UNAVAILABLE', retryable: false });
    expect(disabled.error.data.message).toContain('disabled');
  });

  it('runs an HTTP check through an imported catalog operation: a 2xx passes, a server error fails', async () => {
    const { api, sb } = await apiSandbox();
    boxes.push(sb);
    open.push({ close: () => api.stop() });
    const checksFile = join(sb.root, 'checks.yaml');
    writeFileSync(
      checksFile,
      [
        'checks:',
        '  api-up:',
        "    http: { run: 'tasks-api list-projects' }",
        '  task-exists:',
        "    http: { run: 'tasks-api get-task', with: { projectId: p1, taskId: boom } }",
      ].join('\n'),
    );
    for (const [id, check] of [
      ['healthy', 'api-up'],
      ['missing', 'task-exists'],
    ] as const) {
      writeFileSync(join(sb.runtime, `${id}.yaml`), workflow(id, check));
    }
    const call = await connect(sb, { WORKFLOWLOOKUP_CHECKS_FILE: checksFile });
    const imported = await call('catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(imported.catalog_id).toBe('tasks-api');
    const healthy = await call('workflow_start', { workflow_id: 'healthy' });
    const up = await call('workflow_next_step', { token: tokenOf(healthy), output: { summary: 'ok' } });
    expect(up).toMatchObject({ success: true, step_name: 'done' });
    const missing = await call('workflow_start', { workflow_id: 'missing' });
    const down = await call('workflow_next_step', { token: tokenOf(missing), output: { summary: 'ok' } });
    expect(down).toMatchObject({
      success: false,
      step_name: 'fix',
      check: { passed: false, exit_code: 500 },
    });
  });

  it('a checks file that cannot be used stops `serve` before it serves (exit 2, the file and the problem)', () => {
    const sb = sandbox();
    boxes.push(sb);
    const cases: [string, string, string][] = [
      ['bad.yaml', 'checks:\n  tests: { command: npm, args: [test], shell: true }\n', 'shell'],
      ['bad.json', '{"checks": {"Bad Name": {"command": "x"}}}', 'a check name'],
      ['broken.yaml', 'checks: [unclosed', 'not valid YAML'],
      ['nodir.yaml', 'checks:\n  t: { command: x, cwd: directory }\n', 'needs directory'],
    ];
    for (const [name, text, says] of cases) {
      const file = join(sb.root, name);
      writeFileSync(file, text);
      const run = spawnSync(process.execPath, [CLI, 'serve'], {
        env: { ...sb.env, WORKFLOWLOOKUP_CHECKS_FILE: file },
        input: '',
        encoding: 'utf8',
      });
      expect(run.status, name).toBe(2);
      expect(run.stderr, name).toContain('WORKFLOWLOOKUP_CHECKS_FILE');
      expect(run.stderr, name).toContain(says);
    }
    const missing = spawnSync(process.execPath, [CLI, 'serve'], {
      env: { ...sb.env, WORKFLOWLOOKUP_CHECKS_FILE: join(sb.root, 'nope.yaml') },
      input: '',
      encoding: 'utf8',
    });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('does not exist');
  });

  it('runs no check on the HTTP server unless WORKFLOWLOOKUP_HTTP_CHECKS is set', async () => {
    for (const allowed of [false, true]) {
      const { sb, work } = prepare(
        { tests: { ...script('process.exit(0)'), cwd: 'directory', directory: '.' } },
        { remote: 'tests' },
      );
      const server = await inProcessHttp(sb, allowed ? { WORKFLOWLOOKUP_HTTP_CHECKS: '1' } : {}, {
        servesHttp: true,
      });
      open.push(server);
      expect(existsSync(work)).toBe(true);
      const client = new Client({ name: 'http', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      open.push({ close: () => client.close() });
      const started = await callTool(client, 'workflow_start', { workflow_id: 'remote' });
      if (allowed) {
        const done = await callTool(client, 'workflow_next_step', {
          token: tokenOf(started),
          output: { summary: 'ok' },
        });
        expect(done).toMatchObject({ success: true, step_name: 'done' });
      } else {
        expect(started.error.data).toMatchObject({ error_code: 'CHECK_UNAVAILABLE' });
        expect(started.error.data.message).toContain('WORKFLOWLOOKUP_HTTP_CHECKS');
      }
    }
  });
});
