import { describe, expect, it } from 'vitest';
import { type Mount, MountTable } from './mounts.js';

const mount = (): Mount & { closed: number } => {
  const m = {
    closed: 0,
    handle: () => undefined,
    close: () => {
      m.closed++;
    },
  };
  return m;
};

describe('MountTable', () => {
  it('routes a path to the endpoint, a mount (its prefix and below), or nothing', () => {
    const dashboard = mount();
    const metrics = mount();
    const routes = new MountTable('/mcp', { '/dashboard': dashboard, '/metrics': metrics });
    expect(routes.route('/mcp')).toEqual({ kind: 'endpoint' });
    expect(routes.route('/dashboard')).toEqual({ kind: 'mount', prefix: '/dashboard', mount: dashboard });
    expect(routes.route('/dashboard/executions/e1')).toMatchObject({ kind: 'mount', mount: dashboard });
    expect(routes.route('/metrics')).toMatchObject({ kind: 'mount', mount: metrics });
    // A path that merely starts like a mount or the endpoint is neither.
    for (const path of ['/dashboardx', '/metrics2', '/mcp/', '/mcpx', '/', '/healthz']) {
      expect(routes.route(path), path).toEqual({ kind: 'not-found' });
    }
  });

  it('publishes the OAuth metadata only when the server authenticates, before any mount', () => {
    const everything = mount();
    const path = '/.well-known/oauth-protected-resource/mcp';
    expect(new MountTable('/mcp', {}, true).route(path)).toEqual({ kind: 'metadata' });
    expect(new MountTable('/mcp', {}, true).route('/.well-known/oauth-protected-resource')).toEqual({
      kind: 'metadata',
    });
    expect(new MountTable('/mcp', {}, false).route(path)).toEqual({ kind: 'not-found' });
    expect(new MountTable('/mcp', { '/.well-known': everything }, true).route(path)).toEqual({
      kind: 'metadata',
    });
    expect(new MountTable('/mcp', { '/.well-known': everything }, false).route(path)).toMatchObject({
      kind: 'mount',
    });
  });

  it('a mount wins over an endpoint configured on its path', () => {
    const metrics = mount();
    expect(new MountTable('/metrics', { '/metrics': metrics }).route('/metrics')).toMatchObject({
      kind: 'mount',
      mount: metrics,
    });
  });

  it('closes every mount, even when one fails to', async () => {
    const first = mount();
    const last = mount();
    const failing: Mount = {
      handle: () => undefined,
      close: () => Promise.reject(new Error('stuck')),
    };
    const routes = new MountTable('/mcp', {
      '/a': first,
      '/b': failing,
      '/c': last,
      '/d': { handle: () => undefined },
    });
    await routes.close();
    expect([first.closed, last.closed]).toEqual([1, 1]);
  });
});
