// GET /v1/feeds's query: the application's feeds newest first, filtered by status, paged by cursor; checked against the
// plain definition (every feed some subscription of the application uses, in the statuses asked for) on worlds where
// either side of the intersection is the small one, across chunk boundaries.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Sql } from '../../src/db/engine.ts';
import { newId } from '../../src/ids.ts';
import { upsertApplication } from '../../src/store/applications.ts';
import { insertEndpoint } from '../../src/store/endpoints.ts';
import { listFeedsOfApplication } from '../../src/store/feeds-list.ts';
import { upsertFeed, type FeedStatus } from '../../src/store/feeds.ts';
import { insertSubscription } from '../../src/store/subscriptions.ts';
import { makeWorld } from '../support/world.ts';

const now = new Date('2026-01-01T00:00:00.000Z');

/** Adds an application with two endpoints; returns a function subscribing it to a feed (made when new) by `db`. */
async function application(
  db: Sql,
  name: string,
): Promise<{ id: string; subscribe(db: Sql, url: string, endpoint?: 0 | 1): Promise<string> }> {
  const id = (await upsertApplication(db, name, now)).id;
  const endpoints: string[] = [];
  for (const n of [0, 1]) {
    const endpoint = newId(now);
    await insertEndpoint(db, {
      id: endpoint,
      application_id: id,
      title: 'E',
      url: `https://hooks.example/${name}/${n}`,
      secret: 'whsec_x',
      created_at: now.toISOString(),
      filter_types: null,
    });
    endpoints.push(endpoint);
  }
  return {
    id,
    async subscribe(db, url, endpoint = 0) {
      const feed = (await upsertFeed(db, url, null, '', now)).id;
      await insertSubscription(db, {
        id: newId(now),
        application_id: id,
        endpoint_id: endpoints[endpoint]!,
        feed_id: feed,
        url,
        metadata: null,
        created_at: now.toISOString(),
      });
      return feed;
    },
  };
}

async function setStatus(db: Sql, feed: string, status: FeedStatus): Promise<void> {
  await db.run('UPDATE feeds SET status = ? WHERE id = ?', [status, feed]);
}

/** Every page of the list, in order, as feed ids; fails on a page over `limit` or a loop. */
async function allPages(
  db: Sql,
  app: string,
  statuses: FeedStatus[] | undefined,
  limit: number,
): Promise<string[]> {
  const out: string[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 10_000; pages++) {
    const page = await listFeedsOfApplication(db, app, { limit, after, statuses });
    assert.ok(page.data.length <= limit);
    out.push(...page.data.map((f) => f.id));
    if (page.next === null) return out;
    after = page.next;
  }
  throw new Error('listFeedsOfApplication: no last page');
}

/** The plain definition: the application's distinct feeds in `statuses`, newest (highest id) first. */
async function expected(
  db: Sql,
  app: string,
  statuses: FeedStatus[] | undefined,
): Promise<string[]> {
  const rows = await db.all<{ id: string; status: FeedStatus }>(
    `SELECT DISTINCT f.id, f.status FROM feeds f JOIN subscriptions s ON s.feed_id = f.id
      WHERE s.application_id = ? ORDER BY f.id DESC`,
    [app],
  );
  return rows.filter((r) => !statuses || statuses.includes(r.status)).map((r) => r.id);
}

describe('listFeedsOfApplication', async () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const big = await application(db, 'big');
  const small = await application(db, 'small');
  const statusOf = (i: number): FeedStatus =>
    i % 97 === 0 ? 'error' : i % 89 === 0 ? 'gone' : 'active';
  await w.ctx.store.write(async (tx) => {
    // big: 1,500 feeds (some twice, through two subscriptions), a few in error or gone; small: 12 feeds, among 1,200
    // active feeds of big's.
    for (let i = 0; i < 1500; i++) {
      const feed = await big.subscribe(tx, `https://feeds.example/big/${i}.xml`);
      if (i % 7 === 0) await big.subscribe(tx, `https://feeds.example/big/${i}.xml`, 1);
      await setStatus(tx, feed, statusOf(i));
    }
    for (let i = 0; i < 12; i++)
      await setStatus(
        tx,
        await small.subscribe(tx, `https://feeds.example/small/${i}.xml`),
        i % 3 ? 'active' : 'error',
      );
  });

  it("finds an application's few feeds in error among its 1,500 subscriptions, every page, in order", async () => {
    for (const statuses of [['error'], ['gone'], ['error', 'gone']] as FeedStatus[][])
      for (const limit of [1, 5, 50])
        assert.deepEqual(
          await allPages(db, big.id, statuses, limit),
          await expected(db, big.id, statuses),
          `${statuses.join()} by ${limit}`,
        );
  });

  it("finds an application's few active feeds among many active feeds of another application", async () => {
    for (const statuses of [['active'], ['active', 'error'], ['error']] as FeedStatus[][])
      assert.deepEqual(
        await allPages(db, small.id, statuses, 3),
        await expected(db, small.id, statuses),
        statuses.join(),
      );
  });

  it('lists every feed of the application once, across chunk boundaries, with or without a filter', async () => {
    assert.deepEqual(
      await allPages(db, big.id, undefined, 200),
      await expected(db, big.id, undefined),
    );
    assert.deepEqual(
      await allPages(db, big.id, ['active'], 300),
      await expected(db, big.id, ['active']),
    );
    const twice = await listFeedsOfApplication(db, big.id, { limit: 1500, statuses: ['active'] });
    const counts = new Set(twice.data.map((f) => f.subscription_count));
    assert.deepEqual([...counts].sort(), [1, 2], 'subscription_count counts its subscriptions');
  });

  it('answers an empty page for a status no feed of the application has', async () => {
    assert.deepEqual(await allPages(db, small.id, ['gone', 'pending'], 10), []);
    assert.deepEqual(await allPages(db, 'app_none', ['active'], 10), []);
  });
});
