// Entry keys (priority, stability, duplicate disambiguation) and the churn-guard decision.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { entryKeys, isIdentityChurn } from '../../src/feed/identity.ts';
import { parseFeed } from '../../src/feed/parse.ts';
import type { Entry } from '../../src/feed/types.ts';
import { corpusBytes } from '../support/corpus.ts';

const FEED = 'https://example.org/feed.xml';
// `content` is the body version 1 hashed; the key's text comes from key_source, as parsing fills it.
type EntryOver = Partial<Entry> & { content?: string | null };
const entry = (over: EntryOver = {}): Entry => {
  const { content = null, ...rest } = over;
  const e: Entry = {
    guid: null,
    url: null,
    title: null,
    summary: null,
    summary_html: null,
    content_html: content,
    content_text: null,
    image: null,
    authors: [],
    categories: [],
    enclosures: [],
    published_at: null,
    updated_at: null,
    key_source: { title: null, body: null },
    ...rest,
  };
  return { ...e, key_source: over.key_source ?? { title: e.title, body: content ?? e.summary } };
};
const key = (e: Entry) => entryKeys([e], FEED)[0]!;
const enc = (url: string) => ({ url, type: null, length: null });

test('keys are 32 lowercase hex characters, one per entry, in input order', () => {
  const keys = entryKeys(
    [entry({ guid: 'a' }), entry({ guid: 'b' }), entry({ url: 'https://x/1' })],
    FEED,
  );
  assert.equal(keys.length, 3);
  for (const k of keys) assert.match(k, /^[0-9a-f]{32}$/);
  assert.deepEqual(entryKeys([entry({ guid: 'b' }), entry({ guid: 'a' })], FEED), [
    keys[1],
    keys[0],
  ]);
  assert.deepEqual(entryKeys([], FEED), []);
});

test('the key comes from guid, then url, then first enclosure, then title+content+date', () => {
  const full = {
    guid: 'g',
    url: 'https://x/u',
    enclosures: [enc('https://x/e.mp3')],
    title: 't',
    content: 'c',
    published_at: '2020-01-01T00:00:00.000Z',
  };
  const cases: Array<[string, EntryOver, EntryOver]> = [
    ['guid wins over everything else', full, { guid: 'g' }],
    ['url when there is no guid', { ...full, guid: null }, { url: 'https://x/u' }],
    ['url when the guid is blank', { ...full, guid: '  ' }, { url: 'https://x/u' }],
    [
      'first enclosure when there is no url',
      { ...full, guid: null, url: null },
      { enclosures: [enc('https://x/e.mp3')] },
    ],
    [
      'title+content+date as a last resort',
      { ...full, guid: null, url: null, enclosures: [] },
      { title: 't', content: 'c', published_at: '2020-01-01T00:00:00.000Z' },
    ],
  ];
  for (const [name, a, b] of cases) assert.equal(key(entry(a)), key(entry(b)), name);
});

test('fields outside the identity source do not change the key', () => {
  const base = key(entry({ guid: 'post-1', title: 'Old title' }));
  assert.equal(
    key(
      entry({
        guid: 'post-1',
        title: 'Edited title',
        content: 'new',
        updated_at: '2024-01-01T00:00:00.000Z',
      }),
    ),
    base,
  );
  assert.equal(key(entry({ guid: '  post-1 ' })), base, 'guid is trimmed');
  assert.notEqual(
    key(entry({ guid: 'Post-1' })),
    base,
    'guids are case-sensitive, never normalized',
  );
  const byText = key(entry({ title: 't', content: 'c', published_at: '2020-01-01T00:00:00.000Z' }));
  assert.notEqual(
    key(entry({ title: 't', content: 'c2', published_at: '2020-01-01T00:00:00.000Z' })),
    byText,
  );
});

test('a guid and a url with the same text do not collide', () => {
  assert.notEqual(key(entry({ guid: 'https://x/1' })), key(entry({ url: 'https://x/1' })));
});

test('keys do not depend on the feed URL, so a moved feed keeps its history', () => {
  const entries = [entry({ guid: 'a' }), entry({ url: 'https://x/1' }), entry({ title: 't' })];
  assert.deepEqual(entryKeys(entries, FEED), entryKeys(entries, 'https://moved.example/rss'));
});

test('repeated guids in one document get distinct, deterministic keys', () => {
  const dupes = [
    entry({ guid: 'same', title: 'one' }),
    entry({ guid: 'same', title: 'two' }),
    entry({ guid: 'same', title: 'one' }),
    entry({ guid: 'other' }),
  ];
  const keys = entryKeys(dupes, FEED);
  assert.equal(new Set(keys).size, 4);
  assert.deepEqual(entryKeys(dupes, FEED), keys, 'same document, same keys');
  assert.equal(keys[3], key(entry({ guid: 'other' })), 'unique guids keep their plain key');
  // Content-derived, not position-derived: a new entry reusing the guid at the top does not shift the old one's key.
  const [old] = entryKeys(
    [entry({ guid: 'same', title: 'one' }), entry({ guid: 'same', title: 'two' })],
    FEED,
  );
  const [, oldAfter] = entryKeys(
    [
      entry({ guid: 'same', title: 'zero' }),
      entry({ guid: 'same', title: 'one' }),
      entry({ guid: 'same', title: 'two' }),
    ],
    FEED,
  );
  assert.equal(oldAfter, old);
});

test('the corpus case with two entries sharing an id yields two keys', () => {
  const text = corpusBytes('feedparser/wellformed/node_precedence/atom10_id.xml').toString('utf8');
  const feed = parseFeed(text, { baseUrl: FEED });
  assert.deepEqual(
    feed.entries.map((e) => e.guid),
    ['Correct Value', 'Correct Value'],
  );
  assert.equal(new Set(entryKeys(feed.entries, FEED)).size, 2);
});

test('the churn guard fires only for a feed with history presenting mostly unseen keys', () => {
  const cases: Array<[string, Parameters<typeof isIdentityChurn>[0], boolean]> = [
    ['regenerated guids: 10 of 10 unseen', { knownBefore: 10, total: 10, unseen: 10 }, true],
    ['9 of 10 unseen is above 80 %', { knownBefore: 50, total: 10, unseen: 9 }, true],
    ['exactly 80 % is not above the threshold', { knownBefore: 50, total: 10, unseen: 8 }, false],
    ['a normal update', { knownBefore: 50, total: 20, unseen: 2 }, false],
    [
      'first fetch (no history) is the baseline, never churn',
      { knownBefore: 0, total: 50, unseen: 50 },
      false,
    ],
    ['too few items to judge', { knownBefore: 9, total: 9, unseen: 9 }, false],
    ['empty document', { knownBefore: 10, total: 0, unseen: 0 }, false],
    ['custom threshold', { knownBefore: 10, total: 10, unseen: 6, threshold: 0.5 }, true],
    ['custom minimum', { knownBefore: 3, total: 3, unseen: 3, minItems: 3 }, true],
    [
      'a young feed (3 known) gaining a burst of 12 is ordinary publishing',
      { knownBefore: 3, total: 15, unseen: 12 },
      false,
    ],
    ['history of exactly the minimum counts', { knownBefore: 10, total: 12, unseen: 12 }, true],
  ];
  for (const [name, input, expected] of cases) assert.equal(isIdentityChurn(input), expected, name);
});

test('content-derived keys hash the text version 1 hashed, so typed titles and sanitized HTML change no key', () => {
  // Version 1 keyed an entry without guid, link or enclosure by its raw title + content (else summary) + date, and
  // told repeated guids apart by their raw title: the same document must give the same keys now.
  const sha = (parts: string[]) =>
    createHash('sha256').update(parts.join('\u0000'), 'utf8').digest('hex').slice(0, 32);
  const date = 'Tue, 10 Jun 2003 04:00:00 GMT';
  const iso = '2003-06-10T04:00:00.000Z';
  const feed = parseFeed(
    `<rss version="2.0"><channel><title>T</title>
<item><title>A &lt;b&gt;B&lt;/b&gt;</title><description>&lt;p onclick="x()"&gt;x&lt;/p&gt;</description><pubDate>${date}</pubDate></item>
<item><guid>same</guid><title>C &amp;amp; D</title><link>https://x/1</link><pubDate>${date}</pubDate></item>
<item><guid>same</guid><title>E</title><link>https://x/2</link></item>
</channel></rss>`,
    { baseUrl: FEED },
  );
  assert.equal(feed.entries[0]!.title, 'A B', 'the title delivered is plain text');
  assert.deepEqual(entryKeys(feed.entries, FEED), [
    sha(['text', 'A <b>B</b>', '<p onclick="x()">x</p>', iso]),
    sha(['guid\u0000same', 'dup', 'https://x/1', 'C &amp; D', iso, '']),
    sha(['guid\u0000same', 'dup', 'https://x/2', 'E', '', '']),
  ]);
});
