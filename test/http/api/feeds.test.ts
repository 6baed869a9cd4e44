// /v1/feeds: the caller's feeds by status, and a refresh that makes one due now, at most once per min interval.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { recordFeedGone, recordPollFailure } from '../../../src/store/feeds-record.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import { makeWorld, type World } from '../../support/world.ts';

describe('/v1/feeds', () => {
  let w: World;
  let key: string;
  let other: string;
  let endpoint: string;
  let n = 0;
  before(async () => {
    w = makeWorld({ poll: { min_interval_seconds: 60 } });
    key = (await w.key('acme')).key;
    other = (await w.key('other')).key;
    endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://hooks.example.com/' },
      })
    ).body.id;
  });
  after(() => w.close());

  const subscribe = async (k = key, ep = endpoint) => {
    const res = await w.call('POST', '/v1/subscriptions', {
      key: k,
      body: { endpoint: ep, url: `https://feeds.example.com/${++n}.xml` },
    });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; feed: string };
  };
  const fail = (feed: string) =>
    recordPollFailure(
      w.ctx.db,
      feed,
      {
        errorClass: 'http',
        message: 'fetch: the server answered 500',
        httpStatus: 500,
        nextPollAt: '2026-01-02T00:00:00.000Z',
      },
      w.clock.now(),
    );
  const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((f) => f.id);

  it("lists the caller's feeds newest first, each as GET /v1/feeds/:id shows it with how many of its subscriptions use it", async () => {
    const solo = makeWorld();
    const k = (await solo.key()).key;
    const ep = (
      await solo.call('POST', '/v1/endpoints', {
        key: k,
        body: { title: 'E', url: 'https://hooks.example.com/' },
      })
    ).body.id;
    const feeds: string[] = [];
    for (let i = 0; i < 3; i++)
      feeds.push(
        (
          await solo.call('POST', '/v1/subscriptions', {
            key: k,
            body: { endpoint: ep, url: `https://feeds.example.com/solo${i}.xml` },
          })
        ).body.feed,
      );
    const first = await solo.call('GET', '/v1/feeds?limit=2', { key: k });
    assert.equal(first.status, 200);
    assert.deepEqual(ids(first), [feeds[2], feeds[1]]);
    assert.equal(first.body.next, feeds[1]);
    const second = await solo.call('GET', `/v1/feeds?limit=2&after=${first.body.next}`, {
      key: k,
    });
    assert.deepEqual(ids(second), [feeds[0]]);
    assert.equal(second.body.next, null);
    const one = await solo.call('GET', `/v1/feeds/${feeds[0]}`, { key: k });
    assert.deepEqual(second.body.data[0], { ...one.body, subscription_count: 1 });
    assert.deepEqual(ids(await solo.call('GET', '/v1/feeds', { key: (await solo.key()).key })), []);
    await solo.close();
  });

  it('filters by status; failing is every feed in error or gone', async () => {
    const healthy = await subscribe();
    const failing = await subscribe();
    const gone = await subscribe();
    await fail(failing.feed);
    await recordFeedGone(w.ctx.db, gone.feed, w.clock.now());
    const of = async (status: string) =>
      ids(await w.call('GET', `/v1/feeds?status=${status}&limit=200`, { key }));
    assert.deepEqual(await of('error'), [failing.feed]);
    assert.deepEqual(await of('gone'), [gone.feed]);
    assert.deepEqual(await of('failing'), [gone.feed, failing.feed]);
    assert.ok((await of('pending')).includes(healthy.feed));
    assert.ok(!(await of('pending')).includes(failing.feed));
  });

  it('answers 400 naming status for an unknown status', async () => {
    const res = await w.call('GET', '/v1/feeds?status=broken', { key });
    assert.equal(res.status, 400);
    assert.deepEqual(
      res.body.errors.map((e: { path: string }) => e.path),
      ['status'],
    );
    assert.match(res.body.errors[0].message, /failing/);
  });

  it('refreshes a feed: 202 with the feed due now, and the poller woken', async () => {
    const sub = await subscribe();
    await w.ctx.db.run('UPDATE feeds SET next_poll_at = ?, last_polled_at = ? WHERE id = ?', [
      '2026-06-01T00:00:00.000Z',
      '2025-12-31T00:00:00.000Z',
      sub.feed,
    ]);
    const nudges = w.nudges.poller;
    const res = await w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key });
    assert.equal(res.status, 202);
    assert.equal(res.body.id, sub.feed);
    assert.equal(res.body.next_poll_at, w.clock.now().toISOString());
    assert.equal(w.nudges.poller, nudges + 1);
  });

  it('refuses a refresh within poll.min_interval_seconds of the last fetch with 429 and the wait, changing nothing', async () => {
    const sub = await subscribe();
    const polledAt = new Date(w.clock.now().getTime() - 15_000).toISOString();
    await w.ctx.db.run('UPDATE feeds SET next_poll_at = ?, last_polled_at = ? WHERE id = ?', [
      '2026-06-01T00:00:00.000Z',
      polledAt,
      sub.feed,
    ]);
    const res = await w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '45');
    assert.equal(res.body.quota, 'feed_refresh');
    assert.equal(res.body.retry_after_seconds, 45);
    assert.equal((await getFeed(w.ctx.db, sub.feed))!.next_poll_at, '2026-06-01T00:00:00.000Z');
    w.clock.advance(45_000);
    assert.equal((await w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key })).status, 202);
  });

  it('polls a gone feed again when refreshed: it is in error until the fetch answers', async () => {
    const sub = await subscribe();
    await recordFeedGone(w.ctx.db, sub.feed, new Date(w.clock.now().getTime() - 3600_000));
    const res = await w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key });
    assert.equal(res.status, 202);
    assert.equal(res.body.status, 'error');
    assert.match(res.body.last_error, /410/);
    assert.equal(res.body.next_poll_at <= w.clock.now().toISOString(), true);
  });

  it('answers 409 for a feed no active subscription polls, and 404 for a feed the caller does not use', async () => {
    const sub = await subscribe();
    await w.call('PATCH', `/v1/subscriptions/${sub.id}`, { key, body: { status: 'paused' } });
    const paused = await w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key });
    assert.equal(paused.status, 409);
    assert.match(paused.body.detail, /not polled/);
    const theirs = await w.call('POST', `/v1/feeds/${sub.feed}/refresh`, { key: other });
    assert.equal(theirs.status, 404);
    const unknown = await w.call('POST', `/v1/feeds/${'0'.repeat(24)}/refresh`, { key });
    assert.equal(unknown.status, 404);
    assert.deepEqual(theirs.body, unknown.body);
  });
});
