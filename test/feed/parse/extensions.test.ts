// Extension elements as fallbacks: an item whose text lives only in iTunes, Media RSS, Dublin Core or Atom elements.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFeed } from '../../../src/feed/parse/parse.ts';
import type { Entry } from '../../../src/feed/types.ts';

const BASE = { baseUrl: 'https://example.org/podcast/feed.xml' };
const NS = [
  'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"',
  'xmlns:media="http://search.yahoo.com/mrss/"',
  'xmlns:dc="http://purl.org/dc/elements/1.1/"',
  'xmlns:atom="http://www.w3.org/2005/Atom"',
].join(' ');
const item = (inner: string): Entry =>
  parseFeed(
    `<rss version="2.0" ${NS}><channel><title>T</title><item><guid>1</guid>${inner}</item></channel></rss>`,
    BASE,
  ).entries[0]!;

test('an item whose text is only in extension elements keeps it', () => {
  const cases: Array<[string, string, Partial<Entry>]> = [
    [
      'itunes:summary',
      '<itunes:summary>Episode &amp; notes</itunes:summary>',
      { summary: 'Episode & notes', summary_html: 'Episode &amp; notes' },
    ],
    [
      'media:description (plain by default)',
      '<media:description>a &lt;b&gt; c</media:description>',
      { summary: 'a <b> c', summary_html: 'a &lt;b&gt; c' },
    ],
    [
      'media:description type="html" inside media:group',
      '<media:group><media:description type="html">&lt;p&gt;&lt;a href="/e/1"&gt;x&lt;/a&gt;&lt;/p&gt;</media:description></media:group>',
      { summary: 'x', summary_html: '<p><a href="https://example.org/e/1">x</a></p>' },
    ],
    [
      'media:thumbnail as the image',
      '<media:thumbnail url="thumb.jpg"/>',
      { image: 'https://example.org/podcast/thumb.jpg' },
    ],
    [
      'itunes:image as the image',
      '<itunes:image href="https://cdn.example/i.png"/>',
      { image: 'https://cdn.example/i.png' },
    ],
    [
      'a media:content image as the image',
      '<media:content url="/p.jpg" medium="image"/><media:content url="/v.mp4" type="video/mp4"/>',
      { image: 'https://example.org/p.jpg' },
    ],
    ['dc:creator as the author', '<dc:creator>Ada</dc:creator>', { authors: ['Ada'] }],
    [
      'atom:author inside RSS',
      '<atom:author><atom:name>Grace</atom:name><atom:email>g@x</atom:email></atom:author>',
      { authors: ['Grace'] },
    ],
    [
      'atom:content inside RSS',
      '<atom:content type="html">&lt;p&gt;Body&lt;/p&gt;</atom:content>',
      { content_html: '<p>Body</p>', content_text: 'Body' },
    ],
    [
      'atom:summary type="text" inside RSS',
      '<atom:summary type="text">5 &lt; 6</atom:summary>',
      { summary: '5 < 6', summary_html: '5 &lt; 6' },
    ],
    [
      'itunes:author and itunes:keywords',
      '<itunes:author>Host</itunes:author><itunes:keywords>a, b</itunes:keywords>',
      { authors: ['Host'], categories: ['a', 'b'] },
    ],
    [
      'atom:category inside RSS',
      '<category>c</category><atom:category term="t"/>',
      { categories: ['c', 't'] },
    ],
  ];
  for (const [name, inner, expected] of cases) {
    const entry = item(inner);
    const picked = Object.fromEntries(
      Object.keys(expected).map((k) => [k, entry[k as keyof Entry]]),
    );
    assert.deepEqual(picked, expected, name);
  }
});

test("an item's own elements win over extension fallbacks", () => {
  const e = item(
    '<title>Own</title><description>Own summary</description><itunes:summary>Other</itunes:summary><media:thumbnail url="https://x/t.jpg"/><itunes:image href="https://x/i.png"/>',
  );
  assert.deepEqual([e.title, e.summary, e.image], ['Own', 'Own summary', 'https://x/t.jpg']);
});

test('a media:content file is not made an enclosure: an entry key never changes with it', () => {
  const e = item('<media:content url="https://x/v.mp4" type="video/mp4" fileSize="12"/>');
  assert.deepEqual(e.enclosures, []);
});

test('dc:creator, itunes:author, dc:subject, itunes:summary and dc:date fill in an entry in RSS, Atom and RDF alike', () => {
  const ext =
    '<dc:creator>Ada</dc:creator><itunes:author>Host</itunes:author><dc:subject>Sub</dc:subject>' +
    '<itunes:keywords>k1, k2</itunes:keywords><itunes:summary>Show notes</itunes:summary>' +
    '<dc:date>2020-01-02T03:04:05Z</dc:date>';
  const docs: Array<[string, string, Partial<Entry>]> = [
    [
      'RSS',
      `<rss version="2.0" ${NS}><channel><title>T</title><item><guid>1</guid>${ext}</item></channel></rss>`,
      { authors: ['Ada', 'Host'], categories: ['Sub', 'k1', 'k2'], summary: 'Show notes' },
    ],
    [
      'Atom 1.0',
      `<feed xmlns="http://www.w3.org/2005/Atom" ${NS}><title>T</title><entry><id>1</id>${ext}</entry></feed>`,
      { authors: ['Ada', 'Host'], categories: ['Sub', 'k1', 'k2'], summary: 'Show notes' },
    ],
    [
      'Atom 0.3',
      `<feed version="0.3" xmlns="http://purl.org/atom/ns#" ${NS}><title>T</title><entry><id>1</id>${ext}</entry></feed>`,
      { authors: ['Ada', 'Host'], categories: ['Sub', 'k1', 'k2'], summary: 'Show notes' },
    ],
    [
      // feedsmith's RDF reader leaves the iTunes elements out: only Dublin Core fills in there.
      'RDF',
      `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" ${NS}><channel rdf:about="x"><title>T</title></channel><item rdf:about="https://example.org/1">${ext}</item></rdf:RDF>`,
      { authors: ['Ada'], categories: ['Sub'], summary: null },
    ],
  ];
  for (const [name, doc, expected] of docs) {
    const e = parseFeed(doc, BASE).entries[0]!;
    const dated = {
      published_at: '2020-01-02T03:04:05.000Z',
      updated_at: '2020-01-02T03:04:05.000Z',
    };
    const picked = Object.fromEntries(
      Object.keys({ ...expected, ...dated }).map((k) => [k, e[k as keyof Entry]]),
    );
    assert.deepEqual(picked, { ...expected, ...dated }, name);
  }
});

test("an entry's own update date wins over dc:date", () => {
  const e = item(
    '<dc:date>2020-01-02T00:00:00Z</dc:date><atom:updated>2021-05-06T00:00:00Z</atom:updated>',
  );
  assert.deepEqual(
    [e.published_at, e.updated_at],
    ['2020-01-02T00:00:00.000Z', '2021-05-06T00:00:00.000Z'],
  );
});
