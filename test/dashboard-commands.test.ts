import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type DashboardProcess, raw, startDashboard } from './helpers/dashboard.js';
import { callTool, connectClient, FIXTURES, type Sandbox } from './helpers/server.js';
import { apiSandbox, type TasksApi, TOKEN } from './helpers/tasks-api.js';

type Json = Record<string, any>;

let sb: Sandbox;
let api: TasksApi;
let client: Client;
let closeClient: () => Promise<void>;
let dash: DashboardProcess;

beforeAll(async () => {
  ({ api, sb } = await apiSandbox());
  writeFileSync(
    join(sb.runtime, 'flaky-fetch.yaml'),
    `id: flaky-fetch
name: Flaky fetch
description: One command step whose first request fails
version: 1.0.0
steps:
  - id: fetch-task
    title: Fetch the task
    run: tasks-api get-task
    with: { taskId: flaky }
  - id: read
    title: Read it
    prompt: Read the task.
`,
  );
  ({ client, close: closeClient } = await connectClient(sb));
  dash = await startDashboard(sb);
});

afterAll(async () => {
  await dash?.stop();
  await closeClient?.();
  await api?.stop();
  sb?.cleanup();
});

it('records every HTTP request of a command step and shows method, URL, status, duration and retries, no credential', async () => {
  const call = (name: string, args: Json) => callTool(client, name, args);
  await call('catalog_import_openapi', {
    source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
    catalog_title: 'Tasks API',
    base_url: api.baseUrl,
  });
  const started = await call('workflow_start', { workflow_name: 'flaky-fetch' });
  expect(started.step_name).toBe('read');
  const id = started.execution_id;
  const telemetry = JSON.parse(
    (
      (
        await client.readResource({
          uri: `workflowlookup://workflow/telemetry/${id}?event_type=http_request`,
        })
      ).contents[0] as { text: string }
    ).text,
  );
  expect(telemetry.map((e: Json) => e.metadata)).toEqual([
    expect.objectContaining({
      seq: 1,
      poll: 1,
      attempt: 1,
      method: 'GET',
      status: 503,
      url: `${api.baseUrl}/tasks/flaky`,
    }),
    expect.objectContaining({
      seq: 1,
      poll: 1,
      attempt: 2,
      method: 'GET',
      status: 200,
      url: `${api.baseUrl}/tasks/flaky`,
    }),
  ]);
  expect(typeof telemetry[0].metadata.duration_ms).toBe('number');

  const page = await raw(dash.port, `/executions/${id}`, { headers: { host: 'localhost' } });
  const table = /<table class="http">[\s\S]*?<\/table>/.exec(page.body)?.[0] ?? '';
  const rows = [
    ...table.matchAll(
      /<tr><td>(\w+)<\/td><td class="url">([^<]+)<\/td><td class="(ok|bad)">(\d+)<\/td><td>[^<]+<\/td><td>(\d)<\/td><td>(\d)<\/td><\/tr>/g,
    ),
  ];
  expect(rows.map((r) => [r[1], r[2], r[4], r[5], r[6]])).toEqual([
    ['GET', `${api.baseUrl}/tasks/flaky`, '503', '1', '1'],
    ['GET', `${api.baseUrl}/tasks/flaky`, '200', '2', '1'],
  ]);
  expect(page.body).toMatch(/<span class="ok">HTTP 200<\/span>/);
  expect(page.body).not.toContain(TOKEN);
});
