// The storage budget through real polls (local origin, real SQLite): a feed only one application uses is held once
// what it shows would take the application past its budget — nothing stored, no longer polled, feed.over_budget once —
// while other applications' feeds and shared feeds go on; it resumes by itself once there is room (a raised budget, a
// deleted subscription) and sends what it shows then, with feed.within_budget.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { storageView } from '../../../src/actions/budget.ts';
import { removeSubscription } from '../../../src/actions/subscriptions.ts';
import { silentLogger } from '../../../src/log.ts';
import { getFeed, PARKED_AT } from '../../../src/store/feeds.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { maintenanceTick } from '../../../src/worker/maintenance/maintenance.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';
import { storageOffBy } from '../../support/storage.ts';
import { makeWorld, type World } from '../../support/world.ts';

/** Room left in the application's budget once its feeds' baselines are stored: less than 10 more entries take. */
const ROOM = 2000;

describe('the storage budget in the poller', () => {
  let origin: Origin;
  let w: World;
  let workers: Workers;
  before(async () => {
    origin = await startOrigin();
  });
  after(async () => {
    await workers.close();
    await w.close();
    await origin.close();
  });
  beforeEach(async () => {
    await workers?.close();
    await w?.close();
    w = makeWorld({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
      quotas: { storage_bytes_per_application: 1e9 },
    });
    workers = createWorkers(w.ctx, silentLogger);
  });

  const items = (prefix: string, from: number, to: number) =>
    rss(
      Array.from({ length: to - from }, (_, i) => ({
        guid: `${prefix}${to - 1 - i}`,
        title: `Entry ${prefix}${to - 1 - i}, with a title of some length`,
      })),
    );
  async function tenant(name: string) {
    const { key, applicationId } = await w.key(name);
    const endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: name, url: `https://hooks.example.com/${name}` },
      })
    ).body.id as string;
    const subscribe = async (path: string) =>
      (
        await w.call('POST', '/v1/subscriptions', {
          key,
          body: { endpoint, url: origin.url + path },
        })
      ).body as { id: string; feed: string };
    return { key, applicationId, subscribe };
  }
  const poll = async () => {
    w.clock.advance(2 * 3600_000);
    await pollTick(w.ctx, workers.pollerDeps);
  };
  /** The types of a subscription's events, and the entries' guids of its entries events, in order. */
  const sentTo = async (sub: string) =>
    (
      (await w.ctx.db.column(
        'SELECT b.body FROM events e JOIN event_bodies b ON b.event_id = e.id WHERE e.subscription_id = ? ORDER BY e.sequence',
        [sub],
      )) as string[]
    ).map((text) => {
      const body = JSON.parse(text) as { type: string; data: { entries?: { guid: string }[] } };
      return body.data.entries
        ? `${body.type}: ${body.data.entries.map((e) => e.guid).join(' ')}`
        : body.type;
    });

  const budgetOf = () => w.ctx.config.quotas.storage_bytes_per_application;
  /** Sets every application's budget to what `applicationId` keeps now and `room` more (a restart with it). */
  const budgetAt = async (applicationId: string, room: number) => {
    const used = (await storageView(w.ctx, applicationId)).used_bytes;
    w.ctx.config.quotas.storage_bytes_per_application = used + room;
    return used + room;
  };

  /** A holds /own.xml past its budget (20 entries, then 10 more) and keeps /other.xml; B, and the feed both use, go
   *  on. */
  async function heldWorld() {
    const a = await tenant('a');
    const b = await tenant('b');
    origin.set('/own.xml', { body: items('o', 0, 20) });
    origin.set('/other.xml', { body: items('x', 0, 20) });
    origin.set('/b.xml', { body: items('b', 0, 3) });
    origin.set('/shared.xml', { body: items('s', 0, 3) });
    const own = await a.subscribe('/own.xml');
    const other = await a.subscribe('/other.xml');
    const sharedA = await a.subscribe('/shared.xml');
    const onlyB = await b.subscribe('/b.xml');
    const sharedB = await b.subscribe('/shared.xml');
    await poll(); // baselines: a keeps /own.xml's and /other.xml's keys and history
    assert.equal((await getFeed(w.ctx.db, own.feed))!.status, 'active');
    const budget = await budgetAt(a.applicationId, ROOM);
    origin.set('/own.xml', { body: items('o', 0, 30) });
    origin.set('/b.xml', { body: items('b', 0, 5) });
    origin.set('/shared.xml', { body: items('s', 0, 5) });
    await poll();
    return { a, b, own, other, sharedA, onlyB, sharedB, budget };
  }

  it('holds a feed whose document would take its application past the budget, once; others go on', async () => {
    const { a, own, sharedA, onlyB, sharedB, budget } = await heldWorld();
    const feed = (await getFeed(w.ctx.db, own.feed))!;
    assert.equal(feed.status, 'over_budget');
    assert.equal(feed.next_poll_at, PARKED_AT, 'not polled while held');
    assert.equal(feed.stored_keys, 20, 'nothing of the held document stored');
    assert.deepEqual(await sentTo(own.id), ['feed.over_budget']);
    assert.deepEqual(
      await sentTo(sharedA.id),
      ['subscription.entries: s3 s4'],
      'a shared feed is never held',
    );
    assert.deepEqual(await sentTo(onlyB.id), ['subscription.entries: b3 b4']);
    assert.deepEqual(await sentTo(sharedB.id), ['subscription.entries: s3 s4']);

    const view = await w.call('GET', `/v1/feeds/${own.feed}`, { key: a.key });
    assert.equal(view.body.status, 'over_budget');
    assert.equal(view.body.next_poll_at, null);
    assert.equal(view.body.over_budget.budget_bytes, budget);
    assert.match(view.body.over_budget.detail, /quotas\.storage_bytes_per_application/);
    const storage = await w.call('GET', '/v1/storage', { key: a.key });
    assert.equal(storage.status, 200);
    assert.equal(storage.body.held_feeds, 1);
    assert.equal(storage.body.used_bytes, storage.body.feed_bytes + storage.body.event_bytes);

    origin.set('/own.xml', { body: items('o', 0, 40) });
    await poll();
    await poll();
    assert.deepEqual(await sentTo(own.id), ['feed.over_budget'], 'held feeds are not polled');
    assert.deepEqual(await storageOffBy(w.ctx.db), []);
  });

  it('resumes by itself once the budget has room, sending what the feed shows then', async () => {
    const { own, budget } = await heldWorld();
    origin.set('/own.xml', { body: items('o', 0, 32) });
    w.ctx.config.quotas.storage_bytes_per_application = 10 * budget; // a restart with a raised budget
    const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
    assert.equal(summary.heldFeedsRetried, 1);
    await pollTick(w.ctx, workers.pollerDeps);
    const feed = (await getFeed(w.ctx.db, own.feed))!;
    assert.equal(feed.status, 'active');
    assert.equal(feed.budget_held_at, null);
    const entries = Array.from({ length: 12 }, (_, i) => `o${20 + i}`).join(' ');
    assert.deepEqual(await sentTo(own.id), [
      'feed.over_budget',
      `subscription.entries: ${entries}`,
      'feed.within_budget',
    ]);
    await poll();
    assert.equal((await sentTo(own.id)).length, 3, 'once');
  });

  it('resumes when deleting subscriptions makes room', async () => {
    const { a, own, other } = await heldWorld();
    await removeSubscription(w.ctx, a.applicationId, other.id); // /other.xml is no one's now
    assert.ok((await getFeed(w.ctx.db, own.feed))!.next_poll_at !== PARKED_AT, 'due again');
    await pollTick(w.ctx, workers.pollerDeps);
    assert.deepEqual((await sentTo(own.id)).slice(-1), ['feed.within_budget']);
    assert.equal((await getFeed(w.ctx.db, own.feed))!.status, 'active');
  });

  it('keeps a held feed held, without a second event, when a poll of it still does not fit', async () => {
    const { a, own } = await heldWorld();
    // Its application is over its budget now (the events of the feed it shares, the hold's event): not retried.
    assert.ok((await storageView(w.ctx, a.applicationId)).used_bytes > budgetOf());
    const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
    assert.equal(summary.heldFeedsRetried, 0);
    // A refresh polls it anyway.
    w.clock.advance(120_000);
    const refresh = await w.call('POST', `/v1/feeds/${own.feed}/refresh`, { key: a.key });
    assert.equal(refresh.status, 202);
    await pollTick(w.ctx, workers.pollerDeps);
    const feed = (await getFeed(w.ctx.db, own.feed))!;
    assert.equal(feed.status, 'over_budget');
    assert.equal(feed.next_poll_at, PARKED_AT);
    assert.equal(feed.stored_keys, 20);
    assert.deepEqual(await sentTo(own.id), ['feed.over_budget']);
  });
});
