// The feeds health page and the overview through app.request(): statuses, tabs with counts, held entries, isolation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Sql } from '../../../src/db/engine.ts';
import { holdEntries } from '../../../src/store/entries.ts';
import {
  recordBudgetHold,
  recordFeedGone,
  recordPollFailure,
} from '../../../src/store/feeds-record.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { Client } from './client.ts';

let w: World;
before(() => {
  w = makeWorld();
});
after(() => w.close());

/** An application with one endpoint and a subscription per URL; returns the feed ids by URL. */
async function withFeeds(
  urls: string[],
): Promise<{ c: Client; key: string; feeds: Record<string, string> }> {
  const { key } = await w.key();
  const c = await new Client(w).signedIn(key);
  const endpoint = (
    await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'R', url: 'http://127.0.0.1:9/hook' },
    })
  ).body.id as string;
  const feeds: Record<string, string> = {};
  for (const url of urls)
    feeds[url] = (await w.call('POST', '/v1/subscriptions', { key, body: { endpoint, url } })).body
      .feed as string;
  return { c, key, feeds };
}

/** What the poller's churn guard leaves behind (set directly: the guard itself is tested with the poller). */
const markIdentityChanged = (feed: string, db: Sql = w.ctx.db) =>
  db.run("UPDATE feeds SET status = 'identity_changed' WHERE id = ?", [feed]);
const entry = (guid: string) =>
  JSON.stringify({
    guid,
    url: null,
    title: guid,
    summary: null,
    content: null,
    authors: [],
    categories: [],
    enclosures: [],
    published_at: null,
    updated_at: null,
  });

describe('dashboard feeds health', () => {
  it('says how feeds appear when there are none', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    assert.match(
      (await c.get('/dashboard/feeds')).text,
      /No feeds yet: feeds appear here when you subscribe/,
    );
  });

  it('shows failing, gone and identity-changed feeds with counts in the tabs, and filters by status', async () => {
    const { c, feeds } = await withFeeds([
      'http://127.0.0.1:9/ok.xml',
      'http://127.0.0.1:9/bad.xml',
      'http://127.0.0.1:9/gone.xml',
      'http://127.0.0.1:9/churn.xml',
    ]);
    const now = w.clock.now();
    await recordPollFailure(
      w.ctx.db,
      feeds['http://127.0.0.1:9/bad.xml']!,
      {
        errorClass: 'network',
        message: 'fetch: unable to connect: ECONNREFUSED',
        httpStatus: null,
        nextPollAt: now.toISOString(),
      },
      now,
    );
    await recordFeedGone(w.ctx.db, feeds['http://127.0.0.1:9/gone.xml']!, now);
    await markIdentityChanged(feeds['http://127.0.0.1:9/churn.xml']!);
    const all = await c.get('/dashboard/feeds');
    assert.match(all.text, /All \(4\)/);
    assert.match(all.text, /Failing \(1\)/);
    assert.match(all.text, /Gone \(1\)/);
    assert.match(all.text, /Identity changed \(1\)/);
    assert.match(all.text, /ECONNREFUSED/);
    const failing = await c.get('/dashboard/feeds?status=error');
    assert.match(failing.text, /bad\.xml/);
    assert.doesNotMatch(failing.text, /ok\.xml/);
    assert.match(failing.text, /<a href="\/dashboard\/feeds\?status=error" aria-current="page">/);
    const overview = await c.get('/dashboard');
    assert.match(overview.text, /<strong>3<\/strong>feeds with problems/);
    assert.match(overview.text, /ECONNREFUSED/);
  });

  it('shows a feed held for the storage budget under Over budget, with why, and what the application keeps', async () => {
    const { c, feeds } = await withFeeds([
      'http://127.0.0.1:9/big.xml',
      'http://127.0.0.1:9/ok.xml',
    ]);
    const now = w.clock.now();
    // What the poller records when a document would not fit (worker/poll/budget.ts; tested with the poller).
    await recordBudgetHold(
      w.ctx.db,
      feeds['http://127.0.0.1:9/big.xml']!,
      { last_http_status: 200, held_at: now.toISOString() },
      now,
    );
    const page = await c.get('/dashboard/feeds?status=over_budget');
    assert.match(page.text, /Over budget \(1\)/);
    assert.match(page.text, /big\.xml/);
    assert.doesNotMatch(page.text, /ok\.xml/);
    assert.match(page.text, /Polling is held: .*storage budget of 1073741824 bytes/);
    assert.match(page.text, /Storage: 0\.0 MB .*, of a budget of 1073\.7 MB; 1 feeds held/);
    const overview = await c.get('/dashboard');
    assert.match(overview.text, /<strong>1<\/strong>feeds with problems/);
    assert.match(overview.text, /Polling is held/);
  });

  it("sends or discards a feed's held entries, scoped to feeds the application uses", async () => {
    const { c, feeds } = await withFeeds(['http://127.0.0.1:9/held.xml']);
    const feed = feeds['http://127.0.0.1:9/held.xml']!;
    const now = w.clock.now();
    await w.ctx.store.write(async (sql) => {
      await holdEntries(
        sql,
        feed,
        [
          { key: 'k1', entry: entry('a'), position: 0 },
          { key: 'k2', entry: entry('b'), position: 1 },
        ],
        now,
        { entries: 100, bytes: 1 << 20 },
      );
      await markIdentityChanged(feed, sql);
    });
    const page = await c.get('/dashboard/feeds?status=identity_changed');
    assert.match(page.text, /2 entries held back/);
    const stranger = await new Client(w).signedIn((await w.key()).key);
    assert.equal(
      (await stranger.post('/dashboard/feeds', { _action: 'discard', feed })).status,
      404,
    );
    const res = await c.post('/dashboard/feeds', { _action: 'discard', feed });
    assert.equal(res.status, 303);
    assert.equal(res.location, '/dashboard/feeds?notice=held-discarded');
    const again = await c.post('/dashboard/feeds', { _action: 'discard', feed });
    assert.equal(again.status, 409);
    assert.match(again.text, /holds no entries/);
  });

  it('refreshes a feed with Refresh now, and shows why when it is too soon', async () => {
    const { c, feeds } = await withFeeds(['http://127.0.0.1:9/refresh.xml']);
    const feed = feeds['http://127.0.0.1:9/refresh.xml']!;
    const page = await c.get('/dashboard/feeds');
    assert.match(page.text, /name="_action" value="refresh"/);
    assert.match(page.text, new RegExp(`name="feed" value="${feed}"`));
    await w.ctx.db.run('UPDATE feeds SET next_poll_at = ?, last_polled_at = ? WHERE id = ?', [
      '2026-06-01T00:00:00.000Z',
      '2025-06-01T00:00:00.000Z',
      feed,
    ]);
    const nudges = w.nudges.poller;
    const res = await c.post('/dashboard/feeds', { _action: 'refresh', feed });
    assert.equal(res.status, 303);
    assert.equal(res.location, '/dashboard/feeds?notice=feed-refreshed');
    assert.equal(w.nudges.poller, nudges + 1);
    assert.match((await c.get(res.location!)).text, /The feed is fetched within seconds/);
    await w.ctx.db.run('UPDATE feeds SET last_polled_at = ? WHERE id = ?', [
      w.clock.now().toISOString(),
      feed,
    ]);
    const soon = await c.post('/dashboard/feeds', { _action: 'refresh', feed });
    assert.equal(soon.status, 429);
    assert.match(soon.text, /fetch it again in 60 s/);
    assert.equal(soon.headers.get('retry-after'), '60'); // as the API's 429 says it
    const stranger = await new Client(w).signedIn((await w.key()).key);
    assert.equal(
      (await stranger.post('/dashboard/feeds', { _action: 'refresh', feed })).status,
      404,
    );
  });

  it("never lists another application's feeds", async () => {
    await withFeeds(['http://127.0.0.1:9/private-feed.xml']);
    const c = await new Client(w).signedIn((await w.key()).key);
    assert.doesNotMatch((await c.get('/dashboard/feeds')).text, /private-feed/);
  });
});

describe('dashboard overview', () => {
  it('guides a new application to its first endpoint, then its first subscription', async () => {
    const { key } = await w.key();
    const c = await new Client(w).signedIn(key);
    assert.match(
      (await c.get('/dashboard')).text,
      /Start here: <a href="\/dashboard\/endpoints">create an endpoint<\/a>/,
    );
    await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'R', url: 'http://127.0.0.1:9/hook' },
    });
    assert.match(
      (await c.get('/dashboard')).text,
      /Next, <a href="\/dashboard\/subscriptions">subscribe it to a feed<\/a>/,
    );
  });

  it('shows a notice only for keys it knows, never text from the query string', async () => {
    const c = await new Client(w).signedIn((await w.key()).key);
    assert.match((await c.get('/dashboard?notice=endpoint-deleted')).text, /Endpoint deleted\./);
    const hostile = await c.get('/dashboard?notice=%3Cscript%3Ealert(1)%3C/script%3E');
    assert.doesNotMatch(hostile.text, /alert\(1\)/);
  });
});
