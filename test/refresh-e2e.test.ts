// A refresh end to end through the real `feedsub serve`: one that comes while the feed is being fetched is not lost
// to that fetch's record, which schedules the next poll an interval on from its own answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from './support/deadline.ts';
import { startServed, type Served } from './support/served.ts';
import { rss } from './support/servers.ts';

const ENV = {
  FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
  FEEDSUB_POLL_INTERVAL_SECONDS: '3600',
  FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
};
// Every wait is bounded by this, far below the hour until the feed's next scheduled poll.
const WAIT_MS = 15_000;

describe('end to end: a refresh while the feed is fetched', () => {
  let w: Served;
  before(async () => {
    w = await startServed('refresh', ENV);
  });
  after(async () => {
    await w?.close();
  });

  it('fetches the feed again as soon as the running fetch is recorded, and delivers what the refresh announced', async () => {
    const { origin, receiver } = w;
    origin.set('/r.xml', { body: rss([{ guid: 'g1' }]) });
    const ep = await w.call('POST', '/v1/endpoints', { title: 'r', url: `${receiver.url}/r` });
    const sub = await w.call('POST', '/v1/subscriptions', {
      endpoint: ep.body.id,
      url: `${origin.url}/r.xml`,
    });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const feed = sub.body.feed as string;
    const polled = async () => (await w.call('GET', `/v1/feeds/${feed}`)).body.last_polled_at;
    await until(async () => (await polled()) !== null, WAIT_MS, 'the baseline', 100);
    // The next fetch is held at the origin: a refresh starts it (once poll.min_interval_seconds has passed)…
    const held = origin.hold('/r.xml');
    await until(
      async () => (await w.call('POST', `/v1/feeds/${feed}/refresh`)).status === 202,
      WAIT_MS,
      'the first refresh accepted',
      250,
    );
    await held.arrived;
    // …and while it runs, an entry is published and announced: the held fetch answers with the document it began on.
    origin.set('/r.xml', { body: rss([{ guid: 'g2' }, { guid: 'g1' }]) });
    assert.equal((await w.call('POST', `/v1/feeds/${feed}/refresh`)).status, 202);
    held.release();
    await until(
      () => receiver.deliveries.some((d) => d.body.includes('"g2"')),
      WAIT_MS,
      'the announced entry delivered',
      100,
    );
    assert.ok(origin.requests.filter((r) => r.path === '/r.xml').length >= 3);
  });
});
