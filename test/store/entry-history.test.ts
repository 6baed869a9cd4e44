// The trace's lookup in the entry history: an entry is found by its key first, then by its guid, then by its URL, and
// among several entries with that guid (or URL) the newest, by first sighting and then by the order they were stored.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  findHistory,
  insertHistory,
  knownEntries,
  storeNewVersion,
} from '../../src/store/entry-history.ts';
import { upsertFeed } from '../../src/store/feeds.ts';
import { makeWorld } from '../support/world.ts';
import { populate } from './exercise.ts';

describe('finding an entry of the history by id, guid or URL', async () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
  const { feed } = await populate(db, new Date(at(0)), 1, 1);
  const other = (await upsertFeed(db, 'https://feeds.example/other.xml', null, '', new Date(at(0))))
    .id;
  /** Stores entries (oldest first) with these keys, guids, URLs and first sightings. */
  const store = (
    feedId: string,
    rows: [key: string, guid: string | null, url: string, s: number][],
  ) =>
    insertHistory(
      db,
      feedId,
      rows.map(([key, guid, url, s]) => ({
        key,
        key_source: 'guid',
        entry: JSON.stringify({ id: key, guid, url, title: key }),
        content_hash: key,
        first_seen_at: at(s),
        via: 'poll' as const,
        fate: 'new' as const,
      })),
    );
  await store(feed, [
    ['k-old', 'shared-guid', 'https://blog.example/a', 1],
    ['k-new', 'shared-guid', 'https://blog.example/b', 2],
    ['k-same-1', 'g-same', 'https://blog.example/same', 3],
    ['k-same-2', 'g-same', 'https://blog.example/same', 3],
    ['k-url-newer', 'g-x', 'https://blog.example/a', 9],
    ['k-guid-is-url', 'https://blog.example/both', 'https://blog.example/c', 4],
    ['k-url-is-guid', 'g-y', 'https://blog.example/both', 8],
    ['k-no-guid', null, 'https://blog.example/no-guid', 5],
    ['k-looks-like-key', 'k-old', 'https://blog.example/d', 6],
  ]);
  await store(other, [['k-elsewhere', 'elsewhere', 'https://blog.example/elsewhere', 1]]);
  const find = async (text: string) => {
    const row = await findHistory(db, feed, text);
    return row && [row.matched_by, row.key];
  };

  it('finds an entry by its key before any entry whose guid or URL is that text', async () => {
    assert.deepEqual(await find('k-old'), ['id', 'k-old']);
  });

  it('finds the newest of the entries with a guid, by first sighting, then the last stored', async () => {
    assert.deepEqual(await find('shared-guid'), ['guid', 'k-new']);
    assert.deepEqual(await find('g-same'), ['guid', 'k-same-2']);
  });

  it('finds an entry by its guid before a newer one whose URL is that text', async () => {
    assert.deepEqual(await find('https://blog.example/both'), ['guid', 'k-guid-is-url']);
  });

  it('finds the newest of the entries with a URL when no guid is that text', async () => {
    assert.deepEqual(await find('https://blog.example/a'), ['url', 'k-url-newer']);
    assert.deepEqual(await find('https://blog.example/same'), ['url', 'k-same-2']);
    assert.deepEqual(await find('https://blog.example/no-guid'), ['url', 'k-no-guid']);
  });

  it("finds nothing for a text no entry of the feed has, nor another feed's entry", async () => {
    assert.equal(await find('https://blog.example/never'), undefined);
    assert.equal(await find('elsewhere'), undefined);
    assert.equal(await find('https://blog.example/elsewhere'), undefined);
    assert.equal(await find('null'), undefined, 'an entry without a guid has none');
  });

  it('answers with the whole stored row', async () => {
    const row = (await findHistory(db, feed, 'g-y'))!;
    assert.equal(row.first_seen_at, at(8));
    assert.equal(JSON.parse(row.entry).url, 'https://blog.example/both');
    assert.deepEqual([row.fate, row.via, row.key_source], ['new', 'poll', 'guid']);
  });
});

describe("a feed's known entries, which its next document is read against", async () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const now = new Date(Date.UTC(2026, 0, 1));
  const { feed } = await populate(db, now, 1, 1);
  const row = (key: string, source_hash: string | null) => ({
    key,
    key_source: 'guid',
    entry: JSON.stringify({ id: key }),
    content_hash: `c-${key}`,
    first_seen_at: now.toISOString(),
    via: 'poll' as const,
    fate: 'new' as const,
    source_hash,
  });

  it('are the stored entries that have a source hash, with the feed’s key source; none for another parser version', async () => {
    const version = (await db.value('SELECT parser_version FROM feeds WHERE id = ?', [
      feed,
    ])) as number;
    assert.deepEqual(await knownEntries(db, feed, version), { identityKey: 'guid', rows: [] });
    await insertHistory(db, feed, [row('a', 's-a'), row('b', null), row('c', 's-c')]);
    await storeNewVersion(
      db,
      feed,
      { key: 'c', entry: '{}', content_hash: 'c-2', source_hash: 's-c2' },
      now,
    );
    const known = await knownEntries(db, feed, version);
    assert.equal(known?.identityKey, 'guid');
    assert.deepEqual(known?.rows.sort(), [
      ['s-a', 'a', 'c-a'],
      ['s-c2', 'c', 'c-2'],
    ]);
    assert.equal(await knownEntries(db, 'no-such-feed', version), undefined);
    assert.equal(await knownEntries(db, feed, version + 1), undefined, 'read by another parser');
  });
});
