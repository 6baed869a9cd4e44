// parseFeed / sniffDocument: formats, fields, URLs, dates, malformed-XML recovery, feedparser Expect lines.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseFeed as feedsmithDetectAndParse } from 'feedsmith';
import { ExpressionSet } from 'path-expression-matcher';
import { decodeFeed } from '../../../src/feed/parse/decode.ts';
import { FeedParseError, parseFeed, sniffDocument } from '../../../src/feed/parse/parse.ts';
import { parseFeedDate } from '../../../src/feed/parse/dates.ts';
import type { ParsedFeed } from '../../../src/feed/types.ts';
import { CORPUS_URL } from '../../support/corpus.ts';

const CORPUS = CORPUS_URL;
const ORIGIN = 'http://127.0.0.1:8097/';
const BASE = { baseUrl: 'https://example.org/feed.xml' };

// Reads a corpus file the way the poller would, honouring feedparser "Header:" lines.
function corpusFeed(rel: string): ParsedFeed {
  const raw = readFileSync(new URL(rel, CORPUS));
  const probe = decodeFeed(raw, null).text;
  const header = (n: string) =>
    new RegExp(`Header:\\s*${n}:\\s*(.*)`, 'i').exec(probe)?.[1]?.trim() ?? null;
  const { text } = decodeFeed(raw, header('Content-type') ?? 'text/xml');
  return parseFeed(text, { baseUrl: ORIGIN + rel, contentLocation: header('Content-Location') });
}
const rss = (items: string, channel = '') =>
  `<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:sy="http://purl.org/rss/1.0/modules/syndication/"><channel><title>T</title>${channel}${items}</channel></rss>`;

test("compiles the XML parser's stop nodes once per parser, not again for every document (patches/)", () => {
  const atom = (id: string) =>
    `<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><entry><id>${id}</id><title>E</title><content type="html">&lt;p&gt;x&lt;/p&gt;</content></entry></feed>`;
  // fast-xml-parser builds a set of feedsmith's 425 stop-node expressions; add() is how each goes in.
  const add = ExpressionSet.prototype.add;
  let added = 0;
  ExpressionSet.prototype.add = function (this: ExpressionSet, ...args: Parameters<typeof add>) {
    added++;
    return add.apply(this, args);
  };
  try {
    for (const doc of [rss('<item><guid>a</guid></item>'), atom('urn:a')]) parseFeed(doc, BASE); // each parser once
    added = 0;
    const feeds = [rss('<item><guid>b</guid></item>'), atom('urn:b')].map((d) =>
      parseFeed(d, BASE),
    );
    assert.deepEqual(
      feeds.map((f) => f.entries.length),
      [1, 1],
    );
    assert.equal(added, 0, 'no stop node compiled again');
  } finally {
    ExpressionSet.prototype.add = add;
  }
});

test('each format is recognised from its root element and parsed with its own parser', () => {
  const cases: Array<[string, string, number]> = [
    ['netnewswire-rsparser/atp.rss', 'rss', 100],
    ['netnewswire-rsparser/russcox.atom', 'atom', 19],
    ['netnewswire-rsparser/DaringFireball.rss', 'atom', 47], // an Atom document behind a .rss name
    ['netnewswire-rsparser/bio.rdf', 'rdf', 30],
    ['feedparser/wellformed/rdf/rss090_item_title.xml', 'rdf', 1],
    ['feedparser/wellformed/base/relative_xml_base.xml', 'atom', 1], // Atom 0.3
    ['netnewswire-rsparser/DaringFireball.json', 'json', 48],
    ['feedparser/json/example.json', 'json', 2],
  ];
  for (const [rel, format, count] of cases) {
    const feed = corpusFeed(rel);
    assert.deepEqual([feed.format, feed.entries.length, feed.degraded], [format, count, null], rel);
  }
});

test('an Atom feed whose content mentions <rss stays Atom', () => {
  const atom = `<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
<entry><id>urn:1</id><title>How to write</title><content type="html"><![CDATA[
<rss version="2.0"><channel><item><title>x</title></item></channel></rss>]]></content></entry></feed>`;
  const generic = (() => {
    try {
      return feedsmithDetectAndParse(atom).format;
    } catch {
      return 'error';
    }
  })();
  assert.notEqual(
    generic,
    'atom',
    'feedsmith generic detection misreads it (why we detect the root ourselves)',
  );
  const feed = parseFeed(atom, BASE);
  assert.equal(feed.format, 'atom');
  assert.deepEqual(
    feed.entries.map((e) => [e.guid, e.title, e.content_html]),
    [['urn:1', 'How to write', null]], // as HTML, <rss> and <channel> are unknown tags, <title> is head-only
  );
  assert.deepEqual(
    parseFeed(atom, { ...BASE, sanitizeHtml: false }).entries[0]!.content_html,
    '<rss version="2.0"><channel><item><title>x</title></item></channel></rss>',
  );
});

test('sniffDocument tells feeds from HTML and other documents', () => {
  const cases: Array<[string, string]> = [
    [rss(''), 'feed'],
    ['\uFEFF  <feed xmlns="http://www.w3.org/2005/Atom"></feed>', 'feed'],
    ['<?xml version="1.0"?><!-- c --><rdf:RDF xmlns:rdf="x"></rdf:RDF>', 'feed'],
    ['{"version": "https://jsonfeed.org/version/1.1", "items": []}', 'feed'],
    ['<!DOCTYPE html><html><head><link rel="alternate"></head></html>', 'html'],
    ['<html lang="en"><body>hi</body></html>', 'html'],
    [
      readFileSync(new URL('feedparser/illformed/always_strip_doctype.xml', CORPUS), 'utf8'),
      'feed',
    ],
    ['<note><to>x</to></note>', 'unknown'],
    ['{"rss": {"channel": {}}}', 'unknown'],
    ['', 'unknown'],
  ];
  for (const [text, expected] of cases)
    assert.equal(sniffDocument(text), expected, text.slice(0, 40));
});

test('non-feeds are rejected with FeedParseError', () => {
  const cases = [
    '<!DOCTYPE html><html><body>not a feed</body></html>',
    '<note/>',
    '',
    'plain text',
    '{"title": "no version"}',
    '{"version": "https://jsonfeed.org/version/1", "items": [',
    readFileSync(new URL('netnewswire-rsparser/sixcolors.html', CORPUS), 'utf8'),
  ];
  for (const text of cases)
    assert.throws(() => parseFeed(text, BASE), FeedParseError, text.slice(0, 40));
});

test('a long document is refused from its head with the error the whole text gets, and a feed past the head still parses', () => {
  const filler = 'x'.repeat(100_000);
  const html = `<!DOCTYPE html><html><body>${filler}</body></html>`;
  assert.throws(
    () => parseFeed(html, BASE),
    /^FeedParseError: parse: not a feed \(root element <html>\)$/,
  );
  assert.throws(() => parseFeed(`${html.slice(0, 60_000)}`, BASE), /root element <html>/);
  // The root's name cut by the end of the head (64 Ki characters) decides nothing early: this is an RSS feed.
  const prolog = `<?xml version="1.0"?><!--${'c'.repeat(65_536 - 31)}-->`;
  const cut = prolog + '<rss version="2.0"><channel><title>T</title>' + filler + '</channel></rss>';
  assert.equal(cut.indexOf('<rss') < 65_536 && cut.indexOf('<rss') + 4 > 65_536, true);
  assert.equal(parseFeed(cut, BASE).format, 'rss');
  // No root element in the head: no feed has 64 KiB before its root, and garbage whose head opens a comment or
  // processing instruction is not read whole to find one.
  const longProlog = `<?xml version="1.0"?><!--${'c'.repeat(70_000)}--><feed xmlns="http://www.w3.org/2005/Atom"><title>A</title></feed>`;
  assert.throws(
    () => parseFeed(longProlog, BASE),
    /^FeedParseError: parse: not a feed \(no XML root element in its first 64 KiB\)$/,
  );
});

test('feed-level fields: title, site link, ttl, WebSub hub and self link', () => {
  const feed = parseFeed(
    rss(
      '',
      '<link>/home</link><ttl>30</ttl><atom:link rel="hub" href="https://hub.example/"/><atom:link rel="self" href="/feed.xml"/>',
    ),
    BASE,
  );
  assert.deepEqual(
    [feed.title, feed.site_url, feed.ttl_seconds, feed.hub_url, feed.self_url],
    ['T', 'https://example.org/home', 1800, 'https://hub.example/', 'https://example.org/feed.xml'],
  );
  const sy = parseFeed(
    rss('', '<sy:updatePeriod>hourly</sy:updatePeriod><sy:updateFrequency>2</sy:updateFrequency>'),
    BASE,
  );
  assert.equal(sy.ttl_seconds, 1800);
  assert.equal(corpusFeed('feedparser/wellformed/rss/channel_ttl.xml').ttl_seconds, 3600);
  assert.equal(parseFeed(rss(''), BASE).ttl_seconds, null);
});

test('entry text fields are trimmed, empty ones are null, and entities are decoded once', () => {
  const [e] = parseFeed(
    rss(`<item><title>  A &amp;amp; B &#8217; &lt;i&gt;  </title><description>   </description>
    <content:encoded><![CDATA[ <p>Hi &amp; bye</p> ]]></content:encoded><author>joe@example.com (Joe Bloggs)</author>
    <category> news </category><category>news</category><category></category></item>`),
    BASE,
  ).entries;
  assert.deepEqual(
    [e!.title, e!.summary, e!.content_html, e!.content_text, e!.authors, e!.categories],
    ['A & B \u2019', null, '<p>Hi &amp; bye</p>', 'Hi & bye', ['Joe Bloggs'], ['news']],
  );
});

test('JSON Feed: content_html wins over content_text, attachments become enclosures, 1.0 author and 1.1 authors', () => {
  const [second, first] = corpusFeed('feedparser/json/example.json').entries;
  assert.deepEqual(second, {
    guid: '2',
    url: 'https://example.org/second-item',
    title: 'post 2',
    summary: null,
    summary_html: null,
    content_html: 'This is a second item.',
    content_text: 'This is a second item.',
    image: null,
    authors: ['me'],
    categories: ['test', 'JSON'],
    published_at: null,
    updated_at: null,
    enclosures: [
      { url: 'https://example.org/second-item-show.mp4', type: 'video/mp4', length: 12000000 },
    ],
    key_source: { title: 'post 2', body: 'This is a second item.' },
  });
  assert.equal(first!.content_html, '<p>Hello, world!</p>');
  assert.equal(first!.key_source.body, '<p>Hello, world!</p>\n\n<script>alert();</script>');
  assert.deepEqual(first!.authors, ['you']);
  const v10 = parseFeed(
    JSON.stringify({
      version: 'https://jsonfeed.org/version/1',
      title: 't',
      author: { name: 'Old' },
      items: [
        {
          id: 1,
          content_text: 'plain',
          content_html: '<b>rich</b>',
          summary: 's',
          date_published: '2020-01-02T03:04:05+01:00',
        },
      ],
    }),
    BASE,
  );
  assert.deepEqual(
    v10.entries.map((e) => [
      e.guid,
      e.content_html,
      e.content_text,
      e.summary,
      e.authors,
      e.published_at,
    ]),
    [['1', '<b>rich</b>', 'plain', 's', ['Old'], '2020-01-02T02:04:05.000Z']],
  );
  assert.deepEqual(
    corpusFeed('netnewswire-rsparser/authors.json').entries.map((e) => e.authors),
    [
      ['Root Author 1', 'Root Author 2'],
      ['Legacy Item Author'],
      ['Item Author 1', 'Item Author 2'],
      ['Item Author 1', 'Item Author 2'],
    ],
  );
});

test('feedparser guid and link expectations hold (RSS item_guid*, Atom entry_id*)', () => {
  const cases: Array<[string, string | null, string | null]> = [
    ['rss/item_guid.xml', 'http://guid.example.com/', 'http://guid.example.com/'],
    ['rss/item_guid_conflict_link.xml', 'http://guid.example.com/', 'http://link.example.com/'],
    [
      'rss/item_guid_isPermaLink_map_link.xml',
      'http://guid.example.com/',
      'http://guid.example.com/',
    ],
    ['rss/item_guid_map_link.xml', 'http://guid.example.com/', 'http://guid.example.com/'],
    ['rss/item_guid_not_permalink.xml', 'http://guid.example.com/', null],
    [
      'rss/item_guid_not_permalink_conflict_link.xml',
      'http://guid.example.com/',
      'http://link.example.com/',
    ],
    ['rss/item_guid_not_permalink_not_url.xml', 'abc', null],
    ['rss/item_link.xml', null, 'http://example.com/'],
    ['atom10/entry_id.xml', 'http://example.com/', null],
    ['atom10/entry_id_no_normalization_2.xml', 'http://www.example.org/Thing', null],
    ['atom10/entry_id_no_normalization_3.xml', 'http://www.EXAMPLE.org/thing', null],
    ['atom10/entry_id_no_normalization_4.xml', 'HTTP://www.example.org/thing', null],
    ['atom10/entry_id_no_normalization_6.xml', 'http://www.example.com/%7ebob', null],
    ['atom10/entry_id_with_attributes.xml', 'right', null],
    ['atom10/entry_link_multiple.xml', null, 'http://www.example.com/'],
    ['rdf/rdf_item_rdf_about.xml', 'http://example.org/1', 'http://example.org/1'],
    ['node_precedence/atom10_id.xml', 'Correct Value', null],
  ];
  for (const [rel, guid, url] of cases) {
    const e = corpusFeed(`feedparser/wellformed/${rel}`).entries[0]!;
    assert.deepEqual([e.guid, e.url], [guid, url], rel);
  }
});

test('feedparser enclosure, date and title expectations hold', () => {
  const e = (rel: string) => corpusFeed(`feedparser/wellformed/${rel}`).entries[0]!;
  assert.deepEqual(e('rss/item_enclosure_multiple.xml').enclosures[1], {
    url: 'http://example.com/2',
    type: 'image/gif',
    length: 200000,
  });
  assert.deepEqual(e('atom10/entry_link_rel_enclosure_map_enclosure_length.xml').enclosures, [
    { url: 'http://www.example.com/movie.mp4', type: 'video/mpeg4', length: 42301 },
  ]);
  assert.equal(
    e('rss/item_pubDate_map_updated_parsed.xml').published_at,
    '2004-01-01T19:48:21.000Z',
  );
  assert.equal(e('rss/item_dc_date.xml').published_at, '2003-12-31T10:14:55.000Z');
  assert.equal(e('rdf/rdf_item_description.xml').summary, 'Example description');
  assert.equal(e('node_precedence/atom10_title.xml').title, 'Correct Value');
  assert.equal(
    corpusFeed('feedparser/wellformed/rdf/rss090_channel_title.xml').title,
    'Example title',
  );
  assert.equal(corpusFeed('feedparser/encoding/euc-kr.xml').title, '\ub144');
  assert.equal(
    corpusFeed('feedparser/encoding/demoronize-1.xml').entries[0]!.summary,
    'don\u2019t',
  );
  assert.equal(corpusFeed('feedparser/illformed/always_strip_doctype.xml').title, 'found');
  // A title declared html (and an RSS title that looks like HTML) is rendered: the entity reads as its character.
  assert.equal(corpusFeed('feedparser/wellformed/xml/escaped_apos.xml').title, "it's correct");
});

test('relative URLs resolve through entry xml:base, feed xml:base, Content-Location, then the fetch URL', () => {
  const cases: Array<[string, string | null]> = [
    [
      'feedparser/wellformed/base/http_item_link_base_content_location.xml',
      'http://example.com/relative/uri',
    ],
    [
      'feedparser/wellformed/base/http_item_link_base_docuri.xml',
      'http://127.0.0.1:8097/relative/uri',
    ],
  ];
  for (const [rel, url] of cases) assert.equal(corpusFeed(rel).entries[0]!.url, url, rel);
  assert.equal(
    corpusFeed('feedparser/wellformed/base/http_feed_link_base_content_location.xml').site_url,
    'http://example.com/relative/link',
  );
  assert.equal(
    corpusFeed('feedparser/wellformed/http/headers_content_location-relative.xml').site_url,
    'http://127.0.0.1:8097/feed/absolute',
  );
  assert.equal(
    corpusFeed('feedparser/wellformed/http/headers_content_location-unsafe.xml').site_url,
    'http://127.0.0.1:8097/abs',
  );
  const atom = `<feed xmlns="http://www.w3.org/2005/Atom" xml:base="/blog/"><title>t</title><link href="./"/>
    <entry xml:base="posts/"><id>1</id><link href="1.html"/><link rel="enclosure" href="../media/a.mp3" length="5" type="audio/mpeg"/></entry>
    <entry xml:base="javascript:alert(1)"><id>2</id><link href="2.html"/></entry>
    <entry><id>3</id><link href="javascript:alert(1)"/><link rel="enclosure" href="data:audio/mpeg;base64,AAAA"/></entry></feed>`;
  const feed = parseFeed(atom, {
    baseUrl: 'https://example.org/feeds/atom',
    contentLocation: 'https://cdn.example.net/x/atom.xml',
  });
  assert.equal(feed.site_url, 'https://cdn.example.net/blog/');
  assert.deepEqual(
    feed.entries.map((e) => [e.url, e.enclosures.map((x) => x.url)]),
    [
      ['https://cdn.example.net/blog/posts/1.html', ['https://cdn.example.net/blog/media/a.mp3']],
      ['https://cdn.example.net/blog/2.html', []],
      [null, []],
    ],
  );
});

test('dates: RFC 822 and its variants, RFC 3339, W3C-DTF partials and broken forms become ISO UTC', () => {
  const cases: Array<[string, string | null]> = [
    ['Thu, 01 Jan 2004 19:48:21 GMT', '2004-01-01T19:48:21.000Z'],
    ['Thu, 1 Jan 2004 19:48 EST', '2004-01-02T00:48:00.000Z'],
    ['01 Jan 04 19:48:21 PDT', '2004-01-02T02:48:21.000Z'],
    ['Sun, 01 Jan 2004 19:48:21 -0500', '2004-01-02T00:48:21.000Z'], // wrong weekday ignored
    ['Thursday, 01 January 2004 19:48:21 +01:00', '2004-01-01T18:48:21.000Z'],
    ['Mon, 2 Jan 2006 15:04:05 -0700 (MST)', '2006-01-02T22:04:05.000Z'],
    ['Tue, 10 Jun 2003 04:00:00 GMT+2', '2003-06-10T02:00:00.000Z'],
    ['Sat,15 Feb 2026 12:00:00 +0000', '2026-02-15T12:00:00.000Z'],
    ['2003-12-31T10:14:55Z', '2003-12-31T10:14:55.000Z'],
    ['2003-12-31T10:14:55.123456+01:00', '2003-12-31T09:14:55.123Z'],
    ['2003-12-31t10:14:55-0800', '2003-12-31T18:14:55.000Z'],
    ['2003-12-31 10:14:55', '2003-12-31T10:14:55.000Z'],
    ['2003-12-31T10:14Z', '2003-12-31T10:14:00.000Z'],
    ['2003-12-31', '2003-12-31T00:00:00.000Z'],
    ['2003-12', '2003-12-01T00:00:00.000Z'],
    ['2003', '2003-01-01T00:00:00.000Z'],
    ['20031231T101455Z', '2003-12-31T10:14:55.000Z'],
    ['Jan 1, 2004', '2004-01-01T00:00:00.000Z'],
    ['January 2, 2006 3:04 PM', '2006-01-02T15:04:00.000Z'],
    ['Mon Jan 02 15:04:05 MST 2006', '2006-01-02T22:04:05.000Z'],
    ['2020/1/10 14:33:00', '2020-01-10T14:33:00.000Z'],
    ['Fri, 29 Feb 2008 10:00:00 GMT', '2008-02-29T10:00:00.000Z'],
    ['Thu, 29 Feb 2005 10:00:00 GMT', null],
    ['2004-02-30', null],
    ['Wed, 02 Oct 2002 08:00:00 XYZ', null],
    ['yesterday', null],
    ['1', null],
    ['', null],
  ];
  for (const [raw, expected] of cases) assert.equal(parseFeedDate(raw), expected, raw);
});

test('truncated XML yields the complete items before the damage; repairable damage keeps every item; both flagged degraded', () => {
  const item = (n: number) => `<item><guid>g${n}</guid><title>t${n}</title></item>`;
  const whole = rss(item(1) + item(2) + item(3));
  const cases: Array<[string, string, string[]]> = [
    ['cut inside the third item', whole.slice(0, whole.indexOf('<title>t3') + 9), ['g1', 'g2']],
    ['cut inside a start tag', whole.slice(0, whole.indexOf('<guid>g3') + 3), ['g1', 'g2']],
    ['cut right after an item', whole.slice(0, whole.indexOf(item(3))), ['g1', 'g2']],
    [
      'mismatched end tag in the second item',
      rss(item(1) + '<item><guid>g2</guid><foo>x</bar></item>' + item(3)),
      ['g1', 'g2', 'g3'],
    ],
    [
      'unescaped < in the third item',
      rss(item(1) + item(2) + '<item><guid>g3</guid><x>a < b</x></item>'),
      ['g1', 'g2', 'g3'],
    ],
    ['garbage after the root', `${whole}<rss>`, ['g1', 'g2', 'g3']],
  ];
  for (const [name, text, guids] of cases) {
    const feed = parseFeed(text, BASE);
    assert.deepEqual(
      feed.entries.map((e) => e.guid),
      guids,
      name,
    );
    assert.match(
      feed.degraded ?? '',
      new RegExp(`^malformed XML at line \\d+: .+; recovered ${guids.length} items$`),
      name,
    );
  }
  const atom =
    '<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title><entry><id>1</id></entry><entry><id>2</id><title>half';
  assert.deepEqual(
    parseFeed(atom, BASE).entries.map((e) => e.guid),
    ['1'],
  );
  assert.throws(() => parseFeed('<rss version="2.0"', BASE), FeedParseError);
});

test('illformed corpus files recover what precedes the damage', () => {
  const cases: Array<[string, number]> = [
    ['feedparser/illformed/rss_item_link_corrupted_ampersands.xml', 1],
    ['feedparser/illformed/rdf_channel_empty_textinput.xml', 1],
    ['feedparser/illformed/rss_incomplete_cdata.xml', 0],
    ['feedparser/illformed/aaa_illformed.xml', 0],
  ];
  for (const [rel, count] of cases) {
    const feed = corpusFeed(rel);
    assert.equal(feed.entries.length, count, rel);
    assert.ok(feed.degraded, `${rel} should be degraded`);
  }
  assert.equal(
    corpusFeed('feedparser/illformed/rss_item_link_corrupted_ampersands.xml').entries[0]!.url,
    'http://link/get?a=1&b=2',
  );
  assert.equal(
    corpusFeed('feedparser/illformed/rss_incomplete_cdata.xml').title,
    'can feedparser read this xml',
  );
});

test('XML-illegal control characters are stripped and unescaped HTML inside text elements is tolerated', () => {
  const feed = parseFeed(
    rss(
      '<item><title>a\u0001b\u000Bc\uFFFE</title><description><p>unclosed<br></description></item>',
    ),
    BASE,
  );
  assert.deepEqual(
    [feed.entries[0]!.title, feed.entries[0]!.summary_html, feed.degraded],
    ['abc', '<p>unclosed<br /></p>', null],
  );
  const junk = parseFeed(`Warning: something in PHP\n${rss('<item><guid>1</guid></item>')}`, BASE);
  assert.deepEqual(
    [junk.entries.length, junk.degraded],
    [1, 'text before the root element dropped'],
  );
});

test('an empty but well-formed feed has no entries and is not degraded', () => {
  for (const text of [
    rss(''),
    '{"version":"https://jsonfeed.org/version/1.1","title":"t","items":[]}',
    corpusFeedText('feedparser/wellformed/rdf/doctype_contains_entity_decl.xml'),
  ]) {
    const feed = parseFeed(text, BASE);
    assert.deepEqual([feed.entries, feed.degraded], [[], null]);
  }
});

test('a JSON Feed string escaping a NUL or half a surrogate pair reads it as U+FFFD, as an XML feed does', () => {
  const json = String.raw`{"version":"https://jsonfeed.org/version/1.1","title":"a\u0000b",
    "items":[{"id":"1","title":"c\ud800d\udc00e","content_text":"\ud83d\ude00 \\u0000"}]}`;
  const feed = parseFeed(json, BASE);
  assert.equal(feed.title, 'a\uFFFDb');
  assert.equal(feed.entries[0]!.title, 'c\uFFFDd\uFFFDe');
  // A whole pair stays, and an escaped backslash before u0000 is text.
  assert.equal(feed.entries[0]!.content_text, '\u{1F600} \\u0000');
  const xml = parseFeed(rss('<item><guid>1</guid><title>c&#xD800;d&#0;e</title></item>', ''), BASE);
  assert.equal(xml.entries[0]!.title, 'c\uFFFDd\uFFFDe');
});

function corpusFeedText(rel: string): string {
  return readFileSync(new URL(rel, CORPUS), 'utf8');
}

test('a document that is not a feed is named by its root element, and random bytes are never quoted', () => {
  const refused = (text: string) => {
    try {
      parseFeed(text, { baseUrl: 'https://example.org/' });
    } catch (err) {
      return (err as Error).message;
    }
    return 'parsed';
  };
  assert.equal(refused('<html><body>hi</body></html>'), 'parse: not a feed (root element <html>)');
  assert.equal(
    refused('<k\u00f0\u00e2\u00ffcw~\u00ab\u00e3 x="1"></k>'),
    'parse: not a feed (its root element is not a name)',
  );
});
