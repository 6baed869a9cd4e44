// Retry decisions for deliveries: pure, taking `now` and a random source so tests need no clock or sleeps.

export type RetryDecision = { kind: 'retry'; at: Date; delayMs: number } | { kind: 'dead' };

/** After failed attempt number `attempt` (1 = the first try): when to try again, or dead after the last retry.
 *  Delays come from `schedule` (seconds) with ±`jitter` (0.2 = ±20 %); a receiver's Retry-After raises the delay,
 *  bounded by `maxRetryAfterSeconds`. */
export function nextRetry(opts: {
  attempt: number;
  schedule: readonly number[];
  now: Date;
  random?: () => number;
  jitter?: number;
  retryAfterSeconds?: number | null;
  maxRetryAfterSeconds?: number;
}): RetryDecision {
  const base = opts.schedule[opts.attempt - 1];
  if (base === undefined) return { kind: 'dead' };
  const jitter = opts.jitter ?? 0.2;
  const random = opts.random ?? Math.random;
  let delayMs = Math.round(base * 1000 * (1 + jitter * (2 * random() - 1)));
  if (opts.retryAfterSeconds != null && opts.retryAfterSeconds > 0) {
    const bounded = Math.min(opts.retryAfterSeconds, opts.maxRetryAfterSeconds ?? 3600);
    delayMs = Math.max(delayMs, bounded * 1000);
  }
  return { kind: 'retry', at: new Date(opts.now.getTime() + delayMs), delayMs };
}
