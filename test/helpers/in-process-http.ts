import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AppOptions, createApp } from '../../src/app.js';
import { loadConfig, loadHttpSettings } from '../../src/config.js';
import { serveProcess } from '../../src/serve.js';
import { silentLogger } from '../../src/telemetry/log.js';
import { addToken } from '../../src/transports/http-auth.js';
import { post } from './http-server.js';
import { INIT, type Sandbox } from './server.js';
import { validationWorkerUrl } from './validation-worker.js';

type Json = Record<string, any>;

/**
 * `serve --http` in this process: the app from the composition root and what the CLI serves around it
 * (`serveProcess` in src/serve.ts: Streamable HTTP in both eras, /metrics, /healthz and /readyz, and,
 * with `dashboard`, the dashboard mount), on an ephemeral port of 127.0.0.1. A real HTTP server without
 * a process per test. The data dir is in the sandbox unless `env` names one; the request rate is not
 * limited unless `env` sets WORKFLOWLOOKUP_RATE_LIMIT; the dashboard is mounted only when asked for.
 * `options` are also the app's (servesHttp, conformanceFixtures, ...).
 */
export async function inProcessHttp(
  sb: Sandbox,
  env: Record<string, string> = {},
  options: AppOptions & { dashboard?: boolean } = {},
) {
  const { dashboard = false, ...appOptions } = options;
  // The data dir in the sandbox: by default it is under os.homedir(), the real one in-process.
  const config = loadConfig({
    env: {
      WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'),
      ...sb.env,
      WORKFLOWLOOKUP_RATE_LIMIT: '0',
      ...env,
    },
    cwd: sb.project,
  });
  const app = createApp(config, {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
    ...appOptions,
  });
  const serving = await serveProcess(app, {
    http: { ...loadHttpSettings(config, { port: '0' }), dashboard },
  });
  const http = serving.http as NonNullable<typeof serving.http>;
  return {
    app,
    url: http.url,
    port: http.port,
    /** Closes the server (requests in flight get 100 ms), then the app. */
    close: () => serving.close(100),
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
