// Token buckets in memory, one per key (an application, a client address), bounded in number; the API and the
// dashboard share them through RequestLimits, built once per HTTP app from [quotas].
import type { Context, Env, MiddlewareHandler } from 'hono';
import type { BlockList } from 'node:net';
import type { Config } from '../config.ts';
import type { Ctx } from '../context.ts';
import { tooManyRequests } from '../errors.ts';
import { trustedProxies } from './client-address.ts';

export type BucketOptions = {
  /** Tokens a full bucket holds: the burst a key may spend at once. */
  capacity: number;
  /** Milliseconds to refill one token. */
  refillMs: number;
  /** Keys tracked at most; past it the least recently charged tenth is forgotten (default 10,000). */
  maxKeys?: number;
};

type Bucket = { tokens: number; at: number };

/** A bucket per key that refills evenly up to its capacity. Memory stays bounded whatever the number of keys seen:
 *  a key's bucket is dropped once it is full again (a full bucket is what an unknown key gets), and past `maxKeys` the
 *  least recently charged keys are forgotten — cheaply, because the map is kept in order of last charge. */
export class TokenBuckets {
  readonly #capacity: number;
  readonly #refillMs: number;
  readonly #maxKeys: number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(opts: BucketOptions) {
    this.#capacity = opts.capacity;
    this.#refillMs = opts.refillMs;
    this.#maxKeys = opts.maxKeys ?? 10_000;
  }

  /** Seconds until `key` has a whole token (0 when it has one now); whole seconds, as Retry-After needs. */
  retryAfterSeconds(key: string, now: Date): number {
    return this.#wait(this.#level(key, now.getTime()));
  }

  /** Takes one token of `key` when it has one and returns 0; otherwise takes nothing and returns the seconds to wait
   *  (so a refused key is not pushed further back: a key that keeps trying gets one more token per refill period). */
  take(key: string, now: Date): number {
    const t = now.getTime();
    const tokens = this.#level(key, t);
    const wait = this.#wait(tokens);
    if (wait > 0) return wait;
    this.#buckets.delete(key); // re-inserted at the end: the map stays in order of last charge
    this.#buckets.set(key, { tokens: tokens - 1, at: t });
    if (this.#buckets.size > this.#maxKeys) this.#forgetOldest();
    return 0;
  }

  /** Keys tracked now; 0 means every key's bucket is full (a full bucket is forgotten). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Whole seconds until `tokens` reaches one; 0 when it has. */
  #wait(tokens: number): number {
    return tokens >= 1 ? 0 : Math.max(1, Math.ceil(((1 - tokens) * this.#refillMs) / 1000));
  }

  #level(key: string, t: number): number {
    const b = this.#buckets.get(key);
    if (!b) return this.#capacity;
    const level = Math.min(this.#capacity, b.tokens + Math.max(0, t - b.at) / this.#refillMs);
    if (level >= this.#capacity) this.#buckets.delete(key); // full again: nothing left to remember
    return level;
  }

  /** Forgets the least recently charged tenth of the keys. Removal is batched because a Map keeps deleted entries as
   *  holes until it is rebuilt: finding the oldest key one at a time would walk those holes on every insertion. */
  #forgetOldest(): void {
    const keep = Math.floor(this.#maxKeys * 0.9);
    for (const key of this.#buckets.keys()) {
      if (this.#buckets.size <= keep) break;
      this.#buckets.delete(key);
    }
  }
}

/** The in-memory limits of one HTTP app: requests per application per second, and failed API keys per client address
 *  (API calls and dashboard sign-ins alike). A bucket is undefined when [quotas] turns its limit off (0). */
export type RequestLimits = {
  perApplication: TokenBuckets | undefined;
  failedAuth: TokenBuckets | undefined;
  /** server.trusted_proxies: the peers whose X-Forwarded-For names the client. */
  trustedProxies: BlockList;
  /** The numbers behind them, for the 429 bodies. */
  quotas: Config['quotas'];
};

/** Builds the limits from [quotas]; one instance per HTTP app, shared by /v1 and /dashboard. */
export function requestLimits(config: Config): RequestLimits {
  const q = config.quotas;
  return {
    perApplication:
      q.api_requests_per_second > 0
        ? new TokenBuckets({ capacity: q.api_burst, refillMs: 1000 / q.api_requests_per_second })
        : undefined,
    failedAuth:
      q.failed_auth_per_address > 0
        ? new TokenBuckets({
            capacity: q.failed_auth_per_address,
            refillMs: q.failed_auth_refill_seconds * 1000,
          })
        : undefined,
    trustedProxies: trustedProxies(config.server.trusted_proxies),
    quotas: q,
  };
}

/** The 429 for a client address that has spent its failed keys (the API's and the dashboard sign-in's). */
export function failedKeysError(limits: RequestLimits, waitSeconds: number) {
  const q = limits.quotas;
  return tooManyRequests(
    'failed_auth_per_address',
    q.failed_auth_per_address,
    waitSeconds,
    `Too many requests with a missing, unknown or revoked API key came from your address (quotas.failed_auth_per_address: ${q.failed_auth_per_address}, one more every ${q.failed_auth_refill_seconds} s). A valid key is always accepted.`,
  );
}

/** Each request takes a token of the application `applicationOf` names (quotas.api_requests_per_second, bursts of
 *  quotas.api_burst); without one it is answered 429 with Retry-After and does nothing. A request of no application
 *  (undefined) passes. Used behind the API's key check and the dashboard's session, on the same buckets: the dashboard
 *  runs the same actions, so it is no way around the limit. */
export function limitApplicationRate<E extends Env>(
  ctx: Ctx,
  limits: RequestLimits,
  applicationOf: (c: Context<E>) => string | undefined,
): MiddlewareHandler<E> {
  const buckets = limits.perApplication;
  if (!buckets) return (_c, next) => next();
  return async (c, next) => {
    const application = applicationOf(c);
    const wait = application === undefined ? 0 : buckets.take(application, ctx.clock.now());
    if (wait > 0) throw applicationRateError(limits, wait);
    await next();
  };
}

/** The 429 for an application over its request rate. */
function applicationRateError(limits: RequestLimits, waitSeconds: number) {
  const q = limits.quotas;
  return tooManyRequests(
    'api_requests_per_second',
    q.api_requests_per_second,
    waitSeconds,
    `The application made more than ${q.api_requests_per_second} requests per second (bursts of up to ${q.api_burst}); slow down and retry after ${waitSeconds} s (quotas.api_requests_per_second).`,
  );
}
