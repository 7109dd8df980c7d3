/**
 * Issue #12 items 1-4 and 8 (URL sources), end to end through the built server: credentials stay bound
 * to their origin, echoed credentials never reach the agent or the database, private hosts need an
 * explicit allow list, redirects stay under the base URL, and URL sources are read with a byte limit.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callTool,
  connectClient,
  FIXTURES,
  RawServer,
  type Sandbox,
  sandbox,
  tokenOf,
} from './helpers/server.js';
import { TasksApi, TOKEN } from './helpers/tasks-api.js';

type Json = Record<string, any>;

const OPENAPI = join(FIXTURES, 'openapi', 'tasks-api.yaml');
const fetchOne = (id: string, catalog: string, taskId: string, extra = '') => `id: ${id}
name: ${id}
description: Fetches one task
version: 1.0.0
steps:
  - id: fetch-task
    title: Fetch the task
    run: ${catalog} get-task
    with: { taskId: ${taskId} }
${extra}`;

let api: TasksApi;
let attacker: TasksApi;

beforeAll(async () => {
  api = new TasksApi();
  attacker = new TasksApi();
  await Promise.all([api.start(), attacker.start()]);
});

afterAll(async () => {
  await Promise.all([api.stop(), attacker.stop()]);
});

/** A sandbox whose server may reach the example API and the "attacker" (both on loopback). */
function allowedSandbox(extra: Record<string, string> = {}): Sandbox {
  const sb = sandbox({
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port},127.0.0.1:${attacker.port}`,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
    ...extra,
  });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  return sb;
}

describe('a credential is bound to the origin it was configured for (item 1)', () => {
  let sb: Sandbox;
  let client: Client;
  let close: () => Promise<void>;
  const call = (name: string, args: Json, c: Client = client) => callTool(c, name, args);

  beforeAll(async () => {
    sb = allowedSandbox();
    ({ client, close } = await connectClient(sb));
  });
  afterAll(async () => {
    await close();
    sb.cleanup();
  });

  it('an overwrite that moves the catalog to another host keeps the credential from it', async () => {
    const first = await call('catalog_import_openapi', {
      source: OPENAPI,
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    expect(first.catalog_id).toBe('tasks-api');
    const moved = await call('catalog_import_openapi', {
      source: OPENAPI,
      catalog_title: 'Tasks API',
      base_url: attacker.baseUrl,
      overwrite: true,
    });
    await call('workflow_save', { content: fetchOne('steal-token', 'tasks-api', 't1') });
    const started = await call('workflow_start', { workflow_name: 'steal-token' });
    // The next command step must not hand the token to the new host.
    expect(attacker.requests).toEqual([]);
    expect(started.error.data).toMatchObject({
      error_code: 'COMMAND_FAILED',
      reason: 'missing_credential',
      retryable: true,
    });
    expect(started.error.data.message).toContain('credential_unbound');
    expect(started.error.data.message).toContain(
      `WORKFLOWLOOKUP_CATALOG_TASKS_API_ORIGIN=http://127.0.0.1:${attacker.port}`,
    );
    expect(moved.credential_bound).toBe(false);
    expect(moved.warnings.at(-1)).toContain('WORKFLOWLOOKUP_CATALOG_TASKS_API_ORIGIN');
    // The agent cannot confirm for the user: there is no such argument.
    const selfConfirmed = await call('catalog_import_openapi', {
      source: OPENAPI,
      catalog_title: 'Tasks API',
      base_url: attacker.baseUrl,
      overwrite: true,
      confirm: true,
    });
    expect(selfConfirmed.error.code).toBe(-32602);
    // Input providers go through the same check.
    const inputs = await call('workflow_resolve_inputs', { workflow_id: 'export-project-tasks', inputs: {} });
    expect(inputs.inputs[0]).toMatchObject({ status: 'provider_error' });
    expect(attacker.requests).toEqual([]);

    // The execution waits: once a person confirms the move through elicitation, a resume carries on.
    const runId = started.error.data.context.run_id;
    const questions: string[] = [];
    const { client: asking, close: closeAsking } = await connectClient(sb, {
      elicit: (message) => {
        questions.push(message);
        return { action: 'accept', content: { confirm: true } };
      },
    });
    try {
      const confirmed = await call(
        'catalog_import_openapi',
        { source: OPENAPI, catalog_title: 'Tasks API', base_url: attacker.baseUrl, overwrite: true },
        asking,
      );
      expect(confirmed.credential_bound).toBe(true);
      expect(questions).toEqual([expect.stringContaining(`http://127.0.0.1:${attacker.port}`)]);
    } finally {
      await closeAsking();
    }
    const resumed = await call('workflow_resume', { execution_id: runId });
    expect(resumed.workflow_state).toBe('completed');
    expect(attacker.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);
  });

  it('removing the catalog and importing it again elsewhere does not rebind the credential', async () => {
    await call('catalog_remove', { catalog_id: 'tasks-api', remove_manifest: true });
    const again = await call('catalog_import_openapi', {
      source: OPENAPI,
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    const before = api.requests.length;
    const started = await call('workflow_start', { workflow_name: 'steal-token' });
    expect(api.requests.length).toBe(before);
    expect(started.error.data.message).toContain('credential_unbound');
    expect(again.credential_bound).toBe(false);
    // The operator's setting, outside MCP, binds it.
    const { client: bound, close: closeBound } = await connectClient(sb, {
      env: { WORKFLOWLOOKUP_CATALOG_TASKS_API_ORIGIN: `http://127.0.0.1:${api.port}` },
    });
    try {
      const ok = await call('workflow_start', { workflow_name: 'steal-token' }, bound);
      expect(ok.workflow_state).toBe('completed');
    } finally {
      await closeBound();
    }
  });
});

describe('credentials echoed by the API are scrubbed everywhere (item 2)', () => {
  it('never reaches the agent, a later prompt or the database', async () => {
    const sb = allowedSandbox();
    const { client, close } = await connectClient(sb);
    const call = (name: string, args: Json) => callTool(client, name, args);
    try {
      await call('catalog_import_openapi', {
        source: OPENAPI,
        catalog_title: 'Tasks API',
        base_url: api.baseUrl,
      });
      await call('workflow_save', {
        content: `${fetchOne('echo-flow', 'tasks-api', 'echo')}  - id: fetch-text
    title: Fetch the text
    run: tasks-api get-task
    with: { taskId: echo-text }
  - id: review
    title: Review
    prompt: "Look at \${{ steps.fetch-task.output }} and \${{ steps.fetch-text.output }}"
  - id: fetch-again
    title: Fetch again
    run: tasks-api get-task
    with: { taskId: echo }
`,
      });
      const started = await call('workflow_start', { workflow_name: 'echo-flow' });
      expect(started.step_name).toBe('review');
      expect(started.commands[0].output.title).toBe('Echo of Bearer ***');
      expect(started.commands[1].output).toMatch(/^you sent Bearer \*\*\*/);
      expect(started.agent_content).toContain('Echo of Bearer ***');
      const done = await call('workflow_next_step', {
        token: tokenOf(started),
        output: { summary: 'looked' },
      });
      expect(done.workflow_state).toBe('completed');
      const history = await client.readResource({
        uri: `workflowlookup://workflow/step_history/${started.execution_id}`,
      });

      const forms = [
        TOKEN,
        Buffer.from(`Bearer ${TOKEN}`).toString('base64'),
        Buffer.from(`:${TOKEN}`).toString('base64url'),
        Buffer.from(`abBearer ${TOKEN}`).toString('base64'),
      ];
      const seen = [JSON.stringify(started), JSON.stringify(done), JSON.stringify(history)];
      for (const file of ['workflowlookup.db', 'workflowlookup.db-wal']) {
        const path = join(sb.env.WORKFLOWLOOKUP_DATA_DIR as string, file);
        if (existsSync(path)) seen.push(readFileSync(path).toString('latin1'));
      }
      expect(seen.join('\n')).toContain('Echo of Bearer ***');
      for (const text of seen) for (const form of forms) expect(text).not.toContain(form);
    } finally {
      await close();
      sb.cleanup();
    }
  });
});

describe('private network hosts need an explicit allow list (item 3)', () => {
  const variants = [
    ['loop-a', '127.0.0.1'],
    ['loop-b', 'localhost'],
    ['loop-c', '[::1]'],
    ['loop-d', '0.0.0.0'],
    ['loop-e', '2130706433'],
    ['loop-f', '0x7f000001'],
    ['loop-g', '127.1'],
    ['loop-h', '169.254.169.254'],
  ] as const;

  it('refuses loopback in any notation and link-local, naming the setting, without sending anything', async () => {
    const tokens = Object.fromEntries(
      variants.map(([id]) => [`WORKFLOWLOOKUP_CATALOG_${id.toUpperCase().replace('-', '_')}_TOKEN`, TOKEN]),
    );
    const sb = sandbox({ ...tokens, WORKFLOWLOOKUP_ALLOW_URL_SOURCES: 'true' });
    sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
    const { client, close } = await connectClient(sb);
    const call = (name: string, args: Json) => callTool(client, name, args);
    const before = api.requests.length;
    try {
      for (const [id, host] of variants) {
        const port = host === '169.254.169.254' ? 80 : api.port;
        const imported = await call('catalog_import_openapi', {
          source: OPENAPI,
          catalog_title: id,
          base_url: `http://${host}:${port}/api`,
        });
        expect(imported.catalog_id, host).toBe(id);
        await call('workflow_save', { content: fetchOne(`get-${id}`, id, 't1') });
        const res = await call('workflow_start', { workflow_name: `get-${id}` });
        // Refused before connecting (no timeout, no retries against the metadata address): the reason is
        // the host policy, not a network failure, and the API saw no request (below).
        expect(res.error?.data, host).toMatchObject({ reason: 'host', retryable: true });
        expect(res.error.data.message, host).toContain('WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS');
      }
      const source = await call('catalog_validate_openapi', { source: `${api.baseUrl}/openapi.yaml` });
      expect(source.error.data.details).toContain('WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS');
      expect(api.requests.length).toBe(before);
    } finally {
      await close();
      sb.cleanup();
    }
  });
});

describe('redirects stay under the base URL (item 4)', () => {
  it('refuses a same-origin redirect out of the base path', async () => {
    const sb = allowedSandbox();
    const { client, close } = await connectClient(sb);
    const call = (name: string, args: Json) => callTool(client, name, args);
    try {
      await call('catalog_import_openapi', {
        source: OPENAPI,
        catalog_title: 'Tasks API',
        base_url: api.baseUrl,
      });
      await call('workflow_save', { content: fetchOne('escape-flow', 'tasks-api', 'escape') });
      const res = await call('workflow_start', { workflow_name: 'escape-flow' });
      expect(api.requests.filter((r) => r.url.startsWith('/admin'))).toEqual([]);
      expect(res.error?.data).toMatchObject({ reason: 'redirect', retryable: false });
      expect(res.error.data.message).toContain('/admin/keys');
    } finally {
      await close();
      sb.cleanup();
    }
  });
});

describe('URL catalog sources are read with a byte limit (item 8)', () => {
  let endless: Server;
  let port = 0;
  let sent = 0;

  beforeAll(async () => {
    endless = createServer((_req, res) => {
      // Chunked, without a content-length: only reading with a limit protects the server.
      res.writeHead(200, { 'content-type': 'application/yaml' });
      const chunk = Buffer.alloc(1024 * 1024, ' ');
      const pump = () => {
        while (sent < 1024 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    port = (endless.address() as AddressInfo).port;
  });
  afterAll(async () => {
    endless.closeAllConnections();
    await new Promise((resolve) => endless.close(resolve));
  });

  it('aborts a 1 GB answer past 5 MiB, and the server stays small', async () => {
    const sb = sandbox({
      WORKFLOWLOOKUP_ALLOW_URL_SOURCES: 'true',
      WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${port}`,
    });
    const server = new RawServer({ env: sb.env, cwd: sb.project });
    try {
      await server.initialize();
      const res = await server.request(1, 'catalog_validate_openapi', {
        source: `http://127.0.0.1:${port}/huge.yaml`,
      });
      await new Promise((r) => setTimeout(r, 100));
      // Aborted early, witnessed by the bytes the endless server got to send (not by a wall clock).
      expect(sent).toBeLessThan(64 * 1024 * 1024);
      expect(res.error).toMatchObject({
        data: { details: expect.stringMatching(/larger than 5242880 bytes/) },
      });
      const status = `/proc/${server.child.pid}/status`;
      if (existsSync(status)) {
        const peakKb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(status, 'utf8'))?.[1]);
        expect(peakKb / 1024).toBeLessThan(250);
      }
    } finally {
      server.kill();
      sb.cleanup();
    }
  });
});
