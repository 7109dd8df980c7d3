import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessClient } from './helpers/in-process.js';
import { inProcessHttp } from './helpers/in-process-http.js';
import { callTool, type Sandbox, sandbox, tokenOf } from './helpers/server.js';

// One check run per continuation token: concurrent submissions of one token (a client that retries, two
// tabs, a proxy that replays) used to run the check once each, before the token was claimed. Now the
// first claims the token and runs it; the others wait and replay its answer; one with another output is
// refused while it runs. The check here holds until the test releases it, so the overlap is certain.

type Json = Record<string, any>;

const open: { close(): Promise<void> }[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  for (const b of boxes.splice(0)) b.cleanup();
});

/** A check that records each run in `runs`, then waits for the file `release` before it passes. */
function prepare() {
  const sb = sandbox();
  boxes.push(sb);
  const work = join(sb.root, 'work');
  mkdirSync(work);
  const body =
    "const fs=require('fs');fs.appendFileSync('runs','run\\n');const t=setInterval(()=>{if(fs.existsSync('release')){clearInterval(t);console.log('ok')}},20)";
  const checksFile = join(sb.root, 'checks.json');
  writeFileSync(
    checksFile,
    JSON.stringify({
      checks: { held: { command: process.execPath, args: ['-e', body], cwd: 'directory', directory: work } },
    }),
  );
  writeFileSync(
    join(sb.runtime, 'held.yaml'),
    [
      'id: held',
      'name: held',
      'description: a step the server verifies',
      'version: 1.0.0',
      'steps:',
      '  - {id: fix, title: Fix, prompt: Fix it., verify: {check: held}}',
      '  - {id: done, title: Done, prompt: Summarize.}',
      '',
    ].join('\n'),
  );
  const env = {
    WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'),
    WORKFLOWLOOKUP_CHECKS_FILE: checksFile,
    WORKFLOWLOOKUP_HTTP_CHECKS: '1',
  };
  const runs = () =>
    existsSync(join(work, 'runs')) ? readFileSync(join(work, 'runs'), 'utf8').split('\n').length - 1 : 0;
  const release = () => writeFileSync(join(work, 'release'), '');
  return { sb, env, runs, release };
}

async function tenAtOnce(
  call: (name: string, args: Json) => Promise<Json>,
  runs: () => number,
  release: () => void,
) {
  const started = await call('workflow_start', { workflow_id: 'held' });
  const token = tokenOf(started);
  const output = { summary: 'fixed the parser' };
  const first = call('workflow_next_step', { token, output });
  await expect.poll(runs).toBe(1);
  const rest = Array.from({ length: 9 }, () => call('workflow_next_step', { token, output }));
  // Another output for the same token while its check runs: one token is one submission.
  const other = await call('workflow_next_step', { token, output: { summary: 'something else' } });
  expect(other.error.data.error_code).toBe('EXECUTION_STATE_CONFLICT');
  expect(other.error.data.details).toContain('being submitted with a different output');
  release();
  const answers = await Promise.all([first, ...rest]);
  expect(runs()).toBe(1);
  for (const answer of answers) expect(answer).toMatchObject({ success: true, step_name: 'done' });
  expect(new Set(answers.map((a) => tokenOf(a))).size).toBe(1);
}

describe('a check runs once per token', () => {
  it('over stdio: ten concurrent submissions of one token run it once and get one answer', async () => {
    const { sb, env, runs, release } = prepare();
    const conn = await inProcessClient(sb, env);
    open.push(conn);
    await tenAtOnce((name, args) => callTool(conn.client, name, args), runs, release);
  });

  it('over HTTP, each submission its own request', async () => {
    const { sb, env, runs, release } = prepare();
    const server = await inProcessHttp(sb, env);
    open.push(server);
    const client = new Client({ name: 'retrying', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    open.push(client);
    await tenAtOnce((name, args) => callTool(client, name, args), runs, release);
  });
});
