import type { AppOptions } from '../../src/app.js';
import { createLogger } from '../../src/telemetry/log.js';
import { inProcess } from './in-process.js';
import { INIT, type Sandbox } from './server.js';

type Json = Record<string, unknown>;

/**
 * `RawServer`'s interface (raw JSON-RPC messages in, every message out as a line) over the in-process
 * wiring of test/helpers/in-process.ts: for tests that speak raw JSON-RPC to a server but do not test the
 * process (its framing, exit, signals or start-up). Constructed synchronously like RawServer; the app
 * starts in the background and every method waits for it. What the app logs is `stderr`.
 */
export class InProcessRaw {
  stderr = '';
  private readonly session: ReturnType<typeof inProcess>;
  private answers: Json[] = [];

  constructor(opts: { env: Record<string, string>; cwd: string; app?: AppOptions }) {
    const sb = { env: opts.env, project: opts.cwd } as Sandbox;
    // What the app logs, as the served process writes it to stderr (JSON lines).
    const log = createLogger({
      level: 'debug',
      human: false,
      stream: {
        write: (line: string) => {
          this.stderr += line.endsWith('\n') ? line : `${line}\n`;
        },
      },
    });
    // Watching the sources, as the served process does.
    this.session = inProcess(sb, {}, { log, watch: true, ...opts.app });
    this.session.then(
      (s) => {
        this.answers = s.answers;
      },
      () => undefined,
    );
  }

  /** Every message the server sent so far, one JSON text each (as RawServer's stdout lines). */
  get lines(): string[] {
    return this.answers.map((a) => JSON.stringify(a));
  }

  send(message: unknown): void {
    // A raw line that is not JSON tests the framing, which only a process has.
    const parsed = typeof message === 'string' ? (JSON.parse(message) as unknown) : message;
    void this.session.then((s) => s.send(parsed));
  }

  async read(count: number, timeoutMs = 25_000): Promise<Json[]> {
    return (await this.session).read(count, timeoutMs);
  }

  /** Sends a request and returns the response with the same id. */
  async request(id: string | number, method: string, params?: unknown): Promise<Json> {
    const s = await this.session;
    const before = s.answers.length;
    s.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    for (let i = before; ; i++) {
      const msg = (await s.read(i + 1))[i];
      if (msg && msg.id === id) return msg;
    }
  }

  async initialize(): Promise<Json> {
    return this.request(INIT.id, INIT.method, INIT.params);
  }

  /** Closes the app (RawServer kills its process). */
  kill(): void {
    void this.session.then((s) => s.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    await (await this.session).close();
  }
}
