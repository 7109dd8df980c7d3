import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { App } from '../app.js';
import { connectProtocol, protocolFacts } from './connect.js';
import { StdioFraming } from './stdio-framing.js';
import type { PreludeHandoff } from './stdio-prelude.js';

/** Dotted tool names (seeds 003/004) and other aliases, from the tool definitions. */
export function toolAliases(app: App): ReadonlyMap<string, string> {
  return protocolFacts(app).aliases;
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
        app.log.error(`shutdown: ${String(error)}`);
        finish();
      });
  };
  const connection = connectProtocol(
    app,
    new StdioFraming(stdin, stdout, app.config.maxMessageBytes, options.prelude),
    {
      kind: 'stream',
      ...(options.prelude ? { answered: options.prelude.answered } : {}),
      onExit: stop,
      onInitialized: () => setImmediate(app.warmUp),
    },
  );
  const { rules } = connection;
  serveStdio((ctx) => connection.server(ctx.era), {
    transport: rules,
    onerror: (error) => app.log.warn(`protocol: ${error.message}`),
  });
  return { done, stop };
}
