import type { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { App } from '../app.js';
import { localCaller } from '../executions/execution-model.js';
import { toolAliases as aliasesOf } from '../protocol/aliases.js';
import { directCalls } from '../protocol/mcp-server.js';
import { ProtocolRules } from '../protocol/rules.js';
import { StdioFraming } from './stdio-framing.js';
import type { PreludeHandoff } from './stdio-prelude.js';

/** Dotted tool names (seeds 003/004) and other aliases, from the tool definitions. */
export function toolAliases(app: App): ReadonlyMap<string, string> {
  return aliasesOf(app.runner.tools);
}

/**
 * Serves the app on a pair of streams (stdin/stdout by default) until `shutdown`, end of input or
 * `stop()`. Resolves `done` when the connection ended and the app was closed; what happens to the
 * process is the caller's decision.
 */
export function serveAppOnStdio(
  app: App,
  options: {
    stdin?: NodeJS.ReadableStream;
    stdout?: NodeJS.WritableStream;
    /** Close the app when the connection ends (false when another transport still serves it). */
    closeApp?: boolean;
    /** What the stdio prelude read and answered while the server loaded. */
    prelude?: PreludeHandoff;
  } = {},
): { done: Promise<void>; stop: () => void } {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void rules
      .close()
      .then(() => (options.closeApp === false ? undefined : app.close()))
      .then(finish, (error: unknown) => {
        app.log(`shutdown: ${String(error)}`);
        finish();
      });
  };
  const tools = app.toolSwitch();
  let server: McpServer | undefined;
  const rules = new ProtocolRules({
    channel: new StdioFraming(stdin, stdout, app.config.maxMessageBytes, options.prelude),
    ...(options.prelude ? { answered: options.prelude.answered } : {}),
    directMethods: new Set(app.runner.tools.map((t) => t.name)),
    tools: app.toolNames,
    aliases: toolAliases(app),
    direct: directCalls({
      runner: app.runner,
      tools,
      server: () => server,
      caller: (call) => ({ ...localCaller(), signal: call.signal, onNetworkWait: call.detach }),
      approvalElicitation: app.config.approvalElicitation.stdio,
    }),
    ordered: true,
    requireInitialize: true,
    onExit: stop,
    onInitialized: () => setImmediate(app.warmUp),
    log: app.log,
  });
  serveStdio(
    (ctx) =>
      (server = app.serverFactory({
        detach: (id) => rules.detach(id),
        era: ctx.era,
        tools,
        transport: 'stdio',
      })),
    {
      transport: rules,
      onerror: (error) => app.log(`protocol: ${error.message}`),
    },
  );
  return { done, stop };
}
