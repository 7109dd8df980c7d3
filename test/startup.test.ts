import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PROFILES } from '../src/config.js';
import { INITIALIZE_VERSIONS } from '../src/protocol/rules.js';
import { type PreludeAnswers, profilesKey } from '../src/transports/stdio-prelude.js';
import { inProcess } from './helpers/in-process.js';
import { RawServer, ROOT, type Sandbox, sandbox } from './helpers/server.js';

const APPS = { extensions: { 'io.modelcontextprotocol/ui': {} } };
const recorded = () => JSON.parse(readFileSync(join(ROOT, 'dist', 'prelude.json'), 'utf8')) as PreludeAnswers;

const init = (protocolVersion: string, capabilities: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities, clientInfo: { name: 'startup-test', version: '1' } },
});

let sb: Sandbox | undefined;
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

describe('the stdio prelude (initialize and tools/list answered while the server loads)', () => {
  it('recorded exactly what the SDK answers, for every tool profile, protocol version and client kind', async () => {
    sb = sandbox();
    const answers = recorded();
    for (const profile of [...PROFILES, 'all']) {
      for (const version of INITIALIZE_VERSIONS) {
        for (const [kind, capabilities] of [
          ['plain', { elicitation: {} }],
          ['apps', APPS],
        ] as const) {
          const host = await inProcess(sb, { WORKFLOWLOOKUP_TOOLS: profile });
          host.send(init(version, capabilities));
          host.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
          host.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
          const [first, list] = await host.read(2);
          const index = answers.initialize[profilesKey(profile)]?.[version] as number;
          expect(first?.result, `${profile} ${version}`).toEqual(answers.results[index]);
          const tools = answers.tools[profilesKey(profile)]?.[version]?.[kind] as number;
          expect(list?.result, `${profile} ${version} ${kind}`).toEqual(answers.results[tools]);
          await host.close();
        }
      }
    }
  }, 120_000);

  it('serves the recorded answers, then hands over: the SDK knows the client and later calls work', async () => {
    sb = sandbox();
    const server = new RawServer({ env: sb.env, cwd: sb.project });
    try {
      server.send(init('2025-06-18', APPS));
      server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      server.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' }); // the initialize id, reused at once
      server.send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'workflow_list', arguments: {} },
      });
      const [first, list, called] = await server.read(3);
      const answers = recorded();
      expect(first).toEqual({
        jsonrpc: '2.0',
        id: 1,
        result: answers.results[answers.initialize.core?.['2025-06-18'] as number],
      });
      expect(list?.id).toBe(1);
      expect(list?.result).toEqual(answers.results[answers.tools.core?.['2025-06-18']?.apps as number]);
      expect(called?.id).toBe(3);
      const listed = called?.result as { structuredContent: { workflows: unknown[] } } | undefined;
      expect(listed?.structuredContent.workflows.length).toBeGreaterThan(0);
      expect(server.lines.length).toBe(3);
    } finally {
      server.kill();
    }
  });

  it('leaves anything off the plain path to the server (an unknown capability, a ping first)', async () => {
    sb = sandbox();
    for (const opening of [
      [init('2025-06-18', { experimental: { x: {} } })],
      [{ jsonrpc: '2.0', id: 0, method: 'ping' }, init('2025-06-18')],
    ]) {
      const server = new RawServer({ env: sb.env, cwd: sb.project });
      try {
        for (const line of opening) server.send(line);
        server.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
        const lines = await server.read(opening.length + 1);
        expect(lines.every((l) => l.error === undefined)).toBe(true);
        const last = lines.at(-1)?.result as { tools: unknown[] } | undefined;
        expect(last?.tools.length).toBeGreaterThan(0);
      } finally {
        server.kill();
      }
    }
  });
});

describe('the definition cache (data dir)', () => {
  const list = async (box: Sandbox) => {
    const server = new RawServer({ env: box.env, cwd: box.project });
    try {
      await server.initialize();
      const res = await server.request(2, 'tools/call', { name: 'workflow_list', arguments: {} });
      return (res.result as { structuredContent: Record<string, unknown> }).structuredContent;
    } finally {
      server.kill();
    }
  };
  const workflow = (id: string, prompt: string) =>
    JSON.stringify({
      id,
      name: id,
      description: 'd',
      version: '1.0.0',
      steps: [{ id: 'one', title: 'One', prompt }],
    });

  it('serves the same listing from the cache, sees a changed file, and survives a corrupt cache', async () => {
    sb = sandbox();
    const box = sb;
    box.env.WORKFLOWLOOKUP_DATA_DIR = join(box.root, 'data');
    writeFileSync(join(box.runtime, 'a.json'), workflow('cached-a', 'Do it.'));
    writeFileSync(join(box.runtime, 'b.json'), '{ not json');
    const first = await list(box);
    const cacheFile = join(box.root, 'data', 'definition-cache.json');
    const cache = JSON.parse(readFileSync(cacheFile, 'utf8')) as { files: Record<string, unknown> };
    expect(Object.keys(cache.files)).toContain(join(box.runtime, 'a.json'));
    expect(await list(box)).toEqual(first);

    // A changed file (another size) is read again; a broken one that is fixed becomes valid.
    writeFileSync(join(box.runtime, 'b.json'), workflow('cached-b', 'Do it again, now.'));
    const second = await list(box);
    expect((second.workflows as { id: string }[]).map((w) => w.id)).toEqual(
      expect.arrayContaining(['cached-a', 'cached-b']),
    );
    expect(second.broken).toEqual([]);

    for (const corrupt of [
      '{"checker":',
      '[]',
      JSON.stringify({ ...cache, files: { [join(box.runtime, 'a.json')]: { entry: 7 } } }),
    ]) {
      writeFileSync(cacheFile, corrupt);
      expect(await list(box)).toEqual(second);
    }
    // A restart takes unchanged files from the cache instead of reading and checking them again.
    const fresh = JSON.parse(readFileSync(cacheFile, 'utf8')) as typeof cache;
    const entry = fresh.files[join(box.runtime, 'a.json')] as { entry: { workflow: { name: string } } };
    entry.entry.workflow.name = 'from the cache';
    writeFileSync(cacheFile, JSON.stringify(fresh));
    const names = ((await list(box)).workflows as { id: string; name: string }[]).map((w) => w.name);
    expect(names).toContain('from the cache');
  });
});
