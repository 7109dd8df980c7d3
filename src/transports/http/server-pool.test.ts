import { InMemoryTransport, type JSONRPCMessage, McpServer } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import type { App } from '../../app.js';
import { ToolSwitch } from '../../protocol/tool-switch.js';
import { type Poolable, type PooledServer, ServerPool, sdkServers } from './server-pool.js';

/** A stand-in server: numbered in build order, busy when the test says so. */
class Fake implements Poolable {
  busy = false;
  resets = 0;
  constructor(
    readonly principal: string,
    readonly n: number,
    private readonly giveBack: (s: Fake) => void,
  ) {}
  endExchange(): boolean {
    return !this.busy;
  }
  reset(): void {
    this.resets++;
  }
  /** The end of its exchange, as the SDK's close of the server signals it. */
  done(): void {
    this.giveBack(this);
  }
}

function fakePool(capacity?: number) {
  let built = 0;
  const pool = new ServerPool<Fake>(
    (principal, giveBack) => new Fake(principal, ++built, giveBack),
    capacity,
  );
  return { pool, built: () => built };
}

describe('ServerPool', () => {
  it('gives a principal back the server its last request gave back, reset before each request', () => {
    const { pool, built } = fakePool();
    const first = pool.acquire('alice');
    expect(first.resets).toBe(1);
    first.done();
    expect(pool.idleCount('alice')).toBe(1);
    const again = pool.acquire('alice');
    expect(again).toBe(first);
    expect(again.resets).toBe(2);
    expect(built()).toBe(1);
    expect(pool.idleCount()).toBe(0);
  });

  it("never hands one principal's server to another", () => {
    const { pool, built } = fakePool();
    pool.acquire('alice').done();
    const bobs = pool.acquire('bob');
    expect(bobs.principal).toBe('bob');
    expect(built()).toBe(2);
    expect(pool.idleCount('alice')).toBe(1);
  });

  it('builds one more for requests at once, and keeps each when given back', () => {
    const { pool, built } = fakePool();
    const a = pool.acquire('alice');
    const b = pool.acquire('alice');
    expect(b).not.toBe(a);
    a.done();
    b.done();
    expect(pool.idleCount('alice')).toBe(2);
    expect(built()).toBe(2);
  });

  it('does not take back a server whose request still runs (its client went away)', () => {
    const { pool, built } = fakePool();
    const a = pool.acquire('alice');
    a.busy = true;
    a.done();
    expect(pool.idleCount()).toBe(0);
    expect(pool.acquire('alice')).not.toBe(a);
    expect(built()).toBe(2);
  });

  it('keeps at most `capacity` idle servers; the principal idle the longest gives one up', () => {
    const { pool } = fakePool(3);
    const [a1, a2, b1, c1] = [
      pool.acquire('alice'),
      pool.acquire('alice'),
      pool.acquire('bob'),
      pool.acquire('carol'),
    ] as Fake[];
    a1?.done();
    a2?.done();
    b1?.done();
    expect(pool.idleCount()).toBe(3);
    c1?.done();
    expect(pool.idleCount()).toBe(3);
    expect([pool.idleCount('alice'), pool.idleCount('bob'), pool.idleCount('carol')]).toEqual([1, 1, 1]);
    // Alice gave one back last: Bob is now the one idle the longest.
    const a3 = pool.acquire('alice');
    a3.done();
    pool.acquire('dave').done();
    expect([pool.idleCount('alice'), pool.idleCount('bob'), pool.idleCount('carol')]).toEqual([1, 0, 1]);
    expect(pool.idleCount('dave')).toBe(1);
  });

  it('takes nothing back once stopped, and clear drops the idle servers', () => {
    const { pool } = fakePool();
    pool.acquire('alice').done();
    const running = pool.acquire('bob');
    pool.stop();
    running.done();
    expect(pool.idleCount('bob')).toBe(0);
    expect(pool.idleCount()).toBe(1);
    pool.clear();
    expect(pool.idleCount()).toBe(0);
  });
});

describe('sdkServers', () => {
  /** An app with just what building a pooled server reads: the tool groups and the server factory. */
  const stubApp = () => {
    const built: McpServer[] = [];
    const app = {
      toolSwitch: () =>
        new ToolSwitch(
          new Map([
            ['core', ['a']],
            ['more', ['b']],
          ]),
          ['core'],
        ),
      serverFactory: () => {
        const server = new McpServer({ name: 'pooled', version: '1' });
        built.push(server);
        return server;
      },
    } as unknown as App;
    return { app, built };
  };

  /** One exchange with the inner SDK server: an initialize declaring a client, then the end of it. */
  async function exchange(pooled: PooledServer): Promise<void> {
    const [client, server] = InMemoryTransport.createLinkedPair();
    const answered = new Promise<JSONRPCMessage>((resolve) => {
      client.onmessage = resolve;
    });
    await client.start();
    await pooled.server.server.connect(server);
    await client.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: { sampling: {} },
        clientInfo: { name: 'first-client', version: '9' },
      },
    });
    await answered;
    expect(pooled.server.server.getClientVersion()?.name).toBe('first-client');
    await client.close();
  }

  it('a server goes back to the pool when its exchange ends, and the next request sees nothing of the last', async () => {
    const { app, built } = stubApp();
    const pool = new ServerPool(sdkServers(app));
    const first = pool.acquire('alice');
    first.tools.enable(['more']);
    expect(first.tools.listed('b')).toBe(true);
    await exchange(first);
    expect(pool.idleCount('alice')).toBe(1);

    const next = pool.acquire('alice');
    expect(next).toBe(first);
    expect(built).toHaveLength(1);
    // The groups the last request listed and the client it declared are forgotten.
    expect(next.tools.listed('b')).toBe(false);
    expect(next.server.server.getClientVersion()).toBeUndefined();
    expect(next.server.server.getClientCapabilities()).toBeUndefined();
  });
});
