import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { getRequestListener } from '@hono/node-server';
import { silentLogger } from '../../../src/log.ts';
import { deleteUnusedFeed, getFeed } from '../../../src/store/feeds.ts';
import { getWebSub } from '../../../src/store/websub-subscriptions.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { until } from '../../support/deadline.ts';
import { startOrigin, type Origin } from '../../support/servers.ts';
import { startHub, type Hub } from '../../support/websub-hub.ts';
import { subscriber, type Subscriber } from '../../support/subscriber.ts';
import { makeWorld, type World } from '../../support/world.ts';

const LEASE = 10_000;

/** An Atom feed with entries `ids`, advertising `hub` and `self` by atom:link. */
function atom(ids: number[], hub: string | null, self: string): string {
  const entries = ids
    .map(
      (i) =>
        `<entry><id>urn:e${i}</id><title>E${i}</title><updated>2026-01-0${i}T00:00:00Z</updated><link href="http://example.com/${i}"/></entry>`,
    )
    .join('');
  const hubLink = hub === null ? '' : `<link rel="hub" href="${hub}"/>`;
  return `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><id>urn:t</id><updated>2026-01-01T00:00:00Z</updated>${hubLink}<link rel="self" href="${self}"/>${entries}</feed>`;
}

describe('WebSub subscriber', () => {
  let origin: Origin;
  let hub: Hub;
  let callbackServer: Server;
  let publicUrl: string;
  let w: World;
  let workers: Workers;
  let app: Subscriber;
  let key: string;
  let n = 0;
  let world: { current?: World } = {};
  before(async () => {
    origin = await startOrigin();
    hub = await startHub();
    // The callback must be reachable by the hub: a real listener in front of each test's app.
    callbackServer = createServer(getRequestListener((req) => world.current!.app.fetch(req)));
    await new Promise<void>((r) => callbackServer.listen(0, '127.0.0.1', r));
    publicUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`;
  });
  after(async () => {
    callbackServer.closeAllConnections();
    await new Promise((r) => callbackServer.close(r));
    await hub.close();
    await origin.close();
  });
  beforeEach(async () => {
    hub.subscriptions.clear();
    hub.requests.length = 0;
    hub.verifications.length = 0;
    hub.mode = 'accept';
    hub.grantSeconds = null;
    w = makeWorld({
      server: { public_url: publicUrl },
      poll: {
        interval_seconds: 60,
        min_interval_seconds: 60,
        max_interval_seconds: 86_400,
        push_interval_seconds: 3600,
        push_lease_seconds: LEASE,
      },
    });
    world = { current: w };
    workers = createWorkers(w.ctx, silentLogger);
    app = await subscriber(w);
    key = app.key;
  });
  afterEach(async () => {
    await w.close();
    await workers.close();
  });

  /** One tick of the WebSub loop, and the requests it started, to their end. */
  const tick = async () => {
    await workers.webSubRequests.tick();
    await workers.webSubRequests.settled();
  };
  const poll = () => pollTick(w.ctx, workers.pollerDeps, { all: true });
  const entryEvents = async () =>
    (
      (await w.ctx.db.all(
        "SELECT body FROM events JOIN event_bodies ON event_id = id WHERE type = 'subscription.entries' ORDER BY sequence",
      )) as { body: string }[]
    ).flatMap((e) =>
      (JSON.parse(e.body) as { data: { entries: { guid: string }[] } }).data.entries.map(
        (x) => x.guid,
      ),
    );

  /** A feed at a fresh path whose document advertises `docHub` (and, with `link`, a Link header naming another self
   *  URL in the document), subscribed and polled once: its baseline, which records the hub and starts the WebSub
   *  subscription. */
  async function advertised(
    docHub: string | null,
    link?: (path: string) => string,
    ids = [1, 2],
  ): Promise<{ path: string; self: string; feed: string; sub: string }> {
    const path = `/w${++n}.xml`;
    const self = `${origin.url}${path}`;
    origin.set(path, {
      body: atom(ids, docHub, link ? `${origin.url}/doc-self` : self),
      contentType: 'application/atom+xml',
      headers: link ? { link: link(path) } : {},
    });
    const s = await app.subscribe(self);
    await poll();
    return { path, self, feed: s.feed, sub: s.id };
  }

  /** A feed advertising the hub, subscribed, polled once and verified at the hub. */
  async function pushed(): Promise<{ path: string; self: string; feed: string; sub: string }> {
    const made = await advertised(hub.url);
    assert.equal((await getWebSub(w.ctx.db, made.feed))?.status, 'subscribing');
    await tick();
    await until(
      async () =>
        (await getWebSub(w.ctx.db, made.feed))?.status === 'active' && hub.subscriptions.size === 1,
      2000,
      'verified',
    );
    return made;
  }

  it('subscribes at the hub a feed advertises; the verification of intent makes push active', async () => {
    const { self, feed } = await pushed();
    const req = hub.requests.find((r) => r.mode === 'subscribe')!;
    assert.equal(req.topic, self);
    assert.match(req.callback, new RegExp(`^${publicUrl}/websub/${feed}/[A-Za-z0-9_-]{43}$`));
    assert.equal(req.form.get('hub.lease_seconds'), String(LEASE));
    assert.equal(req.form.get('hub.secret')?.length, 64);
    const row = (await getWebSub(w.ctx.db, feed))!;
    assert.equal(row.pending, null);
    assert.equal(Date.parse(row.lease_expires_at!) - w.clock.now().getTime(), LEASE * 1000);
    const view = (await w.call('GET', `/v1/feeds/${feed}`, { key })).body;
    assert.deepEqual(view.push, {
      hub: hub.url,
      status: 'active',
      lease_expires_at: row.lease_expires_at,
      last_push_at: null,
    });
  });

  it('discovers the hub from the Link header, before the document', async () => {
    const { feed, self } = await advertised(
      'https://doc-hub.invalid/',
      (path) => `<${hub.url}>; rel="hub", <${path}>; rel="self"`,
    );
    const row = (await getWebSub(w.ctx.db, feed))!;
    assert.deepEqual([row.hub_url, row.topic_url], [hub.url, self]);
  });

  it('a signed distribution becomes one event, and polling the same document adds nothing', async () => {
    const { path, self, feed } = await pushed();
    const doc = atom([1, 2, 3], hub.url, self);
    assert.deepEqual(await hub.publish(self, doc), [202]);
    assert.deepEqual(await entryEvents(), ['urn:e3']);
    assert.ok((await getWebSub(w.ctx.db, feed))!.last_push_at);
    origin.set(path, { body: doc, contentType: 'application/atom+xml' });
    w.clock.advance(3 * 3600_000);
    await poll();
    assert.deepEqual(await entryEvents(), ['urn:e3']);
  });

  it('ignores content whose signature is wrong or missing, still answering 2xx', async () => {
    const { self } = await pushed();
    assert.deepEqual(
      await hub.publish(self, atom([1, 2, 4], hub.url, self), { forge: true }),
      [202],
    );
    assert.deepEqual(
      await hub.publish(self, atom([1, 2, 5], hub.url, self), { unsigned: true }),
      [202],
    );
    assert.deepEqual(await entryEvents(), []);
    assert.deepEqual(
      await hub.publish(self, atom([1, 2, 6], hub.url, self), { algorithm: 'sha512' }),
      [202],
    );
    assert.deepEqual(await entryEvents(), ['urn:e6']);
  });

  it('polls at the slower push schedule while push is active', async () => {
    const { feed } = await pushed();
    w.clock.advance(120_000);
    await poll();
    const f = (await getFeed(w.ctx.db, feed))!;
    assert.equal(f.interval_seconds, 3600);
    assert.ok(Date.parse(f.next_poll_at) - w.clock.now().getTime() >= 3600 * 900);
  });

  it('renews the lease at 80 % of it, on a new callback; the one it replaces answers 410 once the renewal is verified', async () => {
    const { feed, self } = await pushed();
    const first = (await getWebSub(w.ctx.db, feed))!;
    assert.equal(Date.parse(first.next_action_at) - w.clock.now().getTime(), LEASE * 800);
    w.clock.advance(LEASE * 800 - 1000);
    await tick();
    assert.equal(hub.requests.length, 1, 'nothing sent before 80 % of the lease');
    w.clock.advance(1000);
    hub.mode = 'silent';
    await tick();
    const [old, renewal] = hub.requests.map((r) => r.callback);
    assert.notEqual(renewal, old, 'a renewal names a new callback (§5.1.1)');
    // Until the hub verifies the renewal, its pushes to the verified callback are taken.
    assert.deepEqual(await hub.publish(self, atom([1, 2, 3], hub.url, self)), [202]);
    assert.deepEqual(await entryEvents(), ['urn:e3']);
    hub.mode = 'accept';
    w.clock.advance(600_000);
    await tick();
    await until(
      () => hub.subscriptions.has(hub.requests.at(-1)!.callback),
      2000,
      'renewal verified',
    );
    const renewed = (await getWebSub(w.ctx.db, feed))!;
    assert.equal(renewed.status, 'active');
    assert.equal(renewed.previous_token, null);
    assert.equal(Date.parse(renewed.lease_expires_at!) - w.clock.now().getTime(), LEASE * 1000);
    // The hub holds two subscriptions now; the replaced callback answers 410 and the hub drops it.
    assert.deepEqual(
      (await hub.publish(self, atom([1, 2, 3, 4], hub.url, self))).sort(),
      [202, 410],
    );
    assert.deepEqual(hub.gone, [old]);
    assert.deepEqual(await entryEvents(), ['urn:e3', 'urn:e4']);
  });

  it('asks a hub that accepts and never verifies again after 10 min, then 20, then 40', async () => {
    hub.mode = 'silent';
    const { feed } = await advertised(hub.url);
    const waits: number[] = [];
    for (let i = 0; i < 3; i++) {
      await tick();
      const row = (await getWebSub(w.ctx.db, feed))!;
      waits.push((Date.parse(row.next_action_at) - w.clock.now().getTime()) / 60_000);
      w.clock.advance(Date.parse(row.next_action_at) - w.clock.now().getTime());
    }
    assert.deepEqual(waits, [10, 20, 40]);
    assert.equal(hub.requests.length, 3);
  });

  it('takes a denial of a verified subscription: push stops, the feed is due now, its callback answers 410', async () => {
    const { feed, self } = await pushed();
    w.clock.advance(120_000);
    await poll(); // at the push schedule: an hour away
    const callback = [...hub.subscriptions.keys()][0]!;
    assert.equal(await hub.denyLater(callback), 200);
    const row = (await getWebSub(w.ctx.db, feed))!;
    assert.equal(row.status, 'denied');
    assert.match(row.last_error!, /not on the list/);
    assert.ok(Date.parse((await getFeed(w.ctx.db, feed))!.next_poll_at) <= w.clock.now().getTime());
    const status = await fetch(callback, {
      method: 'POST',
      headers: { 'x-hub-signature': 'sha256=00' },
      body: atom([1, 9], hub.url, self),
    }).then((r) => r.status);
    assert.equal(status, 410);
  });

  it('notices a lease that ends without a verified renewal: status expired, the feed due now, asked again later', async () => {
    const { feed } = await pushed();
    w.clock.advance(120_000);
    await poll(); // at the push schedule: an hour away
    hub.mode = 'silent';
    w.clock.advance(LEASE * 800 - 120_000);
    await tick(); // the renewal, accepted and never verified
    assert.equal((await getWebSub(w.ctx.db, feed))!.status, 'active');
    w.clock.advance(LEASE * 200);
    await tick();
    const row = (await getWebSub(w.ctx.db, feed))!;
    assert.equal(row.status, 'expired');
    assert.match(row.last_error!, /lease ended/);
    assert.ok(Date.parse((await getFeed(w.ctx.db, feed))!.next_poll_at) <= w.clock.now().getTime());
    assert.ok(Date.parse(row.next_action_at) > w.clock.now().getTime());
    const view = (await w.call('GET', `/v1/feeds/${feed}`, { key })).body;
    assert.equal(view.push.status, 'expired');
  });

  it('sends no secret to a plain-http hub and takes its push as a sign of change: the feed is polled, at most once per min interval', async () => {
    const plain = await startHub({ tls: false });
    try {
      const { feed, self } = await advertised(plain.url);
      await tick();
      await until(
        async () => (await getWebSub(w.ctx.db, feed))?.status === 'active',
        2000,
        'verified',
      );
      assert.equal(plain.requests[0]!.form.has('hub.secret'), false);
      assert.equal((await getWebSub(w.ctx.db, feed))!.secret, null);
      w.clock.advance(120_000);
      await poll(); // at the push schedule: an hour away
      const polledAt = Date.parse((await getFeed(w.ctx.db, feed))!.last_polled_at!);
      w.clock.advance(10_000);
      assert.deepEqual(await plain.publish(self, atom([1, 2, 3], plain.url, self)), [202]);
      assert.deepEqual(await entryEvents(), [], 'an unsigned body is never taken as content');
      assert.equal(Date.parse((await getFeed(w.ctx.db, feed))!.next_poll_at), polledAt + 60_000);
      w.clock.advance(60_000);
      assert.deepEqual(await plain.publish(self, atom([1, 2, 3], plain.url, self)), [202]);
      assert.ok(
        Date.parse((await getFeed(w.ctx.db, feed))!.next_poll_at) <= w.clock.now().getTime(),
      );
    } finally {
      await plain.close();
    }
  });

  it('gives a hub that never answers two request slots, while another hub’s requests go through', async () => {
    const slow = await startHub();
    slow.mode = 'hang';
    try {
      const stuck = [
        await advertised(slow.url),
        await advertised(slow.url),
        await advertised(slow.url),
      ];
      const other = await advertised(hub.url);
      void workers.webSubRequests.tick();
      await until(
        async () => (await getWebSub(w.ctx.db, other.feed))?.status === 'active',
        2000,
        'the other hub verified',
      );
      assert.equal(slow.requests.length, 2);
      assert.equal(workers.webSubRequests.inFlight, 2);
      const attempts: number[] = [];
      for (const s of stuck) attempts.push((await getWebSub(w.ctx.db, s.feed))!.attempts);
      assert.deepEqual(attempts.sort(), [0, 1, 1]);
    } finally {
      await slow.close();
      await workers.webSubRequests.settled();
    }
  });

  it('unsubscribes at the hub when the feed’s last subscription is deleted', async () => {
    const { feed, sub } = await pushed();
    assert.equal((await w.call('DELETE', `/v1/subscriptions/${sub}`, { key })).status, 204);
    await tick();
    await until(() => hub.subscriptions.size === 0, 2000, 'unsubscribed');
    assert.equal(hub.requests.at(-1)!.mode, 'unsubscribe');
    assert.equal(await getWebSub(w.ctx.db, feed), undefined);
  });

  it('still unsubscribes at the hub when the feed record is deleted first (an orphaned feed)', async () => {
    const { feed, sub } = await pushed();
    assert.equal((await w.call('DELETE', `/v1/subscriptions/${sub}`, { key })).status, 204);
    assert.ok(await deleteUnusedFeed(w.ctx.db, feed));
    await tick();
    await until(() => hub.subscriptions.size === 0, 2000, 'unsubscribed');
    assert.equal(await getWebSub(w.ctx.db, feed), undefined);
  });

  it('falls back to polling at the normal schedule when the hub goes away', async () => {
    const { feed } = await pushed();
    w.clock.advance(120_000);
    await poll(); // at the push schedule: an hour away
    hub.mode = 503;
    w.clock.advance(LEASE * 800);
    await tick();
    const row = (await getWebSub(w.ctx.db, feed))!;
    assert.equal(row.status, 'failed');
    assert.match(row.last_error!, /HTTP 503/);
    assert.ok(Date.parse((await getFeed(w.ctx.db, feed))!.next_poll_at) <= w.clock.now().getTime());
    await poll();
    assert.ok((await getFeed(w.ctx.db, feed))!.interval_seconds! <= 60);
  });

  it('takes a denial: push stops and is asked again a day later', async () => {
    hub.mode = 'deny';
    const s = await advertised(hub.url, undefined, [1]);
    await tick();
    await until(
      async () => (await getWebSub(w.ctx.db, s.feed))?.status === 'denied',
      2000,
      'denied',
    );
    const row = (await getWebSub(w.ctx.db, s.feed))!;
    assert.match(row.last_error!, /not on the list/);
    assert.equal(Date.parse(row.next_action_at) - w.clock.now().getTime(), 86_400_000);
  });

  it('resubscribes with a new secret when the feed names another hub', async () => {
    const { path, self, feed } = await pushed();
    const before = (await getWebSub(w.ctx.db, feed))!;
    const other = await startHub();
    try {
      origin.set(path, {
        body: atom([1, 2], other.url, self),
        contentType: 'application/atom+xml',
      });
      w.clock.advance(3 * 3600_000);
      await poll();
      const moved = (await getWebSub(w.ctx.db, feed))!;
      assert.equal(moved.hub_url, other.url);
      assert.equal(moved.status, 'subscribing');
      assert.notEqual(moved.secret, before.secret);
      await tick();
      await until(() => other.subscriptions.size === 1, 2000, 'subscribed at the new hub');
    } finally {
      await other.close();
    }
  });

  it('answers 404 to a verification it did not ask for, and 410 to a push to a callback that is not a live subscription', async () => {
    const { feed, self } = await pushed();
    const callback = hub.requests[0]!.callback;
    const get = (url: string) => fetch(url).then((r) => r.status);
    const q = `hub.mode=subscribe&hub.challenge=x&hub.lease_seconds=10&hub.topic=${encodeURIComponent(self)}`;
    assert.equal(await get(`${callback}?${q}`), 404, 'no request pending');
    assert.equal(await get(`${publicUrl}/websub/${feed}/wrong?${q}`), 404);
    assert.equal(await get(`${callback.replace(feed, 'f'.repeat(24))}?${q}`), 404);
    const post = (url: string) => fetch(url, { method: 'POST', body: 'x' }).then((r) => r.status);
    assert.equal(await post(`${publicUrl}/websub/${feed}/${'a'.repeat(43)}`), 410);
    assert.equal(await post(`${publicUrl}/websub/${'f'.repeat(24)}/${'a'.repeat(43)}`), 410);
  });

  it('subscribes to nothing without server.public_url', async () => {
    w.ctx.config.server.public_url = '';
    const s = await advertised(hub.url, undefined, [1]);
    assert.equal(await getWebSub(w.ctx.db, s.feed), undefined);
    assert.equal((await w.call('GET', `/v1/feeds/${s.feed}`, { key })).body.push.status, 'none');
  });
});
