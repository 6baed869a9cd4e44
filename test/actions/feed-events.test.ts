// Which health events a stored poll makes: transitions, not states — each sent once per outage, move or hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { healthTransitions } from '../../src/actions/feed-events.ts';
import type { FeedRow } from '../../src/store/feeds.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const AT = new Date('2026-01-02T00:00:00.000Z');

function feed(extra: Partial<FeedRow> = {}): FeedRow {
  return {
    id: 'f'.repeat(24),
    url: 'https://example.com/feed.xml',
    credentials: null,
    credential_key: '',
    fetch_url: 'https://example.com/feed.xml',
    discovered_url: null,
    title: 'Example',
    site_url: 'https://example.com/',
    format: 'rss',
    status: 'active',
    baseline_at: T0,
    etag: null,
    last_modified: null,
    body_hash: null,
    last_polled_at: T0,
    last_success_at: T0,
    next_poll_at: T0,
    interval_seconds: 900,
    ttl_seconds: null,
    last_http_status: 200,
    error_count: 0,
    network_error_count: 0,
    http_error_count: 0,
    parse_error_count: 0,
    last_error: null,
    last_error_at: null,
    degraded: null,
    redirect_url: null,
    redirect_count: 0,
    entry_count: 3,
    hub_url: null,
    self_url: null,
    created_at: T0,
    updated_at: T0,
    identity_key: 'guid',
    identity_rotations: 0,
    held_dropped: 0,
    parser_version: 1,
    health_alert: null,
    health_alert_at: null,
    sole_application_id: null,
    stored_keys: 3,
    stored_bytes: 765,
    budget_held_at: null,
    ...extra,
  };
}

const failed = (n: number, extra: Partial<FeedRow> = {}) =>
  feed({
    status: 'error',
    error_count: n,
    last_error: 'fetch: the server answered 500',
    last_http_status: 500,
    last_error_at: AT.toISOString(),
    ...extra,
  });
const succeeded = (extra: Partial<FeedRow> = {}) =>
  feed({ last_success_at: AT.toISOString(), last_polled_at: AT.toISOString(), ...extra });
const alerted = (alert: 'failing' | 'gone', extra: Partial<FeedRow> = {}) => ({
  health_alert: alert,
  health_alert_at: '2026-01-01T12:00:00.000Z',
  ...extra,
});

describe('healthTransitions', () => {
  const cases: {
    name: string;
    before: FeedRow;
    after: FeedRow;
    types: string[];
    alert: FeedRow['health_alert'];
  }[] = [
    {
      name: 'a failure below poll.failing_after sends nothing',
      before: failed(1),
      after: failed(2),
      types: [],
      alert: null,
    },
    {
      name: 'the failure that reaches poll.failing_after sends feed.failing',
      before: failed(2),
      after: failed(3),
      types: ['feed.failing'],
      alert: 'failing',
    },
    {
      name: 'later failures of the same outage send nothing more',
      before: failed(3, alerted('failing')),
      after: failed(4, alerted('failing')),
      types: [],
      alert: 'failing',
    },
    {
      name: 'a run past the threshold without an alert (the option lowered) sends feed.failing once',
      before: failed(7),
      after: failed(8),
      types: ['feed.failing'],
      alert: 'failing',
    },
    {
      name: 'the first success after feed.failing sends feed.recovered and clears the alert',
      before: failed(5, alerted('failing')),
      after: succeeded(alerted('failing')),
      types: ['feed.recovered'],
      alert: null,
    },
    {
      name: 'a success after failures that never reached the threshold sends nothing',
      before: failed(2),
      after: succeeded(),
      types: [],
      alert: null,
    },
    {
      name: 'a throttled poll (no success, no failure) ends nothing',
      before: failed(3, alerted('failing')),
      after: failed(3, { ...alerted('failing'), last_http_status: 429 }),
      types: [],
      alert: 'failing',
    },
    {
      name: '410 sends feed.gone, even from a failing feed',
      before: failed(4, alerted('failing')),
      after: feed({ status: 'gone', last_http_status: 410, ...alerted('failing') }),
      types: ['feed.gone'],
      alert: 'gone',
    },
    {
      name: 'a gone feed refreshed and gone again sends nothing more',
      before: feed({ status: 'error', last_http_status: 410, ...alerted('gone') }),
      after: feed({ status: 'gone', last_http_status: 410, ...alerted('gone') }),
      types: [],
      alert: 'gone',
    },
    {
      name: 'a gone feed refreshed that fails otherwise is not announced as failing too',
      before: feed({ status: 'error', error_count: 5, ...alerted('gone') }),
      after: failed(6, alerted('gone')),
      types: [],
      alert: 'gone',
    },
    {
      name: 'a gone feed refreshed that answers a feed again sends feed.recovered',
      before: feed({ status: 'error', last_http_status: 410, ...alerted('gone') }),
      after: succeeded(alerted('gone')),
      types: ['feed.recovered'],
      alert: null,
    },
    {
      name: 'permanent redirects that move the URL fetched send feed.moved',
      before: feed({ redirect_url: 'https://new.example/feed', redirect_count: 2 }),
      after: succeeded({ fetch_url: 'https://new.example/feed' }),
      types: ['feed.moved'],
      alert: null,
    },
    {
      name: 'a feed discovered behind a web page is not a move',
      before: feed({ status: 'pending', last_success_at: null }),
      after: succeeded({
        fetch_url: 'https://example.com/real.xml',
        discovered_url: 'https://example.com/real.xml',
      }),
      types: [],
      alert: null,
    },
    {
      name: 'a recovery that also completes a move sends both, recovery first',
      before: failed(3, alerted('failing')),
      after: succeeded({ fetch_url: 'https://new.example/feed', ...alerted('failing') }),
      types: ['feed.recovered', 'feed.moved'],
      alert: null,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { transitions, alert } = healthTransitions(c.before, c.after, 3, AT);
      assert.deepEqual(
        transitions.map((t) => t.event.type),
        c.types,
      );
      assert.equal(alert.health_alert, c.alert);
    });
  }

  it('feed.failing carries the run, the last error and HTTP status, and goes to subscriptions existing when the fetch began', () => {
    const { transitions, alert } = healthTransitions(failed(2), failed(3), 3, AT);
    assert.deepEqual(transitions, [
      {
        event: {
          type: 'feed.failing',
          consecutive_failures: 3,
          last_error: 'fetch: the server answered 500',
          last_http_status: 500,
          last_error_at: AT.toISOString(),
          last_success_at: T0,
          next_poll_at: T0,
        },
        since: AT.toISOString(),
      },
    ]);
    assert.deepEqual(alert, { health_alert: 'failing', health_alert_at: AT.toISOString() });
  });

  it('feed.recovered names the alert it ends and goes only to subscriptions that existed when that was sent', () => {
    const before = failed(4, alerted('failing'));
    const { transitions } = healthTransitions(before, succeeded(alerted('failing')), 3, AT);
    assert.deepEqual(transitions, [
      {
        event: {
          type: 'feed.recovered',
          recovered_from: 'feed.failing',
          alerted_at: '2026-01-01T12:00:00.000Z',
          consecutive_failures: 4,
          last_error: 'fetch: the server answered 500',
          last_http_status: 200,
        },
        since: '2026-01-01T12:00:00.000Z',
      },
    ]);
  });

  it('feed.moved names the URL it left and the one it fetches now', () => {
    const { transitions } = healthTransitions(
      feed(),
      succeeded({ fetch_url: 'https://new.example/feed' }),
      3,
      AT,
    );
    assert.deepEqual(transitions[0]!.event, {
      type: 'feed.moved',
      from: 'https://example.com/feed.xml',
      to: 'https://new.example/feed',
    });
  });
});
