// When to poll a feed next: pure, from its cadence, its caching hints and its failures.

export type ScheduleLimits = { intervalSeconds: number; minSeconds: number; maxSeconds: number };
export type ScheduleInput =
  | {
      kind: 'success';
      publishedAt: readonly (string | null)[];
      ttlSeconds: number | null;
      cacheSeconds: number | null;
      previousIntervalSeconds: number | null;
    }
  | { kind: 'unchanged'; cacheSeconds: number | null; previousIntervalSeconds: number | null }
  | { kind: 'throttled'; retryAfterSeconds: number }
  | { kind: 'error'; consecutiveErrors: number; retryAfterSeconds: number | null };

/** Seconds until the next poll (with ±10 % jitter from `random`, except after a throttle) and the base interval to
 *  remember. Success: adaptive estimate (half the median gap between recent entries) clamped to [min, max], raised to
 *  ttl and Cache-Control/Expires (up to max). Throttled: Retry-After (at least min, up to 24 h), no jitter. Error:
 *  exponential backoff capped at max, or a longer Retry-After (up to 24 h); never stops. */
export function nextPoll(
  input: ScheduleInput,
  limits: ScheduleLimits,
  random: () => number = Math.random,
): { delaySeconds: number; intervalSeconds: number } {
  const clamp = (s: number) => Math.min(limits.maxSeconds, Math.max(limits.minSeconds, s));
  let interval: number;
  switch (input.kind) {
    case 'success': {
      const estimate = cadenceEstimate(input.publishedAt) ?? limits.intervalSeconds;
      interval = Math.max(
        clamp(estimate),
        Math.min(limits.maxSeconds, Math.max(input.ttlSeconds ?? 0, input.cacheSeconds ?? 0)),
      );
      break;
    }
    case 'unchanged':
      interval = Math.max(
        clamp(input.previousIntervalSeconds ?? limits.intervalSeconds),
        Math.min(limits.maxSeconds, input.cacheSeconds ?? 0),
      );
      break;
    case 'throttled':
      return {
        delaySeconds: Math.max(limits.minSeconds, Math.min(86_400, input.retryAfterSeconds)),
        intervalSeconds: limits.intervalSeconds,
      };
    case 'error': {
      const backoff = Math.min(
        limits.maxSeconds,
        limits.minSeconds * 2 ** Math.min(30, Math.max(0, input.consecutiveErrors - 1)),
      );
      const delay = Math.max(backoff, Math.min(86_400, input.retryAfterSeconds ?? 0));
      return { delaySeconds: jitter(delay, random), intervalSeconds: limits.intervalSeconds };
    }
  }
  return { delaySeconds: jitter(interval, random), intervalSeconds: interval };
}

/** The limits while a WebSub hub pushes the feed: polling is only the fallback, so its interval (and floor) is
 *  max(interval × 4, pushSeconds), never above the max. */
export function pushedLimits(limits: ScheduleLimits, pushSeconds: number): ScheduleLimits {
  const slow = Math.min(limits.maxSeconds, Math.max(limits.intervalSeconds * 4, pushSeconds));
  return {
    intervalSeconds: slow,
    minSeconds: Math.max(limits.minSeconds, slow),
    maxSeconds: limits.maxSeconds,
  };
}

/** Half the median gap between the newest (up to 20) dated entries, in seconds; null with fewer than 3 dates. */
export function cadenceEstimate(publishedAt: readonly (string | null)[]): number | null {
  const times = publishedAt
    .filter((t): t is string => t !== null)
    .map((t) => Date.parse(t))
    .filter(Number.isFinite)
    .sort((a, b) => b - a)
    .slice(0, 20);
  if (times.length < 3) return null;
  const gaps = times
    .slice(1)
    .map((t, i) => (times[i]! - t) / 1000)
    .filter((g) => g > 0)
    .sort((a, b) => a - b);
  if (gaps.length === 0) return null;
  return gaps[Math.floor(gaps.length / 2)]! / 2;
}

function jitter(seconds: number, random: () => number): number {
  return Math.max(1, Math.round(seconds * (0.9 + 0.2 * random())));
}
