// Feed leases: a claim takes them in feed_leases without rewriting the claimed feeds' rows; a live lease keeps a feed
// from every other claim, an expired one is taken over, a recorded poll ends it, and a deleted feed takes its along.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  claimDueFeeds,
  dueFeedWindow,
  leaseFeeds,
  releaseAllFeedLeases,
} from '../../src/store/feeds-poll.ts';
import { recordPollThrottled } from '../../src/store/feeds-record.ts';
import { populate } from './exercise.ts';
import { makeWorld } from '../support/world.ts';

describe('feed leases', async () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const now = new Date('2026-01-01T00:00:00.000Z');
  const at = (ms: number) => new Date(now.getTime() + ms);
  await populate(db, now, 1, 6);
  await db.run('UPDATE feeds SET next_poll_at = ?', [now.toISOString()]);
  await db.exec(
    db.dialect === 'sqlite'
      ? `CREATE TEMP TABLE feed_writes (n INTEGER);
         INSERT INTO feed_writes VALUES (0);
         CREATE TEMP TRIGGER count_feed_writes AFTER UPDATE ON feeds BEGIN UPDATE feed_writes SET n = n + 1; END;`
      : `CREATE TABLE feed_writes (n INTEGER);
         INSERT INTO feed_writes VALUES (0);
         CREATE FUNCTION count_feed_writes() RETURNS trigger LANGUAGE plpgsql
           AS $$ BEGIN UPDATE feed_writes SET n = n + 1; RETURN NULL; END $$;
         CREATE TRIGGER count_feed_writes AFTER UPDATE ON feeds FOR EACH ROW EXECUTE FUNCTION count_feed_writes();`,
  );
  const feedWrites = async () => (await db.column('SELECT n FROM feed_writes'))[0] as number;
  const ids = (rows: { id: string }[]) => rows.map((r) => r.id).sort();

  it('a claim leases due feeds without writing their rows, and no other claim takes them while it lives', async () => {
    const claimed = await claimDueFeeds(db, now, 60000, 3);
    assert.equal(claimed.length, 3);
    assert.equal(await feedWrites(), 0, 'no feeds row rewritten by the claim');
    const window = await dueFeedWindow(db, at(1000), 100);
    assert.equal(window.length, 3, 'the other three are due and unleased');
    for (const f of claimed) assert.ok(!window.some((d) => d.id === f.id));
    assert.deepEqual(await leaseFeeds(db, ids(claimed), at(1000), 60_000), [], 'leased already');
  });

  it('a recorded poll ends its lease; an expired lease is taken over', async () => {
    const [first, ...rest] = ids(await claimDueFeeds(db, at(2000), 60000, 3));
    await recordPollThrottled(db, first!, 429, now.toISOString(), at(2000));
    assert.deepEqual(ids(await leaseFeeds(db, [first!], at(2000), 60000)), [first]);
    assert.deepEqual(await leaseFeeds(db, rest, at(3000), 60_000), [], 'still leased');
    assert.deepEqual(
      ids(await leaseFeeds(db, rest, at(70000), 60000)),
      rest.sort(),
      'expired: taken over',
    );
  });

  it('a deleted feed takes its lease along, and serve releases every lease at start', async () => {
    const leases = async () => (await db.column('SELECT count(*) FROM feed_leases'))[0] as number;
    assert.ok((await leases()) > 0);
    const [one] = (await db.column('SELECT feed_id FROM feed_leases')) as string[];
    await db.run('DELETE FROM subscriptions WHERE feed_id = ?', [one]);
    await db.run('DELETE FROM feeds WHERE id = ?', [one]);
    assert.equal(
      (await db.column('SELECT count(*) FROM feed_leases WHERE feed_id = ?', [one]))[0],
      0,
    );
    const left = await leases();
    assert.equal(await releaseAllFeedLeases(db), left);
    assert.equal(await leases(), 0);
  });
});
