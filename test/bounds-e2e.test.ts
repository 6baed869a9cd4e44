// Bounds end to end (the real app with its loops, a local origin; a manual clock drives the polls and maintenance):
// a feed whose entries all change on every poll stops growing at its hold's cap; a feed whose subscriptions are gone
// is deleted with its keys and held entries after its grace; a large release never keeps /healthz waiting.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { startApp, type RunningApp } from '../src/app.ts';
import { manualClock } from '../src/clock.ts';
import { defaultConfig, withConfig } from '../src/config.ts';
import { silentLogger } from '../src/log.ts';
import { countHeldEntries, holdEntries } from '../src/store/entries.ts';
import { getFeed } from '../src/store/feeds.ts';
import { until } from './support/deadline.ts';
import { entry } from './support/identity.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';
import { apiCaller } from './support/subscriber.ts';

const DAY = 86_400_000;
const CAP = 30;

describe('end to end: nothing grows without bound', () => {
  let origin: Origin;
  let receiver: Receiver;
  let app: RunningApp;
  let dir: string;
  let key: string;
  const clock = manualClock('2026-01-01T00:00:00.000Z');

  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
    dir = mkdtempSync(join(tmpdir(), 'feedsub-bounds-'));
    const config = withConfig(defaultConfig(), {
      storage: { data_dir: dir },
      server: { port: 0 },
      network: { allow_private: true },
      poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
      retention: { held_entries_per_feed: CAP },
    });
    app = await startApp(config, silentLogger, clock);
    key = (await createKey(app.ctx, 'bounds', null)).key;
  });
  after(async () => {
    await app.stop();
    await origin.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = apiCaller(
    () => app.url,
    () => key,
  );
  /** Subscribes a new endpoint (the receiver) to `path`, serving `doc` there; waits for the baseline. */
  async function subscribe(path: string, doc: string): Promise<{ id: string; feed: string }> {
    origin.set(path, { body: doc });
    const ep = await api('POST', '/v1/endpoints', { title: 't', url: receiver.url });
    const sub = await api('POST', '/v1/subscriptions', { endpoint: ep.id, url: origin.url + path });
    await until(
      async () => (await getFeed(app.ctx.db, sub.feed))?.baseline_at != null,
      5000,
      'baseline',
    );
    return sub;
  }
  /** Serves `doc` at `path`, lets the feed's interval pass on the clock and waits for the poll to be recorded. */
  async function poll(feed: string, path: string, doc: string): Promise<void> {
    origin.set(path, { body: doc });
    const last = (await getFeed(app.ctx.db, feed))!.last_polled_at;
    clock.advance(2000);
    app.workers.poller.nudge();
    await until(
      async () => (await getFeed(app.ctx.db, feed))!.last_polled_at !== last,
      5000,
      'poll',
    );
  }
  /** 20 entries whose guid, link, title and text are all new in each round: no source stays stable. */
  const churned = (round: number) =>
    rss(
      Array.from({ length: 20 }, (_, i) => ({
        guid: `r${round}-${i}`,
        title: `Round ${round} item ${i}`,
        link: `http://example.com/r${round}/${i}`,
      })),
    );

  it('a feed whose entries all change on every poll holds at most its cap, counts the rest and stops growing', async () => {
    const path = '/churn.xml';
    const sub = await subscribe(path, churned(0));
    for (let round = 1; round <= 5; round++) await poll(sub.feed, path, churned(round));
    const view = await api('GET', `/v1/feeds/${sub.feed}`);
    assert.equal(view.status, 'identity_changed');
    assert.equal(view.held_entries, CAP);
    assert.equal(view.held_entries_dropped, 5 * 20 - CAP);
    assert.equal(await countHeldEntries(app.ctx.db, sub.feed), CAP);

    // Its last subscription goes: after the grace (7 days) the feed, its keys and its hold are deleted.
    await api('DELETE', `/v1/subscriptions/${sub.id}`);
    const rows = async (table: string) =>
      (await app.ctx.db.column(`SELECT count(*) FROM ${table} WHERE feed_id = ?`, [sub.feed]))[0];
    clock.advance(6 * DAY);
    await app.workers.maintenance.runOnce();
    assert.ok(await getFeed(app.ctx.db, sub.feed), 'kept during the grace');
    assert.equal(await rows('entries'), 20);
    clock.advance(2 * DAY);
    await app.workers.maintenance.runOnce();
    assert.equal(await getFeed(app.ctx.db, sub.feed), undefined);
    assert.deepEqual([await rows('entries'), await rows('held_entries')], [0, 0]);
  });

  it('answers /healthz while it releases a hold of 30,000 entries', async () => {
    const path = '/held.xml';
    const sub = await subscribe(path, rss([{ guid: 'a' }]));
    const held = 30_000;
    await app.ctx.store.write(async (tx) => {
      // A hold made before holds had a cap (or under a larger one): the release is what is measured.
      await holdEntries(
        tx,
        sub.feed,
        Array.from({ length: held }, (_, i) => ({
          key: `k${i}`,
          entry: JSON.stringify(entry({ guid: `g${i}`, title: `Held ${i}` })),
          position: i,
        })),
        clock.now(),
        { entries: held, bytes: 1 << 30 },
      );
      await tx.run("UPDATE feeds SET status = 'identity_changed' WHERE id = ?", [sub.feed]);
    });
    let releasedAt = 0;
    const release = api('POST', `/v1/feeds/${sub.feed}/accept-identity-change`, {
      action: 'deliver',
    }).then((body) => {
      releasedAt = performance.now();
      return body;
    });
    const left = () => countHeldEntries(app.ctx.db, sub.feed);
    await until(
      async () => {
        const n = await left();
        return n > 0 && n < held;
      },
      10_000,
      'part of the hold released',
      1,
    );
    const health = await fetch(app.url + '/healthz');
    const answeredAt = performance.now();
    assert.equal(health.status, 200);
    assert.equal(releasedAt, 0, '/healthz was answered before the release ended');
    const body = await release;
    assert.ok(answeredAt < releasedAt);
    assert.equal(body.released, held);
    assert.equal(body.events, held / 100);
    assert.equal(body.status, 'active');
    assert.equal(await left(), 0);
  });
});
