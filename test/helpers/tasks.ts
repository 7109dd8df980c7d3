import { join } from 'node:path';
import { InProcessRaw } from './in-process-raw.js';
import { FIXTURES, RawServer, type Sandbox, SPAWNED_WAIT_MS } from './server.js';
import { type TasksApi, TOKEN } from './tasks-api.js';

type Json = Record<string, any>;

/** The 2026-07-28 `_meta` envelope of a raw request. */
export function envelope(capabilities: Record<string, unknown> = {}, tasks = true): Json {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {
      ...capabilities,
      ...(tasks ? { extensions: { 'io.modelcontextprotocol/tasks': {} } } : {}),
    },
    'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1.0.0' },
  };
}

/**
 * A raw JSON-RPC client of the built server for task tests: requests with unique ids, every message
 * parsed, and server-to-client requests (elicitation, sampling) answered by a handler.
 */
export class TaskClient {
  private next = 0;
  private served = 0;
  private timer: NodeJS.Timeout | undefined;
  onRequest?: (method: string, params: Json) => Json | undefined;

  constructor(readonly server: RawServer | InProcessRaw) {}

  /**
   * A client of a server in this process (the stdio entry's wiring, test/helpers/in-process.ts), or with
   * `process: true` of a spawned `dist/cli.js`, for the tests where the process matters (killed, restarted,
   * end of input).
   */
  static async start(
    sb: Sandbox,
    env: Record<string, string>,
    capabilities: Json = {},
    protocolVersion = '2025-11-25',
    options: { process?: boolean } = {},
  ): Promise<TaskClient> {
    const serverOptions = { env: { ...sb.env, ...env }, cwd: sb.project };
    const c = new TaskClient(
      options.process ? new RawServer(serverOptions) : new InProcessRaw(serverOptions),
    );
    if (protocolVersion !== '2026-07-28') {
      const init = await c.rpc('initialize', {
        protocolVersion,
        capabilities,
        clientInfo: { name: 'task-tests', version: '1.0.0' },
      });
      if (init.error) throw new Error(JSON.stringify(init.error));
      c.server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    }
    c.timer = setInterval(() => c.serve(), 20);
    return c;
  }

  get messages(): Json[] {
    return this.server.lines.map((l) => JSON.parse(l) as Json);
  }

  /** Server-to-client requests seen so far. */
  requests(method?: string): Json[] {
    return this.messages.filter(
      (m) => m.method !== undefined && m.id !== undefined && (!method || m.method === method),
    );
  }

  notifications(method: string): Json[] {
    return this.messages.filter((m) => m.method === method && m.id === undefined);
  }

  private serve(): void {
    const all = this.messages;
    for (; this.served < all.length; this.served++) {
      const m = all[this.served] as Json;
      if (m.method === undefined || m.id === undefined || !this.onRequest) continue;
      const result = this.onRequest(m.method, m.params ?? {});
      if (result !== undefined) this.server.send({ jsonrpc: '2.0', id: m.id, result });
    }
  }

  /** Sends a request and waits for its answer. */
  async rpc(method: string, params?: Json, timeoutMs = SPAWNED_WAIT_MS): Promise<Json> {
    const id = `c${this.next++}`;
    this.send(id, method, params);
    return this.answer(id, timeoutMs);
  }

  send(id: string, method: string, params?: Json): void {
    this.server.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
  }

  async answer(id: string, timeoutMs = SPAWNED_WAIT_MS): Promise<Json> {
    return this.waitFor((m) => m.id === id && m.method === undefined, timeoutMs);
  }

  async waitFor(predicate: (m: Json) => boolean, timeoutMs = SPAWNED_WAIT_MS): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) {
        throw new Error(
          `timed out; got:\n${this.server.lines.join('\n').slice(-4000)}\n${this.server.stderr.slice(-2000)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Polls tasks/get until the task satisfies `until`. */
  async poll(
    taskId: string,
    until: (task: Json) => boolean,
    meta?: Json,
    timeoutMs = SPAWNED_WAIT_MS,
  ): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await this.rpc('tasks/get', { taskId, ...(meta ? { _meta: meta } : {}) });
      if (res.error) throw new Error(JSON.stringify(res.error));
      if (until(res.result)) return res.result;
      if (Date.now() > deadline) throw new Error(`task never got there: ${JSON.stringify(res.result)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.server.kill();
  }
}

/** Imports the tasks API catalog and saves workflows, with a short-lived server. */
export async function setUpWorkflows(
  sb: Sandbox,
  env: Record<string, string>,
  api: TasksApi,
  manifests: string[],
): Promise<void> {
  const c = await TaskClient.start(sb, env);
  try {
    const imported = await c.rpc('catalog_import_openapi', {
      source: join(FIXTURES, 'openapi', 'tasks-api.yaml'),
      catalog_title: 'Tasks API',
      base_url: api.baseUrl,
    });
    if (imported.error) throw new Error(JSON.stringify(imported.error));
    for (const content of manifests) {
      const saved = await c.rpc('workflow_save', { content, overwrite: true });
      if (saved.error) throw new Error(JSON.stringify(saved.error));
    }
  } finally {
    c.close();
  }
}

export function apiEnv(sb: Sandbox, api: TasksApi): Record<string, string> {
  return {
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
    WORKFLOWLOOKUP_DATA_DIR: join(sb.root, 'data'),
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
    // Task clients look the long tools up in tools/list (their taskSupport): list the tasks group.
    WORKFLOWLOOKUP_TOOLS: 'core,tasks',
  };
}

export const lines = (...l: string[]) => `${l.join('\n')}\n`;
