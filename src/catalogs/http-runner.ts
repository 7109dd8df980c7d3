import { terminalSafe, terminalSafeValue } from '../engine/terminal-text.js';
import { type Metrics, NO_METRICS } from '../telemetry/metrics.js';
import { injectTraceHeaders, inSpan, SpanKind } from '../telemetry/trace.js';
import {
  type CatalogAuth,
  CredentialProblem,
  credentialHeaders,
  originOf,
  originSetting,
  Scrubber,
} from './credentials.js';
import { BodyTooLarge, type HttpAnswer, send } from './guarded-http.js';
import { HostPolicy, HostRefused } from './host-policy.js';
import type { CatalogCommand } from './openapi-plan.js';

/** What the runner needs of a catalog: where it lives and how it authenticates. */
export interface RunnableCatalog {
  id: string;
  base_url: string;
  auth: CatalogAuth | null;
}

/** A catalog ready to call: the origin its credential may be sent to (null: none, until a person binds it). */
export interface CallTarget extends RunnableCatalog {
  credential_origin: string | null;
}

export type CommandFailureReason =
  | 'missing_parameter'
  | 'missing_credential'
  | 'http_status'
  | 'timeout'
  | 'network'
  | 'invalid_json'
  | 'redirect'
  | 'host'
  | 'response_too_large'
  | 'cancelled';

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
  /** The response body (parsed when JSON), with every credential scrubbed out. */
  output: unknown;
  attempts: number;
  duration_ms: number;
}

/** One HTTP request as the dashboard shows it: the URL without credentials. */
export interface HttpCall {
  method: string;
  url: string;
  /** Null when no response came (timeout, network error). */
  status: number | null;
  duration_ms: number;
  /** 1-based; retries count up. */
  attempt: number;
  error?: string;
}

export interface CallOptions {
  params: Record<string, unknown>;
  body?: unknown;
  timeoutMs: number;
  idempotencyKey: string;
  env: NodeJS.ProcessEnv;
  /** Which hosts may be called (default: public addresses only). */
  policy?: HostPolicy;
  /** Other configured secrets to scrub from the answer besides this catalog's own credential. */
  secrets?: readonly string[];
  /** Retries for idempotent methods (default 3 attempts in all). */
  maxAttempts?: number;
  /** Cancels the call: the request in flight is aborted and no retry follows. */
  signal?: AbortSignal;
  /** Told about every request made (each retry is one), for the record. */
  onRequest?: (call: HttpCall) => void;
  /** The app's instruments (calls by status class); default: nothing recorded. */
  metrics?: Metrics;
}

const MAX_REDIRECTS = 3;
const MAX_PAYLOAD_CHARS = 2000;
export const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
const PUBLIC_ONLY = new HostPolicy();

function safePayload(body: string, scrubber: Scrubber): unknown {
  const cut = body.length > MAX_PAYLOAD_CHARS ? `${body.slice(0, MAX_PAYLOAD_CHARS)}… (truncated)` : body;
  let value: unknown;
  try {
    value = JSON.parse(cut);
  } catch {
    value = cut;
  }
  // Scrubbed after the cut too, so a secret split by the cut leaves no readable half; terminal controls
  // go first (an API's text reaches the agent and the dashboard), so a secret split by one is found.
  return scrubber.value(terminalSafeValue(value));
}

/** The catalog's base URL as a directory: every request and redirect must stay under it. */
function baseOf(catalog: RunnableCatalog): URL {
  return new URL(catalog.base_url.endsWith('/') ? catalog.base_url : `${catalog.base_url}/`);
}

function under(url: URL, base: URL): boolean {
  return (
    url.origin === base.origin &&
    (url.pathname.startsWith(base.pathname) || `${url.pathname}/` === base.pathname)
  );
}

const SECRET_PARAM = /key|token|secret|pass|auth|sig|credential|session|cookie/i;

/** A URL fit to record: no user info, secret-looking query values and credential values replaced. */
export function safeUrl(url: URL, scrubber?: Scrubber): string {
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  for (const name of [...new Set(copy.searchParams.keys())]) {
    if (SECRET_PARAM.test(name)) copy.searchParams.set(name, '***');
  }
  return scrubber ? scrubber.text(copy.href) : copy.href;
}

/** The request URL: only ever under the catalog's base URL. */
export function buildUrl(
  catalog: RunnableCatalog,
  command: CatalogCommand,
  params: Record<string, unknown>,
): URL {
  const base = baseOf(catalog);
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
  if (!under(url, base)) {
    throw new CommandFailure(`refusing to call ${url.origin}${url.pathname}: outside ${base.href}`, 'host');
  }
  for (const p of command.parameters) {
    const value = params[p.name];
    if (p.in !== 'query' || value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(p.name, String(v));
  }
  return url;
}

/** Refuses to send a credential anywhere but the origin a person bound it to. */
function checkBinding(catalog: CallTarget): void {
  if (catalog.auth === null) return;
  const origin = originOf(catalog.base_url);
  if (origin !== undefined && origin === catalog.credential_origin) return;
  throw new CredentialProblem(
    `catalog "${catalog.id}" has a credential bound to ${catalog.credential_origin ?? 'no origin'}, but its base URL is now on ${origin ?? catalog.base_url} (credential_unbound): the credential is not sent there until a person re-binds it, by setting ${originSetting(catalog.id)}=${origin ?? '<origin>'} in the server's environment or by re-importing the catalog from a client that asks the user (elicitation)`,
    'unbound',
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls one catalog command over HTTP: only the catalog's base URL (redirects only under it), public
 * hosts unless allowed, the credential only to the origin it is bound to, a timeout per request,
 * retries with backoff for idempotent methods on network errors, timeouts, 429 and 5xx, and an
 * `Idempotency-Key` on every request. Every credential is scrubbed from what comes back.
 */
export function callCommand(
  catalog: CallTarget,
  command: CatalogCommand,
  options: CallOptions,
): Promise<CommandResult> {
  const metrics = options.metrics ?? NO_METRICS;
  const started = metrics.start();
  // A client span (retries and redirects inside it); the W3C trace context goes out in the headers.
  return inSpan(
    `${command.method} ${command.path}`,
    {
      'http.request.method': command.method,
      'url.template': command.path,
      'server.address': hostOf(catalog),
      'workflowlookup.command': `${catalog.id} ${command.name}`,
    },
    async (span) => {
      try {
        const result = await callUntraced(catalog, command, options);
        span?.setAttribute('http.response.status_code', result.status);
        metrics.commandCall(`${Math.floor(result.status / 100)}xx`, started);
        return result;
      } catch (error) {
        const status = error instanceof CommandFailure ? error.status : undefined;
        if (status !== undefined) span?.setAttribute('http.response.status_code', status);
        metrics.commandCall(status === undefined ? 'error' : `${Math.floor(status / 100)}xx`, started);
        throw error;
      }
    },
    SpanKind.CLIENT,
  );
}

/** The catalog's host, for a span (never its credentials). */
function hostOf(catalog: CallTarget): string | undefined {
  try {
    return new URL(catalog.base_url).hostname;
  } catch {
    return undefined;
  }
}

async function callUntraced(
  catalog: CallTarget,
  command: CatalogCommand,
  options: CallOptions,
): Promise<CommandResult> {
  const started = Date.now();
  let authHeaders: Record<string, string>;
  let scrubber: Scrubber;
  try {
    checkBinding(catalog);
    const credential = credentialHeaders(catalog.id, catalog.auth, options.env);
    authHeaders = credential.headers;
    scrubber = new Scrubber([...credential.secrets, ...(options.secrets ?? [])]);
  } catch (error) {
    if (error instanceof CredentialProblem) throw new CommandFailure(error.message, 'missing_credential');
    throw error;
  }
  const base = baseOf(catalog);
  const firstUrl = buildUrl(catalog, command, options.params);
  const headers: Record<string, string> = {
    accept: 'application/json',
    'idempotency-key': options.idempotencyKey,
  };
  for (const p of command.parameters) {
    const value = options.params[p.name];
    if (p.in === 'header' && value !== undefined && value !== null)
      headers[p.name.toLowerCase()] = String(value);
  }
  injectTraceHeaders(headers);
  // Set last so a header parameter cannot replace (or remove) the credential.
  Object.assign(headers, authHeaders);
  let body: string | undefined;
  if (options.body !== undefined && command.method !== 'GET' && command.method !== 'HEAD') {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  } else if (command.body_required) {
    throw new CommandFailure(`${command.name} needs a request body`, 'missing_parameter');
  }
  const policy = options.policy ?? PUBLIC_ONLY;
  const attemptsAllowed = command.idempotent ? (options.maxAttempts ?? 3) : 1;
  let lastFailure: CommandFailure | undefined;
  for (let attempt = 1; attempt <= attemptsAllowed; attempt++) {
    const signal = options.signal
      ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
      : AbortSignal.timeout(options.timeoutMs);
    const attemptStarted = Date.now();
    let url = firstUrl;
    let recorded = false;
    const record = (status: number | null, error?: string) => {
      if (recorded) return;
      recorded = true;
      options.onRequest?.({
        method: command.method,
        url: safeUrl(url, scrubber),
        status,
        duration_ms: Date.now() - attemptStarted,
        attempt,
        ...(error !== undefined ? { error } : {}),
      });
    };
    try {
      let method: string = command.method;
      let requestBody = body;
      let res: HttpAnswer;
      for (let hop = 0; ; hop++) {
        res = await send(url, {
          method,
          headers,
          ...(requestBody !== undefined ? { body: requestBody } : {}),
          signal,
          policy,
        });
        const location = res.status >= 300 && res.status < 400 ? res.header('location') : undefined;
        if (location === undefined) break;
        res.discard();
        const next = new URL(location, url);
        if (!under(next, base)) {
          throw new CommandFailure(
            next.origin === url.origin
              ? `refused a redirect from ${url.pathname} to ${next.pathname}, outside the catalog's base URL ${base.href}`
              : `refused a redirect from ${url.origin} to another host (${next.origin})`,
            'redirect',
            res.status,
          );
        }
        if (hop >= MAX_REDIRECTS) throw new CommandFailure('too many redirects', 'redirect', res.status);
        if (res.status === 303) {
          method = 'GET';
          requestBody = undefined;
        }
        url = next;
      }
      const raw = await readBody(res);
      record(res.status);
      if (res.status === 429 || res.status >= 500) {
        lastFailure = new CommandFailure(
          `${command.method} ${command.path} answered ${res.status}`,
          'http_status',
          res.status,
          safePayload(raw, scrubber),
        );
        if (attempt < attemptsAllowed) {
          const retryAfter = Number(res.header('retry-after'));
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
          safePayload(raw, scrubber),
        );
      }
      let output: unknown = raw === '' ? null : raw;
      if (raw !== '' && (res.header('content-type') ?? '').includes('json')) {
        try {
          output = JSON.parse(raw);
        } catch (error) {
          // The parser's message quotes the body: it is shown, so it is made safe like the body.
          throw new CommandFailure(
            `${command.method} ${command.path} returned invalid JSON (${scrubber.text(terminalSafe((error as Error).message))})`,
            'invalid_json',
            res.status,
            safePayload(raw, scrubber),
          );
        }
      }
      return {
        status: res.status,
        // What the API said reaches the agent (context, templates) and the dashboard: no terminal
        // controls, and no credential even when a control sequence split it.
        output: scrubber.value(terminalSafeValue(output)),
        attempts: attempt,
        duration_ms: Date.now() - started,
      };
    } catch (error) {
      if (error instanceof CommandFailure) {
        record(error.status ?? null, error.message);
        throw error;
      }
      if (error instanceof HostRefused) {
        record(null, 'host');
        throw new CommandFailure(error.message, 'host');
      }
      record(null, options.signal?.aborted ? 'cancelled' : (error as Error).name);
      if (options.signal?.aborted) {
        throw new CommandFailure(`${command.method} ${command.path} was cancelled`, 'cancelled');
      }
      const timedOut = signal.aborted;
      lastFailure = timedOut
        ? new CommandFailure(
            `${command.method} ${command.path} timed out after ${options.timeoutMs} ms`,
            'timeout',
          )
        : new CommandFailure(
            `${command.method} ${command.path} failed: ${scrubber.text(terminalSafe(String((error as Error).message)))}`,
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

async function readBody(res: HttpAnswer): Promise<string> {
  try {
    return (await res.read(MAX_RESPONSE_BYTES)).toString('utf8');
  } catch (error) {
    if (error instanceof BodyTooLarge) {
      throw new CommandFailure(
        `response larger than ${MAX_RESPONSE_BYTES} bytes`,
        'response_too_large',
        res.status,
      );
    }
    throw error;
  }
}
