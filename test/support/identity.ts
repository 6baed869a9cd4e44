// Entries for identity tests: an Entry with only the fields a case sets, and the version-1 keys of one document
// (computed by the version-1 code before the identity rules changed, kept as literals).
import type { Entry } from '../../src/feed/types.ts';

/** What a case may set: Entry's fields, and `content`, the body version 1 hashed (typed text keeps it in key_source). */
export type EntryOver = Partial<Entry> & { content?: string | null };

/** An entry with every field empty but those given; key_source is filled as parsing fills it (the title, and the
 *  content or else the summary), unless the case sets it. */
export const entry = (over: EntryOver = {}): Entry => {
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

/** Six RSS items: a guid, a guid-less link with tracking parameters, an enclosure with a CDN token, two entries
 *  sharing a guid, and a text-only entry. */
export const V1_ITEMS = [
  '<item><guid isPermaLink="false">tag:blog.example,2020:1</guid><title>One</title><link>https://blog.example/p/1</link><pubDate>Mon, 06 Jan 2020 10:00:00 GMT</pubDate></item>',
  '<item><title>Two</title><link>https://blog.example/p/2?utm_source=feedburner&amp;utm_medium=feed</link><pubDate>Tue, 07 Jan 2020 10:00:00 GMT</pubDate></item>',
  '<item><title>Three</title><enclosure url="https://cdn.example/ep3.mp3?token=abc" type="audio/mpeg" length="1"/></item>',
  '<item><guid isPermaLink="false">dup</guid><title>Four</title><link>https://blog.example/p/4</link></item>',
  '<item><guid isPermaLink="false">dup</guid><title>Five</title><link>https://blog.example/p/5</link></item>',
  '<item><title>Six</title><description>Only text</description></item>',
];

/** V1_ITEMS as the parser gives them. */
export const V1_ENTRIES: Entry[] = [
  entry({
    guid: 'tag:blog.example,2020:1',
    url: 'https://blog.example/p/1',
    title: 'One',
    published_at: '2020-01-06T10:00:00.000Z',
  }),
  entry({
    url: 'https://blog.example/p/2?utm_source=feedburner&utm_medium=feed',
    title: 'Two',
    published_at: '2020-01-07T10:00:00.000Z',
  }),
  entry({
    title: 'Three',
    enclosures: [{ url: 'https://cdn.example/ep3.mp3?token=abc', type: 'audio/mpeg', length: 1 }],
  }),
  entry({ guid: 'dup', url: 'https://blog.example/p/4', title: 'Four' }),
  entry({ guid: 'dup', url: 'https://blog.example/p/5', title: 'Five' }),
  entry({ title: 'Six', summary: 'Only text' }),
];

/** The keys the version-1 code gave V1_ITEMS, in order. */
export const V1_KEYS = [
  'c4284430950b354dd58c3b7d2f4431e6',
  '103465f07cac1361b53179b270034a59',
  '8256e8546fc25525475f09990d4af75d',
  '7544c84d5cda2f7eb4973033cac1b1ff',
  '6581b6710685a1787703b7ce3b0166bd',
  '0cd5dc004e99137e5f214f98bb4c8a5a',
];
