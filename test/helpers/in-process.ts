import type { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { type AppOptions, createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { channelOf } from '../../src/protocol/transport-channel.js';
import { silentLogger } from '../../src/telemetry/log.js';
import { connectProtocol } from '../../src/transports/connect.js';
import type { Sandbox } from './server.js';
import { validationWorkerUrl } from './validation-worker.js';

type Json = Record<string, any>;

/** The app, its protocol rules and SDK server wired by the stdio entry's own `connectProtocol`, over an in-memory pair. */
async function wired(sb: Sandbox, env: Record<string, string>, options: AppOptions = {}) {
  const app = createApp(loadConfig({ env: { ...sb.env, ...env }, cwd: sb.project }), {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
    ...options,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  // As the stdio entry does: the validation worker and the registry warm up once the client is in.
  const connection = connectProtocol(app, channelOf(serverSide), {
    kind: 'stream',
    onInitialized: () => setImmediate(app.warmUp),
  });
  const { rules } = connection;
  return {
    app,
    clientSide,
    // As the stdio entry serves: one SDK server per connection and era (2025 `initialize` or the
    // 2026-07-28 per-request envelope), chosen by the SDK from the first message.
    connect: async () => {
      serveStdio((ctx) => connection.server(ctx.era), { transport: rules });
    },
    close: async () => {
      await rules.close();
      await app.close();
    },
  };
}

/**
 * An SDK client connected to the composition root in-process: the same rules and SDK server the stdio
 * entry builds, every message serialized both ways as on a wire. Pass a `client` configured with its
 * capabilities and handlers (sampling, elicitation) to use it; by default a plain one.
 */
export async function inProcessClient(
  sb: Sandbox,
  env: Record<string, string> = {},
  options: { client?: Client; app?: AppOptions } = {},
) {
  const { Client: SdkClient } = await import('@modelcontextprotocol/client');
  const client = options.client ?? new SdkClient({ name: 'in-process', version: '1.0.0' });
  const { app, clientSide, connect, close } = await wired(sb, env, options.app);
  const wire: Transport = {
    start: () => clientSide.start(),
    close: () => clientSide.close(),
    send: (message) => clientSide.send(JSON.parse(JSON.stringify(message)) as JSONRPCMessage),
  };
  clientSide.onmessage = (message, extra) =>
    wire.onmessage?.(JSON.parse(JSON.stringify(message)) as JSONRPCMessage, extra);
  clientSide.onclose = () => wire.onclose?.();
  clientSide.onerror = (error) => wire.onerror?.(error);
  await connect();
  await client.connect(wire);
  return {
    client,
    app,
    async close() {
      await client.close().catch(() => undefined);
      await close();
    },
  };
}

/**
 * The composition root driven in-process: the same rules and SDK server the stdio entry builds, over
 * the SDK's in-memory transport, with raw JSON-RPC messages in and out (serialized both ways, as on a
 * wire). For the bulk of protocol cases, without spawning a process per test.
 */
export async function inProcess(sb: Sandbox, env: Record<string, string> = {}, options: AppOptions = {}) {
  const { clientSide, connect, close } = await wired(sb, env, options);
  const answers: Json[] = [];
  const waiters: (() => void)[] = [];
  clientSide.onmessage = (message) => {
    answers.push(JSON.parse(JSON.stringify(message)) as Json);
    for (const w of waiters.splice(0)) w();
  };
  await clientSide.start();
  await connect();
  return {
    answers,
    send(message: unknown) {
      void clientSide.send(JSON.parse(JSON.stringify(message)) as JSONRPCMessage);
    },
    async read(count: number, timeoutMs = 10_000): Promise<Json[]> {
      const deadline = Date.now() + timeoutMs;
      while (answers.length < count) {
        if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(answers)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
      return answers.slice(0, count);
    },
    close,
  };
}
