import { McpServer } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import type { App } from '../../app.js';
import { ToolSwitch } from '../../protocol/tool-switch.js';
import { silentLogger } from '../../telemetry/log.js';
import { statelessEra } from './stateless.js';

/** An app with what the era reads outside a request: its change notifications and its servers. */
function stubApp() {
  const listeners = { resources: new Set<() => void>(), lists: new Set<(kind: string) => void>() };
  const app = {
    log: silentLogger,
    toolSwitch: () => new ToolSwitch(new Map([['core', ['a']]]), ['core']),
    serverFactory: () => new McpServer({ name: 'pooled', version: '1' }),
    onResourcesChanged: (listener: () => void) => {
      listeners.resources.add(listener);
      return () => listeners.resources.delete(listener);
    },
    onListChanged: (listener: (kind: string) => void) => {
      listeners.lists.add(listener);
      return () => listeners.lists.delete(listener);
    },
  } as unknown as App;
  return { app, listeners };
}

describe('statelessEra', () => {
  it("hears of the app's changes until stopped, and then takes no server back", async () => {
    const { app, listeners } = stubApp();
    const era = statelessEra(app, 1024);
    expect([listeners.resources.size, listeners.lists.size]).toEqual([1, 1]);
    // With no client listening, a change is told to nobody, and nothing fails.
    for (const listener of listeners.resources) listener();
    for (const listener of listeners.lists) listener('tools');

    const kept = era.pool.acquire('alice');
    kept.server.server.onclose?.();
    expect(era.pool.idleCount('alice')).toBe(1);

    const running = era.pool.acquire('alice');
    era.stop();
    expect([listeners.resources.size, listeners.lists.size]).toEqual([0, 0]);
    running.server.server.onclose?.();
    expect(era.pool.idleCount()).toBe(0);
    await era.close();
  });

  it('close drops the idle servers', async () => {
    const { app } = stubApp();
    const era = statelessEra(app, 1024);
    const servers = [era.pool.acquire('alice'), era.pool.acquire('bob')];
    for (const s of servers) s.server.server.onclose?.();
    expect(era.pool.idleCount()).toBe(2);
    era.stop();
    await era.close();
    expect(era.pool.idleCount()).toBe(0);
  });
});
