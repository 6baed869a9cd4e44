// The maintenance pass's recount of the storage counts: counts that drifted from the rows are set back to them, and a
// recount that walks an application's events in chunks stays exact while events are made, grow and go behind it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEndpoint } from '../../../src/actions/endpoints.ts';
import { createSubscription } from '../../../src/actions/subscriptions.ts';
import type { Sql } from '../../../src/db/engine.ts';
import { newId } from '../../../src/ids.ts';
import { silentLogger } from '../../../src/log.ts';
import { recordAttempt } from '../../../src/store/attempts.ts';
import { recordKeys } from '../../../src/store/entries.ts';
import { deleteSubscriptionEvents, insertEvent } from '../../../src/store/events.ts';
import { maintenanceTick } from '../../../src/worker/maintenance/maintenance.ts';
import { recountStorage } from '../../../src/worker/maintenance/storage.ts';
import { storageOffBy } from '../../support/storage.ts';
import { makeWorld, type World } from '../../support/world.ts';

/** An application with an endpoint and a subscription to a feed of its own. */
async function tenant(w: World, name: string) {
  const { applicationId } = await w.key(name);
  const endpoint = (
    await createEndpoint(w.ctx, applicationId, {
      title: name,
      url: 'https://hooks.example.com/',
    })
  ).id;
  const sub = await createSubscription(w.ctx, applicationId, {
    endpoint,
    url: `https://feeds.example.com/${name}.xml`,
  });
  /** Queues an event of `bytes` bytes of body for the subscription (in the transaction `db`, if any). */
  const event = async (bytes: number, db: Sql = w.ctx.db) => {
    const id = newId(w.clock.now());
    await insertEvent(
      db,
      {
        id,
        application_id: applicationId,
        endpoint_id: endpoint,
        subscription_id: sub.id,
        type: 'subscription.entries',
        sequence: 1,
        body: 'x'.repeat(bytes),
      },
      w.clock.now(),
    );
    return id;
  };
  return { applicationId, endpoint, sub, event };
}

describe('storage recount', () => {
  it('sets counts that drifted from the rows back to them, and says by how much', async () => {
    const w = makeWorld();
    try {
      const t = await tenant(w, 'drift');
      await recordKeys(w.ctx.db, t.sub.feed, [{ key: 'k1', fingerprint: null }], w.clock.now());
      await t.event(100);
      assert.deepEqual(await storageOffBy(w.ctx.db), [], 'exact before');
      const db = w.ctx.db;
      // A deletion that did not count itself: the feed's count and its application's are both 1,000 bytes high.
      await db.run('UPDATE feeds SET stored_bytes = stored_bytes + 1000, stored_keys = 7');
      await db.run(
        'UPDATE application_storage SET event_bytes = event_bytes + 12345, feed_bytes = feed_bytes + 1000 - 7',
      );
      assert.notDeepEqual(await storageOffBy(db), []);
      const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
      assert.equal(summary.retention.storageDrift, 1000, "the feed's count");
      // The feed's recount takes its 1,000 bytes off its application's sum too, whose walk then finds the rest.
      assert.equal(summary.storage.driftBytes, 12345 + 7);
      assert.deepEqual(await storageOffBy(db), []);
    } finally {
      await w.close();
    }
  });

  it('walking events in chunks, counts exactly what is there at its end, whatever changed behind it', async () => {
    const w = makeWorld();
    try {
      const t = await tenant(w, 'busy');
      const other = await tenant(w, 'other');
      const db = w.ctx.db;
      const ids = await w.ctx.store.write(async (tx) => {
        const made: string[] = [];
        for (let i = 0; i < 2500; i++) made.push(await t.event(i % 300, tx));
        return made;
      });
      await other.event(50);
      await db.run(
        'UPDATE application_storage SET event_bytes = event_bytes + 999 WHERE application_id = ?',
        [t.applicationId],
      );
      const recount = recountStorage(w.ctx);
      let done = false;
      void recount.then(() => (done = true));
      // Between two chunks of the walk: an event it counted grows (an attempt) or goes, a new one comes.
      for (let turn = 0; !done; turn++) {
        await new Promise((resolve) => setImmediate(resolve));
        await w.ctx.store.write(async (tx) => {
          await recordAttempt(
            tx,
            {
              event_id: ids[turn * 7]!,
              endpoint_id: t.endpoint,
              started_at: w.clock.now().toISOString(),
              status_code: 500,
              duration_ms: 5,
              error: 'HTTP 500',
              response_body: 'no'.repeat(turn + 1),
            },
            { status: 'failed', nextAttemptAt: w.clock.now().toISOString() },
            w.clock.now(),
          );
          await deleteSubscriptionEvents(tx, t.sub.id, 1); // its oldest: counted already
          await t.event(123, tx);
        });
      }
      const result = await recount;
      assert.equal(result.applications, 2);
      assert.equal(result.driftBytes, 999, 'the drift, and nothing the changes made');
      assert.deepEqual(await storageOffBy(db), []);
      await deleteSubscriptionEvents(db, t.sub.id, 10);
      assert.deepEqual(await storageOffBy(db), [], 'and the counts go on from there');
    } finally {
      await w.close();
    }
  });
});
