import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { RpcCode, type RpcError } from './error-mapping.js';

/** Revisions negotiated through `initialize`. */
export const INITIALIZE_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'] as const;
/** Revisions that carry their version in each request's `_meta` envelope instead. */
export const ENVELOPE_VERSIONS = ['2026-07-28'] as const;
export const SUPPORTED_VERSIONS: readonly string[] = [...INITIALIZE_VERSIONS, ...ENVELOPE_VERSIONS];
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Requests that are served before (or without) `initialize`. */
const PRE_INIT_METHODS = new Set(['initialize', 'ping', 'server/discover', 'shutdown']);

type Id = string | number;
type Json = Record<string, unknown>;

export type DirectHandler = (
  method: string,
  params: unknown,
) => Promise<{ result: unknown } | { error: RpcError }>;

export interface StdioWireOptions {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  /** Tool names callable as plain JSON-RPC methods (seed 001 style). */
  directMethods: ReadonlySet<string>;
  /** Alternative tool names (e.g. `workflow.start`) accepted on tools/call and as direct methods. */
  aliases?: Readonly<Record<string, string>>;
  direct: DirectHandler;
  /** Called after `shutdown` was answered, or when stdin ended and every request was answered. */
  onExit: (reason: 'shutdown' | 'eof') => void;
  /** Called once, right after the first successful `initialize` answer was written. */
  onInitialized?: () => void;
  maxMessageBytes?: number;
  log?: (line: string) => void;
}

type Queued =
  | { kind: 'request'; msg: Json & { id: Id; method: string } }
  | { kind: 'notification'; msg: Json }
  /** An error answer decided while reading (parse error, invalid request), kept in arrival order. */
  | { kind: 'reply'; msg: Json };

/**
 * The stdio transport plus the seed 001 conformance layer in front of the SDK: one JSON message per
 * line, parse errors answered with `id: null`, version checks on `initialize`, no tool calls before
 * initialization, tools callable as direct methods, `shutdown`, and requests answered strictly in
 * the order received (the next request is released only once the previous one is answered).
 */
export class StdioWire implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private chunks: Buffer[] = [];
  private buffered = 0;
  private discarding = false;
  private readonly queue: Queued[] = [];
  private inflight: { id: Id; method: string } | undefined;
  private initialized = false;
  private ended = false;
  private closed = false;
  private readonly maxBytes: number;

  constructor(private readonly opts: StdioWireOptions) {
    this.maxBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  async start(): Promise<void> {
    this.opts.stdin.on('data', this.onData);
    this.opts.stdin.on('end', this.onEnd);
    this.opts.stdin.on('error', (error: Error) => this.onerror?.(error));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.opts.stdin.off('data', this.onData);
    this.opts.stdin.off('end', this.onEnd);
    this.onclose?.();
  }

  /** Outbound messages from the SDK. Responses to the request in flight release the next one. */
  async send(message: JSONRPCMessage): Promise<void> {
    const msg = message as Json;
    const isResponse = !('method' in msg) && 'id' in msg;
    if (isResponse && this.inflight !== undefined && msg.id === this.inflight.id) {
      const { method } = this.inflight;
      const initializedNow = !msg.error && method === 'initialize' && !this.initialized;
      if (msg.error && typeof msg.error === 'object') this.patchError(msg.error as RpcError, method);
      else if (method === 'initialize') this.initialized = true;
      this.write(msg);
      if (initializedNow) this.opts.onInitialized?.();
      this.release();
      return;
    }
    this.write(msg);
  }

  private patchError(error: RpcError, method: string): void {
    if (error.code === RpcCode.MethodNotFound) {
      error.message = 'Method not found';
      error.data = { ...(error.data ?? {}), method };
    } else if (error.code === -32022 /* SDK's UnsupportedProtocolVersion */) {
      const data = (error.data ?? {}) as { requested?: unknown };
      Object.assign(error, versionError(data.requested));
    } else if (error.code === RpcCode.InvalidParams && error.data === undefined) {
      error.data = { details: error.message };
    } else if (error.code === RpcCode.InternalError) {
      // The SDK reports request-schema failures as -32603 with the zod issues as the message.
      const details = zodIssuesText(error.message);
      if (details !== undefined)
        Object.assign(error, { code: RpcCode.InvalidParams, message: 'Invalid params', data: { details } });
    }
  }

  private write(msg: Json): void {
    if (this.closed) return;
    this.opts.stdout.write(`${JSON.stringify(msg)}\n`);
  }

  private writeError(id: Id | null, error: RpcError): void {
    this.write({ jsonrpc: '2.0', id, error });
  }

  /** Answers in arrival order: after every request read before this line. */
  private replyInOrder(id: Id | null, error: RpcError): void {
    this.enqueue({ kind: 'reply', msg: { jsonrpc: '2.0', id, error } });
  }

  private readonly onEnd = () => {
    this.ended = true;
    this.maybeExit();
  };

  private maybeExit(): void {
    if (this.ended && this.inflight === undefined && this.queue.length === 0 && !this.closed) {
      this.opts.onExit('eof');
    }
  }

  private readonly onData = (chunk: Buffer | string) => {
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10)) {
      const head = data.subarray(0, nl);
      data = data.subarray(nl + 1);
      if (this.discarding) {
        this.discarding = false;
        this.chunks = [];
        this.buffered = 0;
        this.tooLarge();
        continue;
      }
      const line = this.chunks.length > 0 ? Buffer.concat([...this.chunks, head]) : head;
      this.chunks = [];
      this.buffered = 0;
      if (line.length > this.maxBytes) this.tooLarge();
      else this.onLine(line.toString('utf8'));
    }
    if (data.length === 0 || this.discarding) return;
    this.buffered += data.length;
    if (this.buffered > this.maxBytes) {
      // Drop what we hold; the rest of this line is skipped up to its newline.
      this.discarding = true;
      this.chunks = [];
      this.buffered = 0;
      return;
    }
    this.chunks.push(Buffer.from(data));
  };

  private tooLarge(): void {
    this.replyInOrder(null, {
      code: RpcCode.InvalidRequest,
      message: 'Invalid Request',
      data: { details: `message exceeds the ${this.maxBytes}-byte limit and was discarded` },
    });
  }

  private onLine(raw: string): void {
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.trim() === '') return;
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (error) {
      this.replyInOrder(null, {
        code: RpcCode.ParseError,
        message: 'Parse error',
        data: { details: (error as Error).message },
      });
      return;
    }
    const invalid = (id: Id | null, details: string) =>
      this.replyInOrder(id, { code: RpcCode.InvalidRequest, message: 'Invalid Request', data: { details } });
    if (Array.isArray(msg)) {
      invalid(null, 'batch requests are not supported');
      return;
    }
    if (msg === null || typeof msg !== 'object') {
      invalid(null, 'a request must be a JSON object');
      return;
    }
    const obj = msg as Json;
    const id = obj.id;
    const validId = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
    if (obj.jsonrpc !== '2.0') {
      invalid(validId ? (id as Id) : null, 'jsonrpc must be "2.0"');
      return;
    }
    if (!('method' in obj)) {
      if (validId && ('result' in obj || 'error' in obj)) {
        this.onmessage?.(obj as JSONRPCMessage); // the client answering one of our requests
        return;
      }
      invalid(validId ? (id as Id) : null, 'method is required');
      return;
    }
    if (typeof obj.method !== 'string' || obj.method === '') {
      invalid(validId ? (id as Id) : null, 'method must be a non-empty string');
      return;
    }
    if ('params' in obj && obj.params !== null && typeof obj.params !== 'object') {
      if (!('id' in obj)) return;
      invalid(validId ? (id as Id) : null, 'params must be an object or array');
      return;
    }
    if (!('id' in obj)) {
      if (obj.method === 'notifications/cancelled') this.onCancelled(obj);
      else this.enqueue({ kind: 'notification', msg: obj });
      return;
    }
    if (!validId) {
      invalid(null, 'id must be a string or a number');
      return;
    }
    this.enqueue({ kind: 'request', msg: obj as Json & { id: Id; method: string } });
  }

  private onCancelled(obj: Json): void {
    this.onmessage?.(obj as JSONRPCMessage);
    const requestId = (obj.params as { requestId?: unknown } | undefined)?.requestId;
    // The SDK does not answer a cancelled request, so it must not hold the queue.
    if (this.inflight !== undefined && requestId === this.inflight.id) this.release();
    else {
      const i = this.queue.findIndex((q) => q.kind === 'request' && q.msg.id === requestId);
      if (i !== -1) this.queue.splice(i, 1);
    }
  }

  private enqueue(item: Queued): void {
    this.queue.push(item);
    if (this.inflight === undefined) this.pump();
  }

  private release(): void {
    this.inflight = undefined;
    this.pump();
  }

  private pump(): void {
    while (this.inflight === undefined && !this.closed) {
      const item = this.queue.shift();
      if (item === undefined) {
        this.maybeExit();
        return;
      }
      if (item.kind === 'notification') {
        this.onmessage?.(item.msg as JSONRPCMessage);
        continue;
      }
      if (item.kind === 'reply') {
        this.write(item.msg);
        continue;
      }
      this.dispatch(item.msg);
    }
  }

  private dispatch(msg: Json & { id: Id; method: string }): void {
    const { id } = msg;
    const aliases = this.opts.aliases ?? {};
    const method = aliases[msg.method] ?? msg.method;
    const params = msg.params as Json | undefined;
    if (method === 'tools/call' && typeof params?.name === 'string' && aliases[params.name] !== undefined) {
      params.name = aliases[params.name];
    }
    const envelopeVersion = envelopeClaim(params);

    if (method === 'shutdown') {
      this.write({ jsonrpc: '2.0', id, result: null });
      this.opts.onExit('shutdown');
      return;
    }
    if (method === 'initialize') {
      const requested = params?.protocolVersion;
      if (typeof requested !== 'string' || requested === '') {
        this.writeError(id, {
          code: RpcCode.InvalidParams,
          message: 'Invalid params',
          data: { details: 'protocolVersion is required' },
        });
        return;
      }
      if (!SUPPORTED_VERSIONS.includes(requested)) {
        this.writeError(id, versionError(requested));
        return;
      }
      if (params?.capabilities === null || typeof params?.capabilities !== 'object') {
        this.writeError(id, {
          code: RpcCode.InvalidParams,
          message: 'Invalid params',
          data: { details: 'capabilities is required' },
        });
        return;
      }
      // Seed 001 makes clientInfo optional; the SDK requires it.
      if (params.clientInfo === undefined) params.clientInfo = { name: 'unknown-client', version: '0.0.0' };
    } else if (envelopeVersion !== undefined) {
      if (!SUPPORTED_VERSIONS.includes(envelopeVersion)) {
        this.writeError(id, versionError(envelopeVersion));
        return;
      }
    } else if (!this.initialized && !PRE_INIT_METHODS.has(method)) {
      this.writeError(id, {
        code: RpcCode.InvalidRequest,
        message: 'Server not initialized',
        data: { details: `send initialize before ${method}`, method },
      });
      return;
    }

    if (this.opts.directMethods.has(method)) {
      this.inflight = { id, method };
      this.opts.direct(method, params ?? {}).then(
        (outcome) => {
          this.write({ jsonrpc: '2.0', id, ...outcome });
          this.release();
        },
        (error: unknown) => {
          this.opts.log?.(`direct call ${method} failed: ${String(error)}`);
          this.writeError(id, { code: RpcCode.InternalError, message: 'Internal error' });
          this.release();
        },
      );
      return;
    }
    this.inflight = { id, method };
    this.onmessage?.(msg as JSONRPCMessage);
  }
}

function envelopeClaim(params: Json | undefined): string | undefined {
  const meta = params?._meta;
  if (meta === null || typeof meta !== 'object') return undefined;
  const version = (meta as Json)[PROTOCOL_VERSION_META_KEY];
  return typeof version === 'string' ? version : undefined;
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

function versionError(requested: unknown): RpcError {
  return {
    code: RpcCode.ServerError,
    message: 'Unsupported protocol version',
    data: { supportedVersions: [...SUPPORTED_VERSIONS], requestedVersion: requested ?? null },
  };
}
