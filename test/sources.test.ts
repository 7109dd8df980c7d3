import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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
let server: RawServer | undefined;
afterEach(() => {
  server?.kill();
  server = undefined;
  sb?.cleanup();
});

async function listFrom(env: Json = {}, args: string[] = []): Promise<Json> {
  server = new RawServer({ env: { ...sb.env, ...env }, cwd: sb.project, args });
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
    const res = await listFrom({ WORKFLOW_STORAGE_PATH: [storageA, storageB].join(delimiter) });
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
    const res = await listFrom({}, ['--no-bundled']);
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
    server = new RawServer({ env: sb.env, cwd: sb.project });
    await server.initialize();
    const res = await server.request(2, 'workflow_get', { id: 'ai-task-implementation' });
    expect((res.error as Json).code).toBe(-32002);
    expect((res.error as Json).data.violations.map((v: Json) => v.path)).toContain('/steps');
  });

  it('picks up added, changed, renamed and deleted files without a restart', async () => {
    sb = sandbox();
    server = new RawServer({ env: sb.env, cwd: sb.project, args: ['--no-bundled'] });
    await server.initialize();
    let n = 0;
    const ids = async () =>
      ((await (server as RawServer).request(`l${n++}`, 'workflow_list', {})).result as Json).workflows;
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
