// The entry history end to end through the real `feedsub serve`: a backfill reaches a new subscription first, marked,
// then new entries as usual; an updated entry reaches only the subscription that opted in; the entries list shows the
// feed as webhooks do; the trace tells a delivered entry from a baseline one and one seen while paused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from './support/deadline.ts';
import { startServed, type Served } from './support/served.ts';
import type { Origin, Receiver } from './support/servers.ts';

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
};
// Every wait below is bounded by this: a handful of 1-second polls, far from any fallback timer of the loops.
const WAIT_MS = 20_000;

type Payload = {
  type: string;
  data: {
    sequence: number;
    backfill?: boolean;
    subscription: { id: string };
    entries: { id: string; guid: string; title: string }[];
  };
};

/** An RSS document; each item has a link and a date, so a new title is an update, not another entry. */
const doc = (...items: [guid: string, title?: string][]) => ({
  body: `<?xml version="1.0"?><rss version="2.0"><channel><title>H</title><link>http://example.com/</link>${items
    .map(
      ([guid, title]) =>
        `<item><guid>${guid}</guid><title>${title ?? guid}</title><link>http://example.com/${guid}</link><pubDate>Thu, 01 Jan 2026 00:00:00 GMT</pubDate></item>`,
    )
    .join('')}</channel></rss>`,
});

describe('end to end: entry history through feedsub serve', () => {
  let w: Served;
  let origin: Origin;
  let receiver: Receiver;
  let n = 0;

  before(async () => {
    w = await startServed('history', ENV);
    ({ origin, receiver } = w);
  });
  after(async () => {
    await w?.close();
  });

  /** One API request with the key that must succeed: its parsed body. */
  async function api(method: string, path: string, body?: unknown): Promise<any> {
    const res = await w.call(method, path, body);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }
  async function subscribe(path: string, extra: Record<string, unknown> = {}) {
    const ep = await api('POST', '/v1/endpoints', { title: 'h', url: `${receiver.url}/${++n}` });
    return (await api('POST', '/v1/subscriptions', {
      endpoint: ep.id,
      url: origin.url + path,
      ...extra,
    })) as { id: string; feed: string };
  }
  /** What the subscription received, once per webhook-id, in arrival order. */
  const received = (sub: { id: string }): Payload[] => {
    const seen = new Set<string>();
    return receiver.deliveries.flatMap((d) => {
      const body = JSON.parse(d.body) as Payload;
      if (body.data.subscription?.id !== sub.id || seen.has(d.id)) return [];
      seen.add(d.id);
      return [body];
    });
  };
  const receivedAtLeast = (sub: { id: string }, count: number, what: string) =>
    until(() => received(sub).length >= count, WAIT_MS, what);
  const trace = (sub: { id: string }, entry: string) =>
    api('GET', `/v1/subscriptions/${sub.id}/trace?entry=${encodeURIComponent(entry)}`);

  it('backfills, sends updates to the subscription that asked, lists entries and traces them', async () => {
    const path = '/history.xml';
    origin.set(path, doc(['c'], ['b'], ['a']));
    const first = await subscribe(path, { updates: true });
    await until(
      async () => (await api('GET', `/v1/subscriptions/${first.id}/entries`)).data.length === 3,
      WAIT_MS,
      'the baseline stored',
    );
    const late = await subscribe(path, { backfill: 2 });
    const paused = await subscribe(path);
    await api('PATCH', `/v1/subscriptions/${paused.id}`, { status: 'paused' });
    await receivedAtLeast(late, 1, 'the backfill delivered');
    assert.deepEqual(
      received(late).map((p) => [
        p.type,
        p.data.sequence,
        p.data.backfill,
        p.data.entries.map((e) => e.guid),
      ]),
      [['subscription.entries', 1, true, ['b', 'c']]],
    );

    origin.set(path, doc(['d'], ['c', 'C, corrected'], ['b'], ['a']));
    await receivedAtLeast(first, 2, 'the new entry and the update delivered');
    await receivedAtLeast(late, 2, 'the new entry delivered after the backfill');
    const types = received(first).map((p) => [p.type, p.data.entries.map((e) => e.title)]);
    assert.deepEqual(
      types.sort(),
      [
        ['subscription.entries', ['d']],
        ['subscription.entries_updated', ['C, corrected']],
      ].sort(),
    );
    assert.deepEqual(
      received(late).map((p) => p.type),
      ['subscription.entries', 'subscription.entries'],
      'no update for the one that did not ask',
    );
    assert.equal(received(late)[1]!.data.backfill, undefined);

    const list = await api('GET', `/v1/subscriptions/${late.id}/entries?limit=2`);
    assert.deepEqual(
      list.data.map((e: { guid: string; title: string }) => [e.guid, e.title]),
      [
        ['d', 'd'],
        ['c', 'C, corrected'],
      ],
    );
    const delivered = received(first).find((p) => p.type === 'subscription.entries')!;
    assert.deepEqual(list.data[0], delivered.data.entries[0], 'as the webhook showed it');

    await until(
      async () => (await trace(first, 'd')).decision === 'delivered',
      WAIT_MS,
      'the trace sees the delivery',
    );
    const sent = await trace(first, 'd');
    assert.equal(sent.events[0].status, 'delivered');
    assert.equal(sent.events[0].attempts[0].status_code, 200);
    assert.equal((await trace(first, 'a')).decision, 'baseline');
    assert.equal((await trace(late, 'b')).decision, 'delivered', 'by the backfill');
    assert.equal((await trace(late, 'b')).events[0].backfill, true);
    const missed = await trace(paused, 'd');
    assert.equal(missed.decision, 'paused', missed.reason);
    assert.equal(missed.subscription.pauses.length, 1);
  });
});
