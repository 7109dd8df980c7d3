import {
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import { inRequestScope } from '../telemetry/context.js';
import type { Logger } from '../telemetry/log.js';
import { ECHOED_NAME_CHARS, type Metrics, NO_METRICS, UNKNOWN_NAME } from '../telemetry/metrics.js';
import { ATTR, answerFailure, type OpenSpan, startRequestSpan } from '../telemetry/trace.js';
import { RpcCode, type RpcError } from './error-mapping.js';
import { hasScope, type Scope, type ScopeTables, scopeFor } from './scopes.js';
import { closest, didYouMean } from './suggest.js';

/** Revisions negotiated through `initialize`. */
export const INITIALIZE_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'] as const;
/** Revisions that carry their version in each request's `_meta` envelope instead. */
export const ENVELOPE_VERSIONS = ['2026-07-28'] as const;
export const SUPPORTED_VERSIONS: readonly string[] = [...INITIALIZE_VERSIONS, ...ENVELOPE_VERSIONS];

/** Deepest nesting a message may have: deeper ones are refused before anything recurses over them. */
export const MAX_MESSAGE_DEPTH = 64;

/**
 * Requests that only wait for other work to end (a task's result): when input ends nobody is left to
 * read their answer, so they are dropped instead of keeping the process alive (the work itself is durable).
 */
const WAITS_ONLY = new Set(['tasks/result']);

const NO_ALIASES: ReadonlyMap<string, string> = new Map();

/** A client's name in an error's details: quoted, and cut short (it may be megabytes long). */
function quoted(name: string): string {
  return name.length > ECHOED_NAME_CHARS
    ? `"${name.slice(0, ECHOED_NAME_CHARS)}…" (${name.length} characters)`
    : `"${name}"`;
}

/** Requests that are served before (or without) `initialize`. */
const PRE_INIT_METHODS = new Set(['initialize', 'ping', 'server/discover', 'shutdown']);

type Id = string | number;
type Json = Record<string, unknown>;

/**
 * What carries messages for one connection: stdio framing, or an HTTP transport. It hands over every
 * value it read (parsed JSON, not yet checked) and writes what the rules send.
 */
export interface MessageChannel {
  start(): Promise<void>;
  close(): Promise<void>;
  send(message: Json, options?: TransportSendOptions): Promise<void>;
  onmessage?: (message: unknown, extra?: MessageExtraInfo) => void;
  /** A frame that could not be read at all (invalid JSON, over the size limit): answered in arrival order. */
  onunreadable?: ((error: RpcError) => void) | undefined;
  /** No more input will come (stdin ended). */
  onend?: () => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly sessionId?: string | undefined;
}

/** What a request handled by the rules themselves (a direct tool call) is given. */
export interface DirectCall {
  /** The request's id, for requests the server sends the client about it (confirmation). */
  id: Id;
  /** The request's `_meta` (the 2026-07-28 envelope), kept apart from the tool's arguments. */
  meta?: Json | undefined;
  signal: AbortSignal;
  /** What the transport knows of the request (the authenticated identity over HTTP). */
  extra?: MessageExtraInfo | undefined;
  /** Lets later requests be served while this one waits on the network (ordering resumes with them). */
  detach: () => void;
}

export type DirectHandler = (
  method: string,
  params: unknown,
  call: DirectCall,
) => Promise<{ result: unknown } | { error: RpcError }>;

export interface RulesOptions {
  channel: MessageChannel;
  /** Tool names callable as plain JSON-RPC methods (seed 001 style). */
  directMethods: ReadonlySet<string>;
  /** Tool names tools/call may name (default: the direct methods); others are answered as unknown. */
  tools?: ReadonlySet<string> | undefined;
  /**
   * Alternative tool names (e.g. `workflow.start`) accepted on tools/call and as direct methods. A Map:
   * it is looked up with the client's text (`constructor` is no alias).
   */
  aliases?: ReadonlyMap<string, string>;
  direct: DirectHandler;
  /**
   * Seed 001 ordering: a request starts only after the previous one answered (or waits on the network),
   * and answers go out in that order. Stdio orders; HTTP requests are independent of each other.
   */
  ordered: boolean;
  /** Refuse calls before `initialize` (stdio; an HTTP transport enforces its own sessions). */
  requireInitialize: boolean;
  /**
   * The transport checked every message with `inspect` before handing it over (HTTP answers a
   * malformed one with a 400 of its own): only what depends on this connection (an id in use) is
   * checked again, so a message is classified once.
   */
  checked?: boolean;
  /** Called after `shutdown` was answered, or when input ended and every request was answered. */
  onExit?: (reason: 'shutdown' | 'eof') => void;
  /** Called once, right after the first successful `initialize` answer was written. */
  onInitialized?: () => void;
  /**
   * Requests already answered by someone else (the stdio prelude answers `initialize` while the server
   * loads, then replays it so the SDK learns the client): they are served, their answers not written.
   */
  answered?: ReadonlySet<Id>;
  /** The app's instruments (requests by method and tool); default: nothing recorded. */
  metrics?: Metrics;
  log?: Logger;
}

interface Pending {
  id: Id;
  method: string;
  /** This request holds the ordering queue (ordered mode) until it answers, is cancelled or detaches. */
  holding: boolean;
  cancelled: boolean;
  abort: AbortController;
  /** When it was read (for the latency histogram; 0n when no metrics are kept) and its span. */
  started: bigint;
  span: OpenSpan | undefined;
  /** The tool a tools/call or direct call names. */
  tool: string | undefined;
  /** Handed to the SDK or the direct handler (it was admitted): its answer tells whether the method exists. */
  served: boolean;
}

type Queued =
  | { kind: 'request'; msg: Json & { id: Id; method: string }; extra?: MessageExtraInfo | undefined }
  | { kind: 'notification'; msg: Json; extra?: MessageExtraInfo | undefined }
  /** An error answer decided while reading, kept in arrival order. */
  | { kind: 'reply'; msg: Json };

/**
 * The protocol rules every transport shares, between a message channel and the SDK: the seed 001
 * conformance rules (version checks, no calls before `initialize`, direct tool methods, dotted
 * aliases, `shutdown`, ordering) and the guarantees we add (every request with a usable id gets
 * exactly one answer, its id echoed as sent; anything the SDK would silently drop is answered with
 * the right JSON-RPC error first; SDK errors are normalized to the seed's codes).
 */
export class ProtocolRules implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  private readonly queue: Queued[] = [];
  private readonly pending = new Map<Id, Pending>();
  private holder: Pending | undefined;
  private initialized = false;
  private ended = false;
  private closed = false;

  private readonly metrics: Metrics;

  constructor(private readonly opts: RulesOptions) {
    this.metrics = opts.metrics ?? NO_METRICS;
    const { channel } = opts;
    channel.onmessage = (message, extra) => this.receive(message, extra);
    channel.onunreadable = (error) => this.enqueue({ kind: 'reply', msg: errorMessage(null, error) });
    channel.onend = () => {
      this.ended = true;
      for (const p of [...this.pending.values()]) {
        if (WAITS_ONLY.has(p.method)) {
          this.cancelled({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: p.id, reason: 'input ended' },
          });
        }
      }
      this.maybeExit();
    };
    channel.onclose = () => this.onclose?.();
    channel.onerror = (error) => this.onerror?.(error);
  }

  get sessionId(): string | undefined {
    return this.opts.channel.sessionId;
  }

  async start(): Promise<void> {
    await this.opts.channel.start();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) p.abort.abort(new Error('connection closed'));
    await this.opts.channel.close();
  }

  /** Whether a request is still unanswered (queued or being served). */
  get busy(): boolean {
    return this.pending.size > 0 || this.queue.length > 0;
  }

  /** Lets the queue move on while request `id` waits on the network; its answer comes when ready. */
  detach(id: Id): void {
    const p = this.pending.get(id);
    if (p?.holding) this.release(p);
  }

  /** Outbound messages from the SDK. A response settles its request exactly once. */
  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const msg = message as Json;
    const isResponse = !('method' in msg) && 'id' in msg;
    if (!isResponse) return this.write(msg, options);
    const p = this.pending.get(msg.id as Id);
    if (p === undefined) return; // cancelled and forgotten, or already answered
    if (p.cancelled) {
      this.settle(p);
      return;
    }
    const initializedNow = !msg.error && p.method === 'initialize' && !this.initialized;
    if (msg.error && typeof msg.error === 'object') {
      patchError(msg.error as RpcError, p.method);
      this.suggest(msg.error as RpcError, p.method);
    } else if (p.method === 'initialize') this.initialized = true;
    await this.answer(p, msg, options);
    if (initializedNow) this.opts.onInitialized?.();
  }

  // ------------------------------------------------------------------------------------------------

  private async write(msg: Json, options?: TransportSendOptions): Promise<void> {
    if (this.closed) return;
    await this.opts.channel.send(msg, options);
  }

  /** Writes a request's answer (or, if it cannot be serialized, an internal error) and settles it. */
  private async answer(p: Pending, msg: Json, options?: TransportSendOptions): Promise<void> {
    if (this.opts.answered?.has(p.id)) {
      this.settle(p);
      return;
    }
    this.measured(p, msg);
    // The write starts before the queue moves on, so answers leave in the order requests were taken.
    const written = this.write(msg, options);
    this.settle(p);
    try {
      await written;
    } catch (error) {
      this.opts.log?.error(`answer to ${p.method} (${String(p.id)}) could not be written: ${String(error)}`);
      await this.write(
        errorMessage(p.id, {
          code: RpcCode.InternalError,
          message: 'Internal error',
          data: { details: 'the answer could not be serialized' },
        }),
        options,
      ).catch(() => undefined);
    }
  }

  /** Counts the answered request and ends its span: failed when it is an error or an isError result. */
  private measured(p: Pending, msg: Json): void {
    const failure = answerFailure(msg);
    // Names the server does not serve are the client's text, as many as it makes up: one label value.
    const tool =
      p.tool === undefined || (this.opts.tools ?? this.opts.directMethods).has(p.tool)
        ? p.tool
        : UNKNOWN_NAME;
    this.metrics.request(
      this.serves(p, msg) ? p.method : UNKNOWN_NAME,
      tool,
      failure !== undefined,
      p.started,
    );
    p.span?.end(failure);
    p.span = undefined;
  }

  /**
   * Whether request `p`'s method is one this server serves: a tool's name, a method of the rules or
   * the SDK, or one the SDK was handed and did not answer "method not found" (tasks/*, extensions).
   */
  private serves(p: Pending, msg: Json): boolean {
    if (this.opts.directMethods.has(p.method) || PRE_INIT_METHODS.has(p.method)) return true;
    if (SDK_METHODS.includes(p.method)) return true;
    return p.served && (msg.error as { code?: unknown } | undefined)?.code !== RpcCode.MethodNotFound;
  }

  private settle(p: Pending): void {
    // Cancelled, or answered by someone else: its span ends here, unanswered.
    p.span?.end();
    p.span = undefined;
    if (this.pending.get(p.id) === p) this.pending.delete(p.id);
    if (p.holding) this.release(p);
  }

  private release(p: Pending): void {
    p.holding = false;
    if (this.holder === p) this.holder = undefined;
    this.pump();
  }

  private maybeExit(): void {
    if (this.ended && this.pending.size === 0 && this.queue.length === 0 && !this.closed) {
      this.opts.onExit?.('eof');
    }
  }

  /** Checks one inbound value; anything that is not a servable message is answered (or dropped) here. */
  private receive(value: unknown, extra?: MessageExtraInfo): void {
    const inUse = (id: Id) => this.inUse(id);
    const verdict = this.opts.checked ? routed(value as Json, inUse) : classify(value, inUse);
    switch (verdict.kind) {
      case 'reply':
        this.enqueue({ kind: 'reply', msg: errorMessage(verdict.id, verdict.error) });
        break;
      case 'response':
        this.onmessage?.(verdict.msg as JSONRPCMessage, extra);
        break;
      case 'notification':
        if (verdict.msg.method === 'notifications/cancelled') this.cancelled(verdict.msg, extra);
        else this.enqueue({ kind: 'notification', msg: verdict.msg, extra });
        break;
      case 'request':
        this.enqueue({ kind: 'request', msg: verdict.msg, extra });
        break;
      case 'drop':
        break;
    }
  }

  private inUse(id: Id): boolean {
    return this.pending.has(id) || this.queue.some((q) => q.kind === 'request' && q.msg.id === id);
  }

  private cancelled(msg: Json, extra?: MessageExtraInfo): void {
    const requestId = (msg.params as { requestId?: unknown } | undefined)?.requestId;
    const queued = this.queue.findIndex((q) => q.kind === 'request' && q.msg.id === requestId);
    if (queued !== -1) {
      // Not started: it is simply never processed (and never answered, as the spec says).
      this.queue.splice(queued, 1);
      this.maybeExit();
      return;
    }
    const p = this.pending.get(requestId as Id);
    if (p === undefined) return;
    p.cancelled = true;
    p.abort.abort(new Error('cancelled by the client'));
    this.onmessage?.(msg as JSONRPCMessage, extra);
    // Its answer, if one still comes, is dropped; the queue moves on now, once.
    this.settle(p);
    this.maybeExit();
  }

  private enqueue(item: Queued): void {
    this.queue.push(item);
    this.pump();
  }

  private pump(): void {
    while (!this.closed && (!this.opts.ordered || this.holder === undefined)) {
      const item = this.queue.shift();
      if (item === undefined) {
        this.maybeExit();
        return;
      }
      if (item.kind === 'notification') this.onmessage?.(item.msg as JSONRPCMessage, item.extra);
      else if (item.kind === 'reply') void this.write(item.msg).catch((e) => this.onerror?.(e as Error));
      else this.dispatch(item.msg, item.extra);
    }
  }

  private dispatch(msg: Json & { id: Id; method: string }, extra?: MessageExtraInfo): void {
    const { id } = msg;
    const aliases = this.opts.aliases ?? NO_ALIASES;
    const method = aliases.get(msg.method) ?? msg.method;
    const params = msg.params as Json | undefined;
    const toolAlias =
      method === 'tools/call' && typeof params?.name === 'string' ? aliases.get(params.name) : undefined;
    if (params !== undefined && toolAlias !== undefined) params.name = toolAlias;
    const p: Pending = {
      id,
      method,
      holding: this.opts.ordered,
      cancelled: false,
      abort: new AbortController(),
      started: this.metrics.start(),
      span: undefined,
      tool: method === 'tools/call' && typeof params?.name === 'string' ? params.name : undefined,
      served: false,
    };
    this.pending.set(id, p);
    if (p.holding) this.holder = p;
    if (method === 'shutdown') {
      void this.answer(p, { jsonrpc: '2.0', id, result: null }).then(() => this.opts.onExit?.('shutdown'));
      return;
    }
    const refusal = this.admission(method, params) ?? this.unknownTool(method, params);
    if (refusal !== undefined) {
      void this.answer(p, errorMessage(id, refusal));
      return;
    }

    if (this.opts.directMethods.has(method)) p.tool = method;
    // One request, one correlation id for its log lines and errors, and one span (a child of the
    // W3C trace context in its `_meta` or in the HTTP request's headers).
    inRequestScope(() => {
      const meta = params?._meta as Json | undefined;
      p.span = startRequestSpan(
        p.tool === undefined ? method : `${method === p.tool ? 'tools/call' : method} ${p.tool}`,
        {
          [ATTR.method]: method === p.tool ? 'tools/call' : method,
          [ATTR.tool]: p.tool,
          [ATTR.requestId]: String(id),
          [ATTR.session]: this.sessionId,
        },
        meta !== null && typeof meta === 'object' ? meta : undefined,
      );
      if (p.span === undefined) this.serve(msg, method, params, p, extra);
      else p.span.run(() => this.serve(msg, method, params, p, extra));
    });
  }

  /** Hands an admitted request to the direct handler (a tool as a method) or to the SDK. */
  private serve(
    msg: Json & { id: Id; method: string },
    method: string,
    params: Json | undefined,
    p: Pending,
    extra: MessageExtraInfo | undefined,
  ): void {
    const { id } = msg;
    p.served = true;
    if (this.opts.directMethods.has(method)) {
      // The envelope (`_meta`) is the protocol's, not the tool's arguments.
      const { _meta: meta, ...args } = params ?? {};
      const call: DirectCall = {
        id,
        meta: meta as Json | undefined,
        signal: p.abort.signal,
        extra,
        detach: () => this.detach(id),
      };
      const reply = (answer: Json) => {
        if (p.cancelled) this.settle(p);
        else void this.answer(p, answer);
      };
      this.opts.direct(method, args, call).then(
        (outcome) => reply({ jsonrpc: '2.0', id, ...outcome }),
        (error: unknown) => {
          this.opts.log?.error(`direct call ${method} failed: ${String(error)}`);
          reply(errorMessage(id, { code: RpcCode.InternalError, message: 'Internal error' }));
        },
      );
      return;
    }
    this.onmessage?.({ ...msg, method } as JSONRPCMessage, extra);
  }

  /** A tools/call naming no tool, answered with the closest names instead of the SDK's bare error. */
  private unknownTool(method: string, params: Json | undefined): RpcError | undefined {
    if (method !== 'tools/call' || typeof params?.name !== 'string') return undefined;
    if ((this.opts.tools ?? this.opts.directMethods).has(params.name)) return undefined;
    const hint = this.canonical(
      closest(params.name, [...this.opts.directMethods, ...(this.opts.aliases ?? NO_ALIASES).keys()]),
    );
    return invalidParams(`unknown tool ${quoted(params.name)}${didYouMean(params.name, hint)}`, hint);
  }

  /** Adds the nearest method names to a method-not-found error. */
  private suggest(error: RpcError, method: string): void {
    if (error.code !== RpcCode.MethodNotFound) return;
    const names = [...this.opts.directMethods, ...(this.opts.aliases ?? NO_ALIASES).keys(), ...SDK_METHODS];
    // A method this era does not serve (`ping` in 2026-07-28) is not its own suggestion.
    const hint = this.canonical(closest(method, names)).filter((n) => n !== method);
    if (hint.length === 0) return;
    error.data = {
      ...(error.data ?? {}),
      details: `unknown method ${quoted(method)}${didYouMean(method, hint)}`,
      did_you_mean: hint,
    };
  }

  /** Names as their canonical tools, once each (an alias and its tool are one suggestion). */
  private canonical(names: string[]): string[] {
    const aliases = this.opts.aliases ?? NO_ALIASES;
    return [...new Set(names.map((n) => aliases.get(n) ?? n))];
  }

  /** Why a request may not be served now (version, initialization), or undefined when it may. */
  private admission(method: string, params: Json | undefined): RpcError | undefined {
    const envelopeVersion = envelopeClaim(params);
    // A request in the 2026-07-28 envelope is that revision's: there `initialize` no longer exists, and
    // the SDK answers it (method not found) as it answers every other removed method.
    if (envelopeVersion !== undefined) {
      return SUPPORTED_VERSIONS.includes(envelopeVersion) ? undefined : versionError(envelopeVersion);
    }
    if (method === 'initialize') {
      const requested = params?.protocolVersion;
      if (typeof requested !== 'string' || requested === '')
        return invalidParams('protocolVersion is required');
      if (!SUPPORTED_VERSIONS.includes(requested)) return versionError(requested);
      const capabilities = params?.capabilities;
      if (capabilities === null || typeof capabilities !== 'object')
        return invalidParams('capabilities is required');
      // Seed 001 makes clientInfo optional; the SDK requires it.
      if (params?.clientInfo === undefined && params !== undefined) {
        params.clientInfo = { name: 'unknown-client', version: '0.0.0' };
      }
      return undefined;
    }
    if (this.opts.requireInitialize && !this.initialized && !PRE_INIT_METHODS.has(method)) {
      return {
        code: RpcCode.InvalidRequest,
        message: 'Server not initialized',
        data: { details: `send initialize before ${method}`, method },
      };
    }
    return undefined;
  }
}

function errorMessage(id: Id | null, error: RpcError): Json {
  return { jsonrpc: '2.0', id, error };
}

export type Verdict =
  | { kind: 'reply'; id: Id | null; error: RpcError }
  | { kind: 'response'; msg: Json }
  | { kind: 'notification'; msg: Json & { method: string } }
  | { kind: 'request'; msg: Json & { id: Id; method: string } }
  | { kind: 'drop' };

/**
 * What to do with one inbound value. Whatever the SDK would drop without a word (an id it cannot
 * use, params that are not an object, a malformed `_meta`, stray keys) is answered here instead.
 */
export function classify(value: unknown, inUse: (id: Id) => boolean = () => false): Verdict {
  const invalid = (id: Id | null, details: string): Verdict => ({
    kind: 'reply',
    id,
    error: { code: RpcCode.InvalidRequest, message: 'Invalid Request', data: { details } },
  });
  if (Array.isArray(value)) return invalid(null, 'batch requests are not supported');
  if (value === null || typeof value !== 'object') return invalid(null, 'a request must be a JSON object');
  const msg = value as Json;
  const rawId = msg.id;
  const echo: Id | null = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
  const usableId = typeof rawId === 'string' || Number.isSafeInteger(rawId);
  const isRequest = 'id' in msg;
  if (depthExceeds(msg, MAX_MESSAGE_DEPTH)) {
    if (!isRequest) return { kind: 'drop' };
    return {
      kind: 'reply',
      id: echo,
      error: invalidParams(`the message is nested deeper than ${MAX_MESSAGE_DEPTH} levels`),
    };
  }
  if (msg.jsonrpc !== '2.0') return invalid(echo, 'jsonrpc must be "2.0"');
  if (!('method' in msg)) {
    // The client answering one of our requests (elicitation, sampling).
    if (usableId && isJSONRPCResponse(msg)) return { kind: 'response', msg };
    return invalid(echo, 'method is required');
  }
  if (typeof msg.method !== 'string' || msg.method === '') {
    return invalid(echo, 'method must be a non-empty string');
  }
  if (isRequest && !usableId) {
    return invalid(echo, 'id must be a string or an integer between -(2^53-1) and 2^53-1');
  }
  if ('result' in msg || 'error' in msg) {
    return isRequest ? invalid(echo, 'a request must not carry "result" or "error"') : { kind: 'drop' };
  }
  if (msg.params === null) delete msg.params; // seed 001 sends `"params": null` for tools without arguments
  const paramsProblem = checkParams(msg.params);
  if (paramsProblem !== undefined) {
    return isRequest ? { kind: 'reply', id: echo, error: invalidParams(paramsProblem) } : { kind: 'drop' };
  }
  if (!isRequest) {
    return isJSONRPCNotification(msg)
      ? { kind: 'notification', msg: msg as Json & { method: string } }
      : { kind: 'drop' };
  }
  if (!isJSONRPCRequest(msg)) return invalid(echo, 'not a valid JSON-RPC request');
  if (inUse(rawId as Id)) return idInUse(rawId as Id);
  return { kind: 'request', msg: msg as Json & { id: Id; method: string } };
}

/** Where a message `classify` passed already goes; only the id-in-use check depends on the connection. */
function routed(msg: Json, inUse: (id: Id) => boolean): Verdict {
  if (!('method' in msg)) return { kind: 'response', msg };
  if (!('id' in msg)) return { kind: 'notification', msg: msg as Json & { method: string } };
  const id = msg.id as Id;
  if (inUse(id)) return idInUse(id);
  return { kind: 'request', msg: msg as Json & { id: Id; method: string } };
}

const idInUse = (id: Id): Verdict => ({
  kind: 'reply',
  id,
  error: {
    code: RpcCode.InvalidRequest,
    message: 'Invalid Request',
    data: { details: `id ${JSON.stringify(id)} is already in use by a request that is not answered yet` },
  },
});

/** What a transport that checks bodies itself (HTTP) does with one: answer it, drop it, or pass it on. */
export type Inspection =
  | { kind: 'reply'; id: Id | null; error: RpcError }
  | { kind: 'drop' }
  /** The caller's scopes do not cover the call: `needed` is the scope it takes. */
  | { kind: 'forbidden'; needed: Scope }
  | { kind: 'pass' };

/**
 * The checks every message of a body passes before an HTTP transport hands it to the SDK (and, with
 * `checked`, to the rules): the same classification stdio makes, so a malformed message gets the
 * same JSON-RPC error on both (`"params": null` becomes absent here too), then the scope its call
 * needs, when the caller was authenticated with `granted` scopes.
 */
export function inspect(
  body: unknown,
  granted: readonly string[] | undefined,
  tables: ScopeTables,
): Inspection {
  const verdict = classify(body);
  if (verdict.kind === 'reply') return verdict;
  if (verdict.kind === 'drop') return verdict;
  if (granted === undefined) return { kind: 'pass' };
  const needed = scopeFor(body, tables);
  return hasScope(granted, needed) ? { kind: 'pass' } : { kind: 'forbidden', needed };
}

function invalidParams(details: string, didYouMean?: string[]): RpcError {
  return {
    code: RpcCode.InvalidParams,
    message: 'Invalid params',
    data: { details, ...(didYouMean && didYouMean.length > 0 ? { did_you_mean: didYouMean } : {}) },
  };
}

/** Methods the SDK serves, for suggestions. */
const SDK_METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'server/discover',
];

/** Why params cannot be served (MCP params are an object; `_meta` an object with a valid progressToken). */
function checkParams(params: unknown): string | undefined {
  if (params === undefined) return undefined;
  if (params === null || typeof params !== 'object' || Array.isArray(params))
    return 'params must be an object';
  if (!('_meta' in params)) return undefined;
  const meta = (params as Json)._meta;
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return '_meta must be an object';
  if ('progressToken' in meta) {
    const token = (meta as Json).progressToken;
    if (typeof token !== 'string' && !Number.isSafeInteger(token)) {
      return '_meta.progressToken must be a string or an integer';
    }
  }
  return undefined;
}

/** Whether a value nests deeper than `limit` (iterative: a hostile depth cannot overflow the stack here). */
export function depthExceeds(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

function envelopeClaim(params: Json | undefined): string | undefined {
  const meta = params?._meta;
  if (meta === null || typeof meta !== 'object') return undefined;
  const version = (meta as Json)[PROTOCOL_VERSION_META_KEY];
  return typeof version === 'string' ? version : undefined;
}

/** SDK errors in the seed's shape: method names, version data, details on -32602, schema failures as -32602. */
export function patchError(error: RpcError, method: string): void {
  if (error.code === ProtocolErrorCode.MethodNotFound) {
    // Seed 001's wording, unless the error explains itself (e.g. a task-only tool called without a task).
    if (error.data === undefined) error.message = 'Method not found';
    error.data = { ...(error.data ?? {}), method };
  } else if (error.code === ProtocolErrorCode.UnsupportedProtocolVersion) {
    const data = (error.data ?? {}) as { requested?: unknown };
    Object.assign(error, versionError(data.requested));
  } else if (error.code === ProtocolErrorCode.InvalidParams && error.data === undefined) {
    error.data = { details: error.message };
  } else if (error.code === ProtocolErrorCode.InternalError) {
    // The SDK reports request-schema failures as -32603 with the zod issues as the message.
    const details = zodIssuesText(error.message);
    if (details !== undefined) Object.assign(error, invalidParams(details));
  }
}

function zodIssuesText(message: string): string | undefined {
  if (!message.trimStart().startsWith('[')) return undefined;
  try {
    const issues = JSON.parse(message) as { path?: unknown[]; message?: string }[];
    if (!Array.isArray(issues)) return undefined;
    return issues.map((i) => `${(i.path ?? []).join('.')}: ${i.message ?? 'invalid'}`).join('; ');
  } catch {
    return undefined;
  }
}

export function versionError(requested: unknown): RpcError {
  return {
    code: RpcCode.ServerError,
    message: 'Unsupported protocol version',
    data: { supportedVersions: [...SUPPORTED_VERSIONS], requestedVersion: requested ?? null },
  };
}
