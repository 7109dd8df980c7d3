import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { INITIALIZE_VERSIONS } from '../protocol/rules.js';
import { type PreludeAnswers, StdioPrelude } from './stdio-prelude.js';

const answers = (): PreludeAnswers => {
  const version = INITIALIZE_VERSIONS[0] as string;
  return { results: [{ ok: true }], initialize: { core: { [version]: 0 } }, tools: { core: {} } } as never;
};

describe('the stdio prelude hand-over', () => {
  it('hands a long line that arrived in pieces over exactly once (nothing pending is replayed twice)', () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const prelude = new StdioPrelude(answers(), 'core', stdin as never, stdout as never);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: INITIALIZE_VERSIONS[0],
        capabilities: {},
        clientInfo: { name: 'c', version: '1' },
      },
    };
    const big = `{"jsonrpc":"2.0","id":9,"method":"x","params":{"output":"${'x'.repeat(100_000)}"}}\n`;
    const ping = '{"jsonrpc":"2.0","id":10,"method":"ping"}\n';
    // The initialize line and the start of the long one in one piece, the rest in another.
    stdin.write(Buffer.from(`${JSON.stringify(init)}\n${big.slice(0, 30_000)}`));
    stdin.write(Buffer.from(big.slice(30_000)));
    stdin.write(Buffer.from(ping));
    const { replay } = prelude.handoff();
    const lines = replay.toString('utf8').split('\n');
    // The replayed initialize, the long line whole, the ping, and nothing after it.
    expect(lines.map((l) => l.length)).toEqual([expect.any(Number), big.length - 1, ping.length - 1, 0]);
    expect(lines[2]).toBe(ping.trim());
  });
});
