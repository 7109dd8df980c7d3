import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CLI, type Sandbox, SPAWNED_WAIT_MS } from './server.js';

/** The built server running `serve --http` on an ephemeral port. */
export interface HttpServer {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * The MCP URL `serve --http` announced: the `mcp_url` of its JSON log line (stderr is no terminal
 * here). Only whole lines are read: a chunk may end in the middle of one.
 */
export function announcedUrl(stderr: string): string | undefined {
  for (const line of stderr.slice(0, stderr.lastIndexOf('\n') + 1).split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const event = JSON.parse(line) as { mcp_url?: unknown };
      if (typeof event.mcp_url === 'string') return event.mcp_url;
    } catch {
      // Not a log line: some other output.
    }
  }
  return undefined;
}

export async function startHttpServer(
  sb: Sandbox,
  env: Record<string, string> = {},
  args: string[] = [],
): Promise<HttpServer> {
  const child = spawn(process.execPath, [CLI, 'serve', '--http', '--port', '0', ...args], {
    env: { ...sb.env, ...env },
    cwd: sb.project,
  });
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL announced:\n${stderr}`)), SPAWNED_WAIT_MS);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const found = announcedUrl(stderr);
      if (found !== undefined) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    void exited.then(() => reject(new Error(`server exited:\n${stderr}`)));
  });
  return {
    child,
    url,
    stderr: () => stderr,
    exited,
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null) child.kill(signal);
    },
  };
}

/** An SDK client over Streamable HTTP, in the 2025 era (sessions) or pinned to 2026-07-28. */
export async function httpClient(
  url: string,
  options: { token?: string; pin?: string; elicit?: boolean } = {},
): Promise<Client> {
  const client = new Client(
    { name: 'http-tests', version: '1.0.0' },
    {
      ...(options.pin ? { versionNegotiation: { mode: { pin: options.pin } } } : {}),
      ...(options.elicit ? { capabilities: { elicitation: { form: {} } } } : {}),
    },
  );
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(options.token ? { requestInit: { headers: { authorization: `Bearer ${options.token}` } } } : {}),
  });
  await client.connect(transport);
  return client;
}

export type Json = Record<string, any>;

/** One raw JSON-RPC POST; the answer parsed from JSON or from the SSE event that carries it. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Json | undefined; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Json | undefined;
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const data = text
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l.length > 6)
      .map((l) => JSON.parse(l.slice(6)) as Json)
      .filter((m) => 'id' in m);
    json = data.at(-1);
  } else if (text) {
    try {
      json = JSON.parse(text) as Json;
    } catch {
      json = undefined;
    }
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** The `_meta` envelope of a stateless 2026-07-28 request (no capabilities). */
export const STATELESS_ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/**
 * Raw 2026-07-28 requests to an HTTP endpoint, in the per-request envelope declaring `capabilities`,
 * with the routing headers (Mcp-Method, and Mcp-Name when given): the whole JSON-RPC answer.
 */
export function poster2026(url: string, capabilities: Json, bearer?: string) {
  const envelope = {
    ...STATELESS_ENVELOPE,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1.0.0' },
  };
  return async (method: string, params: Json, name?: string): Promise<Json> => {
    const res = await post(
      url,
      { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: envelope } },
      {
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        ...(name ? { 'mcp-name': name } : {}),
        ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      },
    );
    if (!res.json) throw new Error(`no answer (${res.status}): ${res.text}`);
    return res.json;
  };
}

/** A stateless (2026-07-28) call: any server process, any replica, can answer it. */
export async function statelessCall(url: string, method: string, params: Json): Promise<Json> {
  const res = await post(
    url,
    { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: STATELESS_ENVELOPE } },
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method },
  );
  if (!res.json) throw new Error(`no answer (${res.status}): ${res.text}`);
  return res.json.error ? { error: res.json.error } : (res.json.result as Json);
}
