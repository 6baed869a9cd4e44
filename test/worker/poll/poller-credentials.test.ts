// The poller end to end: a feed's credentials reach only the origin of its subscribed URL, on every poll, also after the
// feed was discovered on, or moved to, another origin.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { getFeed } from '../../../src/store/feeds.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';

const BASIC = `Basic ${Buffer.from('alice:s3cret').toString('base64')}`;
const POLLS = 5;

describe('poller credentials', () => {
  let home: Origin;
  let elsewhere: Origin;
  let w: World;
  let workers: Workers;
  let key: string;
  let endpoint: string;
  before(async () => {
    home = await startOrigin();
    elsewhere = await startOrigin();
    w = makeWorld({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
    });
    workers = createWorkers(w.ctx, silentLogger);
    key = (await w.key()).key;
    endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://hooks.example.com/' },
      })
    ).body.id;
  });
  after(async () => {
    await workers.close();
    await w.close();
    await home.close();
    await elsewhere.close();
  });

  const withSecret = (url: string) => url.replace('http://', 'http://alice:s3cret@');
  const subscribe = async (url: string) =>
    (await w.call('POST', '/v1/subscriptions', { key, body: { endpoint, url } })).body as {
      feed: string;
    };
  /** Polls every due feed POLLS times, two hours apart. */
  const pollAFewTimes = async () => {
    for (let i = 0; i < POLLS; i++) {
      await pollTick(w.ctx, workers.pollerDeps);
      w.clock.advance(2 * 3600 * 1000);
    }
  };
  const authorizations = (origin: Origin, path: string) =>
    origin.requests.filter((r) => r.path === path).map((r) => r.headers.authorization ?? null);

  it('never sends them to the feed discovered on another origin', async () => {
    elsewhere.set('/discovered.xml', { body: rss([{ guid: 'g1' }]) });
    home.set('/page.html', {
      body: `<!doctype html><html><head><link rel="alternate" type="application/rss+xml" href="${elsewhere.url}/discovered.xml"></head></html>`,
      contentType: 'text/html',
    });
    const sub = await subscribe(withSecret(`${home.url}/page.html`));
    await pollAFewTimes();
    assert.equal((await getFeed(w.ctx.db, sub.feed))!.fetch_url, `${elsewhere.url}/discovered.xml`);
    assert.deepEqual(authorizations(home, '/page.html'), [BASIC]);
    assert.equal(authorizations(elsewhere, '/discovered.xml').length, POLLS);
    assert.deepEqual(new Set(authorizations(elsewhere, '/discovered.xml')), new Set([null]));
  });

  it('never sends them to the origin a feed moved to by a permanent redirect', async () => {
    elsewhere.set('/new.xml', { body: rss([{ guid: 'g1' }]) });
    home.set('/old.xml', {
      body: '',
      status: 301,
      headers: { location: `${elsewhere.url}/new.xml` },
    });
    const sub = await subscribe(withSecret(`${home.url}/old.xml`));
    await pollAFewTimes();
    assert.equal(
      (await getFeed(w.ctx.db, sub.feed))!.fetch_url,
      `${elsewhere.url}/new.xml`,
      'the feed moved after three permanent redirects in a row',
    );
    assert.deepEqual(new Set(authorizations(home, '/old.xml')), new Set([BASIC]));
    assert.equal(authorizations(elsewhere, '/new.xml').length, POLLS);
    assert.deepEqual(new Set(authorizations(elsewhere, '/new.xml')), new Set([null]));
  });
});
