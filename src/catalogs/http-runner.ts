import type { CatalogCommand } from './openapi-import.js';

/** What the runner needs of a catalog: where it lives and how it authenticates. */
export interface RunnableCatalog {
  id: string;
  base_url: string;
  auth: CatalogAuth | null;
}

/** Credentials come from environment variables named here; their values are never echoed. */
export type CatalogAuth =
  | { type: 'bearer'; token_env: string }
  | { type: 'basic'; username_env: string; password_env: string }
  | { type: 'api_key'; header: string; value_env: string };

export type CommandFailureReason =
  | 'missing_parameter'
  | 'missing_credential'
  | 'http_status'
  | 'timeout'
  | 'network'
  | 'invalid_json'
  | 'redirect'
  | 'host';

/** A failed call, with a payload that is safe to show (truncated, credentials scrubbed). */
export class CommandFailure extends Error {
  constructor(
    message: string,
    readonly reason: CommandFailureReason,
    readonly status?: number,
    readonly responsePayload?: unknown,
  ) {
    super(message);
    this.name = 'CommandFailure';
  }
}

export interface CommandResult {
  status: number;
  output: unknown;
  attempts: number;
  duration_ms: number;
}

export interface CallOptions {
  params: Record<string, unknown>;
  body?: unknown;
  timeoutMs: number;
  idempotencyKey: string;
  env: NodeJS.ProcessEnv;
  /** Retries for idempotent methods (default 3 attempts in all). */
  maxAttempts?: number;
  fetchImpl?: typeof fetch;
}

const MAX_REDIRECTS = 3;
const MAX_PAYLOAD_CHARS = 2000;
export const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

function credentials(
  catalog: RunnableCatalog,
  env: NodeJS.ProcessEnv,
): { headers: Record<string, string>; secrets: string[] } {
  const auth = catalog.auth;
  if (auth === null) return { headers: {}, secrets: [] };
  const need = (name: string) => {
    const value = env[name];
    if (value === undefined || value === '') {
      throw new CommandFailure(
        `catalog "${catalog.id}" needs the environment variable ${name} (${auth.type} credential), which is not set`,
        'missing_credential',
      );
    }
    return value;
  };
  if (auth.type === 'bearer') {
    const token = need(auth.token_env);
    return { headers: { authorization: `Bearer ${token}` }, secrets: [token] };
  }
  if (auth.type === 'basic') {
    const user = need(auth.username_env);
    const pass = need(auth.password_env);
    const encoded = Buffer.from(`${user}:${pass}`).toString('base64');
    return { headers: { authorization: `Basic ${encoded}` }, secrets: [pass, encoded] };
  }
  const value = need(auth.value_env);
  return { headers: { [auth.header.toLowerCase()]: value }, secrets: [value] };
}

/** Replaces every credential value in a text with ***. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('***');
  return out;
}

function safePayload(body: string, secrets: readonly string[]): unknown {
  const clean = scrub(body, secrets);
  const cut = clean.length > MAX_PAYLOAD_CHARS ? `${clean.slice(0, MAX_PAYLOAD_CHARS)}… (truncated)` : clean;
  try {
    return JSON.parse(cut);
  } catch {
    return cut;
  }
}

/** The request URL: only ever under the catalog's base URL. */
export function buildUrl(
  catalog: RunnableCatalog,
  command: CatalogCommand,
  params: Record<string, unknown>,
): URL {
  const base = new URL(catalog.base_url.endsWith('/') ? catalog.base_url : `${catalog.base_url}/`);
  let path = command.path;
  for (const p of command.parameters) {
    const value = params[p.name];
    if (value === undefined || value === null) {
      if (p.required) {
        throw new CommandFailure(
          `parameter "${p.name}" (${p.in}) is required by ${command.name}`,
          'missing_parameter',
        );
      }
      continue;
    }
    if (p.in === 'path') path = path.replaceAll(`{${p.name}}`, encodeURIComponent(String(value)));
  }
  const url = new URL(path.replace(/^\//, ''), base);
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) {
    throw new CommandFailure(`refusing to call ${url.origin}${url.pathname}: outside ${base.href}`, 'host');
  }
  for (const p of command.parameters) {
    const value = params[p.name];
    if (p.in !== 'query' || value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(p.name, String(v));
  }
  return url;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls one catalog command over HTTP: only the catalog's host, same-host redirects only, a timeout per
 * request, retries with backoff for idempotent methods on network errors, timeouts, 429 and 5xx, and an
 * `Idempotency-Key` on every request.
 */
export async function callCommand(
  catalog: RunnableCatalog,
  command: CatalogCommand,
  options: CallOptions,
): Promise<CommandResult> {
  const started = Date.now();
  const { headers: authHeaders, secrets } = credentials(catalog, options.env);
  let url = buildUrl(catalog, command, options.params);
  const headers: Record<string, string> = {
    accept: 'application/json',
    'idempotency-key': options.idempotencyKey,
    ...authHeaders,
  };
  for (const p of command.parameters) {
    const value = options.params[p.name];
    if (p.in === 'header' && value !== undefined && value !== null)
      headers[p.name.toLowerCase()] = String(value);
  }
  let body: string | undefined;
  if (options.body !== undefined && command.method !== 'GET' && command.method !== 'HEAD') {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  } else if (command.body_required) {
    throw new CommandFailure(`${command.name} needs a request body`, 'missing_parameter');
  }
  const doFetch = options.fetchImpl ?? fetch;
  const attemptsAllowed = command.idempotent ? (options.maxAttempts ?? 3) : 1;
  let lastFailure: CommandFailure | undefined;
  for (let attempt = 1; attempt <= attemptsAllowed; attempt++) {
    try {
      let response: Response | undefined;
      let method: string = command.method;
      let requestBody = body;
      for (let hop = 0; ; hop++) {
        response = await doFetch(url, {
          method,
          headers,
          ...(requestBody !== undefined ? { body: requestBody } : {}),
          redirect: 'manual',
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        if (response.status < 300 || response.status >= 400) break;
        const location = response.headers.get('location');
        await response.body?.cancel();
        if (location === null) break;
        const next = new URL(location, url);
        if (next.origin !== url.origin) {
          throw new CommandFailure(
            `refused a redirect from ${url.origin} to another host (${next.origin})`,
            'redirect',
            response.status,
          );
        }
        if (hop >= MAX_REDIRECTS) throw new CommandFailure('too many redirects', 'redirect', response.status);
        if (response.status === 303) {
          method = 'GET';
          requestBody = undefined;
        }
        url = next;
      }
      const res = response as Response;
      const raw = await readLimited(res);
      if (res.status === 429 || res.status >= 500) {
        lastFailure = new CommandFailure(
          `${command.method} ${command.path} answered ${res.status}`,
          'http_status',
          res.status,
          safePayload(raw, secrets),
        );
        if (attempt < attemptsAllowed) {
          const retryAfter = Number(res.headers.get('retry-after'));
          await sleep(
            Number.isFinite(retryAfter) && retryAfter > 0
              ? Math.min(retryAfter * 1000, 2000)
              : 100 * 2 ** (attempt - 1),
          );
          continue;
        }
        throw lastFailure;
      }
      if (res.status >= 400) {
        throw new CommandFailure(
          `${command.method} ${command.path} answered ${res.status}`,
          'http_status',
          res.status,
          safePayload(raw, secrets),
        );
      }
      let output: unknown = raw === '' ? null : raw;
      if (raw !== '' && (res.headers.get('content-type') ?? '').includes('json')) {
        try {
          output = JSON.parse(raw);
        } catch (error) {
          throw new CommandFailure(
            `${command.method} ${command.path} returned invalid JSON (${(error as Error).message})`,
            'invalid_json',
            res.status,
            safePayload(raw, secrets),
          );
        }
      }
      return { status: res.status, output, attempts: attempt, duration_ms: Date.now() - started };
    } catch (error) {
      if (error instanceof CommandFailure) throw error;
      const timedOut = (error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError';
      lastFailure = timedOut
        ? new CommandFailure(
            `${command.method} ${command.path} timed out after ${options.timeoutMs} ms`,
            'timeout',
          )
        : new CommandFailure(
            `${command.method} ${command.path} failed: ${scrub(String((error as Error).cause ?? (error as Error).message), secrets)}`,
            'network',
          );
      if (attempt < attemptsAllowed) {
        await sleep(100 * 2 ** (attempt - 1));
        continue;
      }
      throw lastFailure;
    }
  }
  throw lastFailure ?? new CommandFailure('no attempt was made', 'network');
}

async function readLimited(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw new CommandFailure(`response larger than ${MAX_RESPONSE_BYTES} bytes`, 'http_status', res.status);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
