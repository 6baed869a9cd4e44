import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';
import { subscriber } from '../../support/subscriber.ts';
import { makeWorld, type World } from '../../support/world.ts';

type EventRow = { id: string; subscription_id: string; sequence: number; body: string };

describe('poller', () => {
  let origin: Origin;
  let w: World;
  let workers: Workers;
  let key: string;
  let endpoint: string;
  let n = 0;
  before(async () => {
    origin = await startOrigin();
  });
  after(() => origin.close());
  beforeEach(async () => {
    await w?.close();
    await workers?.close();
    w = makeWorld({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
    });
    workers = createWorkers(w.ctx, silentLogger);
    key = (await w.key()).key;
    endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://hooks.example.com/' },
      })
    ).body.id;
  });
  after(async () => {
    await w.close();
    await workers.close();
  });

  const path = () => `/p${++n}.xml`;
  const items = (...ids: number[]) =>
    ids.map((i) => ({ guid: `g${i}`, title: `Item ${i}`, link: `http://example.com/${i}` }));
  const subscribe = async (url: string, ep = endpoint) =>
    (await w.call('POST', '/v1/subscriptions', { key, body: { endpoint: ep, url } })).body as {
      id: string;
      feed: string;
    };
  const tick = () => pollTick(w.ctx, workers.pollerDeps);
  const later = async () => {
    w.clock.advance(2 * 3600 * 1000);
    return tick();
  };
  const events = async (): Promise<EventRow[]> =>
    (await w.ctx.db.all(
      'SELECT id, subscription_id, sequence, body FROM events JOIN event_bodies ON event_id = id ORDER BY sequence',
    )) as EventRow[];
  const guidsOf = (e: EventRow) =>
    (JSON.parse(e.body) as { data: { entries: { guid: string }[] } }).data.entries.map(
      (x) => x.guid,
    );
  const feedOf = async (id: string) => (await getFeed(w.ctx.db, id))!;
  const types = async () =>
    (await events()).map((e) => (JSON.parse(e.body) as { type: string }).type);

  it('records the first fetch as the baseline and sends nothing', async () => {
    const p = path();
    origin.set(p, { body: rss(items(3, 2, 1)) });
    const sub = await subscribe(origin.url + p);
    const { summary } = await tick();
    assert.deepEqual(summary, { fetched: 1, notModified: 0, failed: 0, newEntries: 0, events: 0 });
    assert.equal((await events()).length, 0);
    const f = await feedOf(sub.feed);
    assert.equal(f.status, 'active');
    assert.equal(f.entry_count, 3);
    assert.equal(f.title, 'Test feed');
    assert.ok(f.baseline_at);
  });

  it('queues one event with only the new entries, oldest first, and numbers events 1, 2, 3 per subscription', async () => {
    const p = path();
    origin.set(p, { body: rss(items(1)) });
    const sub = await subscribe(origin.url + p);
    await tick();
    origin.set(p, { body: rss(items(3, 2, 1)) });
    assert.equal((await later()).summary.events, 1);
    origin.set(p, { body: rss(items(4, 3, 2, 1)) });
    await later();
    const all = await events();
    assert.deepEqual(
      all.map((e) => e.sequence),
      [1, 2],
    );
    assert.deepEqual(guidsOf(all[0]!), ['g2', 'g3']);
    assert.deepEqual(guidsOf(all[1]!), ['g4']);
    assert.ok(all.every((e) => e.subscription_id === sub.id));
  });

  it('answers a conditional GET with the stored ETag and skips the parse on 304', async () => {
    const p = path();
    origin.set(p, { body: rss(items(1)) });
    await subscribe(origin.url + p);
    await tick();
    const { summary } = await later();
    assert.equal(summary.notModified, 1);
    const last = origin.requests.filter((r) => r.path === p).at(-1)!;
    assert.match(String(last.headers['if-none-match']), /^"/);
  });

  it('treats a 200 with the same body as unchanged when the origin sends no validators', async () => {
    const p = path();
    origin.set(p, { body: rss(items(1)), etag: false });
    await subscribe(origin.url + p);
    await tick();
    assert.equal((await later()).summary.notModified, 1);
  });

  it('never resends an entry that dropped out of the feed and came back', async () => {
    const p = path();
    origin.set(p, { body: rss(items(2, 1)) });
    await subscribe(origin.url + p);
    await tick();
    origin.set(p, { body: rss(items(3, 2)) });
    await later();
    origin.set(p, { body: rss(items(3, 2, 1)) });
    await later();
    assert.deepEqual((await events()).map(guidsOf), [['g3']]);
  });

  it('gives a new subscription to a known feed only entries first seen after it was created', async () => {
    const p = path();
    origin.set(p, { body: rss(items(1)) });
    const first = await subscribe(origin.url + p);
    await tick();
    origin.set(p, { body: rss(items(2, 1)) });
    await later();
    const ep2 = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E2', url: 'https://two.example.com/' },
      })
    ).body.id;
    const second = await subscribe(origin.url + p, ep2);
    assert.equal(second.feed, first.feed);
    origin.set(p, { body: rss(items(3, 2, 1)) });
    await later();
    const bySub = async (id: string) =>
      (await events()).filter((e) => e.subscription_id === id).map(guidsOf);
    assert.deepEqual(await bySub(first.id), [['g2'], ['g3']]);
    assert.deepEqual(await bySub(second.id), [['g3']]);
  });

  it('sends nothing to a paused subscription', async () => {
    const p = path();
    origin.set(p, { body: rss(items(1)) });
    const sub = await subscribe(origin.url + p);
    await tick();
    await w.call('PATCH', `/v1/subscriptions/${sub.id}`, { key, body: { status: 'paused' } });
    origin.set(p, { body: rss(items(2, 1)) });
    await later();
    assert.equal((await events()).length, 0);
  });

  it('holds a mass change of GUIDs, reports identity_changed, and releases the held entries on request', async () => {
    const p = path();
    const many = (prefix: string) =>
      Array.from({ length: 12 }, (_, i) => ({ guid: `${prefix}-${i}`, title: `T${i}` }));
    origin.set(p, { body: rss(many('old')) });
    const sub = await subscribe(origin.url + p);
    await tick();
    origin.set(p, { body: rss(many('new')) });
    await later();
    assert.deepEqual(
      await types(),
      ['feed.identity_hold'],
      'no entry is sent, the hold is announced',
    );
    const held = await w.call('GET', `/v1/feeds/${sub.feed}`, { key });
    assert.equal(held.body.status, 'identity_changed');
    assert.equal(held.body.held_entries, 12);
    await later();
    assert.equal(
      (await w.call('GET', `/v1/feeds/${sub.feed}`, { key })).body.held_entries,
      12,
      'a later poll holds the same entries, not twice',
    );
    const bad = await w.call('POST', `/v1/feeds/${sub.feed}/accept-identity-change`, {
      key,
      body: { action: 'maybe' },
    });
    assert.equal(bad.status, 400);
    const res = await w.call('POST', `/v1/feeds/${sub.feed}/accept-identity-change`, {
      key,
      body: { action: 'deliver' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.released, 12);
    assert.equal(res.body.status, 'active');
    assert.deepEqual(await types(), ['feed.identity_hold', 'subscription.entries']);
    assert.equal(guidsOf((await events())[1]!).length, 12);
    assert.equal(
      (
        await w.call('POST', `/v1/feeds/${sub.feed}/accept-identity-change`, {
          key,
          body: { action: 'deliver' },
        })
      ).status,
      409,
    );
    await later();
    assert.equal((await events()).length, 2, 'released entries are known now');
  });

  it('keeps a held feed identity_changed through a failed poll, so its hold stays visible and releasable', async () => {
    const p = path();
    const many = (prefix: string) =>
      Array.from({ length: 12 }, (_, i) => ({ guid: `${prefix}-${i}`, title: `T${i}` }));
    origin.set(p, { body: rss(many('old')) });
    const sub = await subscribe(origin.url + p);
    await tick();
    origin.set(p, { body: rss(many('new')) });
    await later();
    assert.equal((await feedOf(sub.feed)).status, 'identity_changed');
    origin.set(p, { body: 'down', status: 500 });
    await later();
    assert.equal(
      (await feedOf(sub.feed)).status,
      'error',
      'a failing fetch is reported while it fails',
    );
    origin.set(p, { body: rss(many('new')) });
    await later();
    const view = (await w.call('GET', `/v1/feeds/${sub.feed}`, { key })).body;
    assert.equal(
      view.status,
      'identity_changed',
      'the hold is still there once fetching works again',
    );
    assert.equal(view.held_entries, 12);
    assert.deepEqual(
      await w.ctx.db.column('SELECT type FROM events WHERE subscription_id = ?', [sub.id]),
      ['feed.identity_hold'],
      'the hold is announced, once',
    );
  });

  it('discards held entries without sending them when asked', async () => {
    const p = path();
    const many = (prefix: string) =>
      Array.from({ length: 10 }, (_, i) => ({ guid: `${prefix}-${i}` }));
    origin.set(p, { body: rss(many('a')) });
    const sub = await subscribe(origin.url + p);
    await tick();
    origin.set(p, { body: rss(many('b')) });
    await later();
    const res = await w.call('POST', `/v1/feeds/${sub.feed}/accept-identity-change`, {
      key,
      body: { action: 'discard' },
    });
    assert.equal(res.body.events, 0);
    await later();
    assert.deepEqual(await types(), ['feed.identity_hold']);
  });

  it('polls a feed again at once when a refresh comes while its poll runs, though the poll set its next an interval on', async () => {
    const p = path();
    origin.set(p, { body: rss(items(1)) });
    const sub = await subscribe(origin.url + p);
    await tick();
    w.clock.advance(2 * 3600 * 1000);
    const held = origin.hold(p);
    const polling = tick();
    await held.arrived; // the fetch is in flight, leased
    const refreshedAt = w.clock.now().toISOString();
    const res = await w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key });
    assert.equal(res.status, 202);
    origin.set(p, { body: rss(items(1, 2)) }); // what the refresh says was published after the fetch began
    held.release();
    await polling;
    assert.equal(
      (await feedOf(sub.feed)).next_poll_at,
      refreshedAt,
      'due at the refresh, not an interval on',
    );
    await tick(); // no time passes: only a feed due now is polled
    assert.deepEqual(guidsOf((await events()).at(-1)!), ['g2']);
  });

  it('marks a feed gone on 410 and stops polling it', async () => {
    const p = path();
    origin.set(p, { body: rss(items(1)) });
    const sub = await subscribe(origin.url + p);
    await tick();
    origin.set(p, { body: 'gone', status: 410 });
    await later();
    assert.equal((await feedOf(sub.feed)).status, 'gone');
    const count = origin.requests.filter((r) => r.path === p).length;
    await later();
    assert.equal(origin.requests.filter((r) => r.path === p).length, count);
  });

  it('delays the next poll by Retry-After on 429 without counting an error', async () => {
    const p = path();
    origin.set(p, { body: 'slow down', status: 429, headers: { 'retry-after': '7200' } });
    const sub = await subscribe(origin.url + p);
    await tick();
    const f = await feedOf(sub.feed);
    assert.equal(f.error_count, 0);
    assert.equal(f.last_http_status, 429);
    const delay = (Date.parse(f.next_poll_at) - w.clock.now().getTime()) / 1000;
    assert.ok(delay >= 7200 * 0.9 && delay <= 7200 * 1.1, String(delay));
  });

  it('backs off exponentially on errors, counts them by kind, and keeps polling', async () => {
    const p = path();
    origin.set(p, { body: 'boom', status: 500 });
    const sub = await subscribe(origin.url + p);
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      await tick();
      const f = await feedOf(sub.feed);
      delays.push((Date.parse(f.next_poll_at) - w.clock.now().getTime()) / 1000);
      w.clock.set(f.next_poll_at);
    }
    const f = await feedOf(sub.feed);
    assert.equal(f.status, 'error');
    assert.equal(f.error_count, 4);
    assert.equal(f.http_error_count, 4);
    assert.match(f.last_error!, /500/);
    for (let i = 1; i < delays.length; i++)
      assert.ok(delays[i]! > delays[i - 1]!, `delays grow: ${delays.join(', ')}`);
    origin.set(p, { body: rss(items(1)) });
    await tick();
    assert.equal((await feedOf(sub.feed)).error_count, 0);
    assert.equal((await feedOf(sub.feed)).status, 'active');
  });

  it('moves the stored URL only after repeated permanent redirects, never on 302', async () => {
    const p = path();
    const target = path();
    origin.set(target, { body: rss(items(1)) });
    origin.set(p, { body: '', status: 302, headers: { location: target } });
    const sub = await subscribe(origin.url + p);
    for (let i = 0; i < 4; i++) await later();
    assert.equal((await feedOf(sub.feed)).fetch_url, origin.url + p);
    origin.set(p, { body: '', status: 301, headers: { location: target } });
    await later();
    await later();
    assert.equal((await feedOf(sub.feed)).fetch_url, origin.url + p);
    await later();
    assert.equal((await feedOf(sub.feed)).fetch_url, origin.url + target);
  });

  it('discovers the feed behind an HTML page and shows it on the subscription', async () => {
    const page = '/blog/index.html';
    const feedPath = path();
    origin.set(page, {
      body: `<!doctype html><html><head><link rel="alternate" type="application/rss+xml" href="${feedPath}"></head><body>hi</body></html>`,
      contentType: 'text/html',
    });
    origin.set(feedPath, { body: rss(items(1)) });
    const sub = await subscribe(origin.url + page);
    await tick();
    const got = await w.call('GET', `/v1/subscriptions/${sub.id}`, { key });
    assert.equal(got.body.url, origin.url + page);
    assert.equal(got.body.feed_url, origin.url + feedPath);
    assert.equal((await feedOf(sub.feed)).discovered_url, origin.url + feedPath);
    origin.set(feedPath, { body: rss(items(2, 1)) });
    await later();
    assert.deepEqual((await events()).map(guidsOf), [['g2']]);
  });
});

describe('poll --once (pollTick with all)', () => {
  let origin: Origin;
  before(async () => {
    origin = await startOrigin();
  });
  after(() => origin.close());

  /** A world with `count` feeds subscribed (/o<i>.xml), each polled once. */
  async function polledWorld(count: number) {
    const w = makeWorld({
      poll: {
        concurrency: 1,
        per_host_concurrency: 1,
        interval_seconds: 600,
        min_interval_seconds: 600,
        max_interval_seconds: 3600,
      },
    });
    const workers = createWorkers(w.ctx, silentLogger);
    const sub = await subscriber(w);
    const feeds: string[] = [];
    for (let i = 0; i < count; i++) {
      origin.set(`/o${i}.xml`, { body: rss([{ guid: `g${i}`, title: 'T', link: 'http://x/' }]) });
      feeds.push((await sub.subscribe(`${origin.url}/o${i}.xml`)).feed);
    }
    await pollTick(w.ctx, workers.pollerDeps, { all: true }); // the baselines, with an ETag each
    return {
      w,
      feeds,
      deps: workers.pollerDeps,
      close: async () => {
        await workers.close();
        await w.close();
      },
    };
  }

  it('polls a feed that waited past the queue limit for its slot, claimed afresh, before the round ends', async () => {
    const { w, feeds, deps, close } = await polledWorld(2);
    try {
      // One slot and one feed queued beside it: the first poll holds the slot past the queue's 5 s, so the pool drops
      // the queued feed and releases its lease.
      const holds = [origin.hold('/o0.xml'), origin.hold('/o1.xml')];
      const round = pollTick(w.ctx, deps, { all: true });
      await Promise.race(holds.map((h) => h.arrived));
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      for (const h of holds) h.release();
      const { summary } = await round;
      assert.equal(summary.fetched, 2, 'both feeds polled');
      for (const id of feeds)
        assert.equal((await getFeed(w.ctx.db, id))!.last_http_status, 304, `${id} polled`);
      const leases = await w.ctx.db.value('SELECT count(*) FROM feed_leases');
      assert.equal(Number(leases), 0, 'no lease left behind');
    } finally {
      await close();
    }
  });

  it("records a 304 of a feed not due yet without moving its due time, and moves a due one's by its interval", async () => {
    const { w, feeds, deps, close } = await polledWorld(2);
    try {
      const due = async (id: string) => (await getFeed(w.ctx.db, id))!.next_poll_at;
      const notYet = feeds[0]!;
      const onTime = feeds[1]!;
      const before = await due(notYet);
      w.clock.advance(60_000); // the first not due yet; the second made due now
      await w.ctx.db.run('UPDATE feeds SET next_poll_at = ? WHERE id = ?', [
        w.clock.now().toISOString(),
        onTime,
      ]);
      const onTimeDue = await due(onTime);
      await pollTick(w.ctx, deps, { all: true });
      const polled = (await getFeed(w.ctx.db, notYet))!;
      assert.equal(polled.last_http_status, 304);
      assert.equal(polled.last_polled_at, w.clock.now().toISOString(), 'the poll is recorded');
      assert.equal(polled.next_poll_at, before, 'its schedule is left as it was');
      assert.equal(
        await due(onTime),
        new Date(Date.parse(onTimeDue) + 600_000).toISOString(),
        'polled on time: due again one interval after it was due',
      );
    } finally {
      await close();
    }
  });
});
