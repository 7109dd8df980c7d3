/**
 * A token bucket per key (a principal, a client address): `perMinute` requests a minute, with bursts
 * up to that many. Buckets of keys that went quiet are dropped, so the map stays as small as the set
 * of active callers.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number) {}

  /** 0 when the request may go ahead (and it is counted), else the seconds to wait before retrying. */
  take(key: string, now = Date.now()): number {
    if (this.perMinute <= 0) return 0;
    const bucket = this.refill(key, now);
    if (this.buckets.size > 10_000) this.sweep(now);
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return this.wait(bucket);
  }

  /** What `take` would answer now, without counting anything. */
  peek(key: string, now = Date.now()): number {
    if (this.perMinute <= 0) return 0;
    const bucket = this.refill(key, now);
    return bucket.tokens >= 1 ? 0 : this.wait(bucket);
  }

  private refill(key: string, now: number): { tokens: number; at: number } {
    const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * (this.perMinute / 60_000));
    bucket.at = now;
    return bucket;
  }

  private wait(bucket: { tokens: number }): number {
    return Math.max(1, Math.ceil((1 - bucket.tokens) / (this.perMinute / 60_000) / 1000));
  }

  private sweep(now: number): void {
    for (const [key, b] of this.buckets) if (now - b.at > 60_000) this.buckets.delete(key);
  }
}
