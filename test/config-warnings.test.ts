import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultConfig, loadConfig } from '../src/config.ts';
import { configWarnings } from '../src/config-warnings.ts';

const example = new URL('../config.example.toml', import.meta.url);

describe('configWarnings', () => {
  it('finds nothing to say about the defaults nor about config.example.toml', () => {
    assert.deepEqual(configWarnings(defaultConfig()), []);
    assert.deepEqual(configWarnings(loadConfig({ file: example.pathname, env: {} })), []);
  });

  // [what, environment, the key overridden, the key that overrides it, what the message says]
  const pairs: [string, Record<string, string>, string, string, RegExp][] = [
    [
      'an interval below the minimum interval',
      { FEEDSUB_POLL_INTERVAL_SECONDS: '30' },
      'poll.interval_seconds',
      'poll.min_interval_seconds',
      /\(30\) is below poll\.min_interval_seconds \(60\): it is raised to 60 s/,
    ],
    [
      'an interval above the maximum interval',
      { FEEDSUB_POLL_INTERVAL_SECONDS: '7200', FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '3600' },
      'poll.interval_seconds',
      'poll.max_interval_seconds',
      /\(7200\) is above poll\.max_interval_seconds \(3600\): it is lowered to 3600 s/,
    ],
    [
      'a connect timeout longer than the whole fetch',
      { FEEDSUB_POLL_CONNECT_TIMEOUT_SECONDS: '40' },
      'poll.connect_timeout_seconds',
      'poll.timeout_seconds',
      /a connection gets 30 s at most/,
    ],
    [
      'more fetches per host than in all',
      { FEEDSUB_POLL_PER_HOST_CONCURRENCY: '20' },
      'poll.per_host_concurrency',
      'poll.concurrency',
      /at most 16 fetches run at once/,
    ],
    [
      'more deliveries per endpoint than in all',
      { FEEDSUB_DELIVERY_CONCURRENCY: '2' },
      'delivery.per_endpoint_concurrency',
      'delivery.concurrency',
      /\(4\) is above delivery\.concurrency \(2\)/,
    ],
    [
      'a retry schedule longer than the time an endpoint may fail',
      { FEEDSUB_DELIVERY_DISABLE_AFTER_SECONDS: '3600' },
      'delivery.retry_schedule_seconds',
      'delivery.disable_after_seconds',
      /spans 99305 s, more than delivery\.disable_after_seconds \(3600\)/,
    ],
    [
      'more keys always kept than a feed may keep',
      { FEEDSUB_RETENTION_ENTRY_KEYS_PER_FEED: '20000' },
      'retention.entry_keys_per_feed',
      'retention.entry_keys_max_per_feed',
      /a feed keeps at most 10000 keys/,
    ],
    [
      'a burst set while the request rate limit is off',
      { FEEDSUB_QUOTAS_API_REQUESTS_PER_SECOND: '0', FEEDSUB_QUOTAS_API_BURST: '500' },
      'quotas.api_burst',
      'quotas.api_requests_per_second',
      /\(500\) has no effect/,
    ],
    [
      'a refill set while the failed-auth limit is off',
      {
        FEEDSUB_QUOTAS_FAILED_AUTH_PER_ADDRESS: '0',
        FEEDSUB_QUOTAS_FAILED_AUTH_REFILL_SECONDS: '5',
      },
      'quotas.failed_auth_refill_seconds',
      'quotas.failed_auth_per_address',
      /\(5\) has no effect/,
    ],
  ];
  for (const [what, env, key, by, message] of pairs) {
    it(`warns about ${what}, naming both keys`, () => {
      const warnings = configWarnings(loadConfig({ env }));
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      assert.equal(warnings[0]!.key, key);
      assert.equal(warnings[0]!.by, by);
      assert.ok(warnings[0]!.message.startsWith(key), warnings[0]!.message);
      assert.ok(warnings[0]!.message.includes(by), warnings[0]!.message);
      assert.match(warnings[0]!.message, message);
    });
  }

  it('says nothing at the boundaries, where neither key overrides the other', () => {
    const env = {
      FEEDSUB_POLL_INTERVAL_SECONDS: '60',
      FEEDSUB_POLL_CONNECT_TIMEOUT_SECONDS: '30',
      FEEDSUB_POLL_PER_HOST_CONCURRENCY: '16',
      FEEDSUB_DELIVERY_PER_ENDPOINT_CONCURRENCY: '32',
      FEEDSUB_DELIVERY_DISABLE_AFTER_SECONDS: '99305',
    };
    assert.deepEqual(configWarnings(loadConfig({ env })), []);
    const max = {
      FEEDSUB_POLL_INTERVAL_SECONDS: '3600',
      FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '3600',
    };
    assert.deepEqual(configWarnings(loadConfig({ env: max })), []);
  });

  it('says nothing about a switched-off limit whose companion keeps its default', () => {
    const env = {
      FEEDSUB_QUOTAS_API_REQUESTS_PER_SECOND: '0',
      FEEDSUB_QUOTAS_FAILED_AUTH_PER_ADDRESS: '0',
    };
    assert.deepEqual(configWarnings(loadConfig({ env })), []);
  });

  it('lists every override it finds, in a fixed order', () => {
    const env = {
      FEEDSUB_POLL_INTERVAL_SECONDS: '10',
      FEEDSUB_POLL_PER_HOST_CONCURRENCY: '20',
      FEEDSUB_DELIVERY_CONCURRENCY: '1',
    };
    assert.deepEqual(
      configWarnings(loadConfig({ env })).map((w) => w.key),
      ['poll.interval_seconds', 'poll.per_host_concurrency', 'delivery.per_endpoint_concurrency'],
    );
  });
});
