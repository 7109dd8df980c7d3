import type { McpServer } from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import { LOCAL_PRINCIPAL } from '../executions/execution-model.js';
import type { ToolDefinition } from '../faces/tool.js';
import { toolAliases } from '../protocol/aliases.js';
import { directCalls } from '../protocol/mcp-server.js';
import { principalOf } from '../protocol/principal.js';
import { type MessageChannel, ProtocolRules } from '../protocol/rules.js';
import type { ToolSwitch } from '../protocol/tool-switch.js';

/** What the protocol layer knows of an app's tools, worked out once per app (not per connection). */
export interface ProtocolFacts {
  /** Tools by canonical name, callable as plain JSON-RPC methods (seed 001 style). */
  tools: ReadonlyMap<string, ToolDefinition>;
  /** Their names, for the rules. */
  directMethods: ReadonlySet<string>;
  /** Alias → canonical tool (the dotted names of seeds 003/004), from the definitions. */
  aliases: ReadonlyMap<string, string>;
}

const known = new WeakMap<App, ProtocolFacts>();

export function protocolFacts(app: App): ProtocolFacts {
  let facts = known.get(app);
  if (facts === undefined) {
    const tools = new Map(app.runner.tools.map((t) => [t.name, t]));
    facts = { tools, directMethods: new Set(tools.keys()), aliases: toolAliases(app.runner.tools) };
    known.set(app, facts);
  }
  return facts;
}

export interface ConnectOptions {
  /**
   * `stream`: one client on a stream of messages (stdio, the in-memory tests): requests are served in
   * order, nothing before `initialize`, calls are the local user's. `http`: every request stands
   * alone, the HTTP transport keeps the sessions, authenticates the caller and checked each message
   * (`inspect`) before it arrives here.
   */
  kind: 'stream' | 'http';
  /** The connection's tool groups (default: a new switch, listed as configured). */
  tools?: ToolSwitch;
  /** The server to connect (HTTP keeps them between stateless requests); default: built on first use. */
  server?: McpServer;
  /** Who calls when the transport authenticates nobody (default: the local user). */
  principal?: string;
  /** Requests already answered by the stdio prelude (see RulesOptions.answered). */
  answered?: ReadonlySet<string | number>;
  /** `shutdown`, or the end of input once every request was answered (stream only). */
  onExit?: (reason: 'shutdown' | 'eof') => void;
  /** After the first successful `initialize` answer. */
  onInitialized?: () => void;
}

/** One client's connection: the rules (the SDK server's transport) and the server they serve. */
export interface ProtocolConnection {
  rules: ProtocolRules;
  tools: ToolSwitch;
  /**
   * The connection's SDK server, for `era` when known: the one given, else a new one at each call (the
   * SDK's stdio entry may discard a probe instance and ask again); direct calls use the latest.
   */
  server(era?: 'legacy' | 'modern'): McpServer;
}

/**
 * The one wiring of a connection, for stdio, both HTTP eras and the tests: the protocol rules around
 * `channel`, with the app's tools, aliases and direct tool methods, and the SDK server behind them.
 * Connect them with `connection.server().connect(connection.rules)` (or hand both to the SDK's stdio
 * entry, which builds the server once it knows the era).
 */
export function connectProtocol(
  app: App,
  channel: MessageChannel,
  options: ConnectOptions,
): ProtocolConnection {
  const facts = protocolFacts(app);
  const tools = options.tools ?? app.toolSwitch();
  const stream = options.kind === 'stream';
  const principal = options.principal ?? LOCAL_PRINCIPAL;
  let server = options.server;
  const rules: ProtocolRules = new ProtocolRules({
    channel,
    metrics: app.metrics,
    directMethods: facts.directMethods,
    tools: app.toolNames,
    aliases: facts.aliases,
    direct: directCalls({
      runner: app.runner,
      tools,
      server: () => server,
      caller: (call) =>
        stream
          ? { principal, signal: call.signal, onNetworkWait: call.detach }
          : { principal: principalOf(call.extra?.authInfo, principal), signal: call.signal },
      // Whether an approval is asked of the client's user (docs/approvals-and-checks.md: on by default
      // over stdio, where the user is at the keyboard; off over HTTP).
      approvalElicitation: stream
        ? app.config.approvalElicitation.stdio
        : app.config.approvalElicitation.http,
    }),
    ordered: stream,
    requireInitialize: stream,
    checked: !stream,
    ...(options.answered ? { answered: options.answered } : {}),
    ...(options.onExit ? { onExit: options.onExit } : {}),
    ...(options.onInitialized ? { onInitialized: options.onInitialized } : {}),
    log: app.log,
  });
  return {
    rules,
    tools,
    server(era) {
      if (options.server !== undefined) return options.server;
      server = app.serverFactory({
        tools,
        principal,
        transport: stream ? 'stdio' : 'http',
        ...(era ? { era } : {}),
        // On a stream, a request waiting on the network lets the ones behind it be served.
        ...(stream ? { detach: (id: string | number) => rules.detach(id) } : {}),
      });
      return server;
    },
  };
}
