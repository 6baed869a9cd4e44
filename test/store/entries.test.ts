// Entry keys: what a feed stores under a document's keys, read by a walk of the feed's keys when it stores not many more
// than asked for, else by a seek per key — the same answer either way. Held entries: the trace finds one by its key,
// then its guid, then its URL, the first in document order among several.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { findHeldEntry, holdEntries, recordKeys, storedKeys } from '../../src/store/entries.ts';
import { upsertFeed } from '../../src/store/feeds.ts';
import { populate } from './exercise.ts';
import { makeWorld } from '../support/world.ts';

describe('stored entry keys', async () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const now = new Date('2026-01-01T00:00:00.000Z');
  const { feed } = await populate(db, now, 1, 1); // one feed, storing one key (k0)
  const asked = ['k0', 'a1', 'a2', 'missing'];
  const answer = async () =>
    new Map(
      (await storedKeys(db, feed, asked))
        .filter(({ key }) => asked.includes(key))
        .map(({ key, fingerprint, seen_at }) => [key, { fingerprint, seenAt: seen_at }]),
    );
  const expected = new Map([
    ['k0', { fingerprint: null, seenAt: now.toISOString() }],
    ['a1', { fingerprint: 'f1', seenAt: now.toISOString() }],
    ['a2', { fingerprint: null, seenAt: now.toISOString() }],
  ]);
  await recordKeys(
    db,
    feed,
    [
      { key: 'a1', fingerprint: 'f1' },
      { key: 'a2', fingerprint: null },
    ],
    now,
  );

  it('tells the asked keys the feed stores, with fingerprint and last sighting, from a walk of a few keys', async () => {
    assert.deepEqual(await answer(), expected);
  });

  it('tells the same by a seek per key when the feed stores many more keys than asked for', async () => {
    const other = Array.from({ length: 500 }, (_, i) => ({ key: `o${i}`, fingerprint: null }));
    await recordKeys(db, feed, other, now);
    assert.deepEqual(await answer(), expected);
    assert.deepEqual(
      (await storedKeys(db, feed, asked)).map(({ key }) => key).sort(),
      ['a1', 'a2', 'k0'],
      'only the asked keys are read',
    );
  });
});

describe('finding a held entry by id, guid or URL', async () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const now = new Date('2026-01-01T00:00:00.000Z');
  const { feed } = await populate(db, now, 1, 1);
  const other = (await upsertFeed(db, 'https://feeds.example/other.xml', null, '', now)).id;
  /** Holds entries with these keys, guids, URLs and positions, in the order given. */
  const hold = (
    feedId: string,
    rows: [key: string, guid: string | null, url: string, position: number][],
  ) =>
    holdEntries(
      db,
      feedId,
      rows.map(([key, guid, url, position]) => ({
        key,
        entry: JSON.stringify({ guid, url, title: key }),
        position,
      })),
      now,
      { entries: 100, bytes: 1 << 20 },
    );
  await hold(feed, [
    ['k-late', 'shared-guid', 'https://blog.example/a', 7],
    ['k-early', 'shared-guid', 'https://blog.example/b', 2],
    ['k-url-first', 'g-x', 'https://blog.example/both', 0],
    ['k-guid-is-url', 'https://blog.example/both', 'https://blog.example/c', 5],
    ['k-url-late', 'g-y', 'https://blog.example/u', 9],
    ['k-url-early', 'g-z', 'https://blog.example/u', 3],
    ['k-no-guid', null, 'https://blog.example/no-guid', 4],
    ['k-looks-like-key', 'k-late', 'https://blog.example/d', 1],
  ]);
  await hold(other, [['k-elsewhere', 'elsewhere', 'https://blog.example/elsewhere', 0]]);
  const find = async (text: string) => {
    const row = await findHeldEntry(db, feed, text);
    return row && [row.matched_by, row.key];
  };

  it('finds an entry by its key before any entry whose guid or URL is that text', async () => {
    assert.deepEqual(await find('k-late'), ['id', 'k-late']);
  });

  it('finds the first in document order of the entries with a guid', async () => {
    assert.deepEqual(await find('shared-guid'), ['guid', 'k-early']);
  });

  it('finds an entry by its guid before an earlier one whose URL is that text', async () => {
    assert.deepEqual(await find('https://blog.example/both'), ['guid', 'k-guid-is-url']);
  });

  it('finds the first in document order of the entries with a URL when no guid is that text', async () => {
    assert.deepEqual(await find('https://blog.example/u'), ['url', 'k-url-early']);
    assert.deepEqual(await find('https://blog.example/no-guid'), ['url', 'k-no-guid']);
  });

  it("finds nothing for a text no held entry of the feed has, nor another feed's entry", async () => {
    assert.equal(await find('https://blog.example/never'), undefined);
    assert.equal(await find('elsewhere'), undefined);
    assert.equal(await find('null'), undefined, 'an entry without a guid has none');
  });

  it('answers with the whole held row', async () => {
    const row = (await findHeldEntry(db, feed, 'g-y'))!;
    assert.deepEqual([row.position, row.held_at], [9, now.toISOString()]);
    assert.equal(JSON.parse(row.entry).url, 'https://blog.example/u');
  });
});
