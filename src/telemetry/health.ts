/**
 * Liveness and readiness for load balancers and Kubernetes. `/healthz` answers 200 while the process
 * serves at all; `/readyz` answers 200 only when every readiness check passes and the server is not
 * draining (after SIGTERM it answers 503 so the balancer stops sending new work while in-flight work ends).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface ReadinessCheck {
  name: string;
  /** Undefined when ready, else why not (said to the operator: no secrets). */
  check(): Promise<string | undefined>;
}

export const PROBE_PATHS = ['/healthz', '/readyz'] as const;
/** A check that does not answer in this time counts as failed: a probe must answer quickly. */
const CHECK_TIMEOUT_MS = 2_000;

export interface Readiness {
  ready: boolean;
  draining: boolean;
  checks: Record<string, string>;
}

export class Health {
  private drainingSince: string | undefined;

  constructor(private readonly checks: readonly ReadinessCheck[]) {}

  /** From now on `/readyz` answers 503: the server is shutting down. */
  drain(): void {
    this.drainingSince ??= new Date().toISOString();
  }

  get draining(): boolean {
    return this.drainingSince !== undefined;
  }

  async readiness(): Promise<Readiness> {
    const results = await Promise.all(
      this.checks.map(async ({ name, check }) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<string>((resolve) => {
          timer = setTimeout(() => resolve(`no answer within ${CHECK_TIMEOUT_MS} ms`), CHECK_TIMEOUT_MS);
          timer.unref();
        });
        try {
          const problem = await Promise.race([check(), late]);
          return [name, problem ?? 'ok'] as const;
        } catch (error) {
          return [name, (error as Error)?.message ?? String(error)] as const;
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const checks = Object.fromEntries(results);
    const ready = !this.draining && results.every(([, r]) => r === 'ok');
    return { ready, draining: this.draining, checks };
  }

  /** Answers `/healthz` and `/readyz` (GET or HEAD); false for any other request. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/healthz' && path !== '/readyz') return false;
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' });
      res.end();
      return true;
    }
    if (path === '/healthz') {
      send(200, { status: 'ok', draining: this.draining });
      return true;
    }
    this.readiness().then(
      (r) =>
        send(r.ready ? 200 : 503, {
          status: r.ready ? 'ready' : r.draining ? 'draining' : 'not ready',
          ...r,
        }),
      (error: unknown) => send(503, { status: 'not ready', error: String(error) }),
    );
    return true;
  }
}
