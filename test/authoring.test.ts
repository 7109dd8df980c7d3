import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeReadOnly, SMALL_FILES_ONLY } from './helpers/fs-faults.js';
import { httpClient, startHttpServer } from './helpers/http-server.js';
import {
  callTool,
  connectClient,
  FIXTURES,
  RawServer,
  ROOT,
  type Sandbox,
  sandbox,
  tokenOf,
} from './helpers/server.js';

type Json = Record<string, any>;

let sb: Sandbox;
let client: Client;
let closeClient: () => Promise<void>;

const call = (name: string, args: Json, c: Client = client) => callTool(c, name, args);

const sha = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

const GOOD_YAML = `# Team release checklist
id: release-check
name: Release check
description: Checks a release before it ships
version: 1.0.0
steps:
  - id: changelog
    title: Changelog
    prompt: Update the changelog.
  - id: smoke-test
    title: Smoke test
    prompt: Run the smoke tests.
`;

beforeAll(async () => {
  sb = sandbox();
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  ({ client, close: closeClient } = await connectClient(sb));
});

afterAll(async () => {
  await closeClient();
  sb.cleanup();
});

describe('workflow_validate_manifest', () => {
  it('accepts a valid manifest (text or object) and the dotted alias', async () => {
    const res = await call('workflow_validate_manifest', { content: GOOD_YAML });
    expect(res).toMatchObject({
      valid: true,
      workflow_id: 'release-check',
      format: 'yaml',
      errors: [],
      violations: [],
    });
    const obj = await call('workflow_validate_manifest', {
      manifest: {
        id: 'obj-flow',
        name: 'n',
        description: 'd',
        version: '1.0.0',
        steps: [{ id: 'one-step', title: 't', prompt: 'p' }],
      },
    });
    expect(obj.valid).toBe(true);
    expect((await call('workflow.validate', { content: GOOD_YAML })).valid).toBe(true);
  });

  it('reports schema violations with line and column (YAML and JSON)', async () => {
    const yaml = GOOD_YAML.replace('version: 1.0.0', 'version: one').replace(
      '  - id: smoke-test',
      '  - id: Smoke_Test',
    );
    const res = await call('workflow_validate_manifest', { content: yaml });
    expect(res.valid).toBe(false);
    expect(res.violations).toEqual(
      expect.arrayContaining([
        // At the key, where the author looks for it.
        expect.objectContaining({ path: '/version', rule: 'pattern', line: 5, column: 1, actual: 'one' }),
        expect.objectContaining({ path: '/steps/1/id', rule: 'pattern', line: 10 }),
      ]),
    );
    expect(res.errors[0]).toMatch(/^\/version \(5:1\): /);
    const json = JSON.stringify(
      { id: 'j-flow', name: 'n', description: 'd', version: '1.0.0', steps: [{ id: 'abc', title: 't' }] },
      null,
      2,
    );
    const missing = await call('workflow_validate_manifest', { content: json });
    expect(missing.format).toBe('json');
    expect(missing.violations[0]).toMatchObject({ path: '/steps/0/prompt', rule: 'required', line: 7 });
    const syntax = await call('workflow_validate_manifest', { content: '{ "id": "x",\n  "name": }' });
    expect(syntax.violations[0]).toMatchObject({ rule: 'syntax', line: 2 });
  });

  it('checks what the schema cannot: duplicate ids, loop bodies, criteria; and warns about likely mistakes', async () => {
    const manifest = {
      id: 'lint-me',
      name: 'Lint me',
      description: 'Exercises the semantic checks',
      version: '1.0.0',
      steps: [
        { id: 'first', title: 'A', prompt: 'p', runCondition: { var: 'secretKnob', equals: 1 } },
        {
          id: 'never',
          title: 'B',
          prompt: 'p',
          runCondition: {
            and: [
              { var: 'mode', equals: 'a' },
              { var: 'mode', equals: 'b' },
            ],
          },
        },
        { id: 'persona', title: 'C', prompt: 'mode matters here', agent: 'wizard' },
        {
          id: 'bad-rule',
          title: 'D',
          prompt: 'p',
          validationCriteria: [{ type: 'regex', pattern: '(?<=x)y', message: 'm' }],
        },
        {
          id: 'loop-step',
          type: 'loop',
          title: 'L',
          loop: { type: 'for', count: 2, maxIterations: 3 },
          body: 'ghost-step',
        },
        { id: 'first', title: 'dup', prompt: 'p' },
      ],
    };
    const semantic = await call('workflow_validate_manifest', { manifest });
    // Every error in one pass: the rules beyond the schema and the criteria that cannot be evaluated.
    expect(semantic.violations.map((v: Json) => v.rule).sort()).toEqual([
      'criteria',
      'loopBody',
      'uniqueStepId',
    ]);
    manifest.steps.splice(4, 2);
    const res = await call('workflow_validate_manifest', { manifest });
    expect(res.valid).toBe(false);
    expect(res.violations).toEqual([
      expect.objectContaining({ path: '/steps/3/validationCriteria/0', rule: 'criteria' }),
    ]);
    expect(res.warnings.map((w: Json) => `${w.path} ${w.rule}`)).toEqual([
      '/steps/0/runCondition undocumentedVariable',
      // mode is mentioned, but only after it is read: no step sets it in time.
      '/steps/1/runCondition unsetVariable',
      '/steps/1/runCondition unreachableStep',
      '/steps/2/agent unknownAgent',
    ]);
  });

  it('rejects bad arguments clearly', async () => {
    expect((await call('workflow_validate_manifest', {})).error.data.error_code).toBe('INVALID_PARAMS');
    expect((await call('workflow_validate_manifest', { content: 'a', manifest: {} })).error.code).toBe(
      -32602,
    );
    // The size limit is the check's (UTF-8 bytes, the same for files and content), reported as a violation.
    const huge = await call('workflow_validate_manifest', { content: 'x'.repeat(1_048_577) });
    expect(huge).toMatchObject({ valid: false, violations: [{ rule: 'maxFileSize', actual: '1048577' }] });
    const wide = await call('workflow_validate_manifest', { content: `# ${'é'.repeat(524_288)}\nid: x` });
    expect(wide.violations[0]).toMatchObject({ rule: 'maxFileSize', actual: '1048584' });
  });
});

describe('workflow_save, workflow_get source view, rename, delete', () => {
  it('saves atomically, makes the workflow visible at once, and returns the source view with its version', async () => {
    const saved = await call('workflow_save', { content: GOOD_YAML });
    expect(saved).toMatchObject({
      path: join(sb.runtime, 'release-check.yaml'),
      workflow_id: 'release-check',
      version: sha(GOOD_YAML),
      format: 'yaml',
      created: true,
    });
    expect(readFileSync(saved.path, 'utf8')).toBe(GOOD_YAML);
    expect(readdirSync(sb.runtime).filter((f) => f.startsWith('.'))).toEqual([]);
    const listed = await call('workflow_list', {});
    expect(listed.workflows.map((w: Json) => w.id)).toContain('release-check');
    const next = await call('workflow_next', { workflowId: 'release-check', completedSteps: [] });
    expect(next.step.id).toBe('changelog');
    const started = await call('workflow_start', { workflow_name: 'release-check' });
    expect(started.step_name).toBe('changelog');
    const source = await call('workflow_get', { id: 'release-check', view: 'source' });
    expect(source).toEqual({
      workflow_id: 'release-check',
      path: saved.path,
      format: 'yaml',
      content: GOOD_YAML,
      parsed: expect.objectContaining({ id: 'release-check', steps: expect.any(Array) }),
      version: saved.version,
    });
    const plain = await call('workflow_get', { id: 'release-check' });
    expect(plain).toMatchObject({ id: 'release-check', name: 'Release check' });
    expect(plain).not.toHaveProperty('content');
  });

  it('writes nothing for an invalid manifest and returns the violations', async () => {
    const res = await call('workflow_save', {
      content: GOOD_YAML.replace('version: 1.0.0', 'version: x').replace('release-check', 'ship-it'),
    });
    expect(res.error).toMatchObject({
      code: -32002,
      data: {
        error_code: 'WORKFLOW_VALIDATION_FAILED',
        category: 'validation',
        context: { path: '/version', line: 5 },
      },
    });
    expect(res.error.data.violations[0]).toMatchObject({ path: '/version', line: 5 });
    expect(existsSync(join(sb.runtime, 'ship-it.yaml'))).toBe(false);
  });

  it('needs overwrite or a matching expected_version to replace, and refuses stale versions', async () => {
    const first = await call('workflow_save', { content: GOOD_YAML.replace(/release-check/g, 'ship-flow') });
    const again = await call('workflow_save', { content: GOOD_YAML.replace(/release-check/g, 'ship-flow') });
    expect(again.error).toMatchObject({
      code: -32005,
      data: { error_code: 'WORKFLOW_CONFLICT', category: 'conflict' },
    });
    const v2 = GOOD_YAML.replace(/release-check/g, 'ship-flow').replace('Release check', 'Ship flow v2');
    const saved = await call('workflow_save', { content: v2, expected_version: first.version });
    expect(saved).toMatchObject({ created: false, version: sha(v2) });
    const stale = await call('workflow_save', {
      content: v2.replace('v2', 'v3'),
      expected_version: first.version,
    });
    expect(stale.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    const forced = await call('workflow_save', { content: v2.replace('v2', 'v3'), overwrite: true });
    expect(forced.created).toBe(false);
    expect((await call('workflow_get', { id: 'ship-flow' })).name).toBe('Ship flow v3');
  });

  it('overrides a bundled workflow from the runtime dir and refuses file names outside it', async () => {
    const bundled = readFileSync(join(ROOT, 'workflows', 'ai-task-implementation.json'), 'utf8');
    const copy = bundled.replace('"AI Task Prompt Workflow"', '"AI Task (team copy)"');
    const res = await call('workflow_save', { content: copy });
    expect(res.overrides).toBe('bundled');
    expect((await call('workflow_get', { id: 'ai-task-implementation' })).name).toBe('AI Task (team copy)');
    for (const file_name of ['../escape.json', '/tmp/abs.json', 'sub/dir.json']) {
      const bad = await call('workflow_save', { content: copy, overwrite: true, file_name });
      expect(bad.error).toMatchObject({ code: -32007, data: { error_code: 'PATH_OUTSIDE_RUNTIME_DIR' } });
    }
    expect(
      (await call('workflow_delete', { workflow_id: 'ai-task-implementation', confirm: true }))
        .now_served_from,
    ).toBe('bundled');
  });

  it('renames runtime workflows only, keeping YAML comments', async () => {
    await call('workflow_save', { content: GOOD_YAML.replace(/release-check/g, 'release-old') });
    const renamed = await call('workflow_rename', { workflow_id: 'release-old', new_id: 'release-new' });
    expect(renamed).toMatchObject({
      workflow_id: 'release-new',
      previous_id: 'release-old',
      path: join(sb.runtime, 'release-new.yaml'),
    });
    const text = readFileSync(renamed.path, 'utf8');
    expect(text).toContain('# Team release checklist');
    expect(text).toContain('id: release-new');
    expect(existsSync(join(sb.runtime, 'release-old.yaml'))).toBe(false);
    expect((await call('workflow_get', { id: 'release-old' })).error.code).toBe(-32001);
    const bundled = await call('workflow_rename', {
      workflow_id: 'coding-task-workflow',
      new_id: 'my-coding',
    });
    expect(bundled.error).toMatchObject({ code: -32006, data: { error_code: 'WORKFLOW_READ_ONLY' } });
    await call('workflow_save', { content: GOOD_YAML.replace(/release-check/g, 'release-other') });
    const clash = await call('workflow_rename', { workflow_id: 'release-new', new_id: 'release-other' });
    expect(clash.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    expect((await call('workflow_rename', { workflow_id: 'nope-flow', new_id: 'nope-two' })).error.code).toBe(
      -32001,
    );
  });

  it('deletes only with confirmation; running executions keep their pinned definition', async () => {
    await call('workflow_save', { content: GOOD_YAML.replace(/release-check/g, 'release-doomed') });
    const started = await call('workflow_start', { workflow_name: 'release-doomed' });
    const unconfirmed = await call('workflow_delete', { workflow_id: 'release-doomed' });
    expect(unconfirmed.error).toMatchObject({ code: -32602, data: { error_code: 'CONFIRMATION_REQUIRED' } });
    expect(existsSync(join(sb.runtime, 'release-doomed.yaml'))).toBe(true);
    const bundled = await call('workflow_delete', { workflow_id: 'mr-review-workflow', confirm: true });
    expect(bundled.error.data.error_code).toBe('WORKFLOW_READ_ONLY');
    const deleted = await call('workflow_delete', { workflow_id: 'release-doomed', confirm: true });
    expect(deleted).toEqual({
      deleted: true,
      workflow_id: 'release-doomed',
      path: join(sb.runtime, 'release-doomed.yaml'),
      next: [],
    });
    expect((await call('workflow_get', { id: 'release-doomed' })).error.code).toBe(-32001);
    const next = await call('workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'changelog updated' },
    });
    expect(next.step_name).toBe('smoke-test');
  });

  it('asks the user through elicitation when the client supports it', async () => {
    const answers: string[] = [];
    let reply: 'accept' | 'decline' = 'decline';
    const { client: asking, close } = await connectClient(sb, {
      elicit: (message) => {
        answers.push(message);
        return reply === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: 'decline' };
      },
    });
    try {
      await call('workflow_save', { content: GOOD_YAML.replace(/release-check/g, 'release-asked') }, asking);
      const declined = await call('workflow_delete', { workflow_id: 'release-asked' }, asking);
      expect(declined.error.data.error_code).toBe('CONFIRMATION_REQUIRED');
      reply = 'accept';
      const accepted = await call('workflow_delete', { workflow_id: 'release-asked' }, asking);
      expect(accepted.deleted).toBe(true);
      expect(answers).toEqual([
        'Delete workflow "release-asked" (release-asked.yaml) from the runtime dir?',
        'Delete workflow "release-asked" (release-asked.yaml) from the runtime dir?',
      ]);
    } finally {
      await close();
    }
  });

  it('serializes concurrent saves: every answer is a success or a conflict, and the file is whole', async () => {
    const variants = Array.from({ length: 12 }, (_, i) =>
      GOOD_YAML.replace(/release-check/g, 'release-race').replace('Release check', `Race ${i}`),
    );
    const results = await Promise.all(
      variants.map((content) => call('workflow_save', { content, overwrite: true })),
    );
    expect(results.every((r) => r.workflow_id === 'release-race')).toBe(true);
    const final = readFileSync(join(sb.runtime, 'release-race.yaml'), 'utf8');
    expect(variants).toContain(final);
  });
});

describe('workflow_save refuses what it must not write (#12 items 6 and 9)', () => {
  const flow = (id: string, name = 'Flow') =>
    GOOD_YAML.replace(/release-check/g, id).replace('Release check', name);
  const runtimeFiles = () => readdirSync(sb.runtime).sort();

  it("never writes over another workflow's file, with or without overwrite", async () => {
    const alpha = await call('workflow_save', { content: flow('alpha-flow', 'Alpha') });
    expect(alpha.path).toBe(join(sb.runtime, 'alpha-flow.yaml'));
    for (const args of [
      { file_name: 'alpha-flow.yaml' },
      { file_name: 'alpha-flow.yaml', overwrite: true },
      { file_name: 'ALPHA-FLOW.yaml', overwrite: true },
    ]) {
      const res = await call('workflow_save', { content: flow('beta-flow', 'Beta'), ...args });
      expect(res.error, JSON.stringify(args)).toMatchObject({
        code: -32005,
        data: { error_code: 'WORKFLOW_CONFLICT' },
      });
      expect(res.error.data.message).toContain('holds workflow "alpha-flow"');
    }
    expect(readFileSync(alpha.path, 'utf8')).toBe(flow('alpha-flow', 'Alpha'));
    expect((await call('workflow_get', { id: 'alpha-flow' })).name).toBe('Alpha');
    // Its own file, under a new name, is fine; a file the server cannot identify needs overwrite.
    const moved = await call('workflow_save', {
      content: flow('alpha-flow', 'Alpha 2'),
      file_name: 'alpha.yml',
      overwrite: true,
    });
    expect(moved.path).toBe(join(sb.runtime, 'alpha.yml'));
    expect(existsSync(alpha.path)).toBe(false);
    writeFileSync(join(sb.runtime, 'unknown.json'), '{ not json');
    await new Promise((r) => setTimeout(r, 300));
    const blind = await call('workflow_save', {
      content: flow('gamma-flow'),
      file_name: 'unknown.json',
      format: 'yaml',
    });
    expect(blind.error.data.error_code).toBe('WORKFLOW_CONFLICT');
    expect(readFileSync(join(sb.runtime, 'unknown.json'), 'utf8')).toBe('{ not json');
  });

  it('refuses file names that no source would serve or that mean something else', async () => {
    const before = runtimeFiles();
    const refused: [string, string][] = [
      ['evil\n.yaml', 'INVALID_PARAMS'],
      ['C:evil.yaml', 'PATH_OUTSIDE_RUNTIME_DIR'],
      ['CON.yaml', 'INVALID_PARAMS'],
      ['nul.json', 'INVALID_PARAMS'],
      ['%2e%2e%2fescape.yaml', 'INVALID_PARAMS'],
      ['\uFF0E\uFF0E\uFF0Fescape.yaml', 'INVALID_PARAMS'],
      ['.hidden.yaml', 'INVALID_PARAMS'],
      ['..\\escape.yaml', 'PATH_OUTSIDE_RUNTIME_DIR'],
    ];
    for (const [file_name, code] of refused) {
      const res = await call('workflow_save', { content: flow('named-flow'), file_name });
      expect(res.error?.data.error_code, JSON.stringify(file_name)).toBe(code);
    }
    // An id that is a device name gets no default file name either.
    const device = await call('workflow_save', { content: flow('aux') });
    expect(device.error.data).toMatchObject({ error_code: 'INVALID_PARAMS' });
    expect(device.error.data.details).toContain('reserved device name');
    expect(runtimeFiles()).toEqual(before);
  });

  it('caps durations with a violation that names the limit (#15 item 3)', async () => {
    const content = `${flow('slow-poll').split('steps:')[0]}steps:\n  - id: poll-it\n    title: Poll\n    run: tasks-api get-export\n    repeat: { until: { var: output.done }, every: 1s, max_attempts: 5, timeout: 999m }\n`;
    const res = await call('workflow_save', { content });
    expect(res.error.data.error_code).toBe('WORKFLOW_VALIDATION_FAILED');
    expect(res.error.data.violations).toEqual([
      expect.objectContaining({
        path: '/steps/0/repeat/timeout',
        line: 10,
        message: expect.stringContaining('at most 60m'),
      }),
    ]);
  });

  it('answers hostile manifests with violations, quickly, and stays up', async () => {
    const wide = {
      id: 'wide-flow',
      name: 'n',
      description: 'd',
      version: '1.0.0',
      steps: [{ id: 'one-step', title: 't', prompt: 'p' }],
      ...Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`p${i}`, i])),
    };
    const text = JSON.stringify(wide, null, 1);
    expect(text.length).toBeGreaterThan(800_000);
    for (const format of ['json', 'yaml']) {
      // No stall (it took 12-49 s before): how fast is bench/scenarios/hostile-inputs.mjs's to measure;
      // here a hang fails by the test's timeout.
      const res = await call('workflow_validate_manifest', { content: text, format });
      // Ten unknown keys at their own lines, and one violation counting the rest.
      expect(res.violations).toHaveLength(11);
      expect(res.violations[0]).toMatchObject({ path: '/p0', rule: 'additionalProperties' });
      expect(res.violations[10].message).toBe('49990 more unknown properties');
    }
    const aliases = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (const name of 'bcdefgh') {
      const prev = String.fromCharCode(name.charCodeAt(0) - 1);
      aliases.push(`${name}: &${name} [${new Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const bomb = await call('workflow_save', { content: aliases.join('\n') });
    expect(bomb.error.data.violations).toEqual([expect.objectContaining({ rule: 'yamlAliases' })]);
    const deepText = `{"id": "deep-flow", "steps": ${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const deep = await call('workflow_validate_manifest', { content: deepText });
    expect(deep.violations).toEqual([expect.objectContaining({ rule: 'maxDepth' })]);
    // A 5,000-deep object as tool arguments (written by hand: the client's serializer would overflow).
    const raw = new RawServer({ env: sb.env, cwd: sb.project });
    try {
      await raw.initialize();
      const condition = `${'{"not":'.repeat(5000)}{"var":"x"}${'}'.repeat(5000)}`;
      const steps = `[{"id":"one-step","title":"t","prompt":"p","runCondition":${condition}}]`;
      raw.send(
        `{"jsonrpc":"2.0","id":"deep","method":"workflow_validate_manifest","params":{"manifest":{"id":"deep-flow","name":"n","description":"d","version":"1.0.0","steps":${steps}}}}`,
      );
      const [, answer] = await raw.read(2);
      // Refused at the protocol edge, before any tool sees it (the same limit on every transport).
      expect((answer as Json).error).toMatchObject({ code: -32602 });
      expect(JSON.stringify((answer as Json).error)).toContain('nested deeper than 64 levels');
    } finally {
      raw.kill();
    }
    const deepYaml = await call('workflow_save', { content: `${'['.repeat(5000)}${']'.repeat(5000)}` });
    expect(deepYaml.error.data.violations).toEqual([expect.objectContaining({ rule: 'maxDepth', line: 1 })]);
    expect((await call('workflow_list', {})).workflows.length).toBeGreaterThan(5);
  });

  it('a read-only runtime dir and a full disk get their own errors; nothing is left behind', async () => {
    const locked = sandbox();
    const undo = makeReadOnly(locked.runtime);
    const { client: lockedClient, close: closeLocked } = await connectClient(locked);
    try {
      if (undo) {
        const res = await call('workflow_save', { content: flow('locked-flow') }, lockedClient);
        expect(res.error).toMatchObject({
          code: -32006,
          data: { error_code: 'RUNTIME_DIR_READ_ONLY', retryable: false, context: { path: locked.runtime } },
        });
        expect(res.error.data.message).toContain('not writable');
      }
      expect((await call('workflow_list', {}, lockedClient)).workflows.length).toBeGreaterThan(5);
    } finally {
      await closeLocked();
      undo?.();
      locked.cleanup();
    }
    const full = sandbox();
    const cramped = new RawServer({ env: full.env, cwd: full.project, shell: SMALL_FILES_ONLY });
    try {
      await cramped.initialize();
      const large = flow('large-flow').replace('Checks a release', `Checks ${'a'.repeat(20_000)}`);
      const res = await cramped.request('save', 'workflow_save', { content: large });
      expect(res.error).toMatchObject({
        code: -32006,
        data: { error_code: 'STORAGE_FULL', retryable: true },
      });
      expect(readdirSync(full.runtime)).toEqual([]);
      const list = await cramped.request('list', 'workflow_list', {});
      expect(list.result).toBeDefined();
    } finally {
      cramped.kill();
      full.cleanup();
    }
  });
});

describe('authoring resources and prompts', () => {
  it('publishes the guide, the schema and the manifests', async () => {
    const guide = await client.readResource({ uri: 'workflowlookup://authoring/spec' });
    expect(guide.contents[0]).toMatchObject({ mimeType: 'text/markdown' });
    expect((guide.contents[0] as { text: string }).text).toContain('validationCriteria');
    const schema = await client.readResource({ uri: 'workflowlookup://authoring/schema' });
    expect(JSON.parse((schema.contents[0] as { text: string }).text)).toEqual(
      JSON.parse(readFileSync(join(ROOT, 'schema', 'workflow.schema.json'), 'utf8')),
    );
    await call('workflow_save', { content: GOOD_YAML.replace(/release-check/g, 'release-listed') });
    const list = JSON.parse(
      (
        (await client.readResource({ uri: 'workflowlookup://authoring/manifests' })).contents[0] as {
          text: string;
        }
      ).text,
    );
    const entry = list.find((m: Json) => m.id === 'release-listed');
    expect(entry).toEqual({
      id: 'release-listed',
      title: 'Release check',
      description: 'Checks a release before it ships',
      path: join(sb.runtime, 'release-listed.yaml'),
      format: 'yaml',
      version: sha(GOOD_YAML.replace(/release-check/g, 'release-listed')),
      source: 'runtime',
      valid: true,
    });
    const manifest = await client.readResource({
      uri: 'workflowlookup://authoring/manifests/release-listed',
    });
    expect((manifest.contents[0] as { text: string }).text).toContain('# Team release checklist');
    const completion = await client.complete({
      ref: { type: 'ref/resource', uri: 'workflowlookup://authoring/manifests/{workflowId}' },
      argument: { name: 'workflowId', value: 'release-l' },
    });
    expect(completion.completion.values).toEqual(['release-listed']);
  });

  it('offers the four seed 003 prompts with workflow id completion', async () => {
    const prompts = await client.listPrompts();
    expect(prompts.prompts.map((p) => p.name).sort()).toEqual([
      'workflow_author',
      'workflow_extend',
      'workflow_fix_validation',
      'workflow_run_with_inputs',
    ]);
    const author = await client.getPrompt({
      name: 'workflow_author',
      arguments: { goal: 'ship a hotfix safely' },
    });
    // A quick reference and a pointer to the guide resource, not the whole guide in every prompt.
    const reference = author.messages[0]?.content as { type: string; text: string };
    expect(reference.type).toBe('text');
    expect(reference.text).toContain('workflowlookup://authoring/spec');
    expect(reference.text).toContain('validationCriteria');
    expect(Buffer.byteLength(JSON.stringify(author.messages))).toBeLessThan(6000);
    expect(JSON.stringify(author.messages[1])).toContain('ship a hotfix safely');
    const extend = await client.getPrompt({
      name: 'workflow_extend',
      arguments: { workflow_id: 'coding-task-workflow', changes: 'add a docs step' },
    });
    expect(JSON.stringify(extend.messages)).toContain('read-only bundled source');
    writeFileSync(
      join(sb.runtime, 'broken-for-prompt.yaml'),
      'id: broken-for-prompt\nname: B\ndescription: d\nversion: nope\nsteps: []\n',
    );
    await new Promise((r) => setTimeout(r, 300));
    const fix = await client.getPrompt({
      name: 'workflow_fix_validation',
      arguments: { workflow_id: 'broken-for-prompt' },
    });
    expect(JSON.stringify(fix.messages)).toContain('/version (line 4');
    const run = await client.getPrompt({
      name: 'workflow_run_with_inputs',
      arguments: { workflow_id: 'conditional-workflow-example', inputs: '{"taskScope":"large"}' },
    });
    expect(JSON.stringify(run.messages)).toMatch(/Missing: .*userExpertise/);
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'workflow_extend' },
      argument: { name: 'workflow_id', value: 'mr-' },
    });
    expect(completion.completion.values).toEqual(['mr-review-workflow']);
    await expect(
      client.getPrompt({ name: 'workflow_extend', arguments: { workflow_id: 'ghost-flow', changes: 'x' } }),
    ).rejects.toMatchObject({
      code: -32001,
    });
  });
});

describe('live reload', () => {
  it('sends resources/list_changed when a workflow file changes on disk, and serves the change', async () => {
    let changes = 0;
    const { client: watching, close } = await connectClient(sb, { onResourceListChanged: () => changes++ });
    try {
      await call('workflow_list', {}, watching);
      cpSync(join(FIXTURES, 'valid', 'conditions-demo.json'), join(sb.runtime, 'conditions-demo.json'));
      await expect.poll(() => changes).toBeGreaterThan(0);
      const listed = await call('workflow_list', {}, watching);
      expect(listed.workflows.map((w: Json) => w.id)).toContain('conditions-demo');
    } finally {
      await close();
    }
  });
});

describe('tool groups (--tools / WORKFLOWLOOKUP_TOOLS add to the core)', () => {
  // Whatever the core holds (the tool definitions marked core), it is listed beside the groups named.
  let CORE: string[] = [];
  beforeAll(async () => {
    const groups = (await call('workflow_tools', {})).groups as { group: string; tools: string[] }[];
    CORE = groups.find((g) => g.group === 'core')?.tools ?? [];
    expect(CORE).toContain('workflow_tools');
  });
  const union = (...lists: string[][]) => [...new Set(lists.flat())].sort();

  it('stdio: each group named is listed beside the core, workflow_tools always among them', async () => {
    const { client: guidance, close } = await connectClient(sb, { args: ['--tools', 'guidance'] });
    try {
      expect((await guidance.listTools()).tools.map((t) => t.name).sort()).toEqual(
        union(CORE, ['workflow_get', 'workflow_list', 'workflow_next', 'workflow_validate']),
      );
    } finally {
      await close();
    }
    const { client: authoring, close: close2 } = await connectClient(sb, {
      env: { WORKFLOWLOOKUP_TOOLS: 'authoring, executions' },
    });
    try {
      const names = (await authoring.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual(
        union(
          CORE,
          [
            'workflow_validate_manifest',
            'workflow_save',
            'workflow_rename',
            'workflow_delete',
            'workflow_test',
          ],
          ['workflow_start', 'workflow_next_step', 'workflow_set_state', 'workflow_resume'],
          ['workflow_executions', 'workflow_purge_history'],
        ),
      );
      expect((await authoring.listPrompts()).prompts).toHaveLength(4);
      // The core is listed whatever is named: the agent can always find workflows and list more.
      const groups = await call('workflow_tools', {}, authoring);
      const listed = (groups.groups as { group: string; listed: boolean }[]).filter((g) => g.listed);
      expect(listed.map((g) => g.group).sort()).toEqual(['authoring', 'core', 'executions']);
    } finally {
      await close2();
    }
  });

  it('HTTP: WORKFLOWLOOKUP_TOOLS=tasks lists the core and every task tool', async () => {
    const server = await startHttpServer(sb, { WORKFLOWLOOKUP_TOOLS: 'tasks' });
    const http = await httpClient(server.url);
    try {
      expect((await http.listTools()).tools.map((t) => t.name).sort()).toEqual(
        union(CORE, [
          'workflow_author_and_run',
          'workflow_cancel',
          'workflow_execute',
          'workflow_repair_and_rerun',
          'workflow_run',
        ]),
      );
    } finally {
      await http.close();
      server.kill();
    }
  });
});
