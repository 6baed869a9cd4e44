// SQL for polling feeds: the due ones (a window the poller picks from fairly) and leasing them, when the next is due,
// and releasing leases; recording each poll's outcome, which ends its lease, is feeds-record.ts. Leases live in
// feed_leases, which holds only the polls in flight: taking and ending one rewrites a page or two of that small table,
// not the feed's row a second time.
import type { Sql } from '../db/engine.ts';
import type { FeedRow } from './feeds.ts';
import { UNLEASED } from './feed-leases.ts';
import { jsonValues } from './sql.ts';

/** Leases the feeds `ids` names that exist and no live lease holds (an expired one is taken over) until `until`, for
 *  `node` (whose heartbeat renews them; null for a process that is not a node); returns the ids it leased. */
async function takeLeases(
  db: Sql,
  ids: readonly string[],
  now: Date,
  until: string,
  node: string | null,
): Promise<string[]> {
  return db.column<string>(
    `INSERT INTO feed_leases (feed_id, until, node_id)
       SELECT j.value, @until, @node FROM (${jsonValues(db, '@ids')}) j WHERE EXISTS (SELECT 1 FROM feeds f WHERE f.id = j.value)
     ON CONFLICT (feed_id) DO UPDATE SET until = excluded.until, again_at = NULL, node_id = excluded.node_id
       WHERE feed_leases.until <= @t
     RETURNING feed_id`,
    { ids: JSON.stringify(ids), until, t: now.toISOString(), node },
  );
}

/** What the polls of the feeds `ids` need (by key, in no particular order). */
async function pollTargets(db: Sql, ids: readonly string[]): Promise<PollTarget[]> {
  if (ids.length === 0) return [];
  return db.all<PollTarget>(
    `SELECT ${POLL_TARGET} FROM feeds WHERE id IN (${jsonValues(db, '?')})`,
    [JSON.stringify(ids)],
  );
}

/** A claimed feed as its poll needs it until the outcome is recorded: what to fetch and how, and what a quiet 304
 *  checks (worker/poll/outcome.ts). Narrower than the row, which a claim would otherwise read whole for each feed. */
export type PollTarget = Pick<
  FeedRow,
  | 'id'
  | 'url'
  | 'fetch_url'
  | 'credentials'
  | 'discovered_url'
  | 'etag'
  | 'last_modified'
  | 'body_hash'
  | 'baseline_at'
  | 'status'
  | 'error_count'
  | 'health_alert'
  | 'interval_seconds'
  | 'redirect_url'
  | 'next_poll_at'
>;
const POLL_TARGET = `id, url, fetch_url, credentials, discovered_url, etag, last_modified, body_hash, baseline_at, status,
  error_count, health_alert, interval_seconds, redirect_url, next_poll_at`;

/** Leases up to `limit` due feeds that have an active subscription, earliest due first, for `leaseMs` (and for `node`,
 *  whose heartbeat renews them; see takeLeases): a range of feeds_due
 *  ("SEARCH f USING INDEX feeds_due (next_poll_at<?)"). Ignoring schedules is feedsToPollAfter's job: a switch for it
 *  here (`@all = 1 OR next_poll_at <= @t`) would make this a walk of the whole index ("SCAN f USING INDEX
 *  feeds_due"). */
export async function claimDueFeeds(
  db: Sql,
  now: Date,
  leaseMs: number,
  limit: number,
  node: string | null = null,
): Promise<PollTarget[]> {
  const due = await db.column<string>(
    `SELECT f.id FROM feeds f
      WHERE f.status <> 'gone' AND f.next_poll_at <= @t AND ${UNLEASED}
        AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.status = 'active')
      ORDER BY f.next_poll_at LIMIT @limit`,
    { t: now.toISOString(), limit },
  );
  return leaseDueFeeds(db, due, now, leaseMs, node);
}

/** Leases those of the picked feeds that are still due at `now` (see leaseFeeds): a claim picks from a window it read
 *  first, and another node's poll of a feed in it may be recorded meanwhile, its next poll set later. On PostgreSQL the
 *  due check locks each row it passes, in id order, skipping rows another transaction holds (a poll being recorded:
 *  after it, the feed is not due), and reads the latest version of the rows it locks. */
export async function leaseDueFeeds(
  db: Sql,
  ids: readonly string[],
  now: Date,
  leaseMs: number,
  node: string | null = null,
): Promise<PollTarget[]> {
  if (ids.length === 0) return [];
  const due = await db.column<string>(
    `SELECT id FROM feeds WHERE id IN (${jsonValues(db, '?')}) AND next_poll_at <= ?
      ORDER BY id${db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : ''}`,
    [JSON.stringify(ids), now.toISOString()],
  );
  return leaseFeeds(db, due, now, leaseMs, node);
}

/** What `poll --once` fetches next: up to `limit` feeds after id `after` (in id order) that are not gone and have an
 *  active subscription, whatever their schedule, unleased at `now`; read, not leased (the pool leases each as it starts
 *  it). A range of the primary key ("SEARCH f USING INDEX sqlite_autoindex_feeds_1 (id>?)"), so every chunk is a seek. */
export async function feedsToPollAfter(
  db: Sql,
  after: string,
  now: Date,
  limit: number,
): Promise<Pick<FeedRow, 'id' | 'fetch_url'>[]> {
  return db.all<Pick<FeedRow, 'id' | 'fetch_url'>>(
    `SELECT f.id, f.fetch_url FROM feeds f
      WHERE f.id > @after AND f.status <> 'gone' AND ${UNLEASED}
        AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.status = 'active')
      ORDER BY f.id LIMIT @limit`,
    { after, t: now.toISOString(), limit },
  );
}

/** A due feed a claim may pick: its id, what it fetches, and the application of one of its active subscriptions. */
export type DueFeed = { id: string; fetch_url: string; application_id: string };

/** The `limit` earliest due, unleased feeds that have an active subscription, each with the application of one of
 *  them (read through feeds_due, earliest first: the poller picks among them fairly). */
export async function dueFeedWindow(db: Sql, now: Date, limit: number): Promise<DueFeed[]> {
  return db.all<DueFeed>(
    `SELECT f.id, f.fetch_url,
        (SELECT s.application_id FROM subscriptions s WHERE s.feed_id = f.id AND s.status = 'active' LIMIT 1) AS application_id
      FROM feeds f
      WHERE f.status <> 'gone' AND f.next_poll_at <= @t AND ${UNLEASED}
        AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.status = 'active')
      ORDER BY f.next_poll_at LIMIT @limit`,
    { t: now.toISOString(), limit },
  );
}

/** Leases the picked feeds for `leaseMs` (and for `node`: see takeLeases); returns what their polls need (in no
 *  particular order). A feed another process leased meanwhile (another node, `poll --once` beside serve) is left to it
 *  and not returned. */
export async function leaseFeeds(
  db: Sql,
  ids: readonly string[],
  now: Date,
  leaseMs: number,
  node: string | null = null,
): Promise<PollTarget[]> {
  if (ids.length === 0) return [];
  return pollTargets(
    db,
    await takeLeases(db, ids, now, new Date(now.getTime() + leaseMs).toISOString(), node),
  );
}

/** Ends the leases of feeds whose poll could not be recorded, so they are polled again now. */
export async function releaseFeedLeases(db: Sql, ids: readonly string[]): Promise<void> {
  await db.run(`DELETE FROM feed_leases WHERE feed_id IN (${jsonValues(db, '?')})`, [
    JSON.stringify(ids),
  ]);
}

/** The earliest next_poll_at after `now` among feeds not gone: when the next one falls due (an index seek; a feed due
 *  already but not claimed waits for a commit or a lookup, which wake the poller themselves). */
export async function nextFeedDueAfter(db: Sql, now: Date): Promise<string | undefined> {
  return (
    ((await db.value(
      `SELECT min(next_poll_at) FROM feeds WHERE status <> 'gone' AND next_poll_at > ?`,
      [now.toISOString()],
    )) as string | null) ?? undefined
  );
}

/** Ends every feed lease. Only for `serve` or `poll --once` at start, under the data directory's lock: no other serve
 *  or poll can run, so each lease was left by a process that is gone, and its feeds are polled at once instead of when
 *  the lease runs out. (`poll --once --force` skips the lock, and so this.) */
export async function releaseAllFeedLeases(db: Sql): Promise<number> {
  return db.run('DELETE FROM feed_leases');
}
