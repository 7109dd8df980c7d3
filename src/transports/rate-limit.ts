/**
 * A token bucket per principal: `perMinute` requests a minute, with bursts up to that many. Buckets of
 * principals that went quiet are dropped, so the map stays as small as the set of active callers.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number) {}

  /** 0 when the request may go ahead, else the seconds to wait before retrying. */
  take(principal: string, now = Date.now()): number {
    if (this.perMinute <= 0) return 0;
    const rate = this.perMinute / 60_000;
    const bucket = this.buckets.get(principal) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * rate);
    bucket.at = now;
    if (this.buckets.size > 10_000) this.sweep(now);
    this.buckets.set(principal, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / rate / 1000));
  }

  private sweep(now: number): void {
    for (const [key, b] of this.buckets) if (now - b.at > 60_000) this.buckets.delete(key);
  }
}
