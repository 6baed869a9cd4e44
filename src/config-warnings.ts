// Values that another key overrides, caps or switches off: valid, but not doing what they say (`config check`).
import { defaultConfig, type Config } from './config.ts';

/** A valid value that has no effect, or less than it says, because of another key's value. */
export type ConfigWarning = { key: string; by: string; message: string };

type OverrideRule = {
  key: string;
  by: string;
  applies: (c: Config) => boolean;
  message: (c: Config) => string;
};

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
/** True when `section.key` differs from its default: a moot value is worth a warning only when someone set it. */
const isSet = (c: Config, key: keyof Config['quotas']): boolean =>
  c.quotas[key] !== defaultConfig().quotas[key];

// Every pair of keys where one caps, raises or switches off the other (src/feed/schedule.ts clamps the interval,
// src/feed/fetch/fetch.ts's total deadline covers the connection, the limiters cap per-host/per-endpoint slots by the
// total, src/http/ratelimit.ts has no bucket when its rate is 0, the deliverer skips disabled endpoints).
const OVERRIDES: OverrideRule[] = [
  {
    key: 'poll.interval_seconds',
    by: 'poll.min_interval_seconds',
    applies: (c) => c.poll.interval_seconds < c.poll.min_interval_seconds,
    message: (c) =>
      `poll.interval_seconds (${c.poll.interval_seconds}) is below poll.min_interval_seconds (${c.poll.min_interval_seconds}): it is raised to ${c.poll.min_interval_seconds} s, as no feed is polled more often`,
  },
  {
    key: 'poll.interval_seconds',
    by: 'poll.max_interval_seconds',
    applies: (c) => c.poll.interval_seconds > c.poll.max_interval_seconds,
    message: (c) =>
      `poll.interval_seconds (${c.poll.interval_seconds}) is above poll.max_interval_seconds (${c.poll.max_interval_seconds}): it is lowered to ${c.poll.max_interval_seconds} s, as every feed is polled at least that often`,
  },
  {
    key: 'poll.connect_timeout_seconds',
    by: 'poll.timeout_seconds',
    applies: (c) => c.poll.connect_timeout_seconds > c.poll.timeout_seconds,
    message: (c) =>
      `poll.connect_timeout_seconds (${c.poll.connect_timeout_seconds}) is above poll.timeout_seconds (${c.poll.timeout_seconds}), the deadline of the whole fetch: a connection gets ${c.poll.timeout_seconds} s at most`,
  },
  {
    key: 'poll.per_host_concurrency',
    by: 'poll.concurrency',
    applies: (c) => c.poll.per_host_concurrency > c.poll.concurrency,
    message: (c) =>
      `poll.per_host_concurrency (${c.poll.per_host_concurrency}) is above poll.concurrency (${c.poll.concurrency}): at most ${c.poll.concurrency} fetches run at once, from one host or all`,
  },
  {
    key: 'delivery.per_endpoint_concurrency',
    by: 'delivery.concurrency',
    applies: (c) => c.delivery.per_endpoint_concurrency > c.delivery.concurrency,
    message: (c) =>
      `delivery.per_endpoint_concurrency (${c.delivery.per_endpoint_concurrency}) is above delivery.concurrency (${c.delivery.concurrency}): at most ${c.delivery.concurrency} deliveries run at once, to one endpoint or all`,
  },
  {
    key: 'delivery.retry_schedule_seconds',
    by: 'delivery.disable_after_seconds',
    applies: (c) => sum(c.delivery.retry_schedule_seconds) > c.delivery.disable_after_seconds,
    message: (c) =>
      `delivery.retry_schedule_seconds spans ${sum(c.delivery.retry_schedule_seconds)} s, more than delivery.disable_after_seconds (${c.delivery.disable_after_seconds}): an endpoint that keeps failing is disabled before its events' last retries, which then wait until it is re-enabled`,
  },
  {
    key: 'retention.entry_keys_per_feed',
    by: 'retention.entry_keys_max_per_feed',
    applies: (c) => c.retention.entry_keys_per_feed > c.retention.entry_keys_max_per_feed,
    message: (c) =>
      `retention.entry_keys_per_feed (${c.retention.entry_keys_per_feed}) is above retention.entry_keys_max_per_feed (${c.retention.entry_keys_max_per_feed}): a feed keeps at most ${c.retention.entry_keys_max_per_feed} keys`,
  },
  {
    key: 'quotas.api_burst',
    by: 'quotas.api_requests_per_second',
    applies: (c) => c.quotas.api_requests_per_second === 0 && isSet(c, 'api_burst'),
    message: (c) =>
      `quotas.api_burst (${c.quotas.api_burst}) has no effect: quotas.api_requests_per_second is 0 (no rate limit)`,
  },
  {
    key: 'quotas.failed_auth_refill_seconds',
    by: 'quotas.failed_auth_per_address',
    applies: (c) =>
      c.quotas.failed_auth_per_address === 0 && isSet(c, 'failed_auth_refill_seconds'),
    message: (c) =>
      `quotas.failed_auth_refill_seconds (${c.quotas.failed_auth_refill_seconds}) has no effect: quotas.failed_auth_per_address is 0 (no limit)`,
  },
];

/** The values another key overrides, caps or switches off, in a fixed order; empty when none. Pure: `config check`
 *  prints them and `serve` logs them, and the config stays valid (the effective behaviour is the documented one). */
export function configWarnings(config: Config): ConfigWarning[] {
  return OVERRIDES.filter((rule) => rule.applies(config)).map((rule) => ({
    key: rule.key,
    by: rule.by,
    message: rule.message(config),
  }));
}
