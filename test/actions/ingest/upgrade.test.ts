// The parser-upgrade pass: old entries a newer parser reads for the first time are recorded, not sent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PARSER_VERSION } from '../../../src/feed/parse/parse.ts';
import type { Entry } from '../../../src/feed/types.ts';
import { silentLogger } from '../../../src/log.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import type { Fresh } from '../../../src/actions/ingest/keys.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { splitRevealed, type UpgradeContext } from '../../../src/actions/ingest/upgrade.ts';
import { entry } from '../../support/identity.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';

const fresh = (guid: string, published_at: string | null): Fresh => ({
  plan: { key: guid, source: 'guid', aliases: [], fingerprint: null, seen: false },
  entry: entry({ guid, published_at } as Partial<Entry>),
  position: 0,
});

describe('splitRevealed', () => {
  const last = '2026-01-01T12:00:00.000Z';
  const feed = (over: Partial<UpgradeContext> = {}): UpgradeContext => ({
    parser_version: PARSER_VERSION - 1,
    degraded: null,
    entry_count: 5,
    last_success_at: last,
    ...over,
  });
  const guids = (xs: Fresh[]) => xs.map((f) => f.entry.guid);
  const doc = [
    fresh('older', '2026-01-01T11:00:00.000Z'),
    fresh('newer', '2026-01-01T12:30:00.000Z'),
    fresh('undated', null),
  ];

  it('reveals entries dated before the last success; a clean feed still sends its undated ones', () => {
    const { revealed, toSend } = splitRevealed(doc, feed(), PARSER_VERSION);
    assert.deepEqual([guids(revealed), guids(toSend)], [['older'], ['newer', 'undated']]);
  });

  it('also reveals undated entries of a feed the older parser had trouble with (degraded or empty)', () => {
    for (const troubled of [
      feed({ degraded: 'malformed XML at line 3' }),
      feed({ entry_count: 0 }),
    ]) {
      const { revealed, toSend } = splitRevealed(doc, troubled, PARSER_VERSION);
      assert.deepEqual([guids(revealed), guids(toSend)], [['older', 'undated'], ['newer']]);
    }
  });

  it('reveals nothing without an upgrade, or before the feed ever succeeded', () => {
    for (const f of [feed({ parser_version: PARSER_VERSION }), feed({ last_success_at: null })])
      assert.deepEqual(guids(splitRevealed(doc, f, PARSER_VERSION).toSend), guids(doc));
  });
});

describe('a poll after a parser upgrade', () => {
  let origin: Origin;
  let w: World;
  let workers: Workers;
  before(async () => {
    origin = await startOrigin();
    w = makeWorld();
    workers = createWorkers(w.ctx, silentLogger);
  });
  after(async () => {
    await workers.close();
    await w.close();
    await origin.close();
  });

  it('records the entries the older parser missed and sends only the one published since', async () => {
    const { key } = await w.key();
    const ep = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'E', url: 'https://hooks.example.com/' },
    });
    const day = (d: string) => `${d}, 01 Dec 2025 10:00:00 GMT`;
    const known = [{ guid: 'a', pubDate: day('Mon') }];
    origin.set('/up.xml', { body: rss(known) });
    const sub = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: ep.body.id, url: `${origin.url}/up.xml` },
    });
    await pollTick(w.ctx, workers.pollerDeps); // the baseline, read by "the older parser"
    await w.ctx.db.run(
      "UPDATE feeds SET parser_version = 1, degraded = 'cut at a stray <' WHERE id = ?",
      [sub.body.feed],
    );
    w.clock.advance(3 * 3600_000);
    const published = new Date(w.clock.now().getTime() - 3600_000).toUTCString(); // after the baseline poll
    origin.set('/up.xml', {
      body: rss([
        { guid: 'new', pubDate: published },
        { guid: 'missed-dated', pubDate: day('Mon') },
        { guid: 'missed-undated' },
        ...known,
      ]),
    });
    await pollTick(w.ctx, workers.pollerDeps);
    const bodies = (await w.ctx.db.column('SELECT body FROM event_bodies')) as string[];
    const sent = bodies.flatMap(
      (b) => (JSON.parse(b) as { data: { entries: { guid: string }[] } }).data.entries,
    );
    assert.deepEqual(
      sent.map((e) => e.guid),
      ['new'],
    );
    const feed = (await getFeed(w.ctx.db, sub.body.feed))!;
    assert.equal(feed.parser_version, PARSER_VERSION);
    assert.equal(feed.entry_count, 4, 'the revealed entries count as seen');
    origin.set('/up.xml', {
      body: rss([{ guid: 'later' }, { guid: 'new', pubDate: published }, ...known]),
    });
    w.clock.advance(3 * 3600_000);
    await pollTick(w.ctx, workers.pollerDeps, { all: true }); // due or not: the schedule is not under test
    assert.equal(
      (await w.ctx.db.column('SELECT count(*) FROM events'))[0] as number,
      2,
      'after the upgrade pass an undated new entry is sent as usual',
    );
  });

  it('stores a known entry the newer parser reads differently without sending it as an update', async () => {
    const { key } = await w.key();
    const ep = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'E', url: 'https://hooks.example.com/updates' },
    });
    // A link and a date besides the title, so an edited title is the same entry (keys.ts isOtherEntry).
    const a = {
      guid: 'a',
      link: 'https://example.com/a',
      pubDate: 'Mon, 01 Dec 2025 10:00:00 GMT',
    };
    origin.set('/upd.xml', { body: rss([{ ...a, title: 'A' }]) });
    const sub = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: ep.body.id, url: `${origin.url}/upd.xml`, updates: true },
    });
    await pollTick(w.ctx, workers.pollerDeps, { all: true }); // the baseline
    // As if the older parser had read entry a otherwise (a field the newer one falls back to).
    await w.ctx.db.run('UPDATE feeds SET parser_version = ? WHERE id = ?', [
      PARSER_VERSION - 1,
      sub.body.feed,
    ]);
    await w.ctx.db.run("UPDATE entry_history SET content_hash = 'older' WHERE feed_id = ?", [
      sub.body.feed,
    ]);
    const types = async () =>
      (
        (await w.ctx.db.column(
          'SELECT type FROM events WHERE subscription_id = ? ORDER BY sequence',
          [sub.body.id],
        )) as string[]
      ).join(' ');
    w.clock.advance(3 * 3600_000);
    origin.set('/upd.xml', { body: rss([{ guid: 'b' }, { ...a, title: 'A' }]) });
    await pollTick(w.ctx, workers.pollerDeps, { all: true });
    assert.equal(await types(), 'subscription.entries', 'the new entry b, and no update of a');
    assert.deepEqual(
      await w.ctx.db.column(
        "SELECT content_hash FROM entry_history WHERE feed_id = ? AND content_hash = 'older'",
        [sub.body.feed],
      ),
      [],
      'the version the newer parser reads is stored',
    );
    w.clock.advance(3 * 3600_000);
    origin.set('/upd.xml', { body: rss([{ guid: 'b' }, { ...a, title: 'A, edited' }]) });
    await pollTick(w.ctx, workers.pollerDeps, { all: true });
    assert.equal(await types(), 'subscription.entries subscription.entries_updated');
  });
});
