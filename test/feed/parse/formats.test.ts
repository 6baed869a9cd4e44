// The format mappers' readings of people and entries: RSS authors as plain names, entries that must all come through.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFeed } from '../../../src/feed/parse/parse.ts';
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

test("an RSS author's markup leaves the other elements of its item as they were", () => {
  const e = rssItem(
    '<title>A &lt;b&gt;B&lt;/b&gt;</title><author><![CDATA[<em>Jane</em>]]></author><description>&lt;p&gt;Hi&lt;/p&gt;</description>',
  );
  assert.deepEqual([e.title, e.authors, e.summary_html], ['A B', ['Jane'], '<p>Hi</p>']);
});
