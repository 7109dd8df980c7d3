import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, post, startHttpServer } from './helpers/http-server.js';
import { inProcess } from './helpers/in-process.js';
import { RawServer, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

/** One conversation: messages sent in order, then a check of every answer. */
interface Case {
  name: string;
  send: Json[];
  expect: (answers: Json[]) => void;
}

const rpc = (id: unknown, method: string, params?: unknown): Json => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params !== undefined ? { params } : {}),
});

const INIT = rpc('init', 'initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'matrix', version: '1.0.0' },
});

/** The same cases run over every transport; the answers must also be identical across transports. */
const CASES: Case[] = [
  {
    name: 'refuses calls before initialize, then accepts the handshake',
    send: [rpc(1, 'workflow_list'), rpc(2, 'ping'), INIT],
    expect: ([early, ping, init]) => {
      expect(early?.error).toMatchObject({ code: -32600, message: 'Server not initialized' });
      expect(ping?.result).toEqual({});
      expect(init?.result.protocolVersion).toBe('2025-06-18');
    },
  },
  {
    name: 'rejects an unknown protocol version with the supported list',
    send: [rpc(3, 'initialize', { protocolVersion: '1999-01-01', capabilities: {} })],
    expect: ([a]) => {
      expect(a?.error.code).toBe(-32000);
      expect(a?.error.data).toMatchObject({ requestedVersion: '1999-01-01' });
      expect(a?.error.data.supportedVersions).toContain('2025-11-25');
    },
  },
  {
    name: 'answers ids the SDK cannot use, echoing them',
    send: [rpc(1.5, 'ping'), rpc(9007199254740992, 'ping'), rpc(null, 'ping'), rpc(4, 'ping')],
    expect: (answers) => {
      expect(answers.map((a) => a.id)).toEqual([1.5, 9007199254740992, null, 4]);
      expect(answers.slice(0, 3).map((a) => a.error.code)).toEqual([-32600, -32600, -32600]);
    },
  },
  {
    name: 'answers params that are not an object and malformed _meta with -32602',
    send: [
      rpc(5, 'tools/list', []),
      rpc(6, 'ping', { _meta: 5 }),
      rpc(7, 'tools/call', { _meta: { progressToken: {} } }),
    ],
    expect: (answers) => expect(answers.map((a) => a.error?.code)).toEqual([-32602, -32602, -32602]),
  },
  {
    name: 'names an unknown method',
    send: [rpc(8, 'no/such/method')],
    expect: ([a]) => expect(a?.error).toMatchObject({ code: -32601, data: { method: 'no/such/method' } }),
  },
  {
    name: 'serves tools as direct methods with the seed error codes',
    send: [
      rpc(9, 'workflow_get', { id: 'no-such-workflow' }),
      rpc(10, 'workflow_get', {}),
      rpc(11, 'workflow.list', null),
    ],
    expect: ([missing, invalid, listed]) => {
      expect(missing?.error).toMatchObject({ code: -32001, data: { error_code: 'WORKFLOW_NOT_FOUND' } });
      expect(invalid?.error).toMatchObject({ code: -32602, data: { error_code: 'INVALID_PARAMS' } });
      expect(listed?.result.workflows.length).toBeGreaterThan(0);
    },
  },
  {
    name: 'tools/call: results in structuredContent, failures as isError with the same code, dotted aliases',
    send: [
      rpc(12, 'tools/call', { name: 'workflow.get', arguments: { id: 'coding-task-workflow' } }),
      rpc(13, 'tools/call', { name: 'workflow_get', arguments: { id: 'nope-nope' } }),
    ],
    expect: ([ok, failed]) => {
      expect(ok?.result.structuredContent.id).toBe('coding-task-workflow');
      expect(failed?.result.isError).toBe(true);
      expect(failed?.result.structuredContent.error.code).toBe(-32001);
    },
  },
  {
    name: 'refuses a request nested deeper than the limit',
    send: [
      rpc(14, 'workflow_next', {
        workflowId: 'coding-task-workflow',
        completedSteps: [],
        context: deep(100),
      }),
    ],
    expect: ([a]) => expect(a?.error.code).toBe(-32602),
  },
];

function deep(n: number): Json {
  let v: Json = { leaf: true };
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
}

/** Strips what legitimately differs between runs (correlation ids). */
function normalize(answers: Json[]): Json[] {
  return JSON.parse(JSON.stringify(answers).replace(/wl-[0-9a-f]{12}/g, 'wl-x')) as Json[];
}

interface Driver {
  send(message: Json): void;
  read(count: number): Promise<Json[]>;
  close(): Promise<void> | void;
}

let sb: Sandbox;
beforeAll(() => {
  sb = sandbox();
});
afterAll(() => sb.cleanup());

const drivers: Record<string, () => Promise<Driver>> = {
  stdio: async () => {
    const s = new RawServer({ env: sb.env, cwd: sb.project });
    return {
      send: (m) => s.send(m),
      read: (n) => s.read(n) as Promise<Json[]>,
      close: () => s.kill(),
    };
  },
  'in-process': async () => inProcess(sb),
  // A 2025-11-25 session over Streamable HTTP: one POST per message, the session header once known.
  http: async () => {
    const server: HttpServer = await startHttpServer(sb);
    const answers: Json[] = [];
    let sid: string | undefined;
    let pending = Promise.resolve();
    return {
      send: (m) => {
        pending = pending.then(async () => {
          const headers: Record<string, string> = sid
            ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }
            : {};
          const res = await post(server.url, m, headers);
          if (res.json) answers.push(res.json);
          const opened = res.headers.get('mcp-session-id');
          if (opened && !sid) {
            sid = opened;
            await post(
              server.url,
              { jsonrpc: '2.0', method: 'notifications/initialized' },
              { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' },
            );
          }
        });
      },
      read: async (n) => {
        await pending;
        if (answers.length < n) throw new Error(`expected ${n} answers, got ${JSON.stringify(answers)}`);
        return answers.slice(0, n);
      },
      close: () => server.kill(),
    };
  },
};

describe('the same protocol cases over every transport', () => {
  const seen: Record<string, Json[][]> = {};
  for (const [name, open] of Object.entries(drivers)) {
    it(`over ${name}`, async () => {
      const d = await open();
      try {
        let total = 0;
        const results: Json[][] = [];
        for (const c of CASES) {
          for (const m of c.send) d.send(m);
          total += c.send.length;
          const answers = (await d.read(total)).slice(total - c.send.length);
          c.expect(answers);
          results.push(normalize(answers));
        }
        seen[name] = results;
      } finally {
        await d.close();
      }
    });
  }

  it('gives identical answers on every transport', () => {
    const [first, ...others] = Object.values(seen);
    expect(first).toBeDefined();
    for (const other of others) expect(other).toEqual(first);
  });
});
