/**
 * SDK servers kept between the stateless (2026-07-28) requests of one principal. Building a server
 * registers every tool, resource and prompt, so a request takes an idle server of its principal or
 * builds one, and the end of its exchange (the SDK closes the server with it) gives it back. The pool
 * itself knows nothing of the SDK: `sdkServers(app)` builds what it keeps.
 */
import type { McpServer, Transport } from '@modelcontextprotocol/server';
import type { App } from '../../app.js';
import type { ProtocolRules } from '../../protocol/rules.js';
import { forgetClient } from '../../protocol/sdk-internals.js';
import type { ToolSwitch } from '../../protocol/tool-switch.js';
import { channelOf } from '../../protocol/transport-channel.js';
import { connectProtocol } from '../connect.js';

/**
 * Idle stateless servers kept, over every principal: about 80 KB each (measured), so 8 MB at most; as
 * many clients of one principal as that run at once without building one.
 */
export const IDLE_SERVERS = 100;

/** What the pool keeps: a server built for one principal. */
export interface Poolable {
  readonly principal: string;
  /**
   * Ends the exchange it served. False when a request still runs on it (its client went away): it
   * could still send on it, so it is not given to another request.
   */
  endExchange(): boolean;
  /** Forgets what its last request left behind, before it serves the next. */
  reset(): void;
}

/** Builds a server for `principal`; the server calls `giveBack` when its exchange ends. */
export type BuildPooled<S extends Poolable> = (principal: string, giveBack: (server: S) => void) => S;

export class ServerPool<S extends Poolable> {
  /** Idle servers by principal; the principal that waited longest first. */
  private readonly idle = new Map<string, S[]>();
  private count = 0;
  private stopped = false;

  constructor(
    private readonly build: BuildPooled<S>,
    private readonly capacity = IDLE_SERVERS,
  ) {}

  /** An idle server of `principal`, or a new one; either way reset for a new request. */
  acquire(principal: string): S {
    const list = this.idle.get(principal);
    const kept = list?.pop();
    if (kept !== undefined) this.count--;
    // Only principals with idle servers are kept: the one to give one up always has one.
    if (list?.length === 0) this.idle.delete(principal);
    const server = kept ?? this.build(principal, (s) => this.release(s));
    // What one request listed or told the server about its client must not carry over to the next.
    server.reset();
    return server;
  }

  /** Takes a server back at the end of its exchange (unless the pool stopped or it is still busy). */
  release(server: S): void {
    if (this.stopped || !server.endExchange()) return;
    if (this.capacity <= 0) return;
    if (this.count >= this.capacity) {
      // Full: the principal that waited longest gives one up.
      const [oldest, servers] = this.idle.entries().next().value as [string, S[]];
      servers.pop();
      this.count--;
      if (servers.length === 0) this.idle.delete(oldest);
    }
    const list = this.idle.get(server.principal) ?? [];
    // The most recent principal last: the first to give one up is the one idle the longest.
    this.idle.delete(server.principal);
    this.idle.set(server.principal, list);
    list.push(server);
    this.count++;
  }

  /** From now on servers are not taken back (the transport is closing). */
  stop(): void {
    this.stopped = true;
  }

  /** Drops every idle server. */
  clear(): void {
    this.idle.clear();
    this.count = 0;
  }

  /** Idle servers kept, over every principal, or of one. */
  idleCount(principal?: string): number {
    return principal === undefined ? this.count : (this.idle.get(principal)?.length ?? 0);
  }
}

/** A pooled SDK server with the tool groups it lists. */
export interface PooledServer extends Poolable {
  server: McpServer;
  tools: ToolSwitch;
}

/**
 * Builds the app's stateless servers for the pool: each connection passes through the protocol rules,
 * whose `busy` says whether a request still runs when the exchange ends.
 */
export function sdkServers(app: App): BuildPooled<PooledServer> {
  return (principal, giveBack) => {
    const tools = app.toolSwitch();
    const server = app.serverFactory({ principal, era: 'modern', tools, transport: 'http' });
    /** The rules of the exchange it serves now. */
    let rules: ProtocolRules | undefined;
    const pooled: PooledServer = {
      server,
      tools,
      principal,
      endExchange() {
        if (rules?.busy) return false;
        rules = undefined;
        return true;
      },
      reset() {
        tools.reset();
        // The SDK seeds the client's identity from each request's envelope, but leaves what one omits.
        forgetClient(server.server);
      },
    };
    const connect = server.connect.bind(server);
    server.connect = (transport: Transport) => {
      const connection = connectProtocol(app, channelOf(transport), {
        kind: 'http',
        server,
        tools,
        principal,
      });
      rules = connection.rules;
      return connect(connection.rules);
    };
    // After its first exchange the app no longer counts the server among its connected ones (for
    // list-changed notifications): nothing is lost, the SDK's per-request transport drops notifications
    // that belong to no request, and 2026-07-28 listeners hear of changes through the handler's notify.
    const previous = server.server.onclose;
    server.server.onclose = () => {
      previous?.();
      giveBack(pooled);
    };
    return pooled;
  };
}
