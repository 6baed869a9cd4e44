// Backfills off the request path, through real polls (local origin, real SQLite, the API) and the backfill loop's one
// step (queueBackfillChunk): the create and the baseline only make a backfill ready; each chunk queues one event, the
// bytes the create once queued at once; progress is in the database; entries sent by the poll are not sent again;
// pausing or deleting stops it; applications take turns.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { queueBackfillChunk, type BackfillChunk } from '../../src/actions/backfills.ts';
import { eventFeed } from '../../src/actions/entry-events.ts';
import { silentLogger } from '../../src/log.ts';
import { recentHistory } from '../../src/store/entry-history.ts';
import { getFeed } from '../../src/store/feeds.ts';
import {
  buildEntryEvents,
  deliveryOrder,
  envelopeBytes,
  MAX_EVENT_BYTES,
  type EventEntry,
} from '../../src/webhook/event.ts';
import { createWorkers, type Workers } from '../../src/worker/index.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { startOrigin, type Origin } from '../support/servers.ts';
import { makeWorld, type World } from '../support/world.ts';

type Queued = { id: string; sequence: number; type: string; body: string };
type Body = {
  data: { sequence: number; backfill?: boolean; entries: { id: string; guid: string }[] };
};

/** An RSS document of `items` (newest first): a guid, and a description of about `kib` KiB (an entry's JSON carries it
 *  twice, as summary and summary_html). */
function feed(items: [guid: string, kib: number][], title = 'T'): string {
  const body = items
    .map(
      ([guid, kib]) =>
        `<item><guid>${guid}</guid><title>${guid}</title><link>http://example.com/${guid}</link>` +
        `<description>${'x'.repeat(kib * 1024)}</description></item>`,
    )
    .join('');
  return `<?xml version="1.0"?><rss version="2.0"><channel><title>${title}</title><link>http://example.com/</link>${body}</channel></rss>`;
}
/** `count` items of `kib` KiB each, `prefix`1 the oldest (last). */
const items = (prefix: string, count: number, kib: number): [string, number][] =>
  Array.from({ length: count }, (_, i) => [`${prefix}${count - i}`, kib]);

describe('backfills', () => {
  const patch = {
    poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
    quotas: { backfill_entries_per_hour: 0 },
  };
  let origin: Origin;
  let w: World;
  // The poll's deps (HTTP agent, host lookups, the parse thread) are built once for the file from a world of their
  // own: a parse thread takes a second or two to start under tsx, and the feeds here are large enough to need it.
  // pollTick takes each test's own world (database, clock, config) as its ctx; the deps depend only on the config,
  // the same for every world here.
  let depsWorld: World;
  let workers: Workers;
  let n = 0;
  before(async () => {
    origin = await startOrigin();
    depsWorld = makeWorld(patch);
    workers = createWorkers(depsWorld.ctx, silentLogger);
  });
  after(async () => {
    await w.close();
    await workers.close();
    await depsWorld.close();
    await origin.close();
  });
  beforeEach(async () => {
    await w?.close();
    w = makeWorld(patch);
  });

  const path = () => `/b${++n}.xml`;
  const api = async (method: string, url: string, key: string, body?: unknown) => {
    const res = await w.call(method, url, { key, body });
    assert.ok(res.status < 300, `${method} ${url}: ${res.status} ${res.text}`);
    return res.body as { id: string; feed: string; created_at: string };
  };
  const subscribe = async (key: string, url: string, extra: Record<string, unknown> = {}) => {
    const endpoint = await api('POST', '/v1/endpoints', key, {
      title: 'E',
      url: `https://hooks.example.com/${++n}`,
    });
    return api('POST', '/v1/subscriptions', key, { endpoint: endpoint.id, url, ...extra });
  };
  const poll = async () => {
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps);
  };
  const queued = async (sub: string): Promise<Queued[]> =>
    (await w.ctx.db.all(
      `SELECT e.id, e.sequence, e.type, b.body FROM events e JOIN event_bodies b ON b.event_id = e.id
         WHERE e.subscription_id = ? ORDER BY e.sequence`,
      [sub],
    )) as Queued[];
  const guids = async (sub: string) =>
    (await queued(sub)).flatMap((e) =>
      (JSON.parse(e.body) as Body).data.entries.map((x) => x.guid),
    );
  const left = async (sub: string) =>
    (
      await w.ctx.db.column('SELECT count(*) FROM backfill_entries WHERE subscription_id = ?', [
        sub,
      ])
    )[0] as number;
  /** The backfill loop's steps until none is ready (at most `max`: a step that never ends its backfill fails). */
  const chunks = async (max = 200): Promise<BackfillChunk[]> => {
    const done: BackfillChunk[] = [];
    for (let chunk = await queueBackfillChunk(w.ctx, ''); chunk;) {
      done.push(chunk);
      assert.ok(done.length <= max, 'the backfills end');
      chunk = await queueBackfillChunk(w.ctx, chunk.applicationId);
    }
    return done;
  };

  it("takes the n newest entries a subscription's filter sends, and counts none of the others as filtered", async () => {
    const { key } = await w.key();
    const p = path();
    // a1 … a6 and b1 … b6, newest first: b6 … b1, a6 … a1
    origin.set(p, { body: feed([...items('b', 6, 1), ...items('a', 6, 1)]) });
    await subscribe(key, origin.url + p);
    await poll();
    const sub = await subscribe(key, origin.url + p, {
      backfill: 3,
      filter: {
        keep: [{ field: 'title', matches: '^a' }],
        block: [{ field: 'title', contains: 'a6' }],
      },
    });
    await chunks();
    assert.deepEqual(await guids(sub.id), ['a3', 'a4', 'a5'], 'the 3 newest kept, oldest first');
    const view = await api('GET', `/v1/subscriptions/${sub.id}`, key);
    assert.equal((view as unknown as { entries_filtered: number }).entries_filtered, 0);
  });

  it('queues a backfill a chunk at a time after the create, each chunk one event, the bytes the create once queued at once', async () => {
    const { key } = await w.key();
    const p = path();
    // Entries of 40 KiB, one over what the history keeps whole (stored cut), one that fits the history but not an
    // event whose envelope is large (cut when queued); a feed title and metadata that make the envelope over 24 KiB.
    origin.set(p, {
      body: feed(
        [['huge', 300], ...items('a', 6, 20), ['edge', 114], ...items('b', 6, 20)],
        'T'.repeat(8 * 1024),
      ),
    });
    await subscribe(key, origin.url + p);
    await poll();
    const metadata = { note: 'm'.repeat(10 * 1024) };
    const late = await subscribe(key, origin.url + p, { backfill: 100, metadata });
    assert.deepEqual(await queued(late.id), [], 'nothing built in the request');
    assert.equal(w.nudges.backfiller, 1, 'the backfill loop woken');

    // What the create used to queue in its transaction: the history's entries parsed, split by buildEntryEvents.
    const f = (await getFeed(w.ctx.db, late.feed))!;
    const envelope = {
      subscription: { id: late.id, url: origin.url + p, metadata: JSON.stringify(metadata) },
      feed: eventFeed(f, f),
      now: w.clock.now(),
      backfill: true,
    };
    const stored = await recentHistory(w.ctx.db, late.feed, 100);
    const room = MAX_EVENT_BYTES - envelopeBytes(envelope);
    assert.ok(
      stored.some((r) => Buffer.byteLength(r.entry) > room),
      'an entry stored whole is cut to fit the event',
    );
    const expected = buildEntryEvents({
      ...envelope,
      entries: deliveryOrder(stored.map((r) => JSON.parse(r.entry) as EventEntry)),
      firstSequence: 1,
      newId: () => 'x',
    }).map((e) => e.body);
    assert.ok(expected.length >= 3, `${expected.length} events`);

    const steps = await chunks();
    assert.deepEqual(
      steps.map((s) => s.events),
      expected.map(() => 1),
      'one event per chunk',
    );
    assert.equal(steps.at(-1)!.done, true);
    assert.deepEqual(
      (await queued(late.id)).map((e) => e.body),
      expected,
      'byte for byte',
    );
    assert.deepEqual(
      (await queued(late.id)).map((e) => e.sequence),
      expected.map((_, i) => i + 1),
    );
    const carried = (
      await w.ctx.db.column('SELECT count(*) FROM event_entries WHERE subscription_id = ?', [
        late.id,
      ])
    )[0];
    assert.equal(carried, stored.length, 'the trace knows which event carries each entry');
  });

  it('keeps its progress in the database: a backfill cut short goes on where it stopped, each entry once', async () => {
    const { key } = await w.key();
    const p = path();
    origin.set(p, { body: feed(items('g', 30, 40)) });
    await subscribe(key, origin.url + p);
    await poll();
    const late = await subscribe(key, origin.url + p, { backfill: 30 });
    const first = (await queueBackfillChunk(w.ctx, ''))!;
    const second = (await queueBackfillChunk(w.ctx, first.applicationId))!;
    assert.deepEqual([first.events, second.events, first.done, second.done], [1, 1, false, false]);
    const sent = await guids(late.id);
    assert.equal(await left(late.id), 30 - sent.length, 'what was queued is no longer to send');
    // A restart: the loop begins again from nothing but the database.
    await chunks();
    const all = await guids(late.id);
    assert.deepEqual(
      all,
      Array.from({ length: 30 }, (_, i) => `g${i + 1}`),
      'every entry once, oldest first',
    );
    assert.deepEqual(all.slice(0, sent.length), sent);
    assert.deepEqual(
      (await queued(late.id)).map((e) => e.sequence),
      (await queued(late.id)).map((_, i) => i + 1),
    );
    assert.equal(await left(late.id), 0);
    assert.equal(
      (await w.ctx.db.column('SELECT backfill_at FROM subscriptions WHERE id = ?', [late.id]))[0],
      null,
      'done',
    );
  });

  it('sends no entry twice: what the poll finds before the backfill is queued comes once, from the poll', async () => {
    const { key } = await w.key();
    const p = path();
    origin.set(p, { body: feed(items('g', 5, 1)) });
    await subscribe(key, origin.url + p);
    await poll();
    const late = await subscribe(key, origin.url + p, { backfill: 3 });
    origin.set(p, { body: feed([['new1', 1], ...items('g', 5, 1)]) });
    await poll(); // before the backfill loop runs
    await chunks();
    const events = (await queued(late.id)).map((e) => {
      const data = (JSON.parse(e.body) as Body).data;
      return [e.sequence, data.backfill ?? false, data.entries.map((x) => x.guid)];
    });
    assert.deepEqual(events, [
      [1, false, ['new1']],
      [2, true, ['g3', 'g4', 'g5']],
    ]);
  });

  it('stops the backfill of a subscription paused or deleted meanwhile', async () => {
    const { key } = await w.key();
    const p = path();
    origin.set(p, { body: feed(items('g', 20, 40)) });
    await subscribe(key, origin.url + p);
    await poll();
    const paused = await subscribe(key, origin.url + p, { backfill: 20 });
    const deleted = await subscribe(key, origin.url + p, { backfill: 20 });
    await queueBackfillChunk(w.ctx, '');
    await api('PATCH', `/v1/subscriptions/${paused.id}`, key, { status: 'paused' });
    assert.equal(await left(paused.id), 0, 'pausing ends it');
    await queueBackfillChunk(w.ctx, '');
    assert.equal((await queued(deleted.id)).length, 1);
    await api('DELETE', `/v1/subscriptions/${deleted.id}`, key);
    assert.equal(await left(deleted.id), 0);
    assert.deepEqual(await chunks(), [], 'nothing left to queue');
    await api('PATCH', `/v1/subscriptions/${paused.id}`, key, { status: 'active' });
    assert.deepEqual(await chunks(), [], 'resuming does not start it again');
    assert.equal((await queued(paused.id)).length, 1);
  });

  it('takes applications turn about, one chunk each', async () => {
    const p = path();
    origin.set(p, { body: feed(items('g', 12, 30)) });
    const apps = [await w.key(), await w.key()];
    await subscribe(apps[0]!.key, origin.url + p);
    await poll();
    for (const app of apps)
      for (let i = 0; i < 2; i++) await subscribe(app.key, origin.url + p, { backfill: 12 });
    const order = (await chunks()).map((c) => c.applicationId);
    const [a, b] = apps.map((app) => app.applicationId).sort();
    assert.equal(order.length, 4 * 3, 'three events of four entries each, per backfill');
    assert.deepEqual(
      order,
      order.map((_, i) => (i % 2 === 0 ? a : b)),
    );
  });

  it('makes the backfills waiting for a baseline ready in the poll, and queues them after it', async () => {
    const { key } = await w.key();
    const p = path();
    origin.set(p, { body: feed(items('g', 8, 60)) });
    const waiting = await subscribe(key, origin.url + p, { backfill: 5 });
    const plain = await subscribe(key, origin.url + p);
    assert.deepEqual(await chunks(), [], 'nothing to queue before the baseline');
    const nudged = w.nudges.backfiller;
    await poll();
    assert.deepEqual(await queued(waiting.id), [], 'not in the poll transaction');
    assert.equal(w.nudges.backfiller, nudged + 1, 'the poll woke the backfill loop');
    await chunks();
    assert.deepEqual(await guids(waiting.id), ['g4', 'g5', 'g6', 'g7', 'g8']);
    assert.ok((await queued(waiting.id)).every((e) => (JSON.parse(e.body) as Body).data.backfill));
    assert.deepEqual(await queued(plain.id), [], 'the baseline sends the others nothing');
    await poll();
    assert.deepEqual(await chunks(), [], 'a backfill is queued once');
  });
});
