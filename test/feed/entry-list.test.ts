// Packed entries: what the parse thread sends is read back exactly, one entry at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EntryList, packEntries } from '../../src/feed/entry-list.ts';
import { entry } from '../support/identity.ts';

test('packed entries read back exactly, each on its own, whatever their characters', () => {
  const entries = [
    entry({ guid: 'a', title: 'Ünïcödé — “quotes” 🎉 日本語', authors: ['x', 'y'] }),
    entry({}),
    entry({
      guid: 'c',
      content_html: '<p>\u2028line\u2029sep\\ "q"</p>',
      enclosures: [{ url: 'https://e/a.mp3', type: 'audio/mpeg', length: 1234 }],
      published_at: '2026-11-27T10:00:00.000Z',
    }),
  ];
  const list = new EntryList(
    packEntries(entries),
    entries.map((e) => e.published_at),
  );
  assert.equal(list.length, 3);
  assert.deepEqual(list.at(2), entries[2]);
  assert.deepEqual(list.at(0), entries[0]);
  assert.deepEqual(list.all(), entries);
  assert.deepEqual(list.publishedAt, [null, null, '2026-11-27T10:00:00.000Z']);
  assert.notEqual(list.at(1), list.at(1), 'each read is a fresh object');
  assert.throws(() => list.at(3), RangeError);
  assert.equal(new EntryList(packEntries([]), []).length, 0);
});
