// Reading a document against what the feed's history holds: entries it holds unchanged are not rendered where the
// document is read (they take the stored content hash), yet every entry reads back rendered wherever it is read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EntryList } from '../../../src/feed/entry-list.ts';
import {
  readDocument,
  type DocumentReply,
  type KnownEntries,
} from '../../../src/feed/parse/read-document.ts';

const URL = 'https://e.example/feed';
type Feed = Extract<DocumentReply, { kind: 'feed' }>;

/** An RSS document of `items` (each a guid and a description in HTML, so rendering runs the sanitizer). */
function rss(items: { guid: string; text: string; link?: string }[]): Uint8Array {
  const body = items
    .map(
      (i) =>
        `<item><guid>${i.guid}</guid><title>${i.guid}</title>${i.link ? `<link>${i.link}</link>` : ''}<description><![CDATA[<p>${i.text} <a href="/x">x</a></p>]]></description></item>`,
    )
    .join('');
  return new TextEncoder().encode(
    `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>https://e.example/</link>${body}</channel></rss>`,
  );
}

function read(bytes: Uint8Array, known?: KnownEntries): Feed {
  const reply = readDocument({
    bytes,
    contentType: 'application/rss+xml',
    mode: 'feed',
    parse: { baseUrl: URL },
    keyBase: URL,
    ...(known ? { known } : {}),
  });
  assert.equal(reply.kind, 'feed');
  return reply as Feed;
}

/** The rows a history would hold for `reply`'s entries at `positions` (keyed by guid), with `hash` as content hash. */
function rowsOf(reply: Feed, positions: number[], hash?: string): KnownEntries {
  return {
    identityKey: 'guid',
    rows: positions.map((i) => [
      reply.sourceHashes[i]!,
      reply.identities[i]!.keys.guid!,
      hash ?? reply.contentHashes[i]!,
    ]),
  };
}

const STORED = 'f'.repeat(32);
const items = [
  { guid: 'new', text: 'new one' },
  { guid: 'a', text: 'first' },
  { guid: 'b', text: 'second' },
];

test('entries the history holds unchanged take its content hash and still read back rendered', () => {
  const whole = read(rss(items));
  // A stored hash unlike the real one shows which entries were not rendered here: they take it as it is.
  const reply = read(rss(items), rowsOf(whole, [1, 2], STORED));
  assert.deepEqual(reply.contentHashes, [whole.contentHashes[0], STORED, STORED]);
  const rendered = new EntryList(reply.entries, reply.publishedAt).all();
  assert.deepEqual(rendered, new EntryList(whole.entries, whole.publishedAt).all());
  assert.deepEqual(reply.sourceHashes, whole.sourceHashes);
});

test('an entry whose texts changed since the history stored it is rendered and hashed anew', () => {
  const before = read(rss(items));
  const changed = [items[0]!, { guid: 'a', text: 'first, edited' }, items[2]!];
  const reply = read(rss(changed), rowsOf(before, [1, 2], STORED));
  assert.notEqual(reply.contentHashes[1], STORED);
  assert.equal(reply.contentHashes[1], read(rss(changed)).contentHashes[1]);
  assert.equal(reply.contentHashes[2], STORED);
});

test('an entry the history holds under another key, or whose key another entry shares, is rendered here', () => {
  const whole = read(rss(items));
  const otherKey: KnownEntries = {
    identityKey: 'guid',
    rows: [[whole.sourceHashes[1]!, whole.identities[2]!.keys.guid!, STORED]],
  };
  assert.notEqual(read(rss(items), otherKey).contentHashes[1], STORED);
  const shared = [items[0]!, items[1]!, { guid: 'a', text: 'same guid, other text' }];
  const twice = read(rss(shared));
  assert.deepEqual(
    read(rss(shared), rowsOf(twice, [1], STORED)).contentHashes,
    twice.contentHashes,
  );
});

test('a feed keyed by link matches its history by link keys', () => {
  const linked = items.map((i) => ({ ...i, link: `https://e.example/${i.guid}` }));
  const whole = read(rss(linked));
  const known: KnownEntries = {
    identityKey: 'link',
    rows: [[whole.sourceHashes[2]!, whole.identities[2]!.keys.link!, STORED]],
  };
  assert.equal(read(rss(linked), known).contentHashes[2], STORED);
  const byGuid = {
    ...known,
    rows: [[whole.sourceHashes[2]!, whole.identities[2]!.keys.guid!, STORED]],
  };
  assert.notEqual(read(rss(linked), byGuid as KnownEntries).contentHashes[2], STORED);
});
