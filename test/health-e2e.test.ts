// Feed-health events end to end through the real `feedsub serve`: a scripted origin fails, answers 410, redirects
// permanently and churns its guids; the poller and the deliverer bring each event to a real receiver, signed, in the
// entries envelope with the subscription's metadata byte for byte, in sequence order; filter_types leaves the rest out.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifySignature } from '../src/webhook/sign.ts';
import { until } from './support/deadline.ts';
import { startServed, type Served } from './support/served.ts';
import {
  rss,
  type Delivery,
  type Origin,
  type OriginFeed,
  type Receiver,
} from './support/servers.ts';

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_FAILING_AFTER: '3',
  FEEDSUB_DELIVERY_RETRY_SCHEDULE_SECONDS: '1,1,1',
};
// Every wait below is bounded by this: a handful of 1-second polls, far from any fallback timer of the loops.
const WAIT_MS = 20_000;

type Envelope = {
  type: string;
  schema_version: number;
  timestamp: string;
  data: Record<string, unknown> & {
    sequence: number;
    subscription: { id: string; url: string };
    feed: { id: string; status: string; feed_url: string };
  };
};
type Sub = { id: string; feed: string; secret: string; metadata: string };

const doc = (...guids: string[]): OriginFeed => ({ body: rss(guids.map((guid) => ({ guid }))) });
const fail = (status: number): OriginFeed => ({ body: `status ${status}`, status });

describe('end to end: feed-health events through feedsub serve', { concurrency: true }, () => {
  let w: Served;
  let origin: Origin;
  let receiver: Receiver;
  let n = 0;

  before(async () => {
    w = await startServed('health', ENV);
    ({ origin, receiver } = w);
  });
  after(async () => {
    await w?.close();
  });

  /** One API request with the key: its status and parsed body. `body` is sent as written. */
  const api = (method: string, path: string, body?: string) => w.call(method, path, body);
  /** A new endpoint (optionally filtered) subscribed to `path` with metadata written as `metadata`, byte for byte. */
  async function subscribe(path: string, metadata: string, filter = 'null'): Promise<Sub> {
    const ep = await api(
      'POST',
      '/v1/endpoints',
      `{"title":"h","url":"${receiver.url}/${++n}","filter_types":${filter}}`,
    );
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const sub = await api(
      'POST',
      '/v1/subscriptions',
      `{"endpoint":"${ep.body.id}","url":"${origin.url}${path}","metadata":${metadata}}`,
    );
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    return { id: sub.body.id, feed: sub.body.feed, secret: ep.body.secret, metadata };
  }
  const deliveriesOf = (sub: Sub): Delivery[] => {
    const seen = new Set<string>();
    return receiver.deliveries.filter((d) => {
      const mine = (JSON.parse(d.body) as Envelope).data.subscription?.id === sub.id;
      if (!mine || seen.has(d.id)) return false; // at least once: a repeat has the same webhook-id
      seen.add(d.id);
      return true;
    });
  };
  /** Waits until the subscription received `types`, in this order, and checks every delivery as a receiver would. */
  async function received(sub: Sub, types: string[]): Promise<Envelope[]> {
    await until(
      () => deliveriesOf(sub).length >= types.length,
      WAIT_MS,
      `${types.join(', ')} delivered`,
    );
    const got = deliveriesOf(sub);
    assert.deepEqual(
      got.map((d) => (JSON.parse(d.body) as Envelope).type),
      types,
    );
    return got.map((d, i) => checked(sub, d, i + 1));
  }
  function checked(sub: Sub, d: Delivery, sequence: number): Envelope {
    assert.ok(
      verifySignature(sub.secret, d.id, Number(d.timestamp), d.body, d.signature),
      'signature verifies',
    );
    const body = JSON.parse(d.body) as Envelope;
    assert.deepEqual(Object.keys(body), ['type', 'schema_version', 'timestamp', 'data']);
    assert.equal(body.schema_version, 2);
    assert.equal(body.data.sequence, sequence, 'sequence 1, 2, 3… across every type');
    const keys = Object.keys(body.data);
    assert.deepEqual(keys.slice(0, 3), ['sequence', 'subscription', 'feed']);
    assert.equal(keys.at(-1), 'metadata');
    assert.ok(d.body.endsWith(`"metadata":${sub.metadata}}}`), 'data.metadata byte for byte');
    assert.ok(d.body.includes(`"metadata":${sub.metadata}},"`), 'subscription.metadata too');
    assert.equal(body.data.feed.id, sub.feed);
    return body;
  }
  async function feedUntil(sub: Sub, test: (f: any) => boolean, what: string): Promise<any> {
    let feed: unknown;
    await until(
      async () => test((feed = (await api('GET', `/v1/feeds/${sub.feed}`)).body)),
      WAIT_MS,
      `feed ${what}`,
      100,
    );
    return feed;
  }

  it('sends feed.failing after poll.failing_after failures, then the new entries and feed.recovered', async () => {
    origin.script('/flaky.xml', [doc('a'), fail(500), fail(502), fail(500), doc('b', 'a')]);
    const sub = await subscribe('/flaky.xml', '{"user":42,"ratio":1.50,"tags":["x"]}');
    const [failing, entries, recovered] = await received(sub, [
      'feed.failing',
      'subscription.entries',
      'feed.recovered',
    ]);
    assert.equal(failing!.data.consecutive_failures, 3);
    assert.equal(failing!.data.last_http_status, 500);
    assert.equal(failing!.data.feed.status, 'error');
    assert.deepEqual(
      (entries!.data.entries as { guid: string }[]).map((e) => e.guid),
      ['b'],
    );
    assert.equal(recovered!.data.recovered_from, 'feed.failing');
    assert.equal(recovered!.data.feed.status, 'active');
    const failingFeeds = await api('GET', '/v1/feeds?status=failing');
    assert.ok(!failingFeeds.body.data.some((f: { id: string }) => f.id === sub.feed));
  });

  it('sends feed.gone on 410 (only feed.gone to an endpoint that filters for it); a refresh brings feed.recovered', async () => {
    origin.script('/gone.xml', [doc('a'), fail(410)]);
    const sub = await subscribe('/gone.xml', '{"z":"last","a":"first"}');
    const goneOnly = await subscribe('/gone.xml', '{"n":2.0}', '["feed.gone"]');
    const [gone] = await received(sub, ['feed.gone']);
    assert.equal(gone!.data.last_http_status, 410);
    assert.equal(gone!.data.feed.status, 'gone');
    const listed = await api('GET', '/v1/feeds?status=failing');
    assert.ok(listed.body.data.some((f: { id: string }) => f.id === sub.feed));
    origin.set('/gone.xml', doc('b', 'a'));
    // Within poll.min_interval_seconds (1 s) of the 410 a refresh is refused with 429: ask until it is accepted.
    let refreshed: { status: number; body: any } = { status: 0, body: null };
    await until(
      async () => (refreshed = await api('POST', `/v1/feeds/${sub.feed}/refresh`)).status === 202,
      WAIT_MS,
      'refresh accepted',
      250,
    );
    assert.equal(refreshed.body.status, 'error', 'polled again until the fetch answers');
    const [, entries, recovered] = await received(sub, [
      'feed.gone',
      'subscription.entries',
      'feed.recovered',
    ]);
    assert.equal(recovered!.data.recovered_from, 'feed.gone');
    assert.equal((entries!.data.entries as unknown[]).length, 1);
    await received(goneOnly, ['feed.gone']);
    const events = await api('GET', `/v1/events?subscription=${goneOnly.id}`);
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['feed.gone'],
      'the other types were never created for the filtered endpoint',
    );
  });

  it('sends feed.moved when three permanent redirects in a row move the URL fetched', async () => {
    origin.set('/new.xml', doc('a'));
    origin.script('/old.xml', [
      doc('a'),
      { body: '', status: 301, headers: { location: `${origin.url}/new.xml` } },
    ]);
    const sub = await subscribe('/old.xml', 'null');
    const [moved] = await received(sub, ['feed.moved']);
    assert.equal(moved!.data.from, `${origin.url}/old.xml`);
    assert.equal(moved!.data.to, `${origin.url}/new.xml`);
    assert.equal(moved!.data.feed.feed_url, `${origin.url}/new.xml`);
    const f = await feedUntil(sub, (x) => x.feed_url.endsWith('/new.xml'), 'moved');
    assert.equal(f.status, 'active');
  });

  it('sends feed.identity_hold once when the churn guard holds entries, with how to release them', async () => {
    const many = (prefix: string) => doc(...Array.from({ length: 12 }, (_, i) => `${prefix}-${i}`));
    origin.script('/churn.xml', [many('old'), many('new')]);
    const sub = await subscribe('/churn.xml', '{"feed":"churn"}');
    const [hold] = await received(sub, ['feed.identity_hold']);
    assert.equal(hold!.data.held_entries, 12);
    assert.equal(hold!.data.feed.status, 'identity_changed');
    const release = hold!.data.release as { method: string; path: string };
    const res = await api(release.method, release.path, '{"action":"deliver"}');
    assert.equal(res.status, 200);
    await received(sub, ['feed.identity_hold', 'subscription.entries']);
  });
});
