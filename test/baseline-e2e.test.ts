// The baseline rule end to end (the real `feedsub serve`, a local origin, a local receiver): a subscription receives
// only entries first seen after it was created, and a feed that resumes after a time with no active subscription
// takes a fresh baseline. One test per way the old entries used to reach a new subscription.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig } from '../src/config.ts';
import { quietCtx } from '../src/context.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { startDaemon, type Daemon } from './support/daemon.ts';
import { startGatedOrigin, type GatedOrigin } from './support/gated-origin.ts';
import { rss, startReceiver, type Receiver } from './support/servers.ts';
import { apiCaller } from './support/subscriber.ts';

type Payload = {
  type: string;
  data: { sequence: number; subscription: { id: string }; entries: { guid: string }[] };
};

// Each test has its own feed path, endpoints and subscriptions, and reads only its own subscriptions' events: they run
// at once.
describe('end to end: the baseline rule', { concurrency: true }, () => {
  let origin: GatedOrigin;
  let receiver: Receiver;
  let daemon: Daemon;
  let key: string;
  let dir: string;
  let n = 0;

  before(async () => {
    origin = await startGatedOrigin();
    receiver = await startReceiver();
    dir = mkdtempSync(join(tmpdir(), 'feedsub-baseline-'));
    const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
    key = (await createKey(quietCtx(store, systemClock, defaultConfig()), 'baseline', null)).key;
    await store.close();
    daemon = await startDaemon({
      dataDir: dir,
      env: {
        FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
        FEEDSUB_POLL_INTERVAL_SECONDS: '1',
        FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
        FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
        // Every feed is on one origin: the default two polls per host would queue the tests' polls, and two tests
        // hold a fetch in flight at times.
        FEEDSUB_POLL_PER_HOST_CONCURRENCY: '16',
      },
    });
  });
  after(async () => {
    await daemon?.stop();
    await origin.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = apiCaller(
    () => daemon.url,
    () => key,
  );
  /** A new endpoint subscribed to `path`; returns the subscription. */
  async function subscribe(
    path: string,
  ): Promise<{ id: string; feed: string; created_at: string }> {
    const ep = await api('POST', '/v1/endpoints', { title: 't', url: `${receiver.url}/${++n}` });
    return api('POST', '/v1/subscriptions', { endpoint: ep.id, url: origin.url + path });
  }
  /** Polls the feed view until `test` holds (15 s at most). */
  async function feedUntil(id: string, test: (f: any) => boolean, what: string): Promise<any> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const f = await api('GET', `/v1/feeds/${id}`);
      if (test(f)) return f;
      if (Date.now() > deadline) throw new Error(`feed never ${what}: ${JSON.stringify(f)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  /** Waits for a poll that started after `since` (an ISO time) to be recorded. */
  const polledAfter = (feed: string, since: string) =>
    feedUntil(feed, (f) => f.last_polled_at !== null && f.last_polled_at > since, 'polled');
  // The entries events (a churn hold also sends feed.identity_hold, which carries none).
  const eventsOf = (sub: string) =>
    receiver.deliveries
      .map((d) => JSON.parse(d.body) as Payload)
      .filter((p) => p.data.subscription.id === sub && p.type === 'subscription.entries');
  /** The first event a subscription receives: its sequence and the guids it carries. */
  async function firstEventOf(sub: string): Promise<{ sequence: number; guids: string[] }> {
    const deadline = Date.now() + 15_000;
    while (eventsOf(sub).length === 0) {
      if (Date.now() > deadline) throw new Error(`no event reached subscription ${sub}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const first = eventsOf(sub)[0]!;
    return { sequence: first.data.sequence, guids: first.data.entries.map((e) => e.guid) };
  }
  const items = (...ids: number[]) => rss(ids.map((i) => ({ guid: `g${i}` })));

  it('a subscription created after the last one was deleted receives none of the entries published between', async () => {
    const path = '/deleted.xml';
    origin.set(path, items(1));
    const a = await subscribe(path);
    await feedUntil(a.feed, (f) => f.entry_count === 1, 'baselined');
    await api('DELETE', `/v1/subscriptions/${a.id}`);
    origin.set(path, items(4, 3, 2, 1)); // three entries while nobody subscribes
    const b = await subscribe(path);
    assert.equal(b.feed, a.feed, 'the same feed record');
    await polledAfter(b.feed, b.created_at);
    origin.set(path, items(5, 4, 3, 2, 1));
    assert.deepEqual(await firstEventOf(b.id), { sequence: 1, guids: ['g5'] });
  });

  it('a feed whose only subscription was paused takes a fresh baseline when it is resumed', async () => {
    const path = '/paused.xml';
    origin.set(path, items(1));
    const a = await subscribe(path);
    await feedUntil(a.feed, (f) => f.entry_count === 1, 'baselined');
    const paused = await api('PATCH', `/v1/subscriptions/${a.id}`, { status: 'paused' });
    origin.set(path, items(4, 3, 2, 1));
    const b = await subscribe(path); // a second subscriber arrives while the first is paused
    await polledAfter(b.feed, b.created_at);
    const resumed = await api('PATCH', `/v1/subscriptions/${a.id}`, { status: 'active' });
    assert.ok(resumed.updated_at > paused.updated_at);
    origin.set(path, items(5, 4, 3, 2, 1));
    assert.deepEqual(await firstEventOf(b.id), { sequence: 1, guids: ['g5'] });
    assert.deepEqual(await firstEventOf(a.id), { sequence: 1, guids: ['g5'] });
  });

  it('the only subscription paused and resumed: entries published meanwhile are not sent', async () => {
    const path = '/resumed.xml';
    origin.set(path, items(1));
    const a = await subscribe(path);
    await feedUntil(a.feed, (f) => f.entry_count === 1, 'baselined');
    await api('PATCH', `/v1/subscriptions/${a.id}`, { status: 'paused' });
    origin.set(path, items(4, 3, 2, 1));
    const resumed = await api('PATCH', `/v1/subscriptions/${a.id}`, { status: 'active' });
    await polledAfter(a.feed, resumed.updated_at);
    origin.set(path, items(5, 4, 3, 2, 1));
    assert.deepEqual(await firstEventOf(a.id), { sequence: 1, guids: ['g5'] });
  });

  it('a subscription swapped for another while a fetch is in flight gets nothing from that fetch', async () => {
    const path = '/inflight.xml';
    origin.set(path, items(1));
    const a = await subscribe(path);
    await feedUntil(a.feed, (f) => f.entry_count === 1, 'baselined');
    const gate = origin.hold(path);
    origin.set(path, items(4, 3, 2, 1));
    await gate.arrived; // the poller is fetching the three new entries for A…
    await api('DELETE', `/v1/subscriptions/${a.id}`);
    const b = await subscribe(path); // …while A goes and B comes
    gate.release();
    await polledAfter(b.feed, b.created_at);
    origin.set(path, items(5, 4, 3, 2, 1));
    assert.deepEqual(await firstEventOf(b.id), { sequence: 1, guids: ['g5'] });
  });

  it('a subscription created while a fetch is in flight gets nothing from that fetch; the others do', async () => {
    const path = '/joined.xml';
    origin.set(path, items(1));
    const a = await subscribe(path);
    await feedUntil(a.feed, (f) => f.entry_count === 1, 'baselined');
    const gate = origin.hold(path);
    origin.set(path, items(2, 1));
    await gate.arrived;
    const b = await subscribe(path);
    gate.release();
    assert.deepEqual(await firstEventOf(a.id), { sequence: 1, guids: ['g2'] });
    await polledAfter(b.feed, b.created_at);
    origin.set(path, items(3, 2, 1));
    assert.deepEqual(await firstEventOf(b.id), { sequence: 1, guids: ['g3'] });
  });

  it('entries held by the churn guard are not sent to a subscription created after they were held', async () => {
    const path = '/held.xml';
    const many = (prefix: string, extra: number[] = []) =>
      rss([
        ...extra.map((i) => ({ guid: `g${i}` })),
        ...Array.from({ length: 12 }, (_, i) => ({ guid: `${prefix}-${i}` })),
      ]);
    origin.set(path, many('old'));
    const a = await subscribe(path);
    await feedUntil(a.feed, (f) => f.entry_count === 12, 'baselined');
    origin.set(path, many('new')); // every guid regenerated: held
    await feedUntil(a.feed, (f) => f.status === 'identity_changed', 'held');
    const b = await subscribe(path);
    const released = await api('POST', `/v1/feeds/${a.feed}/accept-identity-change`, {
      action: 'deliver',
    });
    assert.equal(released.released, 12);
    assert.equal(
      released.events,
      1,
      'one event, for the subscription that existed when they were held',
    );
    const first = await firstEventOf(a.id);
    assert.equal(first.guids.length, 12);
    origin.set(path, many('new', [13]));
    assert.deepEqual(await firstEventOf(b.id), { sequence: 1, guids: ['g13'] });
  });
});
