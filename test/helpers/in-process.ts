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

/**
 * The composition root driven in-process: the same rules and SDK server the stdio entry builds, over
 * the SDK's in-memory transport, with raw JSON-RPC messages in and out (serialized both ways, as on a
 * wire). For the bulk of protocol cases, without spawning a process per test.
 */
export async function inProcess(sb: Sandbox, env: Record<string, string> = {}) {
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
  const answers: Json[] = [];
  const waiters: (() => void)[] = [];
  clientSide.onmessage = (message) => {
    answers.push(JSON.parse(JSON.stringify(message)) as Json);
    for (const w of waiters.splice(0)) w();
  };
  await clientSide.start();
  await app.serverFactory({ detach: (id) => rules.detach(id), tools }).connect(rules);
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
