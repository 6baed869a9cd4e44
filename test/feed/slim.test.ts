// Slim entries: an entry too large for any event is carried from where it is read without its summary and content, and
// every event, history row, hash and filter made from it is what the whole entry gives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toEventEntry } from '../../src/actions/entry-events.ts';
import { compileFilter, filterSubject, judge, patternBudget } from '../../src/feed/filter/match.ts';
import { contentHash } from '../../src/feed/identity/content-hash.ts';
import { readDocument } from '../../src/feed/parse/read-document.ts';
import { EntryList } from '../../src/feed/entry-list.ts';
import { SLIM_ABOVE_CHARS, SLIM_TEXT_CHARS, slimEntry } from '../../src/feed/slim.ts';
import type { Entry } from '../../src/feed/types.ts';
import { buildEntryEvents, entryJson, MAX_EVENT_BYTES } from '../../src/webhook/event.ts';
import { entry } from '../support/identity.ts';

const KEY = 'a'.repeat(32);
const SEEN = new Date('2026-11-29T10:00:00.000Z');

/** Every text an event or the history makes of `e`, as the main thread makes them. */
function madeFrom(e: Entry) {
  const ev = toEventEntry(KEY, e, SEEN);
  const events = buildEntryEvents({
    subscription: { id: 'sub', url: 'https://s.example/', metadata: '{"k": 1.0}' },
    feed: { id: 'feed', url: 'https://f.example/', title: null, site_url: null },
    entries: [ev, toEventEntry('b'.repeat(32), entry({ guid: 'small', title: 'small' }), SEEN)],
    now: SEEN,
    firstSequence: 7,
    newId: () => 'evt',
  }).map((b) => b.body);
  return { history: entryJson(ev), events, hash: contentHash(e) };
}

test('the largest event and the slim threshold are one size', () => {
  assert.equal(SLIM_ABOVE_CHARS, MAX_EVENT_BYTES);
});

test('an entry within what an event carries is carried as it is', () => {
  const e = entry({ guid: 'g', content_html: '<p>x</p>', content_text: 'x'.repeat(200_000) });
  assert.equal(slimEntry(e, contentHash(e)), e);
});

test('an entry too large for any event is carried without its summary and content, keeping its hash and text head', () => {
  const body = 'remote '.repeat(80_000);
  const e = entry({ guid: 'g', summary: body, summary_html: `<p>${body}</p>`, content_text: body });
  const slim = slimEntry(e, contentHash(e));
  assert.equal(slim.summary, null);
  assert.equal(slim.summary_html, null);
  assert.equal(slim.content_html, null);
  assert.equal(slim.content_text, null);
  assert.equal(slim.slim?.text, body.slice(0, SLIM_TEXT_CHARS));
  assert.deepEqual(slim.key_source, e.key_source, 'held entries are keyed again from it');
  assert.equal(contentHash(slim), contentHash(e));
});

test('a slim entry makes the same event bodies and history text as the whole entry, byte for byte', () => {
  const big = 'é'.repeat(300_000);
  const cases: Entry[] = [
    entry({ guid: 'content', summary: 'short', content_html: `<p>${big}</p>`, content_text: big }),
    // a title too long for the slim form too: every field is cut
    entry({ guid: 'title', title: 't'.repeat(300_000), content_text: big }),
    entry({ guid: 'dated', summary: big, published_at: '2026-11-01T00:00:00.000Z' }),
  ];
  for (const e of cases) {
    const whole = madeFrom(e);
    const slim = madeFrom(slimEntry(e, contentHash(e)));
    assert.ok(slimEntry(e, contentHash(e)).slim, `${e.guid} is slimmed`);
    assert.equal(slim.history, whole.history, `${e.guid}: history`);
    assert.deepEqual(slim.events, whole.events, `${e.guid}: events`);
    assert.equal(slim.hash, whole.hash, `${e.guid}: hash`);
    assert.ok(JSON.parse(slim.history).truncated, `${e.guid}: truncated`);
  }
});

test("filters read the head of a slim entry's text: a phrase in it matches, one past it does not", () => {
  const e = entry({
    guid: 'g',
    content_text: `${'a'.repeat(SLIM_TEXT_CHARS - 10)} remote ${'b'.repeat(300_000)} onsite`,
  });
  const slim = slimEntry(e, contentHash(e));
  const keeps = (phrase: string) =>
    judge(
      compileFilter({ keep: [{ field: 'text', contains: phrase }], block: [] }),
      filterSubject(slim),
      patternBudget(),
    ).kept;
  assert.equal(keeps('remote'), true);
  assert.equal(keeps('onsite'), false);
});

test('a read document carries its 1 MiB entry slim and its small ones whole, with the whole entry hashed', () => {
  const huge = 'a'.repeat(512 * 1024) + 'x'.repeat(512 * 1024);
  const xml = `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>https://e.example/</link>
<item><guid>huge</guid><title>big</title><description>${huge}</description></item>
<item><guid>small</guid><title>s</title><description>small one</description></item></channel></rss>`;
  const reply = readDocument({
    bytes: new TextEncoder().encode(xml),
    contentType: 'application/rss+xml',
    mode: 'feed',
    parse: { baseUrl: 'https://e.example/feed' },
    keyBase: 'https://e.example/feed',
  });
  assert.equal(reply.kind, 'feed');
  if (reply.kind !== 'feed') return;
  const list = new EntryList(reply.entries, reply.publishedAt);
  const [big, small] = list.all();
  assert.equal(big!.summary, null);
  assert.equal(big!.slim?.text?.length, SLIM_TEXT_CHARS);
  assert.equal(big!.slim?.hash, reply.contentHashes[0]);
  assert.equal(small!.summary, 'small one');
  assert.equal(small!.slim, undefined);
  assert.equal(
    reply.entries.bytes.length < 1024 * 1024 + 256 * 1024,
    true,
    'the summary is not carried',
  );
});
