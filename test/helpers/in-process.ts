import { InMemoryTransport, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { localCaller } from '../../src/executions/execution-model.js';
import { ProtocolRules } from '../../src/protocol/rules.js';
import { channelOf } from '../../src/protocol/transport-channel.js';
import { toolAliases } from '../../src/transports/stdio.js';
import type { Sandbox } from './server.js';
import { validationWorkerUrl } from './validation-worker.js';

type Json = Record<string, any>;

/** The app behind the same protocol rules the stdio entry builds, over one end of an in-memory pair. */
async function hostApp(sb: Sandbox, env: Record<string, string>) {
  const app = createApp(loadConfig({ env: { ...sb.env, ...env }, cwd: sb.project }), {
    watch: false,
    log: () => undefined,
    validationWorker: await validationWorkerUrl(),
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const tools = app.toolSwitch();
  const rules = new ProtocolRules({
    channel: channelOf(serverSide),
    directMethods: new Set(app.runner.tools.map((t) => t.name)),
    aliases: toolAliases(app),
    direct: (method, params, call) =>
      app.runner.run(method, params, {
        caller: { ...localCaller(), signal: call.signal, onNetworkWait: call.detach },
        tools,
      }),
    ordered: true,
    requireInitialize: true,
  });
  const serve = () => app.serverFactory({ detach: (id) => rules.detach(id), tools }).connect(rules);
  return { app, rules, clientSide, serve };
}

/**
 * The composition root driven in-process: the same rules and SDK server the stdio entry builds, over
 * the SDK's in-memory transport, with raw JSON-RPC messages in and out (serialized both ways, as on a
 * wire). For the bulk of protocol cases, without spawning a process per test.
 */
export async function inProcess(sb: Sandbox, env: Record<string, string> = {}) {
  const { app, rules, clientSide, serve } = await hostApp(sb, env);
  const answers: Json[] = [];
  const waiters: (() => void)[] = [];
  clientSide.onmessage = (message) => {
    answers.push(JSON.parse(JSON.stringify(message)) as Json);
    for (const w of waiters.splice(0)) w();
  };
  await clientSide.start();
  await serve();
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
    async close() {
      await rules.close();
      await app.close();
    },
  };
}

/**
 * An SDK client connected to the composition root in-process (the same rules and server as stdio, over
 * the SDK's in-memory transport): for protocol tests that need no process of their own.
 */
export async function inProcessClient(sb: Sandbox, env: Record<string, string> = {}) {
  const { Client } = await import('@modelcontextprotocol/client');
  const { app, rules, clientSide, serve } = await hostApp(sb, env);
  await serve();
  const client = new Client({ name: 'in-process', version: '1.0.0' });
  await client.connect(clientSide);
  return {
    client,
    async close() {
      await client.close();
      await rules.close();
      await app.close();
    },
  };
}
