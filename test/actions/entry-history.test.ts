// The entry history through real polls (local origin, real SQLite, the API): the entries list, backfill, updated entries
// (opt-in), the bound per feed, and the trace of a baseline, a paused, a held and a queued entry.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { queueBackfillChunk } from '../../src/actions/backfills.ts';
import { silentLogger } from '../../src/log.ts';
import { createWorkers, type Workers } from '../../src/worker/index.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { startOrigin, type Origin } from '../support/servers.ts';
import { makeWorld, type World } from '../support/world.ts';

type Item = { guid: string; title?: string; description?: string; updated?: string };
type Sent = {
  subscription: string;
  type: string;
  sequence: number;
  data: {
    backfill?: boolean;
    entries: { id: string; guid: string; title: string; summary: string | null }[];
  };
};

/** An RSS document of these items, in this order (newest first). Each has a link and a date, so a new title alone is
 *  a new version of the entry, not another entry reusing its guid (feed/identity/keys.ts). */
function feed(items: Item[]): string {
  const body = items
    .map(
      (i) =>
        `<item><guid>${i.guid}</guid><title>${i.title ?? i.guid}</title><link>http://example.com/${i.guid}</link>` +
        '<pubDate>Thu, 01 Jan 2026 00:00:00 GMT</pubDate>' +
        (i.description ? `<description>${i.description}</description>` : '') +
        (i.updated ? `<atom:updated>${i.updated}</atom:updated>` : '') +
        '</item>',
    )
    .join('');
  return `<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>T</title><link>http://example.com/</link>${body}</channel></rss>`;
}
const guids = (...ids: number[]) => feed(ids.map((i) => ({ guid: `g${i}` })));
/** `count` ids counting down from `from`: a document's guids, newest first. */
const ids = (from: number, count: number) => Array.from({ length: count }, (_, i) => from - i);

describe('entry history', () => {
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
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
      retention: { entry_history_per_feed: 50 },
    });
    workers = createWorkers(w.ctx, silentLogger);
    key = (await w.key()).key;
  });

  const path = () => `/e${++n}.xml`;
  const endpoint = async (filter_types?: string[]) =>
    (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: `https://hooks.example.com/${++n}`, filter_types },
      })
    ).body.id as string;
  const subscribe = async (url: string, extra: Record<string, unknown> = {}) => {
    const res = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: await endpoint(), url, ...extra },
    });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; feed: string; updates: boolean };
  };
  const poll = async () => {
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps);
  };
  /** What the backfill loop does with the ready backfills: every chunk of them. */
  const backfill = async () => {
    for (let chunk = await queueBackfillChunk(w.ctx, ''); chunk;)
      chunk = await queueBackfillChunk(w.ctx, chunk.applicationId);
  };
  const sent = async (sub: string): Promise<Sent[]> =>
    (
      (await w.ctx.db.all(
        `SELECT subscription_id AS subscription, type, sequence, body FROM events JOIN event_bodies ON event_id = id
           WHERE subscription_id = ? ORDER BY sequence`,
        [sub],
      )) as (Omit<Sent, 'data'> & { body: string })[]
    ).map((e) => ({ ...e, data: (JSON.parse(e.body) as { data: Sent['data'] }).data }));
  const entries = async (sub: string, query = '') => {
    const res = await w.call('GET', `/v1/subscriptions/${sub}/entries${query}`, { key });
    assert.equal(res.status, 200, res.text);
    return res.body as { data: { id: string; guid: string; title: string }[]; next: string | null };
  };
  const trace = async (sub: string, entry: string) => {
    const res = await w.call(
      'GET',
      `/v1/subscriptions/${sub}/trace?entry=${encodeURIComponent(entry)}`,
      { key },
    );
    assert.equal(res.status, 200, res.text);
    return res.body as {
      decision: string;
      reason: string;
      key: string | null;
      key_source: string | null;
      matched_by: string | null;
      fate: string | null;
      via: string | null;
      first_seen_at: string | null;
      entry: { guid: string } | null;
      events: { id: string; type: string; status: string; backfill: boolean }[];
    };
  };

  it('lists the feed’s entries as webhooks show them, newest first, a page at a time', async () => {
    const p = path();
    origin.set(p, { body: guids(3, 2, 1) });
    const sub = await subscribe(origin.url + p);
    await poll();
    origin.set(p, { body: guids(5, 4, 3, 2, 1) });
    await poll();
    const all = await entries(sub.id);
    assert.deepEqual(
      all.data.map((e) => e.guid),
      ['g5', 'g4', 'g3', 'g2', 'g1'],
    );
    assert.equal(all.next, null);
    const delivered = (await sent(sub.id))[0]!.data.entries;
    assert.deepEqual(
      all.data.slice(0, 2).map((e) => JSON.stringify(e)),
      [...delivered].reverse().map((e) => JSON.stringify(e)),
      'byte for byte what the event carried',
    );
    const first = await entries(sub.id, '?limit=2');
    assert.deepEqual(
      first.data.map((e) => e.guid),
      ['g5', 'g4'],
    );
    const second = await entries(sub.id, `?limit=2&after=${first.next}`);
    assert.deepEqual(
      second.data.map((e) => e.guid),
      ['g3', 'g2'],
    );
    const bad = await w.call('GET', `/v1/subscriptions/${sub.id}/entries?after=nope`, { key });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errors[0].path, 'after');
    const other = (await w.key()).key;
    const foreign = await w.call('GET', `/v1/subscriptions/${sub.id}/entries`, { key: other });
    assert.equal(foreign.status, 404);
  });

  it('keeps at most entry_history_per_feed entries per feed, the newest', async () => {
    const p = path();
    origin.set(p, { body: guids(...ids(40, 40)) });
    const sub = await subscribe(origin.url + p);
    await poll();
    origin.set(p, { body: guids(...ids(70, 70)) });
    await poll();
    const page = await entries(sub.id, '?limit=200');
    assert.equal(page.data.length, 50);
    assert.equal(page.data[0]!.guid, 'g70');
    assert.equal(page.data.at(-1)!.guid, 'g21');
  });

  it('keeps the newest entry_history_per_feed of a document longer than that, and none of the older ones', async () => {
    const p = path();
    origin.set(p, { body: guids(...ids(80, 80)) });
    const sub = await subscribe(origin.url + p);
    await poll();
    origin.set(p, { body: guids(...ids(140, 140)) }); // 60 new, 20 of them older than what is stored
    await poll();
    const page = await entries(sub.id, '?limit=200');
    assert.deepEqual(
      page.data.map((e) => e.guid),
      ids(140, 50).map((i) => `g${i}`),
    );
    const stored = (
      await w.ctx.db.column('SELECT count(*) FROM entry_history WHERE feed_id = ?', [sub.feed])
    )[0];
    assert.equal(stored, 50);
  });

  it('backfills a new subscription to a watched feed with its n newest entries, marked, then sends new ones as usual', async () => {
    const p = path();
    origin.set(p, { body: guids(4, 3, 2, 1) });
    await subscribe(origin.url + p);
    await poll();
    const late = await subscribe(origin.url + p, { backfill: 2 });
    assert.deepEqual(await sent(late.id), [], 'not in the request');
    assert.equal(w.nudges.backfiller, 1, 'the backfill loop woken');
    await backfill();
    assert.deepEqual(
      (await sent(late.id)).map((e) => [
        e.sequence,
        e.data.backfill,
        e.data.entries.map((x) => x.guid),
      ]),
      [[1, true, ['g3', 'g4']]],
      'oldest first like every event',
    );
    origin.set(p, { body: guids(5, 4, 3, 2, 1) });
    await poll();
    const events = await sent(late.id);
    assert.equal(events.length, 2);
    assert.equal(events[1]!.sequence, 2);
    assert.equal(events[1]!.data.backfill, undefined);
    assert.deepEqual(
      events[1]!.data.entries.map((x) => x.guid),
      ['g5'],
    );
  });

  it('backfills a subscription to a new feed from its baseline, which sends nothing else', async () => {
    const p = path();
    origin.set(p, { body: guids(3, 2, 1) });
    const sub = await subscribe(origin.url + p, { backfill: 5 });
    const plain = await subscribe(origin.url + p);
    assert.deepEqual(await sent(sub.id), [], 'nothing to backfill before the first fetch');
    await backfill();
    assert.deepEqual(await sent(sub.id), [], 'nothing to backfill before the first fetch');
    await poll();
    assert.deepEqual(await sent(sub.id), [], 'not in the poll transaction');
    await backfill();
    assert.deepEqual(
      (await sent(sub.id)).map((e) => [
        e.sequence,
        e.data.backfill,
        e.data.entries.map((x) => x.guid),
      ]),
      [[1, true, ['g1', 'g2', 'g3']]],
    );
    assert.deepEqual(await sent(plain.id), [], 'the baseline rule holds for the others');
    await poll();
    await backfill();
    assert.equal((await sent(sub.id)).length, 1, 'a backfill is sent once');
    const refused = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: await endpoint(), url: origin.url + path(), backfill: 101 },
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.errors[0].path, 'backfill');
  });

  it('sends a new version of a known entry only to subscriptions that asked for updates, once, never for the baseline', async () => {
    const p = path();
    origin.set(p, { body: feed([{ guid: 'a', title: 'First' }, { guid: 'b' }]) });
    const opted = await subscribe(origin.url + p, { updates: true });
    const plain = await subscribe(origin.url + p);
    assert.equal(opted.updates, true);
    assert.equal(plain.updates, false);
    await poll();
    origin.set(p, { body: feed([{ guid: 'a', title: 'First, corrected' }, { guid: 'b' }]) });
    await poll();
    await poll();
    assert.deepEqual(
      (await sent(opted.id)).map((e) => [e.type, e.data.entries.map((x) => x.title)]),
      [['subscription.entries_updated', ['First, corrected']]],
    );
    assert.deepEqual(await sent(plain.id), []);
    assert.equal((await entries(plain.id)).data[0]!.title, 'First, corrected', 'stored as well');
    origin.set(p, {
      body: feed([{ guid: 'a', title: 'First, corrected', description: 'Now with a summary' }]),
    });
    await poll();
    assert.equal((await sent(opted.id)).length, 2, 'a new summary is an update');
    const off = await w.call('PATCH', `/v1/subscriptions/${opted.id}`, {
      key,
      body: { updates: false },
    });
    assert.equal(off.body.updates, false);
    origin.set(p, { body: feed([{ guid: 'a', title: 'Third' }]) });
    await poll();
    assert.equal((await sent(opted.id)).length, 2, 'none once turned off');
  });

  it('traces a baseline entry and one seen before the subscription, by id, guid and URL', async () => {
    const p = path();
    origin.set(p, { body: guids(2, 1) });
    const sub = await subscribe(origin.url + p);
    await poll();
    const byGuid = await trace(sub.id, 'g1');
    assert.equal(byGuid.decision, 'baseline');
    assert.equal(byGuid.matched_by, 'guid');
    assert.equal(byGuid.key_source, 'guid');
    assert.equal(byGuid.via, 'poll');
    assert.equal(byGuid.fate, 'baseline');
    assert.equal(byGuid.entry!.guid, 'g1');
    assert.deepEqual(byGuid.events, []);
    const byId = await trace(sub.id, byGuid.key!);
    assert.equal(byId.matched_by, 'id');
    assert.equal(byId.decision, 'baseline');
    w.clock.advance(1000);
    const late = await subscribe(origin.url + p);
    assert.equal((await trace(late.id, 'g2')).decision, 'before_subscription');
    const unknown = await trace(sub.id, 'https://example.com/never');
    assert.equal(unknown.decision, 'unknown');
    assert.equal(unknown.key, null);
    const missing = await w.call('GET', `/v1/subscriptions/${sub.id}/trace`, { key });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.errors[0].path, 'entry');
  });

  it('traces an entry sent in an event, one seen while paused and one filtered out', async () => {
    const p = path();
    origin.set(p, { body: guids(1) });
    const active = await subscribe(origin.url + p);
    const paused = await subscribe(origin.url + p);
    const filtered = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: await endpoint(['feed.failing']), url: origin.url + p },
    });
    await poll();
    await w.call('PATCH', `/v1/subscriptions/${paused.id}`, { key, body: { status: 'paused' } });
    origin.set(p, { body: guids(2, 1) });
    await poll();
    await w.call('PATCH', `/v1/subscriptions/${paused.id}`, { key, body: { status: 'active' } });
    const queued = await trace(active.id, 'g2');
    assert.equal(queued.decision, 'pending');
    assert.equal(queued.fate, 'new');
    assert.deepEqual(
      queued.events.map((e) => [e.type, e.status, e.backfill]),
      [['subscription.entries', 'pending', false]],
    );
    const missed = await trace(paused.id, 'g2');
    assert.equal(missed.decision, 'paused', missed.reason);
    assert.deepEqual(missed.events, []);
    assert.equal((await trace(filtered.body.id, 'g2')).decision, 'filtered');
  });

  it("sends an updated entry only when the subscription's filter sends its new version, counting the other", async () => {
    const p = path();
    origin.set(p, {
      body: feed([
        { guid: 'a', title: 'Draft' },
        { guid: 'b', title: 'Draft too' },
      ]),
    });
    const sub = await subscribe(origin.url + p, {
      updates: true,
      filter: { block: [{ field: 'title', matches: '^draft' }] },
    });
    await poll();
    origin.set(p, {
      body: feed([
        { guid: 'a', title: 'Published' },
        { guid: 'b', title: 'Draft, again' },
      ]),
    });
    await poll();
    assert.deepEqual(
      (await sent(sub.id)).map((e) => [e.type, e.data.entries.map((x) => x.title)]),
      [['subscription.entries_updated', ['Published']]],
    );
    const view = await w.call('GET', `/v1/subscriptions/${sub.id}`, { key });
    assert.equal(view.body.entries_filtered, 1);
  });

  it("traces an entry the subscription's filter kept back, naming the rule, and says when the filter changed after it", async () => {
    const p = path();
    origin.set(p, { body: guids(1) });
    const sub = await subscribe(origin.url + p, {
      filter: {
        keep: [{ field: 'title', contains: 'g9' }],
        block: [{ field: 'url', matches: '/g3$' }],
      },
    });
    await poll();
    origin.set(p, { body: guids(3, 2, 1) });
    await poll();
    const blocked = await trace(sub.id, 'g3');
    assert.equal(blocked.decision, 'filtered');
    assert.match(
      blocked.reason,
      /the subscription's filter blocked by rule filter\.block\[0\] \(url matches \/\/g3\$\/\)/,
    );
    const notKept = await trace(sub.id, 'g2');
    assert.equal(notKept.decision, 'filtered');
    assert.match(notKept.reason, /no keep rule matched \(title contains "g9"\)/);
    w.clock.advance(1000);
    await w.call('PATCH', `/v1/subscriptions/${sub.id}`, {
      key,
      body: { filter: { block: [{ field: 'title', contains: 'g2' }] } },
    });
    const changed = await trace(sub.id, 'g2');
    assert.equal(changed.decision, 'unknown');
    assert.match(
      changed.reason,
      /changed at .* \(after that\), would now say: blocked by rule filter\.block\[0\]/,
    );
    assert.equal((changed as unknown as { filter: { as_seen: boolean } }).filter.as_seen, false);
  });

  it('traces an entry the churn guard holds, then one its hold discarded', async () => {
    const p = path();
    const many = (prefix: string) =>
      feed(Array.from({ length: 12 }, (_, i) => ({ guid: `${prefix}-${i}` })));
    origin.set(p, { body: many('old') });
    const sub = await subscribe(origin.url + p);
    await poll();
    origin.set(p, { body: many('new') });
    await poll();
    const held = await trace(sub.id, 'new-3');
    assert.equal(held.decision, 'held', held.reason);
    assert.equal(held.fate, 'held');
    assert.equal(held.key_source, 'guid');
    assert.equal(held.entry!.guid, 'new-3');
    const res = await w.call('POST', `/v1/feeds/${sub.feed}/accept-identity-change`, {
      key,
      body: { action: 'discard' },
    });
    assert.equal(res.status, 200, res.text);
    const discarded = await trace(sub.id, 'new-3');
    assert.equal(discarded.decision, 'discarded', discarded.reason);
    assert.equal(discarded.key, held.key);
  });
});
