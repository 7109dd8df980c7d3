import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createApp } from '../../src/app.js';
import { loadConfig, loadHttpSettings } from '../../src/config.js';
import { dashboardMount } from '../../src/dashboard/sign-in.js';
import { silentLogger } from '../../src/telemetry/log.js';
import { startHttp } from '../../src/transports/http.js';
import { addToken } from '../../src/transports/http-auth.js';
import { post } from './http-server.js';
import { INIT, type Sandbox } from './server.js';
import { validationWorkerUrl } from './validation-worker.js';

type Json = Record<string, any>;

/**
 * `serve --http` built in-process from the same composition root the CLI uses (app, HTTP transport and,
 * with `dashboard`, the dashboard mount), on an ephemeral port of 127.0.0.1: a real HTTP server without
 * a process per test.
 */
export async function inProcessHttp(
  sb: Sandbox,
  env: Record<string, string> = {},
  options: { dashboard?: boolean } = {},
) {
  // The data dir in the sandbox: by default it is under os.homedir(), the real one in-process.
  const config = loadConfig({
    env: { WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'), ...sb.env, WORKFLOWLOOKUP_HTTP_PORT: '0', ...env },
    cwd: sb.project,
  });
  const app = createApp(config, {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
  });
  const mounts = options.dashboard ? { '/dashboard': dashboardMount(app) } : undefined;
  const http = await startHttp(app, loadHttpSettings(config), mounts ? { mounts } : {});
  return {
    app,
    url: http.url,
    port: http.port,
    async close() {
      await http.close(100);
      await app.close();
    },
  };
}

/** Static tokens (`WORKFLOWLOOKUP_AUTH=tokens`): the env that serves them, and each new token by name. */
export async function staticTokens(
  sb: Sandbox,
  tokens: Record<string, { scopes: ('read' | 'run' | 'author' | 'admin' | 'approve')[]; principal?: string }>,
): Promise<{ env: Record<string, string>; token: Record<string, string> }> {
  const file = join(sb.root, `tokens-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ tokens: [] }));
  const token: Record<string, string> = {};
  for (const [name, { scopes, principal }] of Object.entries(tokens)) {
    token[name] = await addToken(file, name, scopes, principal ?? name);
  }
  return { env: { WORKFLOWLOOKUP_AUTH: 'tokens', WORKFLOWLOOKUP_TOKENS_FILE: file }, token };
}

/** A raw 2025-11-25 session over HTTP: initialize, then requests carrying its id. */
export async function rawSession(url: string, headers: Record<string, string> = {}) {
  const init = await post(
    url,
    { ...INIT, params: { ...INIT.params, protocolVersion: '2025-06-18' } },
    headers,
  );
  if (init.status !== 200) throw new Error(`initialize: ${init.status} ${init.text}`);
  const sid = init.headers.get('mcp-session-id') as string;
  const h = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  let id = 0;
  return {
    sid,
    headers: h,
    /** One request; the HTTP status and the JSON-RPC answer. */
    async send(method: string, params?: unknown): Promise<{ status: number; answer: Json | undefined }> {
      const res = await post(
        url,
        { jsonrpc: '2.0', id: ++id, method, ...(params !== undefined ? { params } : {}) },
        h,
      );
      return { status: res.status, answer: res.json };
    },
    async close() {
      await fetch(url, { method: 'DELETE', headers: h });
    },
  };
}
