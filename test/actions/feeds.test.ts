// Releasing a churn hold in chunks: the events carry the entries in the order one release gave them, the hold ends
// with its last chunk, and entries held after the release began stay held.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHUNK_ROWS, nextTurn } from '../../src/actions/chunks.ts';
import { resolveIdentityChange } from '../../src/actions/feeds.ts';
import { countHeldEntries, holdEntries } from '../../src/store/entries.ts';
import { getFeed, lockFeed } from '../../src/store/feeds.ts';
import { entry } from '../support/identity.ts';
import { subscriber } from '../support/subscriber.ts';
import { makeWorld, type World } from '../support/world.ts';

/** A feed with one subscription, holding `n` entries (positions 0…n-1) held at `at`, marked identity_changed. */
async function heldFeed(w: World, n: number): Promise<{ app: string; feed: string }> {
  const { applicationId, subscribe } = await subscriber(w);
  const { feed } = await subscribe('http://127.0.0.1:9/held.xml');
  w.clock.advance(1000); // the entries were first seen after the subscription was made
  await hold(w, feed, 0, n);
  await w.ctx.db.run("UPDATE feeds SET status = 'identity_changed' WHERE id = ?", [feed]);
  return { app: applicationId, feed };
}

async function hold(w: World, feed: string, from: number, n: number): Promise<void> {
  await w.ctx.store.write(async (sql) => {
    await lockFeed(sql, feed); // as a poll storing a document does, which then marks the hold on the feed
    await holdEntries(
      sql,
      feed,
      Array.from({ length: n }, (_, i) => ({
        key: `k${from + i}`,
        entry: JSON.stringify(entry({ guid: `g${from + i}` })),
        position: from + i,
      })),
      w.clock.now(),
      { entries: 1_000_000, bytes: 1 << 30 },
    );
    await sql.run("UPDATE feeds SET status = 'identity_changed' WHERE id = ?", [feed]);
  });
}

/** The guids the events carry, in sequence order. */
const sentGuids = async (w: World): Promise<string[]> =>
  (
    (await w.ctx.db.column(
      'SELECT body FROM events JOIN event_bodies ON event_id = id ORDER BY sequence',
    )) as string[]
  ).flatMap((b) =>
    (JSON.parse(b) as { data: { entries: { guid: string }[] } }).data.entries.map((e) => e.guid),
  );

describe('releasing a churn hold', () => {
  it('sends a hold of several chunks in the order of one release: the document reversed, oldest first', async () => {
    const w = makeWorld();
    try {
      const n = CHUNK_ROWS * 2 + 34;
      const { app, feed } = await heldFeed(w, n);
      const result = await resolveIdentityChange(w.ctx, app, feed, { action: 'deliver' });
      assert.equal(result.released, n);
      assert.equal(result.status, 'active');
      assert.deepEqual(
        await sentGuids(w),
        Array.from({ length: n }, (_, i) => `g${n - 1 - i}`),
      );
      assert.equal((await getFeed(w.ctx.db, feed))!.entry_count, n);
    } finally {
      await w.close();
    }
  });

  it('releases only what was held when it began: a hold made meanwhile stays, and so does the status', async () => {
    const w = makeWorld();
    try {
      const { app, feed } = await heldFeed(w, CHUNK_ROWS + 1);
      const release = resolveIdentityChange(w.ctx, app, feed, { action: 'discard' });
      // one chunk so far: the release takes a turn of the event loop between two chunks
      const deadline = Date.now() + 5000;
      let left = CHUNK_ROWS + 1;
      while ((left = await countHeldEntries(w.ctx.db, feed)) > 1 && Date.now() < deadline)
        await nextTurn();
      assert.equal(left, 1, 'caught between the two chunks');
      w.clock.advance(1000);
      await hold(w, feed, 10_000, 3); // a poll held more entries between two chunks
      const result = await release;
      assert.equal(result.released, CHUNK_ROWS + 1);
      assert.equal(result.events, 0);
      // Once both have committed, in whichever order they took the feed's row.
      assert.equal(await countHeldEntries(w.ctx.db, feed), 3);
      assert.equal((await getFeed(w.ctx.db, feed))!.status, 'identity_changed');
    } finally {
      await w.close();
    }
  });
});
