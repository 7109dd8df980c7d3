import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessClient, inProcessHttp } from './helpers/in-process.js';
import { CLI, callTool, FIXTURES, type Sandbox, sandbox, tokenOf } from './helpers/server.js';
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

  it('kills a check that hangs (its process group too), and caps one that floods', async () => {
    const { sb, work } = prepare({}, { hangs: 'hang', floods: 'flood' });
    const pidFile = join(work, 'child.pid');
    const checks = {
      hang: {
        ...script(
          `const c=require('child_process').spawn(process.execPath,['-e','setInterval(()=>{},1000)'],{stdio:'ignore'});require('fs').writeFileSync(${JSON.stringify(pidFile)},String(c.pid));console.log('started');setInterval(()=>{},1000)`,
        ),
        cwd: 'directory',
        directory: work,
        timeout: 500,
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
    const child = Number(readFileSync(pidFile, 'utf8'));
    const running = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${child}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 50 && running(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(running()).toBe(false);

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
