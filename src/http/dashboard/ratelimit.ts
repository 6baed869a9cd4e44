// A token bucket per client address for failed sign-ins; held by one dashboard app instance, bounded in size.
export type BucketOptions = { capacity: number; refillMs: number; maxKeys?: number };

type Bucket = { tokens: number; at: number };

/** Failed attempts take a token; a client with less than one token left is refused until one refills. */
export class FailureLimiter {
  readonly #capacity: number;
  readonly #refillMs: number;
  readonly #maxKeys: number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(opts: BucketOptions) {
    this.#capacity = opts.capacity;
    this.#refillMs = opts.refillMs;
    this.#maxKeys = opts.maxKeys ?? 10_000;
  }

  /** Seconds until `key` may try again (0 when it may try now). */
  retryAfterSeconds(key: string, now: Date): number {
    const tokens = this.#level(key, now.getTime());
    return tokens >= 1 ? 0 : Math.max(1, Math.ceil(((1 - tokens) * this.#refillMs) / 1000));
  }

  /** Records one failure of `key`. */
  fail(key: string, now: Date): void {
    const t = now.getTime();
    const tokens = this.#level(key, t);
    this.#buckets.delete(key); // re-insert so the map stays ordered by last failure
    this.#buckets.set(key, { tokens: Math.max(0, tokens - 1), at: t });
    if (this.#buckets.size > this.#maxKeys) this.#evict(t);
  }

  /** Number of addresses tracked (for tests of the bound). */
  get size(): number {
    return this.#buckets.size;
  }

  #level(key: string, t: number): number {
    const b = this.#buckets.get(key);
    if (!b) return this.#capacity;
    return Math.min(this.#capacity, b.tokens + Math.max(0, t - b.at) / this.#refillMs);
  }

  /** Drops buckets that have refilled, then the least recently failed ones, down to the bound. */
  #evict(t: number): void {
    for (const [key, b] of this.#buckets) {
      if (b.tokens + (t - b.at) / this.#refillMs >= this.#capacity) this.#buckets.delete(key);
    }
    for (const key of this.#buckets.keys()) {
      if (this.#buckets.size <= this.#maxKeys) break;
      this.#buckets.delete(key);
    }
  }
}
