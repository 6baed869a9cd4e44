// The storage budget end to end through the real `feedsub serve`: one tenant's feed whose ids change on every fetch
// fills the tenant's budget and is held — status over_budget, one feed.over_budget delivered to its endpoint, no
// longer fetched — while another application's feed on the same daemon is polled and delivered as before; deleting
// one of the tenant's subscriptions resumes it (feed.within_budget), and so does a restart with a raised budget.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig } from '../src/config.ts';
import { quietCtx } from '../src/context.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { startDaemon, type Daemon } from './support/daemon.ts';
import { until } from './support/deadline.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';

const BUDGET = 200_000;
const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
  FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '1',
  FEEDSUB_QUOTAS_STORAGE_BYTES_PER_APPLICATION: String(BUDGET),
};
// Every wait is bounded by this: a few dozen 1-second polls, far from any fallback timer of the loops.
const WAIT_MS = 45_000;
const TEXT = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(6);

/** An origin whose document has 50 entries whose guid, link and title are new on every fetch; counts its fetches. */
async function churningOrigin(): Promise<{ url: string; fetches: () => number; server: Server }> {
  let round = 0;
  const server = createServer((_req, res) => {
    const r = ++round;
    const items = Array.from(
      { length: 50 },
      (_, i) =>
        `<item><guid>r${r}-${i}</guid><title>Item ${i} of round ${r}</title><link>http://example.com/${r}/${i}</link><description>${TEXT}</description></item>`,
    ).join('');
    res
      .writeHead(200, { 'content-type': 'application/rss+xml' })
      .end(
        `<?xml version="1.0"?><rss version="2.0"><channel><title>Churn</title><link>http://example.com/</link>${items}</channel></rss>`,
      );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    fetches: () => round,
    server,
  };
}

describe('end to end: the storage budget of the real server', () => {
  let dir: string;
  let daemon: Daemon;
  let origin: Origin;
  let churn: Awaited<ReturnType<typeof churningOrigin>>;
  const receivers: Record<'a' | 'b', Receiver> = {} as Record<'a' | 'b', Receiver>;
  const keys: Record<'a' | 'b', string> = { a: '', b: '' };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-budget-'));
    const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
    const ctx = quietCtx(store, systemClock, defaultConfig());
    keys.a = (await createKey(ctx, 'tenant', null)).key;
    keys.b = (await createKey(ctx, 'neighbour', null)).key;
    await store.close();
    origin = await startOrigin();
    churn = await churningOrigin();
    receivers.a = await startReceiver();
    receivers.b = await startReceiver();
    daemon = await startDaemon({ dataDir: dir, env: ENV });
  });
  after(async () => {
    await daemon?.stop();
    await origin?.close();
    await receivers.a?.close();
    await receivers.b?.close();
    churn?.server.closeAllConnections();
    churn?.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (app: 'a' | 'b', method: string, path: string, body?: unknown) => {
    const res = await fetch(daemon.url + path, {
      method,
      headers: { authorization: keys[app], 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  /** The types of the events `app`'s receiver got, in order; entries events with their entries' guids. */
  const received = (app: 'a' | 'b') =>
    receivers[app].deliveries.map((d) => {
      const body = JSON.parse(d.body) as { type: string; data: { entries?: { guid: string }[] } };
      return body.data.entries
        ? `${body.type}: ${body.data.entries.map((e) => e.guid).join(' ')}`
        : body.type;
    });
  const count = (app: 'a' | 'b', type: string) => received(app).filter((t) => t === type).length;
  const waitFor = (what: string, check: () => boolean | Promise<boolean>) =>
    until(check, WAIT_MS, what, 50);

  let churnSub: { id: string; feed: string };
  let bulkySub: { id: string; feed: string };
  let calmB: { id: string; feed: string };

  it("holds the tenant's churning feed at its budget, tells its endpoint once, and stops fetching it", async () => {
    const a = await call('a', 'POST', '/v1/endpoints', { title: 'a', url: receivers.a.url });
    const b = await call('b', 'POST', '/v1/endpoints', { title: 'b', url: receivers.b.url });
    origin.set('/calm-b.xml', { body: rss([{ guid: 'b1' }]) });
    calmB = await call('b', 'POST', '/v1/subscriptions', {
      endpoint: b.id,
      url: `${origin.url}/calm-b.xml`,
    });
    // The tenant's other feed: its events take room in its budget until its subscription is deleted.
    origin.set('/bulky.xml', { body: rss([{ guid: 'x0' }]) });
    bulkySub = await call('a', 'POST', '/v1/subscriptions', {
      endpoint: a.id,
      url: `${origin.url}/bulky.xml`,
    });
    await waitFor(
      'the baseline of bulky.xml',
      async () => (await call('a', 'GET', `/v1/feeds/${bulkySub.feed}`)).status !== 'pending',
    );
    origin.set('/bulky.xml', {
      body: rss(
        Array.from({ length: 40 }, (_, i) => ({ guid: `x${i + 1}`, title: `${TEXT} ${i}` })),
      ),
    });
    await waitFor('the bulky entries delivered', () => received('a').length >= 1);

    churnSub = await call('a', 'POST', '/v1/subscriptions', { endpoint: a.id, url: churn.url });
    await waitFor('feed.over_budget delivered', () => count('a', 'feed.over_budget') === 1);
    const feed = await call('a', 'GET', `/v1/feeds/${churnSub.feed}`);
    assert.equal(feed.status, 'over_budget');
    assert.equal(feed.next_poll_at, null);
    assert.equal(feed.over_budget.budget_bytes, BUDGET);
    assert.match(feed.over_budget.detail, /storage budget/);
    const storage = await call('a', 'GET', '/v1/storage');
    assert.equal(storage.held_feeds, 1);
    const metrics = await (await fetch(`${daemon.url}/metrics`)).text();
    assert.match(metrics, /feedsub_feeds\{status="over_budget"\} 1/);

    // The neighbour's feed goes on, polled and delivered, while the held feed is fetched no more.
    const fetched = churn.fetches();
    for (let n = 2; n <= 4; n++) {
      origin.set('/calm-b.xml', {
        body: rss(Array.from({ length: n }, (_, i) => ({ guid: `b${n - i}` }))),
      });
      await waitFor(`b${n} delivered`, () => received('b').includes(`subscription.entries: b${n}`));
    }
    assert.equal(churn.fetches(), fetched, 'the held feed was not fetched meanwhile');
    assert.equal(count('a', 'feed.over_budget'), 1, 'told once');
  });

  it('resumes the held feed when deleting a subscription makes room', async () => {
    await call('a', 'DELETE', `/v1/subscriptions/${bulkySub.id}`);
    await waitFor('feed.within_budget delivered', () => count('a', 'feed.within_budget') === 1);
    // Held before its churn could be held (the first changed document did not fit), resumed with it held now.
    const types = received('a').filter((t) => t.startsWith('feed.'));
    assert.deepEqual(types.slice(0, types.indexOf('feed.within_budget') + 1), [
      'feed.over_budget',
      'feed.identity_hold',
      'feed.within_budget',
    ]);
  });

  it('resumes it after a restart with a raised budget', async () => {
    // Churning on, the feed fills the room it got and is held again, once.
    await waitFor('held again', () => count('a', 'feed.over_budget') === 2);
    await daemon.stop();
    daemon = await startDaemon({
      dataDir: dir,
      env: { ...ENV, FEEDSUB_QUOTAS_STORAGE_BYTES_PER_APPLICATION: String(100 * BUDGET) },
    });
    await waitFor(
      'feed.within_budget after the restart',
      () => count('a', 'feed.within_budget') === 2,
    );
    const feed = await call('a', 'GET', `/v1/feeds/${churnSub.feed}`);
    assert.notEqual(feed.status, 'over_budget');
    assert.equal(feed.over_budget, null);
    assert.equal((await call('b', 'GET', `/v1/feeds/${calmB.feed}`)).status, 'active');
  });
});
