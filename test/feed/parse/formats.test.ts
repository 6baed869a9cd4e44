// The format mappers' readings of people and entries: RSS authors as plain names, entries that must all come through.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFeed } from '../../../src/feed/parse/parse.ts';
import { entryKeys } from '../../../src/feed/identity/keys.ts';
import type { Entry } from '../../../src/feed/types.ts';

const BASE = { baseUrl: 'https://example.org/blog/feed.xml' };
const rssItem = (inner: string): Entry =>
  parseFeed(
    `<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel><title>T</title><item><guid>1</guid>${inner}</item></channel></rss>`,
    BASE,
  ).entries[0]!;

test('an RSS author holding escaped, CDATA or plain markup is delivered as the plain name', () => {
  const cases: Array<[string, string, string[]]> = [
    ['escaped markup', '<author>&lt;b&gt;Jane&lt;/b&gt;</author>', ['Jane']],
    ['markup in CDATA', '<author><![CDATA[<em>Jane</em> Doe]]></author>', ['Jane Doe']],
    ['markup as it is', '<author><b>Jane</b></author>', ['Jane']],
    [
      'an address and a name with markup',
      '<author>jane@example.com (Jane &lt;b&gt;Doe&lt;/b&gt;)</author>',
      ['Jane Doe'],
    ],
    ['an address and a name', '<author>jane@example.com (Jane Doe)</author>', ['Jane Doe']],
    ['text that only looks like markup stays', '<author>I &lt;3 feeds</author>', ['I <3 feeds']],
    [
      'dc:creator and itunes:author with markup',
      '<dc:creator>&lt;i&gt;Ada&lt;/i&gt;</dc:creator><itunes:author><![CDATA[<b>Host</b>]]></itunes:author>',
      ['Ada', 'Host'],
    ],
  ];
  for (const [name, inner, authors] of cases)
    assert.deepEqual(rssItem(inner).authors, authors, name);
});

test('an RSS author written with child elements (an Atom-style name) still gives its name', () => {
  const e = rssItem(
    '<author xmlns:author="http://www.w3.org/2005/Atom"><name>Diane Chaleff</name><title>Product Manager</title><company></company></author>',
  );
  assert.deepEqual(e.authors, ['Diane Chaleff']);
});

test("an RSS author's markup leaves the other elements of its item as they were", () => {
  const e = rssItem(
    '<title>A &lt;b&gt;B&lt;/b&gt;</title><author><![CDATA[<em>Jane</em>]]></author><description>&lt;p&gt;Hi&lt;/p&gt;</description>',
  );
  assert.deepEqual([e.title, e.authors, e.summary_html], ['A B', ['Jane'], '<p>Hi</p>']);
});

const keysOf = (doc: string) => entryKeys(parseFeed(doc, BASE).entries, BASE.baseUrl);

test('entries sharing a link that the feed tells apart only by atom:id or dc:identifier all come through, each with its own key', () => {
  const ns = 'xmlns:atom="http://www.w3.org/2005/Atom" xmlns:dc="http://purl.org/dc/elements/1.1/"';
  const rss = (ids: string[], tag: string) =>
    `<rss version="2.0" ${ns}><channel><title>T</title>${ids.map((id) => `<item><title>Sponsor</title><link>https://x.example/p</link><${tag}>${id}</${tag}></item>`).join('')}</channel></rss>`;
  const rdf = (ids: string[]) =>
    `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" ${ns}><channel rdf:about="c"><title>T</title></channel>${ids.map((id) => `<item><title>Sponsor</title><link>https://x.example/p</link><dc:identifier>${id}</dc:identifier></item>`).join('')}</rdf:RDF>`;
  for (const [name, doc] of [
    ['RSS atom:id', rss(['a', 'b', 'c'], 'atom:id')],
    ['RSS dc:identifier', rss(['a', 'b', 'c'], 'dc:identifier')],
    ['RDF dc:identifier', rdf(['a', 'b', 'c'])],
  ] as const) {
    const keys = keysOf(doc);
    assert.equal(new Set(keys).size, 3, name);
    // The last one keeps the key all three shared, so the one entry keyed before keeps its key.
    assert.equal(
      keys[2],
      keysOf(doc.replace(/<(atom:id|dc:identifier)>[^<]*<\/\1>/g, ''))[0],
      name,
    );
  }
  assert.equal(new Set(keysOf(rss(['a', 'a'], 'atom:id'))).size, 1, 'one identifier: one entry');
});

test('an Atom entry whose link has no href is not lost: the link text is its URL, and an entry keyed without it keeps its key', () => {
  const atom = (entries: string) =>
    `<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>${entries}</feed>`;
  const only = parseFeed(
    atom(
      '<entry><link>https://x.example/a</link></entry><entry><link>https://x.example/b</link></entry>',
    ),
    BASE,
  );
  assert.deepEqual(
    only.entries.map((e) => e.url),
    ['https://x.example/a', 'https://x.example/b'],
  );
  assert.equal(new Set(entryKeys(only.entries, BASE.baseUrl)).size, 2);
  const titled = '<entry><title>Kept</title><updated>2024-01-01T00:00:00Z</updated>';
  const withLink = parseFeed(atom(`${titled}<link>https://x.example/k</link></entry>`), BASE);
  assert.equal(withLink.entries[0]!.url, 'https://x.example/k');
  assert.deepEqual(keysOf(atom(`${titled}<link>https://x.example/k</link></entry>`)), [
    ...keysOf(atom(`${titled}</entry>`)),
  ]);
  const idAndText = atom('<entry><id>1</id><link>https://x.example/i</link></entry>');
  assert.equal(parseFeed(idAndText, BASE).entries[0]!.url, 'https://x.example/i');
  assert.deepEqual(keysOf(idAndText), keysOf(atom('<entry><id>1</id></entry>')));
});
