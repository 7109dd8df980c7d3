import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_TABLE } from '../src/protocol/error-mapping.js';
import { makeReadOnly, SMALL_FILES_ONLY } from './helpers/fs-faults.js';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { FIXTURES, RawServer, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
/** In-process by default; the full-volume case below is a process (a shell's file size limit). */
type Raw = RawServer | InProcessRaw;
let server: Raw;
let ids = 0;
/** How far the server's clock runs ahead of the wall clock: a token expires when the test moves it, not when the machine is slow. */
let ahead = 0;

beforeAll(async () => {
  sb = sandbox({ WORKFLOWLOOKUP_TOKEN_TTL_SECONDS: '60' });
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  cpSync(join(FIXTURES, 'invalid', 'broken-schema.yaml'), join(sb.runtime, 'broken-schema.yaml'));
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  server = new InProcessRaw({ env: sb.env, cwd: sb.project, app: { clock: () => Date.now() + ahead } });
  await server.initialize();
});

afterAll(() => {
  server.kill();
  sb.cleanup();
});

async function rpc(method: string, params: Json, s: Raw = server): Promise<Json> {
  const res = await s.request(`e${ids++}`, method, params);
  return res.error ? { error: res.error } : (res.result as Json);
}

const yaml = (id: string, version = '1.0.0') =>
  `id: ${id}\nname: N\ndescription: D\nversion: ${version}\nsteps:\n  - {id: one-step, title: T, prompt: P}\n`;

describe('structured errors (seed 003 §10)', () => {
  it('every error_code in the table is reachable through the protocol, with all §10 fields', async () => {
    const seen = new Map<string, Json>();
    const answeredBy = new Map<string, Raw>();
    const expectError = async (method: string, params: Json, s: Raw = server) => {
      const res = await rpc(method, params, s);
      expect(res.error, `${method} ${JSON.stringify(params)}`).toBeDefined();
      seen.set(res.error.data.error_code, res.error);
      answeredBy.set(res.error.data.error_code, s);
      return res.error;
    };

    await expectError('workflow_get', { id: 'ghost-flow' });
    await expectError('workflow_get', { id: 'broken-schema' });
    await expectError('workflow_validate', { workflowId: 'rules-demo', stepId: 'ghost-step', output: 'x' });
    await expectError('workflow_get', {});
    // A forEach whose list was never given: PRECONDITION_FAILED, never a silent skip.
    await expectError('workflow_next', { workflowId: 'loops-demo', completedSteps: ['intro', 'retry-loop'] });
    await expectError('workflow_resume', { execution_id: 'ghost' });
    const started = await rpc('workflow_start', { workflow_name: 'durable-demo' });
    await expectError('workflow_set_state', { execution_id: started.execution_id, state: 'running' });
    await expectError('workflow_next_step', { token: 'not-a-token', output: { summary: 's' } });
    ahead += 61_000;
    await expectError('workflow_next_step', { token: tokenOf(started), output: { summary: 'design' } });
    await expectError('workflow_save', { content: yaml('bad-version', 'x') });
    await rpc('workflow_save', { content: yaml('twice-saved') });
    await expectError('workflow_save', { content: yaml('twice-saved') });
    await expectError('workflow_rename', { workflow_id: 'coding-task-workflow', new_id: 'renamed-coding' });
    await expectError('workflow_save', { content: yaml('escapee'), file_name: '../escapee.yaml' });
    await expectError('workflow_save', { content: yaml('escapee'), file_name: 'CON.yaml' });
    await expectError('workflow_delete', { workflow_id: 'twice-saved' });
    // A schema whose check never ends (2^40 evaluations): its own work runs past the budget every time.
    await rpc('workflow_save', {
      content: readFileSync(join(FIXTURES, 'hostile', 'stall-rules.json'), 'utf8'),
    });
    await expectError('workflow_validate', {
      workflowId: 'stall-rules',
      stepId: 'exponential',
      output: '"x"',
    });
    const openapi = join(FIXTURES, 'openapi');
    await expectError('catalog_import_openapi', {
      source: join(openapi, 'broken.yaml'),
      catalog_title: 'Broken',
    });
    await expectError('catalog_remove', { catalog_id: 'ghost-catalog' });
    // Nothing listens on port 9: the command step fails with a network error after its retries.
    const dead = {
      source: join(openapi, 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: 'http://127.0.0.1:9/api',
    };
    await rpc('catalog_import_openapi', dead);
    await expectError('catalog_import_openapi', dead);
    await rpc('workflow_save', {
      content: `${yaml('needs-input').replace('steps:', 'inputs:\n  who: {type: string, description: Who, required: true}\nsteps:')}`,
    });
    await expectError('workflow_start', { workflow_name: 'needs-input' });
    await rpc('workflow_save', {
      content: yaml('calls-api').replace(
        '  - {id: one-step, title: T, prompt: P}',
        '  - {id: fetch-it, title: F, run: tasks-api list-projects}',
      ),
    });
    await expectError('workflow_start', { workflow_name: 'calls-api' });
    // A step naming a server-run check, on a server with no checks configured.
    await rpc('workflow_save', {
      content: yaml('verified').replace('prompt: P}', 'prompt: P, verify: {check: unit-tests}}'),
    });
    await expectError('workflow_start', { workflow_name: 'verified' });
    // Checks busy: one check runs (and waits for a file), none may queue, so a second is refused.
    const busy = sandbox();
    const [begun, release] = [join(busy.root, 'started'), join(busy.root, 'release')];
    writeFileSync(
      join(busy.root, 'checks.json'),
      JSON.stringify({
        checks: {
          blocks: {
            command: process.execPath,
            args: [
              '-e',
              `const fs=require('fs');fs.writeFileSync(${JSON.stringify(begun)},'');setInterval(()=>{if(fs.existsSync(${JSON.stringify(release)}))process.exit(0)},20)`,
            ],
            cwd: 'directory',
            directory: busy.root,
          },
        },
      }),
    );
    writeFileSync(
      join(busy.runtime, 'blocked.yaml'),
      yaml('blocked').replace('prompt: P}', 'prompt: P, verify: {check: blocks}}'),
    );
    const crowded = new InProcessRaw({
      env: {
        ...busy.env,
        WORKFLOWLOOKUP_DATA_DIR: join(busy.root, 'data'),
        WORKFLOWLOOKUP_CHECKS_FILE: join(busy.root, 'checks.json'),
        WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT: '1',
        WORKFLOWLOOKUP_CHECKS_MAX_QUEUED: '0',
      },
      cwd: busy.project,
    });
    try {
      await crowded.initialize();
      const [first, second] = [
        await rpc('workflow_start', { workflow_name: 'blocked' }, crowded),
        await rpc('workflow_start', { workflow_name: 'blocked' }, crowded),
      ];
      const running = crowded.request('busy-1', 'workflow_next_step', {
        token: tokenOf(first),
        output: { summary: 's' },
      });
      for (let i = 0; i < 4000 && !existsSync(begun); i++) await new Promise((r) => setTimeout(r, 25));
      await expectError('workflow_next_step', { token: tokenOf(second), output: { summary: 's' } }, crowded);
      writeFileSync(release, '');
      expect((await running).result).toBeDefined();
    } finally {
      crowded.kill();
      busy.cleanup();
    }

    // Tasks: long work only as a task; what the client cannot do; unknown, finished and cancelled tasks.
    await expectError('workflow_run', { workflow_id: 'durable-demo' });
    await expectError('tools/call', {
      name: 'workflow_author_and_run',
      arguments: { request: 'anything' },
      task: {},
    });
    await expectError('tasks/get', { taskId: 'ghost-task' });
    await rpc('workflow_save', {
      content: yaml('nothing-applies').replace('P}', 'P, runCondition: {var: never, equals: true}}'),
    });
    const done = await rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'nothing-applies' },
      task: { ttl: 60_000 },
    });
    await rpc('tasks/result', { taskId: done.task.taskId });
    await expectError('tasks/cancel', { taskId: done.task.taskId });
    const waiting = await rpc('tools/call', {
      name: 'workflow_run',
      arguments: { workflow_id: 'durable-demo' },
      task: {},
    });
    await rpc('tasks/cancel', { taskId: waiting.task.taskId });
    await expectError('tasks/result', { taskId: waiting.task.taskId });

    // A client that refuses the sampling request a repair sends it.
    const sampler = new InProcessRaw({ env: sb.env, cwd: sb.project });
    try {
      await sampler.request('init', 'initialize', {
        protocolVersion: '2025-11-25',
        capabilities: { sampling: {} },
        clientInfo: { name: 'refuses-sampling', version: '1.0.0' },
      });
      const repair = await rpc(
        'tools/call',
        {
          name: 'workflow_repair_and_rerun',
          arguments: { manifest: yaml('needs-repair', 'x') },
          task: { ttl: 60_000 },
        },
        sampler,
      );
      let asked: Json | undefined;
      for (let i = 0; asked === undefined && i < 4000; i++) {
        asked = sampler.lines
          .map((l) => JSON.parse(l) as Json)
          .find((m) => m.method === 'sampling/createMessage');
        if (asked === undefined) await new Promise((r) => setTimeout(r, 25));
      }
      sampler.send({ jsonrpc: '2.0', id: asked?.id, error: { code: -1, message: 'User rejected sampling' } });
      // A task's tool error is its result (isError), carrying the same structured error.
      const failed = await rpc('tasks/result', { taskId: repair.task.taskId }, sampler);
      expect(failed.isError).toBe(true);
      const refusal = failed.structuredContent.error as Json;
      seen.set(refusal.data.error_code, refusal);
      answeredBy.set(refusal.data.error_code, sampler);
    } finally {
      sampler.kill();
    }

    // A delegating step whose children would be more than the principal may have open at once.
    const fanBox = sandbox({ WORKFLOWLOOKUP_MAX_OPEN_CHILDREN: '1' });
    writeFileSync(join(fanBox.runtime, 'child.yaml'), yaml('child'));
    writeFileSync(
      join(fanBox.runtime, 'two-children.yaml'),
      `${yaml('two-children').replace('steps:\n  - {id: one-step, title: T, prompt: P}', 'steps:\n  - {id: fan, title: T, prompt: P, delegate: {workflow: child, count: 2}}')}`,
    );
    const fanning = new InProcessRaw({
      env: { ...fanBox.env, WORKFLOWLOOKUP_DATA_DIR: join(fanBox.root, 'data') },
      cwd: fanBox.project,
    });
    try {
      await fanning.initialize();
      await expectError('workflow_start', { workflow_id: 'two-children' }, fanning);
    } finally {
      fanning.kill();
      fanBox.cleanup();
    }

    // A data dir that cannot be created: the execution store cannot open.
    const blocked = sandbox();
    writeFileSync(join(blocked.root, 'not-a-dir'), 'x');
    const storageless = new InProcessRaw({
      env: { ...blocked.env, WORKFLOWLOOKUP_DATA_DIR: join(blocked.root, 'not-a-dir', 'data') },
      cwd: blocked.project,
    });
    try {
      await storageless.initialize();
      await expectError('workflow_start', { workflow_name: 'ai-task-implementation' }, storageless);
    } finally {
      storageless.kill();
      blocked.cleanup();
    }

    // More scenarios than one workflow_test call may run: refused before any runs.
    await expectError('workflow_test', {
      content: yaml('too-many-tests'),
      tests: { scenarios: Array.from({ length: 51 }, (_, i) => ({ name: `s${i}` })) },
    });

    // A runtime dir the server cannot write: a specific error, not -32603.
    const readOnly = sandbox();
    const undo = makeReadOnly(readOnly.runtime);
    const locked = new InProcessRaw({ env: readOnly.env, cwd: readOnly.project });
    try {
      await locked.initialize();
      if (undo) await expectError('workflow_save', { content: yaml('locked-out') }, locked);
    } finally {
      locked.kill();
      undo?.();
      readOnly.cleanup();
    }
    // A volume that fills up (here: a file size limit, which fails writes the same way).
    const full = sandbox();
    const cramped = new RawServer({ env: full.env, cwd: full.project, shell: SMALL_FILES_ONLY });
    try {
      await cramped.initialize();
      const large = yaml('too-big-to-write').replace('description: D', `description: ${'d'.repeat(20_000)}`);
      await expectError('workflow_save', { content: large }, cramped);
    } finally {
      cramped.kill();
      full.cleanup();
    }

    // VALIDATION_CRITERIA_INVALID stays in the table for seed 002, but no source serves a workflow
    // whose criteria cannot be evaluated any more (they are broken: WORKFLOW_INVALID, -32002), so
    // workflow_validate cannot reach it. RUNTIME_DIR_READ_ONLY needs a directory this user cannot write.
    // TESTS_BUSY needs two workflow_test calls of one principal running at once, which one ordered
    // connection cannot make: test/workflow-test-limits.test.ts reaches it over HTTP.
    const unreachable = new Set([
      'VALIDATION_CRITERIA_INVALID',
      'TESTS_BUSY',
      ...(undo ? [] : ['RUNTIME_DIR_READ_ONLY']),
    ]);
    const table = Object.values(ERROR_TABLE)
      .map((m) => m.error_code)
      .filter((c) => !unreachable.has(c));
    expect([...seen.keys()].sort()).toEqual([...table].sort());
    for (const [code, error] of seen) {
      const mapping = Object.values(ERROR_TABLE).find((m) => m.error_code === code);
      expect(error.code, code).toBe(mapping?.rpc);
      expect(error.data, code).toMatchObject({
        error_code: code,
        category: mapping?.category,
        message: expect.any(String),
        context: expect.any(Object),
        // A command failure says per instance whether a retry may help.
        retryable: code === 'COMMAND_FAILED' ? expect.any(Boolean) : mapping?.retryable,
        suggested_action: expect.any(String),
        correlation_id: expect.stringMatching(/^wl-[0-9a-f]{12}$/),
        violations: expect.any(Array),
      });
      // The same correlation id is on the answering server's stderr log line (a JSON line).
      const line = answeredBy
        .get(code)
        ?.stderr.split('\n')
        .find((l) => l.includes(`"correlation_id":"${error.data.correlation_id}"`));
      expect(line, code).toContain(`"error_code":"${code}"`);
    }
  });

  it('keeps the seed 002 fields beside the seed 003 ones', async () => {
    const res = await rpc('workflow_get', { id: 'broken-schema' });
    expect(res.error).toMatchObject({
      code: -32002,
      message: 'Invalid workflow',
      data: { workflowId: 'broken-schema', file: expect.stringContaining('broken-schema.yaml') },
    });
    expect(res.error.data.violations.length).toBeGreaterThan(0);
    expect(res.error.data.violations[0]).toMatchObject({
      path: expect.any(String),
      rule: expect.any(String),
    });
  });
});
