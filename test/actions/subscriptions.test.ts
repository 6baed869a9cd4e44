// Subscription use-cases: the duplicate check that knows a web page and the feed it announces are one feed, the
// baseline restarted when a feed's last active subscription goes away, and a large backlog deleted in chunks.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { EVENT_CHUNK, nextTurn } from '../../src/actions/chunks.ts';
import { removeSubscription } from '../../src/actions/subscriptions.ts';
import { newId } from '../../src/ids.ts';
import { silentLogger } from '../../src/log.ts';
import { insertEvent } from '../../src/store/events.ts';
import { getFeed, PARKED_AT } from '../../src/store/feeds.ts';
import { dueFeedWindow } from '../../src/store/feeds-poll.ts';
import { maintenanceTick } from '../../src/worker/maintenance/maintenance.ts';
import { createWorkers, type Workers } from '../../src/worker/index.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { rss, startOrigin, type Origin } from '../support/servers.ts';
import { makeWorld, type World } from '../support/world.ts';

describe('subscriptions', () => {
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
    w = makeWorld();
    workers = createWorkers(w.ctx, silentLogger);
    key = (await w.key()).key;
  });

  const endpoint = async (k = key) =>
    (
      await w.call('POST', '/v1/endpoints', {
        key: k,
        body: { title: 'E', url: `https://hooks.example.com/${++n}` },
      })
    ).body.id as string;
  const subscribe = (ep: string, url: string, k = key) =>
    w.call('POST', '/v1/subscriptions', { key: k, body: { endpoint: ep, url } });
  /** A blog page announcing its feed, served by the origin; returns both URLs. */
  const blog = () => {
    const id = ++n;
    const page = `/blog${id}/`;
    const feed = `/blog${id}/feed.xml`;
    origin.set(page, {
      body: `<!doctype html><html><head><link rel="alternate" type="application/rss+xml" href="feed.xml"></head></html>`,
      contentType: 'text/html',
    });
    origin.set(feed, { body: rss([{ guid: 'a' }]) });
    return { page: origin.url + page, feed: origin.url + feed };
  };
  const tick = () => pollTick(w.ctx, workers.pollerDeps);

  it('answers 409 when the endpoint already subscribes to the page whose feed is this URL', async () => {
    const { page, feed } = blog();
    const ep = await endpoint();
    const first = await subscribe(ep, page);
    await tick(); // discovers the feed behind the page
    const again = await subscribe(ep, feed);
    assert.equal(again.status, 409);
    assert.equal(again.body.existing_id, first.body.id);
    assert.equal((await subscribe(await endpoint(), feed)).status, 201, 'another endpoint may');
  });

  it('answers 409 when the endpoint already subscribes to the feed a known page announces', async () => {
    const { page, feed } = blog();
    const ep = await endpoint();
    const first = await subscribe(ep, feed);
    const other = (await w.key()).key; // another application's subscription to the page makes the page known
    assert.equal((await subscribe(await endpoint(other), page, other)).status, 201);
    await tick();
    const again = await subscribe(ep, page);
    assert.equal(again.status, 409);
    assert.equal(again.body.existing_id, first.body.id);
  });

  it('refuses to move a subscription to an endpoint that already receives the same feed', async () => {
    const { page, feed } = blog();
    const a = await endpoint();
    const b = await endpoint();
    const onPage = await subscribe(a, page);
    await tick();
    const onFeed = await subscribe(b, feed);
    assert.equal(onFeed.status, 201);
    const moved = await w.call('PATCH', `/v1/subscriptions/${onFeed.body.id}`, {
      key,
      body: { endpoint: a },
    });
    assert.equal(moved.status, 409);
    assert.equal(moved.body.existing_id, onPage.body.id);
  });

  it('restarts the baseline only when the last active subscription is deleted or paused', async () => {
    const { feed } = blog();
    const one = await subscribe(await endpoint(), feed);
    const two = await subscribe(await endpoint(), feed);
    await tick();
    const feedId = one.body.feed as string;
    assert.ok((await getFeed(w.ctx.db, feedId))!.baseline_at);
    await w.call('DELETE', `/v1/subscriptions/${one.body.id}`, { key });
    assert.ok(
      (await getFeed(w.ctx.db, feedId))!.baseline_at,
      'another subscription is still active',
    );
    await w.call('PATCH', `/v1/subscriptions/${two.body.id}`, {
      key,
      body: { status: 'paused' },
    });
    assert.equal((await getFeed(w.ctx.db, feedId))!.baseline_at, null, 'pausing the last one');
    const nudges = w.nudges.poller;
    await w.call('PATCH', `/v1/subscriptions/${two.body.id}`, {
      key,
      body: { status: 'active' },
    });
    assert.equal(w.nudges.poller, nudges + 1, 'resuming wakes the poller for the fresh baseline');
    await tick();
    assert.ok((await getFeed(w.ctx.db, feedId))!.baseline_at);
    await w.call('DELETE', `/v1/subscriptions/${two.body.id}`, { key });
    assert.equal((await getFeed(w.ctx.db, feedId))!.baseline_at, null, 'deleting the last one');
  });

  it('parks a feed no active subscription uses out of the due range, and makes it due at once when one is active again', async () => {
    const { feed } = blog();
    const sub = await subscribe(await endpoint(), feed);
    await tick();
    const feedId = sub.body.feed as string;
    const due = async () =>
      (await dueFeedWindow(w.ctx.db, new Date('9000-01-01T00:00:00Z'), 256)).map((f) => f.id);
    const pause = (status: string) =>
      w.call('PATCH', `/v1/subscriptions/${sub.body.id}`, { key, body: { status } });
    await pause('paused');
    assert.equal((await getFeed(w.ctx.db, feedId))!.next_poll_at, PARKED_AT);
    assert.deepEqual(await due(), [], 'no claim walks past it, however late');
    const shown = await w.call('GET', `/v1/feeds/${feedId}`, { key });
    assert.equal(shown.body.next_poll_at, null, 'the API says it is not scheduled');
    await pause('active');
    assert.equal((await getFeed(w.ctx.db, feedId))!.next_poll_at, w.clock.now().toISOString());
    // A poll that was running when the last subscription was paused schedules it again: maintenance parks it.
    await pause('paused');
    await w.ctx.db.run('UPDATE feeds SET next_poll_at = ? WHERE id = ?', [
      '2020-01-01T00:00:00.000Z',
      feedId,
    ]);
    const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
    assert.equal(summary.parkedFeeds, 1);
    assert.equal((await getFeed(w.ctx.db, feedId))!.next_poll_at, PARKED_AT);
    // Deleting the last subscription parks it too; a new subscription to the URL makes it due at once.
    await w.call('DELETE', `/v1/subscriptions/${sub.body.id}`, { key });
    assert.equal((await getFeed(w.ctx.db, feedId))!.next_poll_at, PARKED_AT);
    const again = await subscribe(await endpoint(), feed);
    assert.equal(again.body.feed, feedId);
    assert.equal((await getFeed(w.ctx.db, feedId))!.next_poll_at, w.clock.now().toISOString());
    assert.deepEqual(await due(), [feedId]);
  });

  it('deletes a subscription with a large backlog a chunk of events at a time, answering requests meanwhile', async () => {
    const { key: k, applicationId } = await w.key();
    const sub = (await subscribe(await endpoint(k), 'http://127.0.0.1:9/busy.xml', k)).body;
    const backlog = EVENT_CHUNK * 2 + 50;
    const now = w.clock.now();
    await w.ctx.store.write(async (sql) => {
      for (let i = 1; i <= backlog; i++)
        await insertEvent(
          sql,
          {
            id: newId(now),
            application_id: applicationId,
            endpoint_id: sub.endpoint,
            subscription_id: sub.id,
            type: 'subscription.entries',
            sequence: i,
            body: `{"n":${i}}`,
          },
          now,
        );
    });
    const count = async (table: string) =>
      (await w.ctx.db.column(`SELECT count(*) FROM ${table}`))[0] as number;
    const removing = removeSubscription(w.ctx, applicationId, sub.id);
    let left = backlog;
    for (const deadline = Date.now() + 5000; left === backlog && Date.now() < deadline;) {
      await nextTurn(); // until its first chunk has run
      left = await count('events');
    }
    // A chunk or two gone, not all: on PostgreSQL the count may run beside the second chunk and see it committed.
    assert.ok(
      left > 0 && left < backlog && (backlog - left) % EVENT_CHUNK === 0,
      `${left} of ${backlog} events left`,
    );
    const meanwhile = await w.call('GET', `/v1/subscriptions/${sub.id}`, { key: k });
    assert.equal(meanwhile.body.status, 'paused', 'nothing is sent for it meanwhile');
    await removing;
    assert.equal((await w.call('GET', `/v1/subscriptions/${sub.id}`, { key: k })).status, 404);
    assert.deepEqual([await count('events'), await count('event_bodies')], [0, 0]);
  });
});
