/** Largest JSON-RPC message a transport accepts unless configured otherwise. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Longest resource URI resources/subscribe accepts (every resource the server has is far shorter). */
export const MAX_SUBSCRIBE_URI_CHARS = 2048;

/**
 * Caps on what clients may hold open, with their defaults (docs/http.md, "Limits"); each is configurable
 * (src/config.ts). Per principal as well as in total, so one principal cannot use up what the others
 * need.
 */
export interface Limits {
  /** resources/subscribe: URIs one session may be subscribed to at once. */
  subscriptionsPerSession: number;
  /** resources/subscribe: URIs one principal may be subscribed to at once, over all its sessions. */
  subscriptionsPerPrincipal: number;
  /** Tasks this process works on at once, in total and per principal. */
  tasks: number;
  tasksPerPrincipal: number;
  /** Live dashboard pages (Server-Sent Events streams) open at once, in total and per principal. */
  streams: number;
  streamsPerPrincipal: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = {
  subscriptionsPerSession: 100,
  subscriptionsPerPrincipal: 1000,
  tasks: 256,
  tasksPerPrincipal: 32,
  streams: 100,
  streamsPerPrincipal: 20,
};

/**
 * What each principal holds of something counted (sessions, streams, tasks, subscriptions), against
 * a cap per principal and a cap in total. Every `take` that succeeds is paired with one `release`.
 */
export class Quota {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(
    readonly max: number,
    readonly perPrincipal: number,
  ) {}

  /** Takes one for `principal`: undefined when granted, else the cap that refused it. */
  take(principal: string): 'principal' | 'total' | undefined {
    const mine = this.held.get(principal) ?? 0;
    if (mine >= this.perPrincipal) return 'principal';
    if (this.total >= this.max) return 'total';
    this.held.set(principal, mine + 1);
    this.total++;
    return undefined;
  }

  release(principal: string, count = 1): void {
    const mine = this.held.get(principal) ?? 0;
    const n = Math.min(mine, count);
    if (mine - n === 0) this.held.delete(principal);
    else this.held.set(principal, mine - n);
    this.total -= n;
  }

  of(principal: string): number {
    return this.held.get(principal) ?? 0;
  }

  get size(): number {
    return this.total;
  }
}
