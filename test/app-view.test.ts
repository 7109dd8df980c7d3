import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { EXTENSION_ID, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, callTool, connectClient, FIXTURES, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

type Json = Record<string, any>;
const VIEW_URI = 'ui://workflowlookup/execution-progress.html';

let sb: Sandbox;
let host: Client;
let plain: Client;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  sb = sandbox();
  cpSync(join(FIXTURES, 'valid'), sb.runtime, { recursive: true });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  // A host that renders MCP Apps declares the extension; a plain client does not.
  host = new Client(
    { name: 'apps-host', version: '1.0.0' },
    { capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } },
  );
  await host.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: sb.env,
      cwd: sb.project,
      stderr: 'pipe',
    }),
  );
  closers.push(() => host.close());
  const connected = await connectClient(sb);
  plain = connected.client;
  closers.push(connected.close);
});

afterAll(async () => {
  for (const close of closers) await close();
  sb.cleanup();
});

describe('MCP App view', () => {
  it('links workflow_start, workflow_next_step and workflow_resume to the ui:// view, and nothing else', async () => {
    const { tools } = await host.listTools();
    const linked = tools.filter((t) => t._meta !== undefined).map((t) => t.name);
    expect(linked.sort()).toEqual(['workflow_next_step', 'workflow_resume', 'workflow_start']);
    for (const tool of tools.filter((t) => linked.includes(t.name))) {
      expect(tool._meta).toEqual({ ui: { resourceUri: VIEW_URI }, 'ui/resourceUri': VIEW_URI });
    }
  });

  it('serves the view as one self-contained HTML document with the MCP Apps MIME type', async () => {
    const { resources } = await host.listResources();
    expect(resources.find((r) => r.uri === VIEW_URI)).toMatchObject({
      mimeType: RESOURCE_MIME_TYPE,
      _meta: { ui: { prefersBorder: true } },
    });
    const read = await host.readResource({ uri: VIEW_URI });
    const content = read.contents[0] as { uri: string; mimeType: string; text: string; _meta: Json };
    expect(content).toMatchObject({
      uri: VIEW_URI,
      mimeType: RESOURCE_MIME_TYPE,
      _meta: { ui: { prefersBorder: true } },
    });
    const html = content.text;
    expect(html.startsWith('<!doctype html>')).toBe(true);
    // Everything inline: no script, stylesheet, image or frame loaded from anywhere (the host CSP allows none).
    expect(html).not.toMatch(/<(script|link|img|iframe)[^>]*\s(src|href)=/i);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html.match(/<\/script/g)).toHaveLength(1);
    expect(html).toContain("'2026-01-26'".replaceAll("'", '"'));
    expect(Buffer.byteLength(html)).toBeLessThan(32 * 1024);
    // No csp domains declared: hosts keep their restrictive default.
    expect(JSON.stringify(content._meta)).not.toContain('csp');
  });

  it('answers exactly the same to clients with and without the extension', async () => {
    const a = await callTool(host, 'workflow_start', { workflow_name: 'durable-demo' });
    const b = await callTool(plain, 'workflow_start', { workflow_name: 'durable-demo' });
    const strip = (r: Json) =>
      JSON.parse(JSON.stringify(r).replaceAll(r.execution_id, 'x').replaceAll(tokenOf(r), 'x')) as Json;
    expect(strip(a)).toEqual(strip(b));
    const raw = await plain.callTool({
      name: 'workflow_start',
      arguments: { workflow_name: 'durable-demo' },
    });
    expect(Object.keys(raw).sort()).toEqual(['content', 'structuredContent']);
  });

  it('publishes the progress the view polls: steps done and to go, the current step, the last validation', async () => {
    const started = await callTool(host, 'workflow_start', { workflow_name: 'durable-demo' });
    const id = started.execution_id;
    const failed = await callTool(host, 'workflow_next_step', {
      token: tokenOf(started),
      output: { summary: 'no' },
    });
    const read = async () =>
      JSON.parse(
        (
          (await host.readResource({ uri: `workflowlookup://workflow/execution_progress/${id}` }))
            .contents[0] as { text: string }
        ).text,
      );
    expect(await read()).toMatchObject({
      execution_id: id,
      workflow_id: 'durable-demo',
      workflow_title: 'Durable execution demo',
      state: 'running',
      current_step: 'design',
      done: 0,
      total: 4,
      last_validation: { step: 'design', valid: false, issues: ['The summary must describe the design'] },
    });
    await callTool(host, 'workflow_next_step', { token: tokenOf(failed), output: { summary: 'a design' } });
    const progress = await read();
    expect(progress.steps.map((s: Json) => [s.id, s.status])).toEqual([
      ['design', 'done'],
      ['implement', 'current'],
      ['harden', 'pending'],
      ['review', 'pending'],
    ]);
    expect(progress.last_validation).toMatchObject({ step: 'design', valid: true, issues: [] });
    // Scoped like every execution resource: unknown ids are not found.
    await expect(
      host.readResource({ uri: 'workflowlookup://workflow/execution_progress/exec_nope' }),
    ).rejects.toThrow(/not found/i);
  });
});
