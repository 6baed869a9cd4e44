// poll --once (runPollOnce): every feed in bounded chunks, deliveries until nothing due is left, a busy database waited
// out, and a summary that says what is still waiting.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runPollOnce } from '../src/app.ts';
import { newId } from '../src/ids.ts';
import { silentLogger } from '../src/log.ts';
import { insertEndpoint } from '../src/store/endpoints.ts';
import { insertEvent } from '../src/store/events.ts';
import { upsertFeed } from '../src/store/feeds.ts';
import { allocateSequences, insertSubscription } from '../src/store/subscriptions.ts';
import { within } from './support/deadline.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';
import { makeWorld, type World } from './support/world.ts';

/** A world whose application has an endpoint at the receiver; `subscribe` adds a feed of the origin. */
function setUp(w: World, receiver: Receiver) {
  const db = w.ctx.db;
  const now = w.clock.now();
  const { applicationId } = w.key();
  const endpoint = newId(now);
  insertEndpoint(db, {
    id: endpoint,
    application_id: applicationId,
    title: 'R',
    url: `${receiver.url}/hook`,
    secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0',
    created_at: now.toISOString(),
    filter_types: null,
  });
  return {
    subscribe(url: string): string {
      const feed = upsertFeed(db, url, null, '', now);
      const id = newId(now);
      insertSubscription(db, {
        id,
        application_id: applicationId,
        endpoint_id: endpoint,
        feed_id: feed.id,
        url,
        metadata: null,
        created_at: now.toISOString(),
      });
      return id;
    },
    /** Queues `n` events for the subscription, in sequence, as the poller would. */
    queue(subscription: string, n: number): void {
      db.transaction(() => {
        for (let i = 0; i < n; i++)
          insertEvent(
            db,
            {
              id: newId(now),
              application_id: applicationId,
              endpoint_id: endpoint,
              subscription_id: subscription,
              type: 'subscription.entries',
              sequence: allocateSequences(db, subscription, 1),
              body: `{"n":${i}}`,
            },
            now,
          );
      })();
    },
  };
}

describe('poll --once', () => {
  let origin: Origin;
  let receiver: Receiver;
  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
  });
  after(async () => {
    await origin.close();
    await receiver.close();
  });

  it('fetches every active feed once, more feeds than one chunk reads', async () => {
    const w = makeWorld({}, new Date().toISOString());
    try {
      const s = setUp(w, receiver);
      for (let i = 0; i < 300; i++) {
        origin.set(`/many/${i}.xml`, { body: rss([{ guid: `g${i}` }]) });
        s.subscribe(`${origin.url}/many/${i}.xml`);
      }
      const seen = origin.requests.length;
      const out = await within(runPollOnce(w.ctx.config, silentLogger), 60_000, 'poll --once');
      assert.match(out, /^feeds fetched 300, not modified 0, failed 0, new entries 0,/);
      const paths = origin.requests.slice(seen).map((r) => r.path);
      assert.equal(paths.length, 300);
      assert.equal(new Set(paths).size, 300, 'each feed fetched once');
    } finally {
      w.close();
    }
  });

  it("delivers a subscription's 1,001 queued events in order, past what 1,000 rounds sent", async () => {
    const w = makeWorld({}, new Date().toISOString());
    try {
      const s = setUp(w, receiver);
      origin.set('/one.xml', { body: rss([{ guid: 'a' }]) });
      s.queue(s.subscribe(`${origin.url}/one.xml`), 1001);
      const seen = receiver.deliveries.length;
      const out = await within(runPollOnce(w.ctx.config, silentLogger), 120_000, 'poll --once');
      assert.match(out, /events delivered 1001, events failed 0, events waiting 0$/);
      const bodies = receiver.deliveries
        .slice(seen)
        .map((d) => (JSON.parse(d.body) as { n: number }).n);
      assert.deepEqual(
        bodies,
        Array.from({ length: 1001 }, (_, i) => i),
      );
    } finally {
      w.close();
    }
  });

  it('attempts every due event when the first ones fail, and says how many still wait', async () => {
    const w = makeWorld({ delivery: { concurrency: 1 } }, new Date().toISOString());
    try {
      const s = setUp(w, receiver);
      origin.set('/two-a.xml', { body: rss([{ guid: 'a' }]) });
      origin.set('/two-b.xml', { body: rss([{ guid: 'b' }]) });
      s.queue(s.subscribe(`${origin.url}/two-a.xml`), 1);
      s.queue(s.subscribe(`${origin.url}/two-b.xml`), 1);
      receiver.respond([500, 500]);
      const seen = receiver.deliveries.length;
      const out = await within(runPollOnce(w.ctx.config, silentLogger), 30_000, 'poll --once');
      receiver.respond([]);
      assert.equal(receiver.deliveries.length - seen, 2, 'both events tried, one at a time');
      assert.match(out, /events delivered 0, events failed 2, events waiting 2$/);
    } finally {
      w.close();
    }
  });

  it('waits out another connection holding the write lock past the busy timeout, instead of dying', async () => {
    const w = makeWorld({}, new Date().toISOString());
    const other = new Database(join(w.dir, 'feedsub.db'));
    try {
      const s = setUp(w, receiver);
      origin.set('/locked.xml', { body: rss([{ guid: 'a' }]) });
      const sub = s.subscribe(`${origin.url}/locked.xml`);
      s.queue(sub, 1);
      // Held from before the first claim until 500 ms after it gave up waiting (the 5 s busy timeout blocks this
      // process's event loop, so the release runs during the retry's pause).
      other.exec('BEGIN IMMEDIATE');
      setTimeout(() => other.exec('ROLLBACK'), 500);
      const out = await within(runPollOnce(w.ctx.config, silentLogger), 30_000, 'poll --once');
      assert.match(out, /events delivered 1, events failed 0, events waiting 0$/);
    } finally {
      other.close();
      w.close();
    }
  });
});
