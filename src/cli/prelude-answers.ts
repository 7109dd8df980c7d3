// Build step (scripts/build.mjs): records what the server answers to `initialize` (each protocol
// version) and `tools/list` (with and without the MCP Apps extension) for each tool profile, through
// the real stdio path, into dist/prelude.json for the stdio prelude. Prints the JSON on stdout.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { type App, createApp } from '../app.js';
import { loadConfig, PROFILES } from '../config.js';
import { INITIALIZE_VERSIONS } from '../protocol/rules.js';
import { silentLogger } from '../telemetry/log.js';
import { serveAppOnStdio } from '../transports/stdio.js';
import { type PreludeAnswers, profilesKey } from '../transports/stdio-prelude.js';

type Json = Record<string, unknown>;

async function session(app: App, lines: Json[]): Promise<Json[]> {
  {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const answers: Json[] = [];
    let buffer = '';
    stdout.setEncoding('utf8');
    const want = lines.filter((l) => l.id !== undefined).length;
    const all = new Promise<void>((resolve) => {
      stdout.on('data', (chunk: string) => {
        buffer += chunk;
        for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
          answers.push(JSON.parse(buffer.slice(0, nl)) as Json);
          buffer = buffer.slice(nl + 1);
          if (answers.length === want) resolve();
        }
      });
    });
    const served = serveAppOnStdio(app, { stdin, stdout, closeApp: false });
    for (const line of lines) stdin.write(`${JSON.stringify(line)}\n`);
    await all;
    served.stop();
    await served.done;
    return answers;
  }
}

const initialize = (protocolVersion: string, capabilities: Json = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities, clientInfo: { name: 'prelude', version: '1' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const toolsList = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

const result = (answer: Json | undefined): unknown => {
  if (answer === undefined || answer.error !== undefined || answer.result === undefined)
    throw new Error(`no result: ${JSON.stringify(answer)}`);
  return answer.result;
};

const out: PreludeAnswers = { results: [], initialize: {}, tools: {} };
const seen = new Map<string, number>();
/** Results are stored once each (most profiles and versions share them). */
const indexOf = (value: unknown): number => {
  const text = JSON.stringify(value);
  let index = seen.get(text);
  if (index === undefined) {
    index = out.results.push(value) - 1;
    seen.set(text, index);
  }
  return index;
};
const home = mkdtempSync(join(tmpdir(), 'wl-prelude-'));
// Each group alone beside core (the usual `--tools tasks`), and all of them.
for (const tools of [...PROFILES, 'all']) {
  const key = profilesKey(tools);
  const config = loadConfig({
    tools,
    includeUser: false,
    includeProject: false,
    env: { HOME: home, XDG_CONFIG_HOME: join(home, 'config'), WORKFLOWLOOKUP_DATA_DIR: join(home, 'data') },
    cwd: home,
  });
  const app = createApp(config, { watch: false, log: silentLogger });
  out.initialize[key] = {};
  out.tools[key] = {};
  for (const version of INITIALIZE_VERSIONS) {
    const [init, list] = await session(app, [initialize(version), initialized, toolsList]);
    const [, apps] = await session(app, [
      initialize(version, { extensions: { 'io.modelcontextprotocol/ui': {} } }),
      initialized,
      toolsList,
    ]);
    out.initialize[key][version] = indexOf(result(init));
    out.tools[key][version] = { plain: indexOf(result(list)), apps: indexOf(result(apps)) };
  }
  await app.close();
}
rmSync(home, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(out)}\n`);
