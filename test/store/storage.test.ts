// The storage counts (store/storage.ts) stay exact through everything that adds or removes what a feed or an
// application keeps: polls, holds and their release, history, deliveries, maintenance's deletions, subscriptions and
// endpoints deleted; and they follow the feed from one application to none and back as subscriptions come and go.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { removeEndpoint } from '../../src/actions/endpoints.ts';
import { resolveIdentityChange } from '../../src/actions/feeds.ts';
import { removeSubscription } from '../../src/actions/subscriptions.ts';
import { silentLogger } from '../../src/log.ts';
import { getFeed } from '../../src/store/feeds.ts';
import { applicationStorage } from '../../src/store/storage.ts';
import { deliverTick } from '../../src/worker/deliver/deliverer.ts';
import { createWorkers, type Workers } from '../../src/worker/index.ts';
import { maintenanceTick } from '../../src/worker/maintenance/maintenance.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { startOrigin, startReceiver, type Origin, type Receiver } from '../support/servers.ts';
import { storageOffBy } from '../support/storage.ts';
import { makeWorld, type World } from '../support/world.ts';

const DAY = 86_400_000;

describe('storage counts', () => {
  let origin: Origin;
  let receiver: Receiver;
  let w: World;
  let workers: Workers;
  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
    w = makeWorld({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
      retention: { entry_history_per_feed: 50, entry_key_days: 1, entry_keys_per_feed: 5 },
      delivery: { retention_days: 1 },
    });
    workers = createWorkers(w.ctx, silentLogger);
  });
  after(async () => {
    await workers.close();
    await w.close();
    await origin.close();
    await receiver.close();
  });

  const exact = async (when: string) => assert.deepEqual(await storageOffBy(w.ctx.db), [], when);
  /** RSS of `n` items with guids `prefix`0…, each with a description (`text`, which an update changes). */
  const items = (prefix: string, n: number, text = (i: number) => `Text of item ${i}.`) =>
    `<?xml version="1.0"?><rss version="2.0"><channel><title>T</title><link>http://example.com/</link>${Array.from(
      { length: n },
      (_, i) =>
        `<item><guid>${prefix}${i}</guid><title>Item ${i}</title><description>${text(i)}</description></item>`,
    ).join('')}</channel></rss>`;
  const poll = async () => {
    w.clock.advance(2 * 3600_000);
    await pollTick(w.ctx, workers.pollerDeps);
  };
  async function account(name: string) {
    const { key, applicationId } = await w.key(name);
    const endpoint = (
      await w.call('POST', '/v1/endpoints', { key, body: { title: name, url: receiver.url } })
    ).body.id as string;
    const subscribe = async (path: string) =>
      (
        await w.call('POST', '/v1/subscriptions', {
          key,
          body: { endpoint, url: origin.url + path },
        })
      ).body as { id: string; feed: string };
    return { key, applicationId, endpoint, subscribe };
  }

  it('stay exact through polls, holds, deliveries, maintenance and deletions, and move with the feed', async () => {
    const a = await account('a');
    const b = await account('b');
    origin.set('/a.xml', { body: items('a', 20) });
    origin.set('/b.xml', { body: items('b', 5) });
    origin.set('/shared.xml', { body: items('s', 3) });
    const own = await a.subscribe('/a.xml');
    await b.subscribe('/b.xml');
    const sharedA = await a.subscribe('/shared.xml');
    const sharedB = await b.subscribe('/shared.xml');
    await poll(); // baselines: keys, history, probes
    await exact('after the baselines');
    const feed = async (id: string) => (await getFeed(w.ctx.db, id))!;
    assert.equal((await feed(own.feed)).sole_application_id, a.applicationId);
    assert.equal(
      (await feed(sharedA.feed)).sole_application_id,
      null,
      'shared: counted for nobody',
    );
    assert.ok((await feed(own.feed)).stored_bytes > 20 * 255, 'keys and history counted');
    assert.equal(
      (await applicationStorage(w.ctx.db, a.applicationId)).feed_bytes,
      (await feed(own.feed)).stored_bytes,
    );

    origin.set('/a.xml', {
      body: items('a', 21, (i) => `Text of item ${i}${i === 0 ? ', longer' : ''}.`),
    });
    origin.set('/shared.xml', { body: items('t', 3) });
    await poll(); // new entries and events for each subscription, an updated entry
    assert.equal(
      (await w.ctx.db.column('SELECT count(*) FROM entry_history WHERE changed_at IS NOT NULL'))[0],
      1,
      'a new version stored',
    );
    await exact('after new entries');

    receiver.respond(() => ({ status: 500, body: 'x'.repeat(3000) })); // attempts keep a response
    await deliverTick(w.ctx, workers.delivererDeps);
    receiver.respond(() => ({ status: 200 }));
    w.clock.advance(60_000);
    await deliverTick(w.ctx, workers.delivererDeps);
    await exact('after deliveries, failed then delivered');

    origin.set('/a.xml', { body: items('c', 30) }); // every id new: held
    await poll();
    assert.equal((await feed(own.feed)).status, 'identity_changed');
    await exact('after a hold');
    await resolveIdentityChange(w.ctx, a.applicationId, own.feed, { action: 'deliver' });
    await exact('after the release');

    w.clock.advance(3 * DAY);
    origin.set('/a.xml', { body: items('d', 2) });
    await poll();
    const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
    assert.ok(summary.events > 0 && summary.retention.keysPruned > 0, 'pruned events and keys');
    // Its recount, after its deletions, found every count as those deletions left it.
    assert.deepEqual([summary.retention.storageDrift, summary.storage.driftBytes], [0, 0]);
    await exact('after maintenance pruned keys, history and delivered events');

    await removeSubscription(w.ctx, b.applicationId, sharedB.id);
    assert.equal(
      (await feed(sharedA.feed)).sole_application_id,
      a.applicationId,
      'now counted for a',
    );
    await exact('after the shared feed became a’s alone');
    await removeSubscription(w.ctx, a.applicationId, sharedA.id);
    assert.equal((await feed(sharedA.feed)).sole_application_id, null);
    await exact('after its last subscription went');

    await removeSubscription(w.ctx, a.applicationId, own.id);
    await removeEndpoint(w.ctx, a.applicationId, a.endpoint);
    await exact('after an endpoint went with its events');
    assert.deepEqual(await applicationStorage(w.ctx.db, a.applicationId), {
      feed_bytes: 0,
      event_bytes: 0,
    });
  });
});
