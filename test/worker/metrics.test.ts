// The feeds gauge's count: taken in pages with a turn of the event loop between them, the same counts as one walk.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  removeSubscription,
  updateSubscriptionFromInput,
} from '../../src/actions/subscriptions.ts';
import { recordPollFailure } from '../../src/store/feeds-record.ts';
import { countFeeds } from '../../src/worker/metrics.ts';
import { subscriber } from '../support/subscriber.ts';
import { makeWorld } from '../support/world.ts';

test('feeds are counted by status in pages with a turn of the event loop between them, and a second scrape shares the count', async () => {
  const world = makeWorld();
  try {
    const s = await subscriber(world);
    const subs: { id: string; feed: string }[] = [];
    for (let i = 0; i < 9; i++) subs.push(await s.subscribe(`http://127.0.0.1:9/${i}.xml`));
    for (const sub of subs.slice(0, 4))
      await recordPollFailure(
        world.ctx.db,
        sub.feed,
        { errorClass: 'network', message: 'refused', httpStatus: null, nextPollAt: '2026-01-02' },
        world.clock.now(),
      );
    await updateSubscriptionFromInput(world.ctx, s.applicationId, subs[0]!.id, {
      status: 'paused',
    });
    await removeSubscription(world.ctx, s.applicationId, subs[8]!.id);
    const expected = {
      pending: 4,
      active: 0,
      error: 3,
      gone: 0,
      identity_changed: 0,
      over_budget: 0,
      idle: 2,
    };
    assert.deepEqual(await countFeeds(world.ctx.db), expected, 'in one page');

    // A callback that queues itself again each turn of the event loop: it runs between pages only if the count yields.
    let turns = 0;
    let ticking = setImmediate(function tick() {
      turns++;
      ticking = setImmediate(tick);
    });
    const [paged, shared] = [countFeeds(world.ctx.db, 2), countFeeds(world.ctx.db, 2)];
    assert.equal(shared, paged, 'a scrape during a count waits for it instead of walking again');
    assert.deepEqual(await paged, expected, 'in pages of 2');
    clearImmediate(ticking);
    // error: 2 pages (4 feeds, then none), pending: 3 pages (5 feeds): timers ran between them.
    assert.ok(turns >= 2, `the event loop turned ${turns} times during the count`);
  } finally {
    await world.close();
  }
});
