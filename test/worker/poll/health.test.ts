// Feed-health events through real polls (local origin, real SQLite): each transition sends one event per active
// subscription, once, in the subscription's sequence, and an endpoint's filter_types keeps other types from existing.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';

type Sent = {
  endpoint: string;
  subscription: string;
  type: string;
  sequence: number;
  body: string;
  data: Record<string, unknown> & {
    sequence: number;
    feed: Record<string, unknown>;
    subscription: { id: string };
  };
};

const METADATA = '{"b":1,"a":[1.0,2e3],"s":"\\u00e9"}';

describe('feed-health events in the poller', () => {
  let origin: Origin;
  let w: World;
  let workers: Workers;
  let key: string;
  let n = 0;
  before(async () => {
    origin = await startOrigin();
  });
  after(async () => {
    await w.close();
    await workers.close();
    await origin.close();
  });
  beforeEach(async () => {
    await w?.close();
    await workers?.close();
    w = makeWorld({
      poll: {
        interval_seconds: 60,
        min_interval_seconds: 60,
        max_interval_seconds: 3600,
        failing_after: 3,
      },
    });
    workers = createWorkers(w.ctx, silentLogger);
    key = (await w.key()).key;
  });

  const path = () => `/h${++n}.xml`;
  const items = (...ids: number[]) => rss(ids.map((i) => ({ guid: `g${i}` })));
  const endpoint = async (filter_types?: string[] | null) =>
    (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: `https://hooks.example.com/${++n}`, filter_types },
      })
    ).body.id as string;
  const subscribe = async (url: string, ep: string) => {
    const res = await w.call('POST', '/v1/subscriptions', {
      key,
      body: `{"endpoint":"${ep}","url":"${url}","metadata":${METADATA}}`,
    });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; feed: string };
  };
  const poll = async () => {
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps);
  };
  const sent = async (): Promise<Sent[]> =>
    (
      (await w.ctx.db
        .all(`SELECT endpoint_id AS endpoint, subscription_id AS subscription, type, sequence, body
           FROM events JOIN event_bodies ON event_id = id ORDER BY id`)) as Omit<Sent, 'data'>[]
    ).map((e) => ({ ...e, data: (JSON.parse(e.body) as { data: Sent['data'] }).data }));
  const typesOf = async (sub: string) =>
    (await sent()).filter((e) => e.subscription === sub).map((e) => e.type);

  it('sends feed.failing once when the failures in a row reach poll.failing_after, and feed.recovered once on the next success', async () => {
    const p = path();
    origin.set(p, { body: items(1) });
    const sub = await subscribe(origin.url + p, await endpoint());
    await poll();
    origin.set(p, { body: 'boom', status: 500 });
    await poll();
    await poll();
    assert.deepEqual(await typesOf(sub.id), [], 'two failures are not an outage yet');
    await poll();
    assert.deepEqual(await typesOf(sub.id), ['feed.failing']);
    await poll();
    await poll();
    assert.deepEqual(await typesOf(sub.id), ['feed.failing'], 'once per outage');
    const failing = (await sent())[0]!;
    assert.equal(failing.sequence, 1);
    assert.equal(failing.data.consecutive_failures, 3);
    assert.equal(failing.data.last_http_status, 500);
    assert.match(String(failing.data.last_error), /500/);
    assert.equal(failing.data.feed.status, 'error');
    assert.equal(failing.data.feed.feed_url, origin.url + p);
    assert.ok(failing.body.includes(`"metadata":${METADATA}}`), 'the metadata byte for byte');
    origin.set(p, { body: items(1) });
    await poll();
    await poll();
    assert.deepEqual(await typesOf(sub.id), ['feed.failing', 'feed.recovered']);
    const recovered = (await sent())[1]!;
    assert.equal(recovered.sequence, 2);
    assert.equal(recovered.data.recovered_from, 'feed.failing');
    assert.equal(recovered.data.consecutive_failures, 5);
    assert.equal(recovered.data.feed.status, 'active');
    assert.equal((await getFeed(w.ctx.db, sub.feed))!.health_alert, null);
  });

  it('sends nothing to a paused subscription, nor feed.recovered to one created during the outage', async () => {
    const p = path();
    origin.set(p, { body: items(1) });
    const first = await subscribe(origin.url + p, await endpoint());
    const paused = await subscribe(origin.url + p, await endpoint());
    await poll();
    await w.call('PATCH', `/v1/subscriptions/${paused.id}`, { key, body: { status: 'paused' } });
    origin.set(p, { body: 'boom', status: 500 });
    for (let i = 0; i < 3; i++) await poll();
    assert.deepEqual(await typesOf(first.id), ['feed.failing']);
    w.clock.advance(1000);
    const late = await subscribe(origin.url + p, await endpoint());
    origin.set(p, { body: items(1) });
    await poll();
    assert.deepEqual(await typesOf(first.id), ['feed.failing', 'feed.recovered']);
    assert.deepEqual(await typesOf(late.id), [], 'it was never told the feed was failing');
    assert.deepEqual(await typesOf(paused.id), []);
  });

  it('sends feed.gone once on 410; a refresh that finds it gone again sends nothing, one that finds a feed sends feed.recovered', async () => {
    const p = path();
    origin.set(p, { body: items(1) });
    const sub = await subscribe(origin.url + p, await endpoint());
    await poll();
    origin.set(p, { body: 'gone', status: 410 });
    await poll();
    assert.deepEqual(await typesOf(sub.id), ['feed.gone']);
    const gone = (await sent())[0]!;
    assert.equal(gone.data.last_http_status, 410);
    assert.equal(gone.data.feed.status, 'gone');
    const refresh = () => {
      w.clock.advance(60_000); // poll.min_interval_seconds after the last fetch
      return w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key });
    };
    assert.equal((await refresh()).status, 202);
    await poll();
    assert.equal((await getFeed(w.ctx.db, sub.feed))!.status, 'gone');
    assert.deepEqual(await typesOf(sub.id), ['feed.gone'], 'still gone: not announced twice');
    assert.equal((await refresh()).status, 202);
    origin.set(p, { body: items(2, 1) });
    await poll();
    assert.deepEqual(await typesOf(sub.id), [
      'feed.gone',
      'subscription.entries',
      'feed.recovered',
    ]);
    assert.equal((await sent())[2]!.data.recovered_from, 'feed.gone');
    assert.deepEqual(
      (await sent()).map((e) => e.sequence),
      [1, 2, 3],
    );
  });

  it('sends feed.moved once, when the third permanent redirect in a row moves the URL fetched', async () => {
    const p = path();
    const target = path();
    origin.set(p, { body: items(1) });
    origin.set(target, { body: items(1) });
    const sub = await subscribe(origin.url + p, await endpoint());
    await poll();
    origin.set(p, { body: '', status: 301, headers: { location: origin.url + target } });
    await poll();
    await poll();
    assert.deepEqual(await typesOf(sub.id), []);
    await poll();
    assert.deepEqual(await typesOf(sub.id), ['feed.moved']);
    const moved = (await sent())[0]!;
    assert.equal(moved.data.from, origin.url + p);
    assert.equal(moved.data.to, origin.url + target);
    assert.equal(moved.data.feed.feed_url, origin.url + target);
    assert.equal(moved.data.feed.url, origin.url + p, 'the subscribed URL stays');
    await poll();
    await poll();
    assert.deepEqual(await typesOf(sub.id), ['feed.moved']);
  });

  it('sends feed.identity_hold once when a hold starts, with the held count and how to release it', async () => {
    const p = path();
    const many = (prefix: string) =>
      rss(Array.from({ length: 12 }, (_, i) => ({ guid: `${prefix}-${i}` })));
    origin.set(p, { body: many('old') });
    const sub = await subscribe(origin.url + p, await endpoint());
    await poll();
    origin.set(p, { body: many('new') });
    await poll();
    origin.set(p, { body: many('newer') });
    await poll(); // the keys change again: the hold grows, it does not start again
    assert.deepEqual(await typesOf(sub.id), ['feed.identity_hold']);
    const hold = (await sent())[0]!;
    assert.equal(hold.data.held_entries, 12);
    assert.equal(hold.data.identity_key, 'guid');
    assert.equal(hold.data.feed.status, 'identity_changed');
    assert.deepEqual(hold.data.release, {
      method: 'POST',
      path: `/v1/feeds/${sub.feed}/accept-identity-change`,
      actions: ['deliver', 'discard'],
    });
    const released = await w.call('POST', String((hold.data.release as { path: string }).path), {
      key,
      body: { action: 'discard' },
    });
    assert.equal(released.status, 200);
  });

  it('creates no event of a type an endpoint filters out, so its sequence numbers stay contiguous', async () => {
    const p = path();
    origin.set(p, { body: items(1) });
    const health = await subscribe(
      origin.url + p,
      await endpoint(['feed.failing', 'feed.recovered']),
    );
    const entries = await subscribe(origin.url + p, await endpoint(['subscription.entries']));
    const every = await subscribe(origin.url + p, await endpoint(null));
    await poll();
    origin.set(p, { body: items(2, 1) });
    await poll();
    origin.set(p, { body: 'boom', status: 503 });
    for (let i = 0; i < 3; i++) await poll();
    origin.set(p, { body: items(3, 2, 1) });
    await poll();
    const of = async (sub: string) =>
      (await sent()).filter((e) => e.subscription === sub).map((e) => [e.sequence, e.type]);
    assert.deepEqual(await of(health.id), [
      [1, 'feed.failing'],
      [2, 'feed.recovered'],
    ]);
    assert.deepEqual(await of(entries.id), [
      [1, 'subscription.entries'],
      [2, 'subscription.entries'],
    ]);
    assert.deepEqual(await of(every.id), [
      [1, 'subscription.entries'],
      [2, 'feed.failing'],
      [3, 'subscription.entries'],
      [4, 'feed.recovered'],
    ]);
  });
});
