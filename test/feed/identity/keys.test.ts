// Entry keys: sources in order, identity that survives tracking parameters, CDN tokens, redirects, constant and shared
// guids; keys of version 1 still recognised; the churn-guard decision.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import {
  entryIdentities,
  entryKeys,
  isIdentityChurn,
  planKeys,
  type IdentityKey,
  type KeyBase,
} from '../../../src/feed/identity/keys.ts';
import { parseFeed } from '../../../src/feed/parse/parse.ts';
import type { Entry } from '../../../src/feed/types.ts';
import { entry, V1_ENTRIES, V1_KEYS, type EntryOver } from '../../support/identity.ts';

const FEED = 'https://example.org/feed.xml';
const BASE: KeyBase = { keyBase: FEED, documentUrl: FEED };
const key = (e: Entry) => entryKeys([e], FEED)[0]!;
const enc = (url: string) => ({ url, type: null, length: null });

/** A feed's key store in memory, recording as the poller does: poll 1 is the baseline, later polls return the titles
 *  of the entries they would send. */
function feedStore(identityKey: IdentityKey = 'guid', base: KeyBase = BASE) {
  const stored = new Map<string, string | null>();
  let polls = 0;
  return {
    stored,
    poll(entries: Entry[], at: KeyBase = base): (string | null)[] {
      const plans = planKeys(entryIdentities(entries, at), identityKey, (k) => stored.get(k));
      const sent = new Set<string>();
      const titles: (string | null)[] = [];
      plans.forEach((p, i) => {
        if (!p.seen && !sent.has(p.key)) {
          sent.add(p.key);
          titles.push(entries[i]!.title);
        }
      });
      for (const p of plans) {
        if (!stored.has(p.key)) stored.set(p.key, p.fingerprint);
        for (const a of p.aliases) if (!stored.has(a)) stored.set(a, null);
      }
      return polls++ === 0 ? [] : titles;
    },
  };
}

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

test('the key comes from guid, then link, then first enclosure, then title+content+date', () => {
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
    ['link when there is no guid', { ...full, guid: null }, { url: 'https://x/u' }],
    ['link when the guid is blank', { ...full, guid: '  ' }, { url: 'https://x/u' }],
    [
      'first enclosure when there is no link',
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
        title: 'Edited',
        content: 'new',
        updated_at: '2024-01-01T00:00:00.000Z',
      }),
    ),
    base,
  );
  assert.equal(key(entry({ guid: '  post-1 ' })), base, 'guid is trimmed');
  assert.notEqual(key(entry({ guid: 'Post-1' })), base, 'guids are case-sensitive');
  const byText = key(entry({ title: 't', content: 'c', published_at: '2020-01-01T00:00:00.000Z' }));
  assert.notEqual(
    key(entry({ title: 't', content: 'c2', published_at: '2020-01-01T00:00:00.000Z' })),
    byText,
  );
});

test('a guid and a link with the same text do not collide', () => {
  assert.notEqual(key(entry({ guid: 'https://x/1' })), key(entry({ url: 'https://x/1' })));
});

test('keys do not depend on the feed URL when nothing redirects, so a moved feed keeps its history', () => {
  const entries = [entry({ guid: 'a' }), entry({ url: 'https://x/1' }), entry({ title: 't' })];
  assert.deepEqual(entryKeys(entries, FEED), entryKeys(entries, 'https://moved.example/rss'));
});

test('a link is keyed without its tracking parameters and an enclosure without its query', () => {
  const same: [string, Partial<Entry>, Partial<Entry>][] = [
    [
      'rotating utm_content',
      { url: 'https://x.org/p/1?utm_source=rss&utm_content=8f3a' },
      { url: 'https://x.org/p/1?utm_source=rss&utm_content=77c1' },
    ],
    ['fbclid', { url: 'https://x.org/p/1?fbclid=IwAR1' }, { url: 'https://x.org/p/1' }],
    [
      'session id in the path',
      { url: 'https://x.org/p/1;jsessionid=AB12' },
      { url: 'https://x.org/p/1;jsessionid=CD34' },
    ],
    [
      'CDN token',
      { enclosures: [enc('https://cdn.x.org/e/1.mp3?token=a1&exp=9')] },
      { enclosures: [enc('https://cdn.x.org/e/1.mp3?token=b2&exp=10')] },
    ],
  ];
  for (const [name, a, b] of same) assert.equal(key(entry(a)), key(entry(b)), name);
  const different: [string, Partial<Entry>, Partial<Entry>][] = [
    ['?p= names content', { url: 'https://x.org/?p=1' }, { url: 'https://x.org/?p=2' }],
    [
      'another enclosure path',
      { enclosures: [enc('https://cdn.x.org/e/1.mp3?t=a')] },
      { enclosures: [enc('https://cdn.x.org/e/2.mp3?t=a')] },
    ],
  ];
  for (const [name, a, b] of different) assert.notEqual(key(entry(a)), key(entry(b)), name);
});

test('a relative link keeps its key when the feed starts redirecting to another host', () => {
  const before = entryIdentities([entry({ url: 'https://old.x.org/posts/1' })], {
    keyBase: 'https://old.x.org/feed',
    documentUrl: 'https://old.x.org/feed',
  })[0]!;
  // The parser resolved "/posts/1" against the host the redirect led to.
  const after = entryIdentities([entry({ url: 'https://new.x.org/posts/1' })], {
    keyBase: 'https://old.x.org/feed',
    documentUrl: 'https://new.x.org/feed.xml',
  })[0]!;
  assert.equal(after.keys.link, before.keys.link);
  assert.equal(
    after.linkAlias,
    entryIdentities([entry({ url: 'https://new.x.org/posts/1' })], {
      keyBase: 'https://new.x.org/feed.xml',
      documentUrl: 'https://new.x.org/feed.xml',
    })[0]!.keys.link,
    'the link as resolved is an alias, so absolute links on the new host are recognised too',
  );
});

const g = (guid: string, title: string, more: Partial<Entry> = {}) =>
  entry({ guid, title, url: `https://x.org/${title}`, ...more });
const l = (url: string, title: string) => entry({ url, title });

test('polls of real-world feeds send each new entry once', () => {
  const utm = (n: number, r: string) =>
    l(`https://x.org/p/${n}?utm_source=feed&utm_content=${r}`, `P${n}`);
  const pod = (n: number, token: string) =>
    entry({ title: `E${n}`, enclosures: [enc(`https://cdn.x.org/${n}.mp3?token=${token}`)] });
  const cases: [string, Entry[][], (string | null)[][]][] = [
    [
      'guid-less links with a rotating tracking parameter',
      [
        [utm(2, 'a'), utm(1, 'a')],
        [utm(2, 'b'), utm(1, 'b')],
        [utm(3, 'c'), utm(2, 'c'), utm(1, 'c')],
      ],
      [[], [], ['P3']],
    ],
    [
      'enclosures with rotating CDN tokens',
      [[pod(1, 'a')], [pod(1, 'b')], [pod(2, 'c'), pod(1, 'c')]],
      [[], [], ['E2']],
    ],
    [
      'a constant guid on every new item, one item at a time',
      [[g('same', 'A')], [g('same', 'B')], [g('same', 'C')], [g('same', 'C')]],
      [[], ['B'], ['C'], []],
    ],
    [
      'a constant guid on every item of the list',
      [
        [g('same', 'B'), g('same', 'A')],
        [g('same', 'C'), g('same', 'B'), g('same', 'A')],
        [g('same', 'D'), g('same', 'C'), g('same', 'B')],
        [g('same', 'D'), g('same', 'C')],
      ],
      [[], ['C'], ['D'], []],
    ],
    [
      'a neighbour starts sharing a guid, then stops',
      [
        [g('g1', 'A'), g('g2', 'X')],
        [g('g1', 'B'), g('g1', 'A'), g('g2', 'X')],
        [g('g1', 'A'), g('g2', 'X')],
        [g('g1', 'B'), g('g2', 'X')],
      ],
      [[], ['B'], [], []],
    ],
    [
      'an entry shared from the start loses its neighbour',
      [[g('g', 'B'), g('g', 'A')], [g('g', 'A')], [g('g', 'B')], [g('g', 'B'), g('g', 'A')]],
      [[], [], [], []],
    ],
    [
      'an edited title, or a fixed link, is the same entry',
      [
        [g('g', 'A', { published_at: '2020-01-01T00:00:00.000Z' })],
        [g('g', 'A', { title: 'A (edited)', published_at: '2020-01-01T00:00:00.000Z' })],
        [g('g', 'A', { url: 'https://x.org/a-fixed', published_at: '2020-01-01T00:00:00.000Z' })],
      ],
      [[], [], []],
    ],
    [
      'distinct guid-less entries sharing one link (the home page)',
      [
        [l('https://x.org/', 'B'), l('https://x.org/', 'A')],
        [l('https://x.org/', 'C'), l('https://x.org/', 'B'), l('https://x.org/', 'A')],
        [l('https://x.org/', 'C'), l('https://x.org/', 'B')],
      ],
      [[], ['C'], []],
    ],
    [
      'an item repeated in one document is one entry',
      [[g('x', 'X')], [g('a', 'A'), g('a', 'A'), g('x', 'X')]],
      [[], ['A']],
    ],
  ];
  for (const [name, docs, expected] of cases) {
    const store = feedStore();
    assert.deepEqual(
      docs.map((d) => store.poll(d)),
      expected,
      name,
    );
  }
});

test('look-alike entries told apart by an identifier come through once each, and the one keyed before keeps its key', () => {
  const store = feedStore();
  // The same item three times over, but for the identifier (an RSS atom:id) feedsub did not read before.
  const look = (id?: string) =>
    entry({
      url: 'https://x.org/sponsor',
      title: 'Sponsor',
      key_source: { title: 'Sponsor', body: null, ...(id === undefined ? {} : { id }) },
    });
  const before = [look(), look(), look()];
  assert.deepEqual(store.poll(before), []);
  const [shared] = entryKeys(before, FEED);
  const now = [look('c'), look('b'), look('a')];
  assert.deepEqual(store.poll(now), ['Sponsor', 'Sponsor'], 'the two never sent before');
  assert.equal(entryKeys(now, FEED)[2], shared, 'the last keeps the key they shared');
  assert.deepEqual(store.poll(now), []);
  assert.deepEqual(store.poll([look('d'), ...now]), ['Sponsor']);
});

test('a feed keyed from its links ignores guids that rotate', () => {
  const store = feedStore('link');
  const doc = (n: number) => [g(`rand-${n}-2`, 'B'), g(`rand-${n}-1`, 'A')];
  assert.deepEqual(
    [doc(1), doc(2), [g('rand-3-3', 'C'), ...doc(3)]].map((d) => store.poll(d)),
    [[], [], ['C']],
  );
});

test('a new guid shared by two new entries: the last one holds it, the other falls back to its link', () => {
  const plans = planKeys(
    entryIdentities([g('g', 'B'), g('g', 'A')], BASE),
    'guid',
    () => undefined,
  );
  assert.deepEqual(
    plans.map((p) => p.source),
    ['link', 'guid'],
  );
});

test('keys stored by version 1 are still recognised, so an upgrade re-sends nothing', () => {
  const stored = new Map<string, string | null>(V1_KEYS.map((k) => [k, null]));
  const plans = planKeys(entryIdentities(V1_ENTRIES, BASE), 'guid', (k) => stored.get(k));
  assert.deepEqual(
    plans.map((p) => p.seen),
    V1_ENTRIES.map(() => true),
  );
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
  assert.equal(
    entryKeys(feed.entries, FEED)[0],
    sha(['text', 'A <b>B</b>', '<p onclick="x()">x</p>', iso]),
  );
  // Repeated guids now key by fingerprint (planKeys); the version-1 keys they had are still recognised as `legacy`.
  const ids = entryIdentities(feed.entries, { keyBase: FEED, documentUrl: FEED });
  assert.deepEqual(
    ids.slice(1).map((id) => id.legacy),
    [
      sha(['guid\u0000same', 'dup', 'https://x/1', 'C &amp; D', iso, '']),
      sha(['guid\u0000same', 'dup', 'https://x/2', 'E', '', '']),
    ],
  );
});
