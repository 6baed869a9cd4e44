// A world for poll --once tests (runPollOnce): an application with an endpoint at a receiver, feeds of an origin
// subscribed to it, and events queued for them as the poller would.
import { newId } from '../../src/ids.ts';
import { insertEndpoint } from '../../src/store/endpoints.ts';
import { insertEvent } from '../../src/store/events.ts';
import { upsertFeed } from '../../src/store/feeds.ts';
import { allocateSequences, insertSubscription } from '../../src/store/subscriptions.ts';
import type { Receiver } from './servers.ts';
import type { World } from './world.ts';

/** A world whose application has an endpoint at the receiver; `subscribe` adds a feed of the origin. */
export async function setUp(w: World, receiver: Receiver) {
  const db = w.ctx.db;
  const now = w.clock.now();
  const { applicationId } = await w.key();
  const endpoint = newId(now);
  await insertEndpoint(db, {
    id: endpoint,
    application_id: applicationId,
    title: 'R',
    url: `${receiver.url}/hook`,
    secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0',
    created_at: now.toISOString(),
    filter_types: null,
  });
  return {
    async subscribe(url: string): Promise<string> {
      const feed = await upsertFeed(db, url, null, '', now);
      const id = newId(now);
      await insertSubscription(db, {
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
    async queue(subscription: string, n: number): Promise<void> {
      await w.ctx.store.write(async (tx) => {
        for (let i = 0; i < n; i++)
          await insertEvent(
            tx,
            {
              id: newId(now),
              application_id: applicationId,
              endpoint_id: endpoint,
              subscription_id: subscription,
              type: 'subscription.entries',
              sequence: await allocateSequences(tx, subscription, 1),
              body: `{"n":${i}}`,
            },
            now,
          );
      });
    },
  };
}
