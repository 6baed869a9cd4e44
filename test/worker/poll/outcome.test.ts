// Storing an outcome re-reads the feed inside its transaction: what a subscriber changed while the fetch was in flight
// (a hold released, a baseline restarted) is not overwritten by the record as it was claimed; a quiet 304's one UPDATE
// checks the same.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { startGatedOrigin, type GatedOrigin } from '../../support/gated-origin.ts';
import { rss } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';

describe('poll outcome', () => {
  let origin: GatedOrigin;
  let w: World;
  let workers: Workers;
  before(async () => {
    origin = await startGatedOrigin();
    w = makeWorld({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
    });
    workers = createWorkers(w.ctx, silentLogger);
  });
  after(async () => {
    await w.close();
    await workers.close();
    await origin.close();
  });

  /** A new application with one endpoint, subscribed to the origin's `path` (served already). */
  async function subscribe(
    path: string,
  ): Promise<{ key: string; sub: { id: string; feed: string } }> {
    const { key } = await w.key();
    const ep = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://h.example/' },
      })
    ).body.id;
    const sub = (
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint: ep, url: `${origin.url}${path}` },
      })
    ).body;
    return { key, sub };
  }

  it('a churn hold released while a fetch is in flight stays released', async () => {
    const many = (prefix: string) =>
      rss(Array.from({ length: 12 }, (_, i) => ({ guid: `${prefix}-${i}` })));
    origin.set('/f.xml', many('old'));
    const { key, sub } = await subscribe('/f.xml');
    const tick = async () => {
      w.clock.advance(2 * 3600 * 1000);
      await pollTick(w.ctx, workers.pollerDeps);
    };
    await tick();
    origin.set('/f.xml', many('new'));
    await tick();
    assert.equal((await getFeed(w.ctx.db, sub.feed))!.status, 'identity_changed');
    const gate = origin.hold('/f.xml');
    const polling = tick();
    await gate.arrived;
    const released = await w.call('POST', `/v1/feeds/${sub.feed}/accept-identity-change`, {
      key,
      body: { action: 'discard' },
    });
    assert.equal(released.status, 200);
    gate.release();
    await polling;
    const f = (await getFeed(w.ctx.db, sub.feed))!;
    assert.equal(f.status, 'active', 'not put back on hold by the record read before the fetch');
    assert.equal(f.entry_count, 24);
  });

  it('an unchanged answer fetched for a subscription deleted meanwhile leaves the feed due for a baseline', async () => {
    origin.set('/u.xml', rss([{ guid: 'a' }]));
    const { key, sub } = await subscribe('/u.xml');
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps);
    assert.equal((await getFeed(w.ctx.db, sub.feed))!.status, 'active');
    const gate = origin.hold('/u.xml'); // the same body again: unchanged, by its hash
    w.clock.advance(2 * 3600 * 1000);
    const polling = pollTick(w.ctx, workers.pollerDeps);
    await gate.arrived;
    assert.equal((await w.call('DELETE', `/v1/subscriptions/${sub.id}`, { key })).status, 204);
    gate.release();
    const { summary } = await polling;
    assert.ok(summary.notModified >= 1, 'the answer was unchanged');
    const f = (await getFeed(w.ctx.db, sub.feed))!;
    assert.equal(f.baseline_at, null, 'the next document is a fresh baseline');
    assert.ok(f.next_poll_at <= w.clock.now().toISOString(), 'due at once for the next subscriber');
  });

  it('a quiet feed polled on time is due one interval after it was due; one polled late is scheduled from now', async () => {
    origin.set('/p.xml', rss([{ guid: 'a' }]));
    const { key, sub } = await subscribe('/p.xml');
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps); // the baseline
    const due = (await getFeed(w.ctx.db, sub.feed))!.next_poll_at;
    w.clock.set(new Date(Date.parse(due) + 1500)); // on time, give or take a claim
    await pollTick(w.ctx, workers.pollerDeps);
    const onTime = (await getFeed(w.ctx.db, sub.feed))!;
    assert.equal(onTime.last_polled_at, w.clock.now().toISOString(), 'polled (unchanged)');
    const interval = onTime.interval_seconds! * 1000;
    assert.equal(Date.parse(onTime.next_poll_at), Date.parse(due) + interval, 'kept its place');
    w.clock.set(new Date(Date.parse(onTime.next_poll_at) + 3 * 3600 * 1000)); // three hours late
    await pollTick(w.ctx, workers.pollerDeps);
    const late = (await getFeed(w.ctx.db, sub.feed))!;
    const wait = Date.parse(late.next_poll_at) - w.clock.now().getTime();
    assert.ok(wait >= interval * 0.9 && wait <= interval * 1.1, `due ${wait} ms from now`);
  });

  it('a document fetched for a subscription deleted meanwhile sends nothing and leaves the feed due for a baseline', async () => {
    origin.set('/g.xml', rss([{ guid: 'a' }]));
    const { key, sub } = await subscribe('/g.xml');
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps);
    origin.set('/g.xml', rss([{ guid: 'c' }, { guid: 'b' }, { guid: 'a' }]));
    const gate = origin.hold('/g.xml');
    w.clock.advance(2 * 3600 * 1000);
    const polling = pollTick(w.ctx, workers.pollerDeps);
    await gate.arrived;
    assert.equal((await w.call('DELETE', `/v1/subscriptions/${sub.id}`, { key })).status, 204);
    gate.release();
    await polling;
    const f = (await getFeed(w.ctx.db, sub.feed))!;
    assert.equal(f.baseline_at, null, 'the next document is a fresh baseline');
    assert.ok(f.next_poll_at <= w.clock.now().toISOString(), 'due at once for the next subscriber');
    const events = (await w.ctx.db.get(
      'SELECT count(*) AS n FROM events WHERE subscription_id = ?',
      [sub.id],
    )) as { n: number };
    assert.equal(events.n, 0);
  });
});
