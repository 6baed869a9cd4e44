// The retention pass (through maintenanceTick, as the loop runs it): entry keys pruned to their window without ever
// making an entry still in the feed look new, orphaned feeds deleted after their grace in batches, holds trimmed to
// their cap, and the counts the gauges show.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  removeSubscription,
  updateSubscriptionFromInput,
} from '../../../src/actions/subscriptions.ts';
import { CHUNK_ROWS } from '../../../src/actions/chunks.ts';
import { silentLogger } from '../../../src/log.ts';
import { holdEntries, recordKeys } from '../../../src/store/entries.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import type { Telemetry } from '../../../src/telemetry.ts';
import { noTelemetry } from '../../../src/telemetry.ts';
import { createWorkers } from '../../../src/worker/index.ts';
import { maintenanceTick } from '../../../src/worker/maintenance/maintenance.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { retentionPass } from '../../../src/worker/maintenance/retention.ts';
import { entry } from '../../support/identity.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';
import { subscriber } from '../../support/subscriber.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { jsonText } from '../../../src/store/sql.ts';
import { until } from '../../support/deadline.ts';

const DAY = 86_400_000;

/** A world with an application, an endpoint and a way to subscribe it to URLs. */
async function setUp(patch: Parameters<typeof makeWorld>[0] = {}) {
  const w = makeWorld({
    poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
    ...patch,
  });
  return { w, ...(await subscriber(w)) };
}

const tick = (w: World, telemetry: Telemetry = noTelemetry) =>
  maintenanceTick(w.ctx, { logger: silentLogger, telemetry });
const keyCount = async (w: World, feed: string) =>
  (await w.ctx.db.column('SELECT count(*) FROM entries WHERE feed_id = ?', [feed]))[0] as number;
const eventCount = async (w: World) =>
  (await w.ctx.db.column('SELECT count(*) FROM events'))[0] as number;
/** `n` keys recorded for the feed at `at`. */
const keys = (w: World, feed: string, n: number, at: Date, prefix = 'k') =>
  w.ctx.store.write((db) =>
    recordKeys(
      db,
      feed,
      Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, fingerprint: null })),
      at,
    ),
  );

describe('retention: entry keys', () => {
  let origin: Origin;
  before(async () => {
    origin = await startOrigin();
  });
  after(() => origin.close());

  it('prunes keys gone for longer than the window, never one the feed still shows, and an entry back after that is sent again', async () => {
    const { w, subscribe } = await setUp({
      retention: { entry_key_days: 30, entry_keys_per_feed: 2 },
    });
    const workers = createWorkers(w.ctx, silentLogger);
    try {
      const path = '/window.xml';
      const sub = await subscribe(origin.url + path);
      const sent: string[] = [];
      const at = async (day: number, titles: string[]) => {
        origin.set(path, { body: rss(titles.map((t) => ({ guid: t, title: t }))) });
        w.clock.set(new Date(Date.parse('2026-01-01T00:00:00.000Z') + day * DAY));
        const before = await eventCount(w);
        await pollTick(w.ctx, workers.pollerDeps);
        sent.push(...(await newTitles(w, before)));
      };
      await at(0, ['A', 'P']); // P, pinned, stays in the feed all along
      await at(5, ['B', 'A', 'P']);
      await at(10, ['C', 'B', 'P']); // A was last shown on day 5
      for (let day = 15; day <= 45; day += 5) await at(day, [`X${day}`, 'P']);
      const { summary } = await tick(w);
      // Latest sighting day 45: gone before day 15 are A (day 5), B and C (day 10).
      assert.equal(summary.retention.keysPruned, 3);
      assert.equal(await keyCount(w, sub.feed), 8);
      const history = () =>
        w.ctx.db.column(
          `SELECT ${jsonText(w.ctx.db, 'entry', 'guid')} FROM entry_history WHERE feed_id = ? ORDER BY 1`,
          [sub.feed],
        );
      assert.deepEqual(
        await history(),
        ['P', 'X15', 'X20', 'X25', 'X30', 'X35', 'X40', 'X45'],
        'a stored entry goes with its key: the history never shows as known what would be sent again',
      );
      await at(50, ['Y', 'A', 'P', 'X15']);
      assert.deepEqual(sent.slice(-2).sort(), ['A', 'Y'], 'P and X15 are still known; A came back');
      assert.ok((await history()).includes('A'), 'and is stored again');
    } finally {
      await workers.close();
      await w.close();
    }
  });

  it('keeps at most entry_keys_max_per_feed keys of a feed with new ids on every poll, never one its document shows', async () => {
    const { w, subscribe } = await setUp({ retention: { entry_keys_max_per_feed: 30 } });
    const workers = createWorkers(w.ctx, silentLogger);
    try {
      const path = '/fresh.xml';
      const sub = await subscribe(origin.url + path);
      const sent: string[] = [];
      for (let round = 0; round < 20; round++) {
        // P, the first entry, stays in the document all along, beside the 8 newest of 5 new ones a poll.
        const news = Array.from({ length: 8 }, (_, i) => `N${round * 5 + 7 - i}`);
        origin.set(path, { body: rss([...news, 'P'].map((t) => ({ guid: t, title: t }))) });
        w.clock.advance(2 * 3600_000);
        const before = await eventCount(w);
        await pollTick(w.ctx, workers.pollerDeps);
        sent.push(...(await newTitles(w, before)));
        assert.ok(
          (await keyCount(w, sub.feed)) <= 30,
          `round ${round}: ${await keyCount(w, sub.feed)} keys`,
        );
      }
      assert.equal(await keyCount(w, sub.feed), 30);
      assert.equal((await getFeed(w.ctx.db, sub.feed))!.stored_keys, 30);
      assert.equal(sent.filter((t) => t === 'P').length, 0, 'P, in the baseline, is never sent');
      assert.equal(new Set(sent).size, sent.length, 'no entry sent twice');
      assert.equal(sent.length, 19 * 5);
    } finally {
      await workers.close();
      await w.close();
    }
  });

  it('keeps every key of a feed whose document stopped changing, however long ago', async () => {
    const { w, subscribe } = await setUp({
      retention: { entry_key_days: 30, entry_keys_per_feed: 1 },
    });
    try {
      const sub = await subscribe('http://127.0.0.1:9/still.xml');
      await keys(w, sub.feed, 5, w.clock.now());
      w.clock.advance(90 * DAY); // polled all along, always 304
      assert.equal((await tick(w)).summary.retention.keysPruned, 0);
      assert.equal(await keyCount(w, sub.feed), 5);
    } finally {
      await w.close();
    }
  });

  it('keeps at least entry_keys_per_feed keys, the most recently shown, and prunes in batches', async () => {
    const { w, subscribe } = await setUp({
      retention: { entry_key_days: 1, entry_keys_per_feed: 10 },
    });
    try {
      const sub = await subscribe('http://127.0.0.1:9/many.xml');
      await keys(w, sub.feed, CHUNK_ROWS * 2 + 5, w.clock.now(), 'old');
      w.clock.advance(10 * DAY);
      await keys(w, sub.feed, 4, w.clock.now(), 'new');
      const { summary } = await tick(w);
      assert.equal(summary.retention.keysPruned, CHUNK_ROWS * 2 + 5 - 6);
      const left = await w.ctx.db.column(
        'SELECT key FROM entries WHERE feed_id = ? AND key LIKE ?',
        [sub.feed, 'new%'],
      );
      assert.equal(left.length, 4);
      assert.equal(await keyCount(w, sub.feed), 10);
    } finally {
      await w.close();
    }
  });
});

describe('retention: orphaned feeds and holds', () => {
  it('deletes a feed no subscription has used for orphaned_feed_days with its keys and held entries, in batches', async () => {
    const { w, applicationId, subscribe } = await setUp({ retention: { orphaned_feed_days: 7 } });
    try {
      const gone = await subscribe('http://127.0.0.1:9/gone.xml');
      const paused = await subscribe('http://127.0.0.1:9/paused.xml');
      const recent = await subscribe('http://127.0.0.1:9/recent.xml');
      for (const s of [gone, paused, recent])
        await keys(w, s.feed, CHUNK_ROWS * 2 + 1, w.clock.now());
      await hold(w, gone.feed, 3);
      await removeSubscription(w.ctx, applicationId, gone.id);
      await updateSubscriptionFromInput(w.ctx, applicationId, paused.id, { status: 'paused' });
      w.clock.advance(6 * DAY);
      await removeSubscription(w.ctx, applicationId, recent.id);
      w.clock.advance(2 * DAY); // gone: unused for 8 days; recent: for 2
      const counted: unknown[] = [];
      const { summary } = await tick(w, { ...noTelemetry, retained: (c) => counted.push(c) });
      assert.equal(summary.retention.feedsDeleted, 1);
      assert.equal(await getFeed(w.ctx.db, gone.feed), undefined);
      assert.equal(await keyCount(w, gone.feed), 0);
      assert.ok((await getFeed(w.ctx.db, paused.feed)) && (await getFeed(w.ctx.db, recent.feed)));
      assert.deepEqual(counted, [
        { entryKeys: 2 * (CHUNK_ROWS * 2 + 1), heldEntries: 0, orphanedFeeds: 1 },
      ]);
    } finally {
      await w.close();
    }
  });

  it('stops deleting a feed as soon as a subscription uses it again', async () => {
    const { w, applicationId, subscribe } = await setUp({ retention: { orphaned_feed_days: 7 } });
    try {
      const url = 'http://127.0.0.1:9/back.xml';
      const first = await subscribe(url);
      const chunks = 10;
      await keys(w, first.feed, CHUNK_ROWS * chunks, w.clock.now());
      await removeSubscription(w.ctx, applicationId, first.id);
      w.clock.advance(8 * DAY);
      const pass = retentionPass(w.ctx, w.clock.now(), { batches: 100 });
      // Once its first batch is in, the feed is used again: far from the end of its keys, whatever the engine's pace.
      await until(
        async () => (await keyCount(w, first.feed)) < CHUNK_ROWS * chunks,
        10_000,
        'the first batch deleted',
        1,
      );
      const again = await subscribe(url);
      const left = await keyCount(w, first.feed);
      const summary = await pass;
      assert.equal(again.feed, first.feed);
      assert.equal(summary.feedsDeleted, 0);
      assert.ok(await getFeed(w.ctx.db, first.feed));
      const kept = await keyCount(w, first.feed);
      assert.ok(
        kept >= left - CHUNK_ROWS && kept > 0,
        `${kept} keys kept of ${left} when it was used again: at most the batch under way went after`,
      );
    } finally {
      await w.close();
    }
  });

  it('trims a hold over its cap (one made before the cap, or under a larger one) from its end and counts what went', async () => {
    const { w, subscribe } = await setUp({ retention: { held_entries_per_feed: 1000 } });
    try {
      const sub = await subscribe('http://127.0.0.1:9/held.xml');
      await hold(w, sub.feed, 1200);
      const { summary } = await tick(w);
      assert.equal(summary.retention.heldTrimmed, 200);
      const positions = await w.ctx.db.get(
        'SELECT max(position) AS last, count(*) AS n FROM held_entries WHERE feed_id = ?',
        [sub.feed],
      );
      assert.deepEqual(positions, { last: 999, n: 1000 });
      assert.equal((await getFeed(w.ctx.db, sub.feed))!.held_dropped, 200);
    } finally {
      await w.close();
    }
  });
});

/** Holds `n` entries for the feed, positions 0…n-1, whatever the cap. */
async function hold(w: World, feed: string, n: number): Promise<void> {
  await w.ctx.store.write((db) =>
    holdEntries(
      db,
      feed,
      Array.from({ length: n }, (_, i) => ({
        key: `h${i}`,
        entry: JSON.stringify(entry({ guid: `h${i}` })),
        position: i,
      })),
      w.clock.now(),
      { entries: n, bytes: 1 << 30 },
    ),
  );
}

/** Titles of the entries of events made after the first `skip` events, in creation order. */
async function newTitles(w: World, skip: number): Promise<string[]> {
  return (
    (await w.ctx.db.column(
      'SELECT body FROM event_bodies JOIN events ON id = event_id ORDER BY id',
    )) as string[]
  )
    .slice(skip)
    .flatMap((b) =>
      (JSON.parse(b) as { data: { entries: { title: string }[] } }).data.entries.map(
        (e) => e.title,
      ),
    );
}
