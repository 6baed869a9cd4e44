// Entry identity through real polls (local origin, real SQLite): tracking parameters, CDN tokens, a feed that starts
// redirecting, constant and shared guids, and a churn hold that switches the feed to a stable identity.
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { Client } from '../../http/dashboard/client.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';
import { subscriber } from '../../support/subscriber.ts';
import { makeWorld, type World } from '../../support/world.ts';

type Item = {
  guid?: string;
  title: string;
  link?: string;
  enclosure?: string;
};

/** RSS with optional guids, links and enclosures (rss() in support always writes a guid). */
const feed = (items: Item[]) =>
  `<?xml version="1.0"?><rss version="2.0"><channel><title>T</title><link>http://example.com/</link>${items
    .map(
      (i) =>
        `<item><title>${i.title}</title>${i.guid ? `<guid isPermaLink="false">${i.guid}</guid>` : ''}${
          i.link ? `<link>${i.link.replaceAll('&', '&amp;')}</link>` : ''
        }${i.enclosure ? `<enclosure url="${i.enclosure.replaceAll('&', '&amp;')}" type="audio/mpeg" length="1"/>` : ''}</item>`,
    )
    .join('')}</channel></rss>`;

describe('entry identity in the poller', () => {
  let origin: Origin;
  let mirror: Origin;
  let w: World;
  let workers: Workers;
  let key: string;
  let endpoint: string;
  let n = 0;
  before(async () => {
    origin = await startOrigin();
    mirror = await startOrigin();
  });
  after(async () => {
    await w.close();
    await workers.close();
    await origin.close();
    await mirror.close();
  });
  beforeEach(async () => {
    await w?.close();
    await workers?.close();
    w = makeWorld({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
    });
    workers = createWorkers(w.ctx, silentLogger);
    key = (await w.key()).key;
    endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://hooks.example.com/' },
      })
    ).body.id;
  });

  const path = () => `/id${++n}.xml`;
  const subscribe = async (url: string) =>
    (await w.call('POST', '/v1/subscriptions', { key, body: { endpoint, url } })).body as {
      id: string;
      feed: string;
    };
  /** Serves each document in turn (the first is the baseline) and polls; returns the titles each poll sent. */
  const polls = async (p: string, docs: string[]): Promise<string[][]> => {
    const sent: string[][] = [];
    for (const doc of docs) {
      origin.set(p, { body: doc });
      const before = await eventCount();
      w.clock.advance(2 * 3600 * 1000);
      await pollTick(w.ctx, workers.pollerDeps);
      sent.push(await titlesSince(before));
    }
    return sent.slice(1);
  };
  const eventCount = async () =>
    ((await w.ctx.db.get('SELECT count(*) AS n FROM events')) as { n: number }).n;
  const titlesSince = async (skip: number): Promise<string[]> =>
    (
      (await w.ctx.db.all(
        'SELECT body FROM event_bodies JOIN events ON id = event_id ORDER BY id',
      )) as { body: string }[]
    )
      .slice(skip)
      .flatMap((r) =>
        // Health events (feed.identity_hold when a hold starts) carry no entries.
        (
          (JSON.parse(r.body) as { data: { entries?: { title: string }[] } }).data.entries ?? []
        ).map((e) => e.title),
      );

  it('sends nothing twice when guid-less links carry a rotating tracking parameter', async () => {
    const p = path();
    await subscribe(origin.url + p);
    const doc = (r: number, titles: string[]) =>
      feed(
        titles.map((t) => ({
          title: t,
          link: `https://blog.example/${t}?utm_source=rss&utm_content=${r}&fbclid=${r}x`,
        })),
      );
    assert.deepEqual(
      await polls(p, [doc(1, ['B', 'A']), doc(2, ['B', 'A']), doc(3, ['C', 'B', 'A'])]),
      [[], ['C']],
    );
  });

  it('does not hold a bigger guid-less feed whose tracking parameters rotate', async () => {
    const p = path();
    const sub = await subscribe(origin.url + p);
    const doc = (r: number) =>
      feed(
        Array.from({ length: 15 }, (_, i) => ({
          title: `T${i}`,
          link: `https://blog.example/${i}?utm_campaign=${r}`,
        })),
      );
    assert.deepEqual(await polls(p, [doc(1), doc(2), doc(3)]), [[], []]);
    assert.equal((await getFeed(w.ctx.db, sub.feed))!.status, 'active');
  });

  it('sends nothing twice when enclosure URLs carry rotating CDN tokens', async () => {
    const p = path();
    await subscribe(origin.url + p);
    const doc = (token: string, eps: number[]) =>
      feed(
        eps.map((e) => ({
          title: `Episode ${e}`,
          enclosure: `https://cdn.example/ep${e}.mp3?token=${token}&Expires=${token}`,
        })),
      );
    assert.deepEqual(await polls(p, [doc('a', [2, 1]), doc('b', [2, 1]), doc('c', [3, 2, 1])]), [
      [],
      ['Episode 3'],
    ]);
  });

  it('keeps the keys of relative links when the feed starts redirecting to another host', async () => {
    const p = path();
    const moved = path();
    await subscribe(origin.url + p);
    const doc = (titles: string[]) => feed(titles.map((t) => ({ title: t, link: `/posts/${t}` })));
    origin.set(p, { body: doc(['B', 'A']) });
    await pollTick(w.ctx, workers.pollerDeps);
    // The feed now answers with a temporary redirect to another origin serving the same document.
    origin.set(p, { body: '', status: 302, headers: { location: mirror.url + moved } });
    mirror.set(moved, { body: doc(['B', 'A']) });
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps);
    assert.equal(await eventCount(), 0, 'the same entries under the new host are not new');
    mirror.set(moved, { body: doc(['C', 'B', 'A']) });
    w.clock.advance(2 * 3600 * 1000);
    await pollTick(w.ctx, workers.pollerDeps);
    assert.deepEqual(await titlesSince(0), ['C']);
  });

  it('delivers every new item of a feed that reuses one guid for all of them', async () => {
    const p = path();
    await subscribe(origin.url + p);
    const one = (t: string) => feed([{ guid: 'latest', title: t, link: `https://x.example/${t}` }]);
    const list = (...ts: string[]) =>
      feed(ts.map((t) => ({ guid: 'latest', title: t, link: `https://x.example/${t}` })));
    assert.deepEqual(
      await polls(p, [one('A'), one('B'), one('C'), one('C'), list('D', 'C', 'B'), list('D', 'C')]),
      [['B'], ['C'], [], ['D'], []],
    );
  });

  it('never re-sends an entry because a neighbour starts or stops sharing its guid', async () => {
    const p = path();
    await subscribe(origin.url + p);
    const doc = (items: [string, string][]) =>
      feed(items.map(([guid, t]) => ({ guid, title: t, link: `https://x.example/${t}` })));
    assert.deepEqual(
      await polls(p, [
        doc([
          ['g1', 'A'],
          ['g2', 'X'],
        ]),
        doc([
          ['g1', 'B'],
          ['g1', 'A'],
          ['g2', 'X'],
        ]),
        doc([
          ['g1', 'A'],
          ['g2', 'X'],
        ]),
        doc([
          ['g1', 'B'],
          ['g2', 'X'],
        ]),
        doc([
          ['g1', 'B'],
          ['g1', 'A'],
          ['g2', 'X'],
        ]),
      ]),
      [['B'], [], [], []],
    );
  });

  it('switches a feed whose guids keep changing to its links, shows it, and re-sends nothing', async () => {
    const p = path();
    const sub = await subscribe(origin.url + p);
    const doc = (round: string, titles: string[]) =>
      feed(
        titles.map((t) => ({ guid: `${round}-${t}`, title: t, link: `https://x.example/${t}` })),
      );
    const old = Array.from({ length: 12 }, (_, i) => `T${i}`);
    const sent = await polls(p, [
      doc('r0', old),
      doc('r1', old), // every guid changed: held
      doc('r2', ['N1', ...old]), // changed again, with one new entry: held
      doc('r3', ['N1', ...old]), // the third change: the links are stable, the feed switches to them
      doc('r4', ['N2', 'N1', ...old]),
    ]);
    assert.deepEqual(sent, [[], [], ['N1'], ['N2']]);
    const view = await w.call('GET', `/v1/feeds/${sub.feed}`, { key });
    assert.equal(view.body.identity_key, 'link');
    assert.equal(view.body.status, 'active');
    assert.equal(view.body.held_entries, 0);
    const client = await new Client(w).signedIn(key);
    const page = await client.get(`/dashboard/subscriptions/${sub.id}`);
    assert.match(page.text, /Entries known by/);
    assert.match(page.text, /link \(then enclosure, content\)/);
  });

  it('keeps a one-time change of every guid held for a person, whatever the links say', async () => {
    const p = path();
    const sub = await subscribe(origin.url + p);
    const doc = (round: string) =>
      feed(
        Array.from({ length: 12 }, (_, i) => ({
          guid: `${round}-${i}`,
          title: `T${i}`,
          link: `https://x.example/${i}`,
        })),
      );
    assert.deepEqual(await polls(p, [doc('a'), doc('b'), doc('b'), doc('b'), doc('b')]), [
      [],
      [],
      [],
      [],
    ]);
    const f = (await getFeed(w.ctx.db, sub.feed))!;
    assert.equal(f.status, 'identity_changed');
    assert.equal(f.identity_key, 'guid');
  });

  it('shows identity_key guid for a feed keyed as usual', async () => {
    const p = path();
    origin.set(p, { body: rss([{ guid: 'a' }]) });
    const sub = await subscribe(origin.url + p);
    await pollTick(w.ctx, workers.pollerDeps);
    assert.equal((await w.call('GET', `/v1/feeds/${sub.feed}`, { key })).body.identity_key, 'guid');
  });
});

describe('the churn hold’s cap', () => {
  let origin: Origin;
  let w: World;
  let workers: Workers;
  before(async () => {
    origin = await startOrigin();
  });
  after(() => origin.close());
  /** A world whose holds keep at most `cap` entries, with a subscriber to `path` on the origin. */
  const capped = async (cap: number, path: string, bytes = 32 * 1024 * 1024) => {
    w = makeWorld({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
      retention: { held_entries_per_feed: cap, held_bytes_per_feed: bytes },
    });
    workers = createWorkers(w.ctx, silentLogger);
    const { key, subscribe } = await subscriber(w);
    return { key, sub: await subscribe(`${origin.url}${path}`) };
  };
  afterEach(async () => {
    await workers.close();
    await w.close();
  });

  it('holds at most its cap, counts the rest, and still switches a feed whose guids keep changing', async () => {
    const { key, sub } = await capped(5, '/capped.xml');
    const doc = (round: string, titles: string[]) =>
      feed(
        titles.map((t) => ({ guid: `${round}-${t}`, title: t, link: `https://x.example/${t}` })),
      );
    const old = Array.from({ length: 12 }, (_, i) => `T${i}`);
    const view = async () => (await w.call('GET', `/v1/feeds/${sub.feed}`, { key })).body;
    const seen: { held: number; dropped: number; status: string }[] = [];
    for (const [round, titles] of [
      ['r0', old],
      ['r1', old], // 12 unseen: 5 held, 7 counted
      ['r2', ['N1', ...old]], // 13 more unseen, none held: the keys still changed
      ['r3', ['N1', ...old]], // the third change: the links are stable, the feed switches
    ] as const) {
      origin.set('/capped.xml', { body: doc(round, [...titles]) });
      w.clock.advance(2 * 3600 * 1000);
      await pollTick(w.ctx, workers.pollerDeps);
      const v = await view();
      seen.push({ held: v.held_entries, dropped: v.held_entries_dropped, status: v.status });
      if (round === 'r2') {
        const page = await (
          await new Client(w).signedIn(key)
        ).get(`/dashboard/subscriptions/${sub.id}`);
        assert.match(page.text, /20 more were not held: the hold is full/);
      }
    }
    assert.deepEqual(seen, [
      { held: 0, dropped: 0, status: 'active' },
      { held: 5, dropped: 7, status: 'identity_changed' },
      { held: 5, dropped: 20, status: 'identity_changed' },
      { held: 0, dropped: 0, status: 'active' },
    ]);
    assert.equal((await view()).identity_key, 'link');
    const titles = (
      (await w.ctx.db.column(
        "SELECT b.body FROM event_bodies b JOIN events e ON e.id = b.event_id WHERE e.type = 'subscription.entries'",
      )) as string[]
    ).flatMap((b) =>
      (JSON.parse(b) as { data: { entries: { title: string }[] } }).data.entries.map(
        (e) => e.title,
      ),
    );
    assert.deepEqual(titles, ['N1'], 'nothing the feed showed before the churn is resent');
  });

  it('holds no more bytes of entries than held_bytes_per_feed, however few entries that is, and counts the rest', async () => {
    const cap = 2000;
    const { key, sub } = await capped(10_000, '/heavy.xml', cap);
    const doc = (round: string) =>
      feed(
        Array.from({ length: 12 }, (_, i) => ({
          guid: `${round}-${i}`,
          title: `T${i} ${'words '.repeat(60)}`,
          link: `https://x.example/${i}`,
        })),
      );
    for (const round of ['a', 'b']) {
      origin.set('/heavy.xml', { body: doc(round) });
      w.clock.advance(2 * 3600 * 1000);
      await pollTick(w.ctx, workers.pollerDeps);
    }
    const sizes = (await w.ctx.db.column(
      'SELECT octet_length(entry) FROM held_entries WHERE feed_id = ?',
      [sub.feed],
    )) as number[];
    const bytes = sizes.reduce((a, b) => a + b, 0);
    const v = (await w.call('GET', `/v1/feeds/${sub.feed}`, { key })).body;
    assert.equal(v.status, 'identity_changed');
    assert.ok(sizes.length >= 1 && sizes.length < 12, `${sizes.length} entries held`);
    assert.ok(bytes <= cap, `${bytes} bytes held, over the cap of ${cap}`);
    assert.ok(bytes + Math.min(...sizes) > cap, 'one more entry would have fit');
    assert.equal(v.held_entries, sizes.length);
    assert.equal(v.held_entries_dropped, 12 - sizes.length);
  });

  it('keeps a one-time change of a document larger than the hold held for a person', async () => {
    const { key, sub } = await capped(2, '/big.xml');
    const doc = (round: string) =>
      feed(
        Array.from({ length: 12 }, (_, i) => ({
          guid: `${round}-${i}`,
          title: `T${i}`,
          link: `https://x.example/${i}`,
        })),
      );
    for (const [i, round] of ['a', 'b', 'b', 'b', 'b'].entries()) {
      origin.set('/big.xml', { body: `${doc(round)}<!-- fetch ${i} -->` }); // parsed every time
      w.clock.advance(2 * 3600 * 1000);
      await pollTick(w.ctx, workers.pollerDeps);
    }
    const view = (await w.call('GET', `/v1/feeds/${sub.feed}`, { key })).body;
    assert.deepEqual(
      [view.status, view.identity_key, view.held_entries, view.held_entries_dropped],
      ['identity_changed', 'guid', 2, 4 * 10],
    );
    const types = await w.ctx.db.column('SELECT type FROM events');
    assert.deepEqual(types, ['feed.identity_hold'], 'the hold is announced once; no entry is sent');
  });
});
