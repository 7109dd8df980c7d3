import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../src/telemetry/log.js';
import { inProcessClient } from './helpers/in-process.js';
import { callTool, sandbox } from './helpers/server.js';

// The log lines an agent's mistakes write, captured from the app's own pino logger while an SDK client
// drives it through the MCP protocol in-process: their `msg` is what docs/operations.md shows.

type Json = Record<string, any>;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function logged() {
  const lines: string[] = [];
  const log = createLogger({ level: 'info', stream: { write: (l: string) => lines.push(l) } });
  const sb = sandbox();
  cleanups.push(() => sb.cleanup());
  const conn = await inProcessClient(sb, {}, { app: { log } });
  cleanups.push(conn.close);
  return { client: conn.client, events: () => lines.map((l) => JSON.parse(l) as Json) };
}

describe("an agent's mistake in the log", () => {
  it('names what it is about in msg, as the docs show: "Workflow not found: nightly-release"', async () => {
    const { client, events } = await logged();
    const missing = await callTool(client, 'workflow_get', { id: 'nightly-release' });
    const id = missing.error.data.correlation_id as string;
    const line = events().find((e) => e.correlation_id === id);
    expect(line).toMatchObject({
      level: 'info',
      name: 'workflowlookup',
      error_code: 'WORKFLOW_NOT_FOUND',
      msg: 'Workflow not found: nightly-release',
    });
  });

  it('a near miss keeps its hint after the id', async () => {
    const { client, events } = await logged();
    const near = await callTool(client, 'workflow_get', { id: 'coding-task' });
    const hinted = events().find((e) => e.correlation_id === near.error.data.correlation_id);
    expect(hinted?.msg).toMatch(/^Workflow not found: coding-task; did you mean "coding-task-workflow"/);
  });
});
