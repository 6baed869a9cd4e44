// SQL for subscriptions: a feed URL tied to one endpoint, with the client's metadata.
import type { Sql } from '../db/engine.ts';
import { indexedBy, jsonValues, unindexed, updateRow } from './sql.ts';
import { cursor, toPage, type Page, type PageQuery } from './page.ts';
import { deleteSubscriptionEvents } from './events.ts';
import { refreshSoleApplication } from './storage.ts';

export type SubscriptionRow = {
  id: string;
  application_id: string;
  endpoint_id: string;
  feed_id: string;
  url: string;
  metadata: string | null;
  status: 'active' | 'paused';
  last_sequence: number;
  created_at: string;
  updated_at: string;
  /** 1 when it receives subscription.entries_updated. */
  updates: number;
  /** Entries its backfill asked for, not taken from the history yet (0 = none). */
  backfill: number;
  /** When its backfill became ready to queue; null while it waits for its feed's baseline, and when there is none. */
  backfill_at: string | null;
  /** Its last pauses, JSON [[paused_at, resumed_at or null], …] (see PAUSES_KEPT), or null. */
  pauses: string | null;
  /** Its filter's keep and block rules, JSON (feed/filter/rules.ts), or null: every entry is sent. */
  entry_filter: string | null;
  /** When its filter was last set or removed; null when it never had one. */
  entry_filter_at: string | null;
  /** Entries its filter kept from being sent. */
  entries_filtered: number;
};
/** A subscription with what its API view shows of the feed. */
export type SubscriptionView = SubscriptionRow & {
  feed_status: string;
  feed_fetch_url: string;
  feed_discovered_url: string | null;
};

const VIEW_COLUMNS =
  'SELECT s.*, f.status AS feed_status, f.fetch_url AS feed_fetch_url, f.discovered_url AS feed_discovered_url';
const VIEW = `${VIEW_COLUMNS} FROM subscriptions s JOIN feeds f ON f.id = s.feed_id`;

/** Stores a new subscription (its feed's bytes may now count for its application alone, or for none). */
export async function insertSubscription(
  db: Sql,
  row: Pick<
    SubscriptionRow,
    'id' | 'application_id' | 'endpoint_id' | 'feed_id' | 'url' | 'metadata' | 'created_at'
  > &
    Partial<
      Pick<
        SubscriptionRow,
        'updates' | 'backfill' | 'backfill_at' | 'entry_filter' | 'entry_filter_at'
      >
    >,
): Promise<void> {
  await db.run(
    `INSERT INTO subscriptions (id, application_id, endpoint_id, feed_id, url, metadata, created_at, updated_at,
                                updates, backfill, backfill_at, entry_filter, entry_filter_at)
              VALUES (@id, @application_id, @endpoint_id, @feed_id, @url, @metadata, @created_at, @created_at,
                      @updates, @backfill, @backfill_at, @entry_filter, @entry_filter_at)`,
    {
      updates: 0,
      backfill: 0,
      backfill_at: null,
      entry_filter: null,
      entry_filter_at: null,
      ...row,
    },
  );
  await refreshSoleApplication(db, row.feed_id);
}

/** Returns the application's subscription with its feed's state, or undefined. */
export async function getSubscription(
  db: Sql,
  applicationId: string,
  id: string,
): Promise<SubscriptionView | undefined> {
  return db.get<SubscriptionView>(`${VIEW} WHERE s.id = ? AND s.application_id = ?`, [
    id,
    applicationId,
  ]);
}

/** The id of a subscription of this endpoint that already receives the document `url` names: the same URL; a
 *  subscription whose feed was discovered at `url` or moved there; or, when `url` is a known feed record that led to
 *  another document (a web page and the feed it announces, a permanent redirect), a subscription to that one. */
export async function findSubscriptionToSameFeed(
  db: Sql,
  endpointId: string,
  url: string,
  credentialKey: string,
): Promise<string | undefined> {
  // Each way of naming the same document is its own index seek (the feeds it names, then their subscriptions by
  // feed, `+` keeping the planner off the endpoint's index), so a create costs the same however many subscriptions
  // the endpoint has: one OR over the joined rows would walk every one of them.
  return (
    await db.get<{ id: string }>(
      `SELECT id FROM (
         SELECT s.id FROM subscriptions s WHERE s.endpoint_id = @endpoint AND s.url = @url
         UNION ALL
         SELECT s.id FROM subscriptions s WHERE ${unindexed(db, 's.endpoint_id')} = @endpoint AND s.feed_id IN (
           SELECT f.id FROM feeds f WHERE f.fetch_url = @url
           UNION SELECT f.id FROM feeds f WHERE f.discovered_url = @url
           UNION SELECT f.id FROM feeds t JOIN feeds f ON f.url = t.fetch_url
             WHERE t.url = @url AND t.credential_key = @ck
           UNION SELECT f.id FROM feeds t JOIN feeds f ON f.fetch_url = t.fetch_url
             WHERE t.url = @url AND t.credential_key = @ck)) named
       ORDER BY id LIMIT 1`,
      { endpoint: endpointId, url, ck: credentialKey },
    )
  )?.id;
}

/** One page of the application's subscriptions, newest first, optionally of one endpoint or feed. */
export async function listSubscriptions(
  db: Sql,
  applicationId: string,
  q: PageQuery & { endpoint?: string | undefined; feed?: string | undefined },
): Promise<Page<SubscriptionView>> {
  const c = cursor(q.after);
  const where = ['s.application_id = ?'];
  const params: unknown[] = [applicationId];
  if (q.endpoint) {
    where.push('s.endpoint_id = ?');
    params.push(q.endpoint);
  }
  if (q.feed) {
    where.push('s.feed_id = ?');
    params.push(q.feed);
  }
  // ?endpoint= seeks subscriptions_by_endpoint (endpoint_id=?, in id order). ?feed= is pinned to
  // subscriptions_by_application_feed (application_id=? AND feed_id=?) and sorts what it finds, the application's few
  // subscriptions to one feed: left alone, the planner walks every subscription of the application in id order.
  const pin = q.feed && !q.endpoint ? indexedBy(db, 'subscriptions_by_application_feed') : '';
  const rows = await db.all<SubscriptionView>(
    `${VIEW_COLUMNS} FROM subscriptions s${pin} JOIN feeds f ON f.id = s.feed_id WHERE ${where.join(' AND ')}${c.sql.replace('id', 's.id')} ORDER BY s.id DESC LIMIT ?`,
    [...params, ...c.params, q.limit + 1],
  );
  return toPage(rows, q.limit);
}

/** Applies the given changes; returns undefined when not the application's. */
export async function updateSubscription(
  db: Sql,
  applicationId: string,
  id: string,
  patch: Partial<
    Pick<
      SubscriptionRow,
      | 'metadata'
      | 'endpoint_id'
      | 'status'
      | 'updates'
      | 'backfill'
      | 'pauses'
      | 'entry_filter'
      | 'entry_filter_at'
    >
  >,
  now: Date,
): Promise<SubscriptionView | undefined> {
  await updateRow(db, 'subscriptions', patch, { id, application_id: applicationId }, now);
  return getSubscription(db, applicationId, id);
}

/** Deletes the subscription and its events (every one left: over EVENT_CHUNK, delete them in chunks first); returns
 *  false when not the application's. Its feed's bytes may now count for another application alone, or for none. */
export async function deleteSubscription(
  db: Sql,
  applicationId: string,
  id: string,
): Promise<boolean> {
  const feed = (await db.value(
    'SELECT feed_id FROM subscriptions WHERE id = ? AND application_id = ?',
    [id, applicationId],
  )) as string | undefined;
  if (feed === undefined) return false;
  await deleteSubscriptionEvents(db, id, Number.MAX_SAFE_INTEGER);
  await db.run('DELETE FROM subscriptions WHERE id = ?', [id]);
  await refreshSoleApplication(db, feed);
  return true;
}

/** True when the application has a subscription to this feed (so it may read the feed record). */
export async function applicationUsesFeed(
  db: Sql,
  applicationId: string,
  feedId: string,
): Promise<boolean> {
  return (
    (await db.get('SELECT 1 FROM subscriptions WHERE application_id = ? AND feed_id = ? LIMIT 1', [
      applicationId,
      feedId,
    ])) !== undefined
  );
}

/** True when any subscription (active or paused) uses the feed. */
export async function feedHasSubscription(db: Sql, feedId: string): Promise<boolean> {
  return (
    (await db.get('SELECT 1 FROM subscriptions WHERE feed_id = ? LIMIT 1', [feedId])) !== undefined
  );
}

/** True when the feed has at least one active subscription. */
export async function feedHasActiveSubscription(db: Sql, feedId: string): Promise<boolean> {
  return (
    (await db.get("SELECT 1 FROM subscriptions WHERE feed_id = ? AND status = 'active' LIMIT 1", [
      feedId,
    ])) !== undefined
  );
}

/** The active subscriptions of a feed whose endpoint receives events of `type` (its filter_types is null or lists it),
 *  with what an event needs (poller side). */
export async function activeSubscriptionsOfFeed(
  db: Sql,
  feedId: string,
  type: string,
): Promise<SubscriptionRow[]> {
  return db.all<SubscriptionRow>(
    `SELECT s.* FROM subscriptions s JOIN endpoints e ON e.id = s.endpoint_id
     WHERE s.feed_id = ? AND s.status = 'active'
       AND (e.filter_types IS NULL OR EXISTS (SELECT 1 FROM (${jsonValues(db, 'e.filter_types')}) t WHERE t.value = ?))
     ORDER BY s.id`,
    [feedId, type],
  );
}

/** Adds `count` to the entries the subscription's filter kept from being sent. */
export async function countFiltered(db: Sql, id: string, count: number): Promise<void> {
  await db.run('UPDATE subscriptions SET entries_filtered = entries_filtered + ? WHERE id = ?', [
    count,
    id,
  ]);
}

/** Allocates the next `count` sequence numbers of a subscription; returns the first. Call inside a transaction. */
export async function allocateSequences(db: Sql, id: string, count: number): Promise<number> {
  const row = (await db.get<{ last_sequence: number }>(
    'UPDATE subscriptions SET last_sequence = last_sequence + ? WHERE id = ? RETURNING last_sequence',
    [count, id],
  ))!;
  return row.last_sequence - count + 1;
}

/** Number of subscriptions the application has (quotas.subscriptions_per_application). */
export async function countApplicationSubscriptions(
  db: Sql,
  applicationId: string,
): Promise<number> {
  return (await db.value('SELECT count(*) FROM subscriptions WHERE application_id = ?', [
    applicationId,
  ])) as number;
}

/** Makes ready, as of `at`, the backfills of the feed's active subscriptions that waited for its baseline; returns how
 *  many. */
export async function readyBackfills(db: Sql, feedId: string, at: string): Promise<number> {
  return db.run(
    `UPDATE subscriptions SET backfill_at = ?
      WHERE feed_id = ? AND status = 'active' AND backfill > 0 AND backfill_at IS NULL`,
    [at, feedId],
  );
}

/** The first subscription with a ready backfill of the first application after `afterApplication` that has one (id
 *  order; '' for the first of all). */
export async function nextBackfill(
  db: Sql,
  afterApplication: string,
): Promise<Pick<SubscriptionRow, 'id' | 'application_id'> | undefined> {
  return db.get<Pick<SubscriptionRow, 'id' | 'application_id'>>(
    `SELECT id, application_id FROM subscriptions${indexedBy(db, 'subscriptions_backfilling')}
      WHERE backfill_at IS NOT NULL AND application_id > ? ORDER BY application_id, id LIMIT 1`,
    [afterApplication],
  );
}

/** Locks the subscription's row until the transaction ends (PostgreSQL; SQLite's one writer holds every row already):
 *  of two nodes taking the same backfill step, the second waits for the first and then reads what it left. */
export async function lockSubscription(db: Sql, id: string): Promise<void> {
  if (db.dialect === 'postgres')
    await db.get('SELECT 1 AS locked FROM subscriptions WHERE id = ? FOR UPDATE', [id]);
}

/** Notes that the subscription's backfill took its entries from the history (none left to take). */
export async function backfillTaken(db: Sql, id: string): Promise<void> {
  await db.run('UPDATE subscriptions SET backfill = 0 WHERE id = ?', [id]);
}

/** Ends the subscription's backfill, ready or waiting: nothing more to take or queue. */
export async function endBackfill(db: Sql, id: string): Promise<void> {
  await db.run(
    'UPDATE subscriptions SET backfill = 0, backfill_at = NULL WHERE id = ? AND (backfill > 0 OR backfill_at IS NOT NULL)',
    [id],
  );
}
