import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, callTool, connectClient, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

/**
 * Issue #14 item 13: `workflowlookup validate`, `workflowlookup list`, the registry behind
 * `workflow_list` and `workflow_validate_manifest` judge every file the same way: the same verdict,
 * the same errors and warnings, with line and column. One set of good and bad files goes to all four.
 */
const head = (id: string) => `id: ${id}\nname: N\ndescription: Uses taskScope\nversion: 1.0.0\n`;
const step = (extra = '') => `steps:\n  - id: one-step\n    title: T\n    prompt: P\n${extra}`;
const json = (value: unknown) => JSON.stringify(value, null, 2);
const base = (id: string) => ({ id, name: 'N', description: 'D', version: '1.0.0' });
const aliasBomb = ['a: &a [x, x, x, x, x, x, x, x, x]'];
for (const name of 'bcdefg') {
  const prev = String.fromCharCode(name.charCodeAt(0) - 1);
  aliasBomb.push(`${name}: &${name} [${new Array(9).fill(`*${prev}`).join(', ')}]`);
}

const FILES: Record<string, string> = {
  'good.yaml': `${head('good-flow')}${step('    runCondition: { var: taskScope, equals: large }\n')}`,
  'good.json': json({ ...base('good-json'), steps: [{ id: 'one-step', title: 'T', prompt: 'P' }] }),
  'warns.yaml': `${head('warns-flow')}${step('    agent: no-such-persona\n    runCondition: { and: [{ var: secretKnob, equals: 1 }, { var: secretKnob, equals: 2 }] }\n')}`,
  'env-allowed.yaml': `${head('env-allowed')}${step().replace('prompt: P', 'prompt: "Build ${{ env.RELEASE_NAME }}"')}`,
  'env-denied.yaml': `${head('env-denied')}${step().replace('prompt: P', 'prompt: "Token ${{ env.SECRET_TOKEN }}"')}`,
  'env-default.json': json({
    ...base('env-default'),
    inputs: { token: { type: 'string', description: 'x', default: { env: 'HOME' } } },
    steps: [{ id: 'one-step', title: 'T', prompt: 'P' }],
  }),
  'bad-regex.yaml': `${head('bad-regex')}${step("    validationCriteria:\n      - { type: regex, pattern: '(?<=x)y', message: m }\n")}`,
  'bad-length.json': json({
    ...base('bad-length'),
    steps: [
      {
        id: 'one-step',
        title: 'T',
        prompt: 'P',
        validationCriteria: { type: 'length', min: 9, max: 1, message: 'm' },
      },
    ],
  }),
  'bad-contract.yaml': `${head('bad-contract')}steps:\n  - id: call-api\n    title: C\n    run: api get-thing\n    output_contract: { type: nope }\n`,
  'schema-error.yaml': `${head('schema-error').replace('1.0.0', 'one')}${step().replace('one-step', 'Bad_Id')}`,
  'semantic.json': json({
    ...base('semantic-flow'),
    steps: [
      { id: 'one-step', title: 'T', prompt: 'P' },
      { id: 'one-step', title: 'T', prompt: 'P' },
      {
        id: 'loop-step',
        type: 'loop',
        title: 'L',
        loop: { type: 'for', count: 1, maxIterations: 1 },
        body: 'ghost',
      },
    ],
  }),
  'template.yaml': `${head('template-ref')}${step().replace('prompt: P', 'prompt: "For ${{ inputs.nobody }}"')}`,
  'duration.yaml': `${head('duration-flow')}steps:\n  - id: call-api\n    title: C\n    run: api get-thing\n    timeout: 999m\n`,
  'syntax.json': '{ "id": "syntax-json",\n  "name": }',
  'syntax.yaml': 'id: syntax-yaml\nsteps: [unclosed\n',
  'dup-keys.yaml': `${head('dup-keys')}name: again\n${step()}`,
  'alias-bomb.yaml': aliasBomb.join('\n'),
  'deep.json': `{"id": "deep-flow", "final_output": ${'['.repeat(100)}${']'.repeat(100)}}`,
  'not-object.yaml': 'root:x:0:0:TOPSECRET:/root:/bin/bash\n',
  'too-many.json': json({
    ...base('too-many'),
    inputs: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`in${i}`, i])),
    steps: [{ id: 'one-step', title: 'T', prompt: 'P' }],
  }),
  'big.yaml': `${head('big-flow')}${step()}# ${'x'.repeat(1_048_576)}\n`,
};

const VALID = new Set(['good.yaml', 'good.json', 'warns.yaml', 'env-allowed.yaml']);
/** Rules reported before the text is located (the file is not read, or not parsed far enough). */
const UNLOCATED = new Set(['maxFileSize']);

let sb: Sandbox;
let client: Client;
let close: () => Promise<void>;
const files = () => Object.keys(FILES).map((name) => join(sb.runtime, name));

function cli(args: string[]): Json {
  const res = spawnSync(process.execPath, [CLI, ...args], { env: sb.env, cwd: sb.project, encoding: 'utf8' });
  return JSON.parse(res.stdout) as Json;
}

const strip = (findings: Json[] | undefined) => findings ?? [];

beforeAll(async () => {
  sb = sandbox({ WORKFLOWLOOKUP_ALLOWED_ENV: 'RELEASE_NAME', SECRET_TOKEN: 'hunter2-secret' });
  for (const [name, text] of Object.entries(FILES)) writeFileSync(join(sb.runtime, name), text);
  ({ client, close } = await connectClient(sb));
});

afterAll(async () => {
  await close();
  sb.cleanup();
});

describe('one check on every path', () => {
  it('validate, list, workflow_list and workflow_validate_manifest agree on every file', async () => {
    const validated = cli(['validate', '--json', ...files()]);
    const listed = cli(['list', '--json']);
    const served = await callTool(client, 'workflow_list', {});
    expect(validated.invalid).toBe(Object.keys(FILES).length - VALID.size);

    for (const [name, text] of Object.entries(FILES)) {
      const file = join(sb.runtime, name);
      const format = name.endsWith('.json') ? 'json' : 'yaml';
      const fromCli = validated.files.find((f: Json) => f.file === file);
      const fromTool = await callTool(client, 'workflow_validate_manifest', { content: text, format });
      const fromList = listed.broken.find((b: Json) => b.file === file);
      const fromServer = served.broken.find((b: Json) => b.file === file);
      const listWarnings = listed.warnings.find((w: Json) => w.file === file)?.warnings;
      const valid = VALID.has(name);

      expect({ name, cli: fromCli.valid, tool: fromTool.valid }).toEqual({ name, cli: valid, tool: valid });
      expect({ name, listed: fromList === undefined, served: fromServer === undefined }).toEqual({
        name,
        listed: valid,
        served: valid,
      });
      // The same errors, in the same order, with the same places, whoever reports them.
      expect({ name, errors: fromTool.violations }).toEqual({ name, errors: fromCli.errors });
      if (!valid) {
        expect({ name, errors: fromList.violations }).toEqual({ name, errors: fromCli.errors });
        expect({ name, errors: fromServer.violations }).toEqual({ name, errors: fromCli.errors });
      }
      expect({ name, warnings: fromTool.warnings }).toEqual({ name, warnings: fromCli.warnings });
      expect({ name, warnings: strip(listWarnings) }).toEqual({ name, warnings: fromCli.warnings });
      for (const finding of [...fromCli.errors, ...fromCli.warnings]) {
        if (UNLOCATED.has(finding.rule)) continue;
        expect({ name, finding, line: typeof finding.line, column: typeof finding.column }).toEqual({
          name,
          finding,
          line: 'number',
          column: 'number',
        });
      }
    }
  });

  it('reports each kind of problem under its rule', () => {
    const validated = cli(['validate', '--json', ...files()]);
    const rules = Object.fromEntries(
      validated.files.map((f: Json) => [basename(f.file), [...new Set(f.errors.map((e: Json) => e.rule))]]),
    );
    expect(rules).toMatchObject({
      'env-denied.yaml': ['templateReference'],
      'env-default.json': ['templateReference'],
      'bad-regex.yaml': ['criteria'],
      'bad-length.json': ['criteria'],
      'bad-contract.yaml': ['criteria'],
      'semantic.json': ['uniqueStepId', 'loopBody'],
      'template.yaml': ['templateReference'],
      'duration.yaml': ['pattern'],
      'syntax.json': ['syntax'],
      'syntax.yaml': ['syntax'],
      'dup-keys.yaml': ['syntax'],
      'alias-bomb.yaml': ['yamlAliases'],
      'deep.json': ['maxDepth'],
      'not-object.yaml': ['type'],
      'big.yaml': ['maxFileSize'],
    });
    expect(rules['too-many.json']).toContain('maxReported');
    const warns = validated.files.find((f: Json) => basename(f.file) === 'warns.yaml');
    expect(warns.warnings.map((w: Json) => w.rule)).toEqual([
      'undocumentedVariable',
      'unreachableStep',
      'unknownAgent',
    ]);
    // Nothing of an unparseable file, and no env value, is ever echoed.
    const all = JSON.stringify(validated);
    expect(all).not.toContain('TOPSECRET');
    expect(all).not.toContain('hunter2');
  });

  it('an env reference outside the allow-list is never served, from any source (#15 item 2)', async () => {
    const res = await callTool(client, 'workflow_get', { id: 'env-denied' });
    expect(res.error).toMatchObject({ code: -32002, data: { error_code: 'WORKFLOW_INVALID' } });
    expect(res.error.data.violations[0]).toMatchObject({
      path: '/steps/0/prompt',
      rule: 'templateReference',
      line: 8,
      column: 5,
    });
    const next = await callTool(client, 'workflow_next', { workflowId: 'env-denied', completedSteps: [] });
    expect(next.error.code).toBe(-32002);
    const allowed = await callTool(client, 'workflow_get', { id: 'env-allowed' });
    expect(allowed.id).toBe('env-allowed');
  });
});

describe('one broken file, one round (issue #23 item 5)', () => {
  // Schema errors, a rule beyond the schema, a regex and an env name, each in a different place.
  const BROKEN = [
    'id: one-round', //                                       1
    'name: One round',
    'description: Every error at once',
    'version: 1.0', //                                        4: read as the number 1
    'steps:',
    '  - id: plan', //                                        6
    '    title: Plan',
    '    prompt: Plan it',
    '  - id: plan', //                                        9: a duplicate id
    '    title: Again',
    '    prompt: Plan again',
    '    validationCriteria:',
    "      - { type: regex, pattern: '(unclosed', message: m }", // 13
    '  - id: write', //                                       14
    '    title: Write',
    '    agentRole: writer',
    '    promt: Write it', //                                 17: misspelled
    '  - id: check',
    '    title: Check ${{ env.SECRET_TOKEN }}', //            19
    '    prompt: Check it',
    '',
  ].join('\n');

  it('reports every error at its key, with did-you-mean, in the same words from the CLI and the tool', async () => {
    const file = join(sb.root, 'one-round.yaml');
    writeFileSync(file, BROKEN);
    const printed = spawnSync(process.execPath, [CLI, 'validate', file], {
      env: sb.env,
      cwd: sb.project,
      encoding: 'utf8',
    });
    expect(printed.status).toBe(1);
    const lines = printed.stdout
      .split('\n')
      .filter((l) => l.startsWith('  '))
      .map((l) => l.trim());
    expect(lines).toEqual([
      '/version (4:1): must be a string, not a number (written 1.0); write it in quotes: "1.0.0"',
      '/steps/2/promt (17:5): unknown property "promt"; did you mean "prompt"?',
      '/steps/2/prompt (14:5): "prompt" is required',
      '/steps/1/id (9:5): step id "plan" is already used at /steps/0/id',
      expect.stringMatching(
        /^\/steps\/1\/validationCriteria\/0 \(13:9\): regex pattern "\(unclosed" is invalid/,
      ),
      '/steps/3/title (19:5): environment variable SECRET_TOKEN is not in WORKFLOWLOOKUP_ALLOWED_ENV, so templates cannot read it',
    ]);
    const tool = await callTool(client, 'workflow_validate_manifest', { content: BROKEN });
    expect(tool.valid).toBe(false);
    expect(tool.errors).toEqual(lines);
    expect(tool.violations[0]).toMatchObject({ path: '/version', rule: 'type', actual: '1.0' });
    // Fixed as the errors say, the file is valid at once: no second round of errors.
    const fixed = BROKEN.replace('version: 1.0', 'version: "1.0.0"')
      .replace('  - id: plan\n    title: Again', '  - id: plan-again\n    title: Again')
      .replace("'(unclosed'", "'(closed)'")
      .replace('promt:', 'prompt:')
      .replace(' ${{ env.SECRET_TOKEN }}', '');
    expect((await callTool(client, 'workflow_validate_manifest', { content: fixed })).errors).toEqual([]);
    // Quoted but no semantic version: the words say what one is, not the regular expression.
    const quoted = fixed.replace('version: "1.0.0"', 'version: "1.0"');
    expect((await callTool(client, 'workflow_validate_manifest', { content: quoted })).errors).toEqual([
      '/version (4:1): must be a semantic version such as "1.0.0" (major.minor.patch)',
    ]);
  });

  it('an unknown name of any length is quoted briefly (did-you-mean compares at most 64 characters)', async () => {
    const long = `promt${'x'.repeat(100_000)}`;
    const res = await callTool(client, 'workflow_validate_manifest', {
      manifest: { ...base('long-keys'), steps: [{ id: 'one-step', title: 'T', prompt: 'P', [long]: 1 }] },
    });
    expect(res.violations[0]).toMatchObject({ rule: 'additionalProperties', path: `/steps/0/${long}` });
    expect(res.violations[0].message.length).toBeLessThan(200);
  });
});
