// Lenient, bounded XML repair: real-world markup mistakes keep every complete entry; DTD entities expand, bounded.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FeedParseError, parseFeed } from '../../../src/feed/parse/parse.ts';
import { createParsePool, type ParsePool } from '../../../src/feed/parse/pool.ts';
import type { ParsedFeed } from '../../../src/feed/types.ts';
import { parseOn } from '../../support/parse.ts';

const BASE = { baseUrl: 'https://example.org/feed.xml' };
const rss = (items: string, prolog = '<?xml version="1.0"?>') =>
  `${prolog}<rss version="2.0"><channel><title>T</title>${items}</channel></rss>`;
const atom = (entries: string) =>
  `<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>${entries}</feed>`;
const item = (guid: string, inner: string) => `<item><guid>${guid}</guid>${inner}</item>`;

test('markup mistakes are repaired and every entry kept, with the first repair recorded', () => {
  const cases: Array<[string, string, Array<[string | null, string | null]>, RegExp]> = [
    [
      'a stray < in a title',
      rss(item('1', '<title>x < y</title>') + item('2', '<title>ok</title>')),
      [
        ['1', 'x < y'],
        ['2', 'ok'],
      ],
      /unescaped '<'/,
    ],
    [
      '"I <3 feeds" and price<10',
      rss(item('1', '<title>I <3 feeds</title><description>price<10</description>')),
      [['1', 'I <3 feeds']],
      /unescaped '<'/,
    ],
    [
      'a stray < in an Atom title',
      atom('<entry><id>1</id><title>a < b</title></entry><entry><id>2</id></entry>'),
      [
        ['1', 'a < b'],
        ['2', null],
      ],
      /unescaped '<'/,
    ],
    [
      'an element never closed inside an item',
      rss(item('1', '<title>A</title><foo>') + item('2', '<title>B</title>')),
      [
        ['1', 'A'],
        ['2', 'B'],
      ],
      /<foo> is not closed/,
    ],
    [
      'a title never closed',
      rss(item('1', '<title>A') + item('2', '<title>B</title>')),
      [
        ['1', 'A'],
        ['2', 'B'],
      ],
      /<title> is not closed/,
    ],
    [
      'a stray end tag',
      rss(item('1', '<title>A</title></span>') + item('2', '<title>B</title>')),
      [
        ['1', 'A'],
        ['2', 'B'],
      ],
      /stray end tag <\/span> dropped/,
    ],
    [
      'an item opened inside an item (items never nest)',
      rss('<item><guid>1</guid><title>A</title>' + item('2', '<title>B</title>')),
      [
        ['1', 'A'],
        ['2', 'B'],
      ],
      /<item> is not closed/,
    ],
    [
      'an unterminated comment between elements',
      rss(item('1', '<!-- <title>A</title>') + item('2', '<title>B</title>')),
      [
        ['1', 'A'],
        ['2', 'B'],
      ],
      /unterminated comment/,
    ],
    [
      'an element never closed before the items (it would swallow them)',
      rss(
        '<image><url>http://x/i.png</url>' +
          item('1', '<title>A</title>') +
          item('2', '<title>B</title>'),
      ),
      [
        ['1', 'A'],
        ['2', 'B'],
      ],
      /<image> is not closed/,
    ],
    [
      "a '<!' that starts no comment, CDATA section or DOCTYPE",
      rss('<!' + item('1', '<title>A</title>') + item('2', '<title>B</title>')),
      [
        ['1', 'A'],
        ['2', 'B'],
      ],
      /'<!' starts no comment/,
    ],
    [
      'a damaged tag inside an item, whose raw leaf then runs to the item end',
      rss(item('1', '<gu<id>g</guid><title>A</title>') + item('2', '<title>B</title>')),
      [
        ['1', null],
        ['2', 'B'],
      ],
      /unescaped '<'/,
    ],
    [
      'the root end tag without its >',
      rss(item('1', '<title>A</title>')).slice(0, -1),
      [['1', 'A']],
      /end tag <\/rss> without '>'/,
    ],
  ];
  for (const [name, text, expected, repair] of cases) {
    const feed = parseFeed(text, BASE);
    assert.deepEqual(
      feed.entries.map((e) => [e.guid, e.title]),
      expected,
      name,
    );
    assert.match(feed.degraded ?? '', repair, name);
    assert.match(feed.degraded ?? '', new RegExp(`recovered ${expected.length} items$`), name);
  }
});

test('valid but unusual markup is read without being flagged: bare ampersands, a prefixed RSS root', () => {
  const cases: Array<[string, string, Array<[string | null, string | null, string | null]>]> = [
    [
      'bare ampersands in text and attributes',
      rss(
        '<item><title>A & B</title><link>http://x/?a=1&b=2</link><enclosure url="http://x/e?a=1&b=2" type="audio/mpeg"/></item>',
      ),
      [[null, 'A & B', 'http://x/?a=1&b=2']],
    ],
    [
      'namespace-prefixed core elements <r:rss>, <r:item>',
      '<r:rss xmlns:r="http://backend.userland.com/rss2" version="2.0"><r:channel><r:title>T</r:title><r:item><r:title>I</r:title><r:link>http://x/1</r:link></r:item></r:channel></r:rss>',
      [[null, 'I', 'http://x/1']],
    ],
    [
      'a prefixed Atom root',
      '<a:feed xmlns:a="http://www.w3.org/2005/Atom"><a:title>T</a:title><a:entry><a:id>1</a:id><a:title>E</a:title><a:link href="http://x/1"/></a:entry></a:feed>',
      [['1', 'E', 'http://x/1']],
    ],
  ];
  for (const [name, text, expected] of cases) {
    const feed = parseFeed(text, BASE);
    assert.deepEqual(
      feed.entries.map((e) => [e.guid, e.title, e.url]),
      expected,
      name,
    );
    assert.equal(feed.degraded, null, name);
  }
});

test('attributes are repaired: unquoted values, an unterminated quote, a name without a value', () => {
  const cases: Array<[string, string]> = [
    ['unquoted values', '<enclosure url=http://x/a.mp3 length=12 type=audio/mpeg />'],
    [
      'unquoted values, the slash of the tag against the last',
      '<enclosure url=http://x/a.mp3 length=12 type=audio/mpeg/>',
    ],
    ['an unterminated quote', '<enclosure url="http://x/a.mp3" length="12" type="audio/mpeg />'],
    [
      'a name without a value',
      '<enclosure url="http://x/a.mp3" length="12" type="audio/mpeg" async/>',
    ],
  ];
  for (const [name, tag] of cases) {
    const feed = parseFeed(rss(item('1', tag) + item('2', '')), BASE);
    assert.deepEqual(
      feed.entries.map((e) => e.enclosures),
      [[{ url: 'http://x/a.mp3', type: 'audio/mpeg', length: 12 }], []],
      name,
    );
    assert.match(feed.degraded ?? '', /attributes of <enclosure> repaired/, name);
  }
});

test("entities declared in the feed's internal DTD are expanded, and a comment holding ']' does not end the DTD", () => {
  const doctype = (subset: string) => `<?xml version="1.0"?><!DOCTYPE rss [${subset}]>`;
  const cases: Array<[string, string, string | null, string | null]> = [
    [
      'an entity in a guid',
      rss(
        item('&id;2006-05-04:/blog/', '<title>x</title>'),
        doctype('<!ENTITY id "tag:example.org,">'),
      ),
      'tag:example.org,2006-05-04:/blog/',
      'x',
    ],
    [
      "a comment with ']' before the declaration",
      rss(
        item('&id;1', '<title>x</title>'),
        doctype('<!-- see [1] and ] --><!ENTITY id "tag:e,">'),
      ),
      'tag:e,1',
      'x',
    ],
    [
      'entities referring to entities, with markup characters',
      rss(
        item('1', '<title>&full;</title>'),
        doctype('<!ENTITY a "A &amp; &lt;b&gt;"><!ENTITY full "&a; and &#38;c">'),
      ),
      '1',
      'A & <b> and &c',
    ],
    [
      'an external entity is never fetched and stays as written',
      rss(item('1', '<title>&ext;</title>'), doctype('<!ENTITY ext SYSTEM "http://x/e.txt">')),
      '1',
      '&ext;',
    ],
  ];
  for (const [name, text, guid, title] of cases) {
    const feed = parseFeed(text, BASE);
    assert.deepEqual(
      feed.entries.map((e) => [e.guid, e.title]),
      [[guid, title]],
      name,
    );
    assert.equal(feed.degraded, null, name);
  }
});

test('entity expansion is bounded: billion laughs and a large entity used many times stop at the budget', () => {
  const laughs = [
    '<!ENTITY l0 "ha">',
    ...Array.from({ length: 9 }, (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`),
  ].join('');
  const bomb = rss(item('1', '<title>&l9;</title>'), `<!DOCTYPE rss [${laughs}]>`);
  const big = `<!DOCTYPE rss [<!ENTITY big "${'x'.repeat(60_000)}">]>`;
  const quadratic = rss(item('1', `<title>${'&big;'.repeat(2000)}</title>`), big);
  for (const [name, text] of [
    ['billion laughs (10^9 characters)', bomb],
    ['a 60 KB entity used 2,000 times (120 MB)', quadratic],
  ] as const) {
    const feed = parseFeed(text, BASE);
    assert.equal(feed.entries.length, 1, name);
    assert.ok((feed.entries[0]!.title ?? '').length <= 2 * text.length + 65_536, name);
    assert.match(feed.degraded ?? '', /entity expansion limit reached/, name);
  }
});

test('a document cut short keeps its complete items; with nothing usable the reason is recorded', () => {
  const whole = rss(item('1', '<title>a</title>') + item('2', '<title>b</title>'));
  const cut = whole.slice(0, whole.indexOf('<title>b') + 9);
  const feed = parseFeed(cut, BASE);
  assert.deepEqual(
    feed.entries.map((e) => e.guid),
    ['1'],
  );
  assert.match(feed.degraded ?? '', /document ends inside <title>|<title> is not closed/);
  assert.throws(
    () => parseFeed('<?xml version="1.0"?>\n<rss version="2.0"', BASE),
    (err: unknown) =>
      err instanceof FeedParseError &&
      /malformed XML at line 2: unterminated start tag <rss>; nothing recovered/.test(err.message),
  );
});

test('repairs are linear: 20,000 stray < in one document are bounded and reported', () => {
  const items = Array.from({ length: 20_000 }, (_, i) => item(String(i), '<title>1 < 2</title>'));
  const feed = parseFeed(rss(items.join('')), BASE);
  assert.ok(feed.entries.length > 0 && feed.entries.length < 20_000);
  assert.match(
    feed.degraded ?? '',
    /stopped at line 1: more than 10000 repairs; recovered \d+ items$/,
  );
});

type Shape = {
  name: string;
  n: number;
  make: (n: number) => string;
  /** What the read of make(n) must hold, whatever its cost. */
  check: (feed: ParsedFeed, n: number) => void;
};

/** CPU time (ms) of this process (the worker's included) while `pool` reads `shape` made of n and while it reads it
 *  made of 8n, each the least of three reads taken in turn: CPU time, so other processes on a busy machine do not
 *  count; the least, so a garbage collection, a compilation or the first, cold read does not either. */
async function readCosts(pool: ParsePool, { n, make, check }: Shape): Promise<[number, number]> {
  const read = async (size: number, text: string) => {
    const before = process.cpuUsage();
    const feed = await parseOn(pool, text, BASE);
    const spent = process.cpuUsage(before);
    check(feed, size);
    return (spent.user + spent.system) / 1000;
  };
  const [small, large] = [make(n), make(8 * n)];
  let [leastSmall, leastLarge] = [Infinity, Infinity];
  for (let run = 0; run < 3; run++) {
    leastSmall = Math.min(leastSmall, await read(n, small));
    leastLarge = Math.min(leastLarge, await read(8 * n, large));
  }
  return [leastSmall, leastLarge];
}

// Started with the file, so the worker starts while the tests before the one that uses it run.
const hostilePool = createParsePool({ size: 1, thresholdBytes: 0, heapMb: 512 }); // time, not memory, is what it reads
after(() => hostilePool.close());

test('hostile shapes stay linear: a tag full of quotes, entity references past the budget, a huge root tag, many leaves, many items', async () => {
  // Each shape is read at n and at 8n: a linear read costs about 8 times as much, one that rescans the document at
  // every quote, reference, space or item about 64 times, and 20 lies a factor 2.5 or more from either (at n and 2n,
  // 2 against 4, a busy machine blurs the two). Read on a worker thread that is killed after 20 s: a synchronous hang
  // cannot be cut short on this thread.
  const shapes: Shape[] = [
    {
      name: 'a tag full of quotes',
      n: 8_000,
      make: (n) => rss(item('1', `<title a="" ${'b="" '.repeat(n)}>q</title>`)),
      check: (feed) => assert.equal(feed.entries[0]!.title, 'q'),
    },
    {
      // The entity grows with n, as the expansion budget (the document's length) does.
      name: 'n references to an entity of n characters, past the expansion budget',
      n: 8_000,
      make: (n) =>
        rss(
          item('1', `<title>${'&e;'.repeat(n)}</title>`),
          `<!DOCTYPE rss [<!ENTITY e "${'x'.repeat(n)}">]>`,
        ),
      check: (feed) => assert.match(feed.degraded ?? '', /entity expansion limit reached/),
    },
    {
      name: 'a root tag of n spaces',
      n: 500_000,
      make: (n) =>
        `<rss version="2.0"${' '.repeat(n)}><channel><title>T</title>${item('1', '')}</channel></rss>`,
      check: (feed) => assert.equal(feed.entries.length, 1),
    },
    {
      // Leaves of the channel: each costs little more than its scan, so one that rescanned the document would show.
      name: 'n leaves holding a CDATA section',
      n: 1_500,
      make: (n) => rss('<category><![CDATA[x]]></category>'.repeat(n) + item('1', '')),
      check: (feed) => assert.equal(feed.entries.length, 1),
    },
    {
      // n large enough that the read at n takes tens of milliseconds: a shorter one is all noise against its 8n.
      name: 'n items, each with a CDATA section',
      n: 250,
      make: (n) =>
        rss(
          Array.from({ length: n }, (_, k) => item(String(k), '<title><![CDATA[x]]></title>')).join(
            '',
          ),
        ),
      check: (feed, n) => assert.equal(feed.entries.length, n),
    },
  ];
  for (const shape of shapes) {
    const [small, large] = await readCosts(hostilePool, shape);
    assert.ok(
      large < 20 * small,
      `${shape.name}: read at 8n in ${large.toFixed(1)} ms of CPU, at n in ${small.toFixed(1)} ms`,
    );
  }
});

test('a leaf keeps what a CDATA section or comment in it holds, end tags included, and an unterminated one is text', () => {
  const cases: Array<[string, string, string | null]> = [
    [
      'a CDATA section holding its own end tag',
      '<description><![CDATA[<p>see </description> here</p>]]></description>',
      '<p>see  here</p>',
    ],
    [
      'a CDATA section holding the item end tag',
      '<description><![CDATA[a</item>b]]></description>',
      'ab',
    ],
    ['a comment holding the end tag', '<description><!-- </description> -->x</description>', 'x'],
    // Read as HTML, the escaped '<![CDATA[b' is a bogus comment, as a browser would have it.
    ['an unterminated CDATA section', '<description>a<![CDATA[b</description>', 'a'],
  ];
  for (const [name, inner, html] of cases) {
    const feed = parseFeed(rss(item('1', inner) + item('2', '')), BASE);
    assert.deepEqual(
      feed.entries.map((e) => [e.guid, e.summary_html]),
      [
        ['1', html],
        ['2', null],
      ],
      name,
    );
  }
  const title = parseFeed(rss(item('1', '<title>a <b c</title>') + item('2', '')), BASE);
  assert.deepEqual(
    title.entries.map((e) => e.title),
    ['a <b c', null],
    'a tag never closed in a title is text',
  );
});
