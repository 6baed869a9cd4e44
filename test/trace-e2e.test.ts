// The trace end to end through the real `feedsub serve`: among the thousands of entries the churn guard holds when a
// feed's ids all change at once, an entry is found by its guid and by its URL, a guid before a URL, and the first in
// document order among entries sharing a URL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from './support/deadline.ts';
import { startServed, type Served } from './support/served.ts';

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  // A hold of 5,000 entries: past the defaults (1,000 entries, 4 MiB), as an operator may allow.
  FEEDSUB_RETENTION_HELD_ENTRIES_PER_FEED: '10000',
  FEEDSUB_RETENTION_HELD_BYTES_PER_FEED: '33554432',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
};
// Every wait below is bounded by this: a few 1-second polls and the reading of a 5,000-entry document, far from any
// fallback timer of the loops.
const WAIT_MS = 30_000;
const HELD = 5_000;
const PATH = '/churn.xml';

type Item = { guid: string; link: string };

/** An RSS document of these items. */
const rssOf = (items: Item[]) =>
  `<?xml version="1.0"?><rss version="2.0"><channel><title>Churn</title><link>http://example.com/</link>${items
    .map((i) => `<item><guid>${i.guid}</guid><title>${i.guid}</title><link>${i.link}</link></item>`)
    .join('')}</channel></rss>`;

/** The held document: HELD entries, every id new. Entries 100 and 4000 share a URL; entry 4500's guid is the URL of
 *  entry 7. */
function heldItems(): Item[] {
  const items = Array.from({ length: HELD }, (_, i) => ({
    guid: `new-${i}`,
    link: `http://example.com/new/${i}`,
  }));
  items[100]!.link = items[4000]!.link = 'http://example.com/twice';
  items[4500]!.guid = 'http://example.com/new/7';
  return items;
}

type Trace = {
  decision: string;
  matched_by: string | null;
  key: string | null;
  fate: string | null;
  entry: { id: string; guid: string; url: string } | null;
};

describe('end to end: the trace among a large churn hold, through feedsub serve', () => {
  let w: Served;
  let sub: { id: string; feed: string };

  before(async () => {
    w = await startServed('trace', ENV);
    w.origin.set(PATH, {
      body: rssOf(
        Array.from({ length: 20 }, (_, i) => ({
          guid: `old-${i}`,
          link: `http://example.com/old/${i}`,
        })),
      ),
    });
    const ep = await api('POST', '/v1/endpoints', { title: 't', url: `${w.receiver.url}/hook` });
    sub = await api('POST', '/v1/subscriptions', { endpoint: ep.id, url: w.origin.url + PATH });
    await until(
      async () => (await api('GET', `/v1/subscriptions/${sub.id}/entries`)).data.length === 20,
      WAIT_MS,
      'the baseline stored',
    );
    w.origin.set(PATH, { body: rssOf(heldItems()) });
    await until(
      async () => (await api('GET', `/v1/feeds/${sub.feed}`)).held_entries === HELD,
      WAIT_MS,
      'every entry of the new document held',
    );
  });
  after(async () => {
    await w?.close();
  });

  /** One API request with the key that must succeed: its parsed body. */
  async function api(method: string, path: string, body?: unknown): Promise<any> {
    const res = await w.call(method, path, body);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }
  const trace = (entry: string): Promise<Trace> =>
    api('GET', `/v1/subscriptions/${sub.id}/trace?entry=${encodeURIComponent(entry)}`);
  const facts = (t: Trace) => [t.decision, t.fate, t.matched_by, t.entry?.guid, t.entry?.url];

  it('holds the whole document: the feed waits for a subscriber to accept the change', async () => {
    const feed = await api('GET', `/v1/feeds/${sub.feed}`);
    assert.equal(feed.status, 'identity_changed');
    assert.equal(feed.held_entries, HELD);
  });

  it('finds a held entry by its guid, and the same entry by the id it answers with', async () => {
    const byGuid = await trace('new-1234');
    assert.deepEqual(facts(byGuid), [
      'held',
      'held',
      'guid',
      'new-1234',
      'http://example.com/new/1234',
    ]);
    const byId = await trace(byGuid.key!);
    assert.deepEqual(facts(byId), [
      'held',
      'held',
      'id',
      'new-1234',
      'http://example.com/new/1234',
    ]);
    assert.equal(byId.entry!.id, byGuid.key);
  });

  it('finds a held entry by its URL', async () => {
    assert.deepEqual(facts(await trace('http://example.com/new/2345')), [
      'held',
      'held',
      'url',
      'new-2345',
      'http://example.com/new/2345',
    ]);
  });

  it('finds the entry whose guid is the text before an earlier one whose URL is', async () => {
    assert.deepEqual(facts(await trace('http://example.com/new/7')), [
      'held',
      'held',
      'guid',
      'http://example.com/new/7',
      'http://example.com/new/4500',
    ]);
  });

  it('finds the first in document order of the entries sharing a URL', async () => {
    assert.deepEqual(facts(await trace('http://example.com/twice')), [
      'held',
      'held',
      'url',
      'new-100',
      'http://example.com/twice',
    ]);
  });

  it('knows nothing of a guid or URL no entry has', async () => {
    for (const text of ['new-99999', 'http://example.com/new/99999']) {
      const t = await trace(text);
      assert.deepEqual([t.decision, t.matched_by, t.key], ['unknown', null, null]);
    }
  });
});
