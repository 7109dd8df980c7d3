import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessRaw } from './helpers/in-process-raw.js';
import { RawServer, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

function definition(id: string, name: string, extra: Json = {}): string {
  return JSON.stringify({
    id,
    name,
    description: `${name} description`,
    version: '1.0.0',
    steps: [{ id: 'only-step', title: 'Only', prompt: `prompt from ${name}` }],
    ...extra,
  });
}

let sb: Sandbox;
let server: RawServer | InProcessRaw | undefined;
afterEach(() => {
  server?.kill();
  server = undefined;
  sb?.cleanup();
});

/**
 * A server's workflow_list. Spawned when given `serve` flags (the flags are what is tested) or asked to
 * (`process`: the user dir is under the process's HOME, which an in-process app does not have); else
 * in-process.
 */
async function listFrom(env: Json = {}, args: string[] = [], process = false): Promise<Json> {
  const options = { env: { ...sb.env, ...env }, cwd: sb.project };
  server = args.length > 0 || process ? new RawServer({ ...options, args }) : new InProcessRaw(options);
  await server.initialize();
  return (await server.request('list', 'workflow_list', {})).result as Json;
}

describe('workflow sources', () => {
  it('later sources override earlier ones by id: bundled < user < project < storage < runtime', async () => {
    sb = sandbox();
    const user = join(sb.home, '.workflowlookup', 'workflows');
    const project = join(sb.project, '.workflowlookup', 'workflows');
    const storageA = join(sb.root, 'storage-a');
    const storageB = join(sb.root, 'storage-b');
    for (const d of [user, project, storageA, storageB]) mkdirSync(d, { recursive: true });
    writeFileSync(join(user, 'a.json'), definition('ai-task-implementation', 'from user'));
    writeFileSync(join(user, 'u.json'), definition('layered-one', 'from user'));
    writeFileSync(join(project, 'p.json'), definition('layered-one', 'from project'));
    writeFileSync(
      join(project, 'p2.yaml'),
      'id: layered-two\nname: from project\ndescription: d\nversion: 1.0.0\nsteps:\n  - {id: only-step, title: t, prompt: p}\n',
    );
    writeFileSync(join(storageA, 's.json'), definition('layered-two', 'from storage a'));
    writeFileSync(join(storageB, 's.json'), definition('layered-two', 'from storage b'));
    writeFileSync(join(storageB, 't.json'), definition('layered-three', 'from storage b'));
    writeFileSync(join(sb.runtime, 'r.json'), definition('layered-three', 'from runtime'));
    const res = await listFrom({ WORKFLOW_STORAGE_PATH: [storageA, storageB].join(delimiter) }, [], true);
    const names = Object.fromEntries(res.workflows.map((w: Json) => [w.id, w.name]));
    expect(names['ai-task-implementation']).toBe('from user');
    expect(names['layered-one']).toBe('from project');
    expect(names['layered-two']).toBe('from storage b');
    expect(names['layered-three']).toBe('from runtime');
    expect(names['coding-task-workflow']).toBeDefined(); // bundled, not overridden
  });

  it('switches leave bundled, user and project sources out (flags and env)', async () => {
    sb = sandbox();
    const project = join(sb.project, '.workflowlookup', 'workflows');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'p.json'), definition('project-only', 'from project'));
    writeFileSync(join(sb.runtime, 'r.json'), definition('runtime-only', 'from runtime'));
    const withFlags = await listFrom({}, ['--no-bundled', '--no-project']);
    expect(withFlags.workflows.map((w: Json) => w.id)).toEqual(['runtime-only']);
    server?.kill();
    const withEnv = await listFrom({ WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' });
    expect(withEnv.workflows.map((w: Json) => w.id)).toEqual(['project-only', 'runtime-only']);
  });

  it('a broken file never breaks the list; broken entries are reported beside it', async () => {
    sb = sandbox();
    writeFileSync(join(sb.runtime, 'good.json'), definition('good-one', 'Good'));
    writeFileSync(join(sb.runtime, 'bad-json.json'), '{ "id": "bad-json", ');
    writeFileSync(join(sb.runtime, 'bad-yaml.yaml'), 'id: bad-yaml\nsteps: [unclosed\n');
    writeFileSync(join(sb.runtime, 'not-object.json'), '42');
    writeFileSync(join(sb.runtime, 'dup-a.json'), definition('dupe-flow', 'first'));
    writeFileSync(join(sb.runtime, 'dup-b.json'), definition('dupe-flow', 'second'));
    writeFileSync(join(sb.runtime, 'huge.json'), ' '.repeat(1024 * 1024 + 1));
    writeFileSync(join(sb.runtime, 'notes.txt'), 'ignored');
    const res = await listFrom({ WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' });
    expect(res.workflows.map((w: Json) => w.id)).toEqual(['dupe-flow', 'good-one']);
    expect(res.workflows.find((w: Json) => w.id === 'dupe-flow').name).toBe('first');
    const broken = Object.fromEntries(res.broken.map((b: Json) => [b.file.split('/').pop(), b]));
    expect(Object.keys(broken).sort()).toEqual([
      'bad-json.json',
      'bad-yaml.yaml',
      'dup-b.json',
      'huge.json',
      'not-object.json',
    ]);
    expect(broken['bad-json.json'].violations[0]).toMatchObject({ rule: 'syntax' });
    expect(broken['bad-yaml.yaml'].violations[0]).toMatchObject({ rule: 'syntax', line: expect.any(Number) });
    expect(broken['dup-b.json'].violations[0]).toMatchObject({ rule: 'uniqueId' });
    expect(broken['huge.json'].violations[0]).toMatchObject({ rule: 'maxFileSize' });
    expect(broken['not-object.json'].violations[0]).toMatchObject({ rule: 'type', expected: 'object' });
  });

  it('a broken override shadows the valid definition it overrides', async () => {
    sb = sandbox();
    writeFileSync(join(sb.runtime, 'ai.json'), JSON.stringify({ id: 'ai-task-implementation', name: 'x' }));
    server = new InProcessRaw({ env: sb.env, cwd: sb.project });
    await server.initialize();
    const res = await server.request(2, 'workflow_get', { id: 'ai-task-implementation' });
    expect((res.error as Json).code).toBe(-32002);
    expect((res.error as Json).data.violations.map((v: Json) => v.path)).toContain('/steps');
  });

  it('picks up added, changed, renamed and deleted files without a restart', async () => {
    sb = sandbox();
    server = new InProcessRaw({
      env: { ...sb.env, WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' },
      cwd: sb.project,
    });
    await server.initialize();
    let n = 0;
    const ids = async () =>
      ((await (server as InProcessRaw).request(`l${n++}`, 'workflow_list', {})).result as Json).workflows;
    const eventually = async (check: (ws: Json[]) => boolean) => {
      for (let i = 0; i < 100; i++) {
        const ws = await ids();
        if (check(ws)) return ws;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('change not picked up');
    };
    expect(await ids()).toEqual([]);
    writeFileSync(join(sb.runtime, 'live.json'), definition('live-flow', 'v1'));
    await eventually((ws) => ws[0]?.name === 'v1');
    writeFileSync(join(sb.runtime, 'live.json'), definition('live-flow', 'version two'));
    await eventually((ws) => ws[0]?.name === 'version two');
    renameSync(join(sb.runtime, 'live.json'), join(sb.runtime, 'live.yaml'));
    await eventually((ws) => ws[0]?.name === 'version two');
    rmSync(join(sb.runtime, 'live.yaml'));
    await eventually((ws) => ws.length === 0);
  });
});

describe('subfolders of a source', () => {
  it('are read two levels deep (a WorkRail library keeps routines/ and examples/loops/), watched, never entered through a link; the runtime dir stays flat', async () => {
    sb = sandbox();
    const library = join(sb.root, 'library');
    const outside = join(sb.root, 'outside');
    for (const d of [join(library, 'routines'), join(library, 'examples', 'loops', 'deeper'), outside])
      mkdirSync(d, { recursive: true });
    mkdirSync(join(library, '.git'));
    mkdirSync(join(library, 'node_modules'));
    mkdirSync(join(sb.runtime, 'nested'));
    writeFileSync(join(library, 'top.json'), definition('wr.top', 'top level'));
    writeFileSync(join(library, 'routines', 'review.json'), definition('wr.routine-review', 'a routine'));
    writeFileSync(join(library, 'examples', 'loops', 'batch.json'), definition('batch-example', 'two deep'));
    writeFileSync(
      join(library, 'examples', 'loops', 'deeper', 'x.json'),
      definition('too-deep', 'three deep'),
    );
    writeFileSync(join(library, '.git', 'h.json'), definition('hidden-flow', 'hidden'));
    writeFileSync(join(library, 'node_modules', 'm.json'), definition('module-flow', 'module'));
    writeFileSync(join(outside, 'o.json'), definition('outside-flow', 'outside'));
    symlinkSync(outside, join(library, 'linked'));
    writeFileSync(join(sb.runtime, 'nested', 'n.json'), definition('runtime-nested', 'nested in runtime'));
    const res = await listFrom({ WORKFLOW_STORAGE_PATH: library, WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' });
    expect(res.workflows.map((w: Json) => w.id).sort()).toEqual([
      'batch-example',
      'wr.routine-review',
      'wr.top',
    ]);
    expect(res.broken).toEqual([]);
    const got = (await (server as InProcessRaw).request('g', 'workflow_get', { id: 'wr.routine-review' }))
      .result as Json;
    expect(got.name).toBe('a routine');

    // A file added to a subfolder is picked up without a restart.
    writeFileSync(join(library, 'routines', 'later.json'), definition('wr.routine-later', 'added later'));
    let ids: string[] = [];
    for (let i = 0; i < 100 && !ids.includes('wr.routine-later'); i++) {
      await new Promise((r) => setTimeout(r, 50));
      const list = (await (server as InProcessRaw).request(`l${i}`, 'workflow_list', {})).result as Json;
      ids = list.workflows.map((w: Json) => w.id);
    }
    expect(ids).toContain('wr.routine-later');
  });
});

describe('what a source may not do', () => {
  const SECRET = 'TOPSECRET-0123456789abcdef';

  it('a link that leaves its source dir is never followed: not listed, not served, not echoed (#12 item 5)', async () => {
    sb = sandbox();
    const outside = join(sb.root, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'flow.json'), definition('outside-flow', `from outside ${SECRET}`));
    writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`);
    mkdirSync(join(sb.runtime, 'sub'));
    writeFileSync(join(sb.runtime, 'sub', 'real.json'), definition('inside-flow', 'via an inside link'));
    symlinkSync(join(outside, 'flow.json'), join(sb.runtime, 'outside-flow.json'));
    symlinkSync(join(outside, 'secret.txt'), join(sb.runtime, 'token.yaml'));
    symlinkSync('../outside/secret.txt', join(sb.runtime, 'relative.json'));
    symlinkSync(join(sb.runtime, 'sub', 'real.json'), join(sb.runtime, 'inside.json'));
    // A project checkout can carry such a link too.
    const project = join(sb.project, '.workflowlookup', 'workflows');
    mkdirSync(project, { recursive: true });
    symlinkSync(join(outside, 'secret.txt'), join(project, 'cloned.yaml'));
    // Persona directories follow the same rule.
    mkdirSync(join(sb.root, 'agents'));
    writeFileSync(join(outside, 'evil.md'), `---\nname: evil\ndescription: ${SECRET}\n---\n${SECRET}\n`);
    symlinkSync(join(outside, 'evil.md'), join(sb.root, 'agents', 'evil.md'));

    server = new InProcessRaw({
      env: { ...sb.env, WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' },
      cwd: sb.project,
    });
    await server.initialize();
    const list = (await server.request('l', 'workflow_list', {})).result as Json;
    expect(list.workflows.map((w: Json) => w.id)).toEqual(['inside-flow']);
    const broken = Object.fromEntries(list.broken.map((b: Json) => [b.file.split('/').pop(), b]));
    expect(Object.keys(broken).sort()).toEqual([
      'cloned.yaml',
      'outside-flow.json',
      'relative.json',
      'token.yaml',
    ]);
    for (const b of Object.values(broken) as Json[]) {
      expect(b.violations).toEqual([expect.objectContaining({ rule: 'symlink' })]);
      expect(b.id).toBeUndefined();
    }
    const get = await server.request('g', 'workflow_get', { id: 'outside-flow', view: 'source' });
    expect((get.error as Json).code).toBe(-32001);
    const manifest = await server.request('m', 'resources/read', {
      uri: 'workflowlookup://authoring/manifests/outside-flow',
    });
    expect(manifest.error).toBeDefined();
    const resources = await server.request('r', 'resources/read', {
      uri: 'workflowlookup://authoring/manifests',
    });
    const persona = await server.request('p', 'workflow_validate_manifest', {
      manifest: JSON.parse(
        definition('uses-evil', 'x', { steps: [{ id: 'a-step', title: 't', prompt: 'p', agent: 'evil' }] }),
      ),
    });
    expect((persona.result as Json).warnings).toEqual([expect.objectContaining({ rule: 'unknownAgent' })]);
    expect(server.lines.join('\n')).not.toContain(SECRET);
    expect(JSON.stringify(resources)).not.toContain(SECRET);
  });

  it('a file in a source that is not a workflow is reported without quoting it', async () => {
    sb = sandbox();
    writeFileSync(
      join(sb.runtime, 'passwd.yaml'),
      `root:x:0:0:${SECRET}:/root:/bin/bash\ndaemon:x:1:1::/:/bin/sh\n`,
    );
    writeFileSync(join(sb.runtime, 'secret.json'), `${SECRET}\n`);
    writeFileSync(join(sb.runtime, 'hex.yaml'), `${'c0ffee'.repeat(10)}\n`);
    const res = await listFrom({ WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' });
    expect(res.broken.map((b: Json) => b.violations[0].rule).sort()).toEqual(['syntax', 'type', 'type']);
    expect(JSON.stringify(res)).not.toContain(SECRET);
    expect(JSON.stringify(res)).not.toContain('c0ffee');
  });

  it('every source applies the env allow-list: a project file reading a secret is broken (#15 item 2)', async () => {
    sb = sandbox({ WORKFLOWLOOKUP_ALLOWED_ENV: 'RELEASE_NAME', RELEASE_NAME: 'v9', API_SECRET: SECRET });
    const project = join(sb.project, '.workflowlookup', 'workflows');
    mkdirSync(project, { recursive: true });
    const prompt = (ref: string) => ({
      steps: [{ id: 'only-step', title: 'Only', prompt: `Use \${{ env.${ref} }}` }],
    });
    writeFileSync(join(project, 'leaks.json'), definition('leaky-flow', 'Leaks', prompt('API_SECRET')));
    writeFileSync(join(project, 'fine.json'), definition('fine-flow', 'Fine', prompt('RELEASE_NAME')));
    const res = await listFrom({ WORKFLOWLOOKUP_INCLUDE_BUNDLED: 'false' });
    expect(res.workflows.map((w: Json) => w.id)).toEqual(['fine-flow']);
    expect(res.broken).toEqual([
      expect.objectContaining({
        source: 'project',
        id: 'leaky-flow',
        violations: [
          expect.objectContaining({ path: '/steps/0/prompt', rule: 'templateReference', line: 1 }),
        ],
      }),
    ]);
    const next = await (server as InProcessRaw).request('n', 'workflow_next', {
      workflowId: 'leaky-flow',
      completedSteps: [],
    });
    expect((next.error as Json).code).toBe(-32002);
    const fine = await (server as InProcessRaw).request('f', 'workflow_next', {
      workflowId: 'fine-flow',
      completedSteps: [],
    });
    expect(JSON.stringify(fine.result)).toContain('Use v9');
    expect((server as InProcessRaw).lines.join('\n')).not.toContain(SECRET);
  });
});
