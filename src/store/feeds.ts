// SQL for feeds: one record per normalized URL (and credentials), with its fetch state and health; lookups and
// per-application views. Polling it is in feeds-poll.ts.
import type { Sql } from '../db/engine.ts';
import type { IdentityKey } from '../feed/identity/keys.ts';
import { pollAgainBy, UNLEASED } from './feed-leases.ts';
import { changeFeedStorage, PROBE_ROW_BYTES } from './storage.ts';
import { newId } from '../ids.ts';
import { smaller } from './sql.ts';

/** Every status a feed can be in. */
export const FEED_STATUSES = [
  'pending',
  'active',
  'error',
  'gone',
  'identity_changed',
  'over_budget',
] as const;
export type FeedStatus = (typeof FEED_STATUSES)[number];
export type FeedRow = {
  id: string;
  url: string;
  credentials: string | null;
  credential_key: string;
  fetch_url: string;
  discovered_url: string | null;
  title: string | null;
  site_url: string | null;
  format: string | null;
  status: FeedStatus;
  baseline_at: string | null;
  etag: string | null;
  last_modified: string | null;
  body_hash: string | null;
  last_polled_at: string | null;
  last_success_at: string | null;
  next_poll_at: string;
  interval_seconds: number | null;
  ttl_seconds: number | null;
  last_http_status: number | null;
  error_count: number;
  network_error_count: number;
  http_error_count: number;
  parse_error_count: number;
  last_error: string | null;
  last_error_at: string | null;
  degraded: string | null;
  redirect_url: string | null;
  redirect_count: number;
  entry_count: number;
  hub_url: string | null;
  self_url: string | null;
  created_at: string;
  updated_at: string;
  identity_key: IdentityKey;
  identity_rotations: number;
  held_dropped: number;
  parser_version: number;
  /** The health event sent for the feed's current outage (feed.failing or feed.gone), and when; null when healthy. */
  health_alert: 'failing' | 'gone' | null;
  health_alert_at: string | null;
  /** The application every subscription of the feed belongs to, whose storage budget counts the feed; null when none
   *  or several (store/storage.ts). */
  sole_application_id: string | null;
  /** Entry keys the feed stores, and the bytes of its keys, held entries, history and identity probe. */
  stored_keys: number;
  stored_bytes: number;
  /** Since when its application's storage budget holds the feed's polling (status over_budget); null: not held. */
  budget_held_at: string | null;
};

/** The feed's identity probe (feed/identity/switch.ts), stored apart from its row: null when it has none. */
export async function feedProbe(db: Sql, id: string): Promise<string | null> {
  return (
    ((await db.value('SELECT probe FROM feed_probes WHERE feed_id = ?', [id])) as
      string | undefined) ?? null
  );
}

/** Whether the feed has an identity probe (without reading it: a long feed's is tens of KB). */
export async function hasFeedProbe(db: Sql, id: string): Promise<boolean> {
  return (await db.get('SELECT 1 FROM feed_probes WHERE feed_id = ?', [id])) !== undefined;
}

/** Stores the new identity probe a feed's record carries, if any (replacing the one it had), and returns the rest of
 *  the record, for its row: the probe lives apart from the row, which every poll rewrites. */
export async function storeFeedProbe<T extends { identity_probe?: string }>(
  db: Sql,
  id: string,
  record: T,
): Promise<Omit<T, 'identity_probe'>> {
  const { identity_probe: probe, ...row } = record;
  if (probe !== undefined) {
    const before = (await db.value(
      'SELECT octet_length(probe) FROM feed_probes WHERE feed_id = ?',
      [id],
    )) as number | undefined;
    await db.run(
      'INSERT INTO feed_probes (feed_id, probe) VALUES (?, ?) ON CONFLICT (feed_id) DO UPDATE SET probe = excluded.probe',
      [id, probe],
    );
    const size = Buffer.byteLength(probe);
    await changeFeedStorage(db, id, {
      bytes: before === undefined ? size + PROBE_ROW_BYTES : size - before,
    });
  }
  return row;
}

/** Returns the feed for this URL and credentials, creating it (due now) when missing. */
export async function upsertFeed(
  db: Sql,
  url: string,
  credentials: string | null,
  credentialKey: string,
  now: Date,
): Promise<FeedRow> {
  const found = await db.get<FeedRow>('SELECT * FROM feeds WHERE url = ? AND credential_key = ?', [
    url,
    credentialKey,
  ]);
  if (found) return found;
  const t = now.toISOString();
  return (await db.get<FeedRow>(
    `INSERT INTO feeds (id, url, credentials, credential_key, fetch_url, next_poll_at, created_at, updated_at)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    [newId(now), url, credentials, credentialKey, url, t, t, t],
  ))!;
}

/** Returns the feed with this id, or undefined. */
export async function getFeed(db: Sql, id: string): Promise<FeedRow | undefined> {
  return db.get<FeedRow>('SELECT * FROM feeds WHERE id = ?', [id]);
}

/** Part of a churn hold was released: its `count` keys are now known. Once nothing is held any more the hold is over:
 *  the feed is active again and its churn counters restart. */
export async function recordHoldReleased(
  db: Sql,
  id: string,
  count: number,
  now: Date,
): Promise<void> {
  const t = now.toISOString();
  await db.run('UPDATE feeds SET entry_count = entry_count + ?, updated_at = ? WHERE id = ?', [
    count,
    t,
    id,
  ]);
  await db.run(
    `UPDATE feeds SET status = 'active', identity_rotations = 0, held_dropped = 0
     WHERE id = ? AND NOT EXISTS (SELECT 1 FROM held_entries WHERE feed_id = ?)`,
    [id, id],
  );
}

/** Counts `n` more unseen entries that the feed's full hold did not keep. */
export async function addHeldDropped(db: Sql, id: string, n: number): Promise<void> {
  if (n > 0) await db.run('UPDATE feeds SET held_dropped = held_dropped + ? WHERE id = ?', [n, id]);
}

/** A feed as the retention pass sees it: when its record last changed, and whether any subscription uses it. */
export type RetainedFeed = { id: string; updated_at: string; used: 0 | 1 };

/** Up to `limit` feeds after id `after`, in id order, for the maintenance pass to walk a slice at a time. */
export async function feedsAfter(db: Sql, after: string, limit: number): Promise<RetainedFeed[]> {
  return db.all<RetainedFeed>(
    `SELECT f.id, f.updated_at, EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id) AS used
     FROM feeds f WHERE f.id > ? ORDER BY f.id LIMIT ?`,
    [after, limit],
  );
}

/** The feed's last subscription is gone: its record's updated_at, the start of its grace before deletion, is now. Does
 *  nothing while a subscription uses it. */
export async function markFeedUnused(db: Sql, id: string, now: Date): Promise<void> {
  await db.run(
    'UPDATE feeds SET updated_at = ? WHERE id = ? AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE feed_id = ?)',
    [now.toISOString(), id, id],
  );
}

/** Deletes a feed no subscription uses (its remaining keys and held entries cascade); false when one uses it again. */
export async function deleteUnusedFeed(db: Sql, id: string): Promise<boolean> {
  return (
    (await db.run(
      'DELETE FROM feeds WHERE id = ? AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE feed_id = ?)',
      [id, id],
    )) > 0
  );
}

/** next_poll_at of a feed no active subscription uses ("parked"): past every range a claim seeks (feeds_due,
 *  next_poll_at <= now). Left due, such feeds would stay at the front of feeds_due for good, and every claim would walk
 *  past all of them (an application that paused 50,000 subscriptions would make every other one's claims walk 50,000
 *  entries). */
export const PARKED_AT = '9999-12-31T23:59:59.999Z';

/** The feed's last active subscription went away (deleted or paused): it is parked, and its next successful poll is a
 *  fresh baseline, taken as soon as a subscription is active again (wakeFeed). Does nothing while another subscription
 *  is active. */
export async function restartBaselineIfIdle(db: Sql, id: string, now: Date): Promise<void> {
  const t = now.toISOString();
  await db.run(
    `UPDATE feeds SET baseline_at = NULL, next_poll_at = @parked, updated_at = @t
     WHERE id = @id AND (baseline_at IS NOT NULL OR next_poll_at <> @parked)
       AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = @id AND s.status = 'active')`,
    { id, t, parked: PARKED_AT },
  );
}

/** A subscription of the feed became active (created or resumed): a parked feed is due at once. */
export async function wakeFeed(db: Sql, id: string, now: Date): Promise<void> {
  const t = now.toISOString();
  await db.run(
    'UPDATE feeds SET next_poll_at = @t, updated_at = @t WHERE id = @id AND next_poll_at = @parked',
    { id, t, parked: PARKED_AT },
  );
}

/** Parks up to `limit` due feeds no active subscription uses and no poll holds: the ones a poll that was running when
 *  their last subscription went idle scheduled again (maintenance, every 10 minutes); returns how many. A range of
 *  feeds_due, which holds no gone feed ("SEARCH f USING INDEX feeds_due (next_poll_at<?)"). */
export async function parkIdleDueFeeds(db: Sql, now: Date, limit: number): Promise<number> {
  return db.run(
    `UPDATE feeds SET next_poll_at = @parked WHERE id IN (
       SELECT f.id FROM feeds f
       WHERE f.status <> 'gone' AND f.next_poll_at <= @t
         AND ${UNLEASED}
         AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.status = 'active')
       ORDER BY f.next_poll_at LIMIT @limit)`,
    { t: now.toISOString(), parked: PARKED_AT, limit },
  );
}

/** A feed held for its application's storage budget and parked, and the application that alone uses it now (null:
 *  none, or several). */
export type HeldFeed = { id: string; sole_application_id: string | null };

/** Up to `limit` feeds held for a storage budget and parked, after id `after` in id order: a range of
 *  feeds_by_status. */
export async function heldFeedsAfter(db: Sql, after: string, limit: number): Promise<HeldFeed[]> {
  return db.all<HeldFeed>(
    `SELECT id, sole_application_id FROM feeds WHERE status = 'over_budget' AND id > ? AND next_poll_at = ?
     ORDER BY id LIMIT ?`,
    [after, PARKED_AT, limit],
  );
}

/** The application's feeds held for its storage budget (a range of its own feeds, feeds_by_sole_application). */
export async function heldFeedsOf(db: Sql, applicationId: string): Promise<HeldFeed[]> {
  return db.all<HeldFeed>(
    `SELECT id, sole_application_id FROM feeds WHERE sole_application_id = ? AND status = 'over_budget'
     AND next_poll_at = ?`,
    [applicationId, PARKED_AT],
  );
}

/** How many of the application's feeds are held for its storage budget. */
export async function countHeldFeedsOf(db: Sql, applicationId: string): Promise<number> {
  return (await db.value(
    'SELECT count(*) FROM feeds WHERE sole_application_id = ? AND budget_held_at IS NOT NULL',
    [applicationId],
  )) as number;
}

/** Makes a parked feed held for a storage budget due now, when a subscription of it is active: the poll that comes
 *  decides whether what it shows fits. Returns whether it did. */
export async function retryHeldFeed(db: Sql, id: string, now: Date): Promise<boolean> {
  return (
    (await db.run(
      `UPDATE feeds SET next_poll_at = @t WHERE id = @id AND status = 'over_budget' AND next_poll_at = @parked
         AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = @id AND s.status = 'active')`,
      { id, t: now.toISOString(), parked: PARKED_AT },
    )) > 0
  );
}

/** A feed's status as /metrics counts it: its own while an active subscription has it polled; `idle` when none does
 *  (every subscription paused or deleted), since the status of a feed nobody polls is stale. */
export type PolledFeedStatus = FeedStatus | 'idle';

/** One page of the metrics' count of feeds by status: of up to `limit` feeds in `status` with an id after `after`, how
 *  many there are, how many have an active subscription (the others count as idle), and the last id (null when none).
 *  A range of feeds_by_status (status, id) with a subscriptions_by_feed probe per feed; never a feed row. A page at a
 *  time, so that a scrape does not hold the event loop for as long as counting every feed in one statement takes. */
export async function countFeedStatusPage(
  db: Sql,
  status: FeedStatus,
  after: string,
  limit: number,
): Promise<{ n: number; used: number; last: string | null }> {
  return (await db.get<{ n: number; used: number; last: string | null }>(
    `SELECT count(*) AS n, coalesce(sum(CASE WHEN EXISTS (
          SELECT 1 FROM subscriptions s WHERE s.feed_id = p.id AND s.status = 'active') THEN 1 ELSE 0 END), 0) AS used,
        max(p.id) AS last
       FROM (SELECT id FROM feeds WHERE status = @status AND id > @after ORDER BY id LIMIT @limit) p`,
    { status, after, limit },
  ))!;
}

/** How many of the feeds an application's subscriptions use are in each status: the application's subscriptions
 *  (subscriptions_by_application_feed), each feed looked up by its key — work in proportion to what it counts. */
export async function countFeedsOfApplication(
  db: Sql,
  applicationId: string,
): Promise<Record<FeedStatus, number>> {
  const out = zeroCounts<FeedStatus>(FEED_STATUSES);
  const rows = await db.all<{ status: FeedStatus; n: number }>(
    `SELECT f.status, count(*) AS n FROM feeds f
    WHERE f.id IN (SELECT feed_id FROM subscriptions WHERE application_id = ?) GROUP BY f.status`,
    [applicationId],
  );
  for (const row of rows) out[row.status] = row.n;
  return out;
}

/** Records the health alert of the feed's current outage (feed.failing or feed.gone sent at `at`), or clears it (null)
 *  once feed.recovered is sent. Call inside the poll transaction. */
export async function recordHealthAlert(
  db: Sql,
  id: string,
  alert: Pick<FeedRow, 'health_alert' | 'health_alert_at'>,
): Promise<void> {
  await db.run('UPDATE feeds SET health_alert = ?, health_alert_at = ? WHERE id = ?', [
    alert.health_alert,
    alert.health_alert_at,
    id,
  ]);
}

/** A subscriber asked for a fetch now: the feed is due at once, and a gone feed is polled again (status error, its
 *  410 still its last error, until the fetch answers); a poll running now is followed by another at once. */
export async function makeFeedDueNow(db: Sql, id: string, now: Date): Promise<void> {
  const t = now.toISOString();
  await db.run(
    `UPDATE feeds SET next_poll_at = ${smaller(db, 'next_poll_at', '@t')}, updated_at = @t,
       status = CASE status WHEN 'gone' THEN 'error' ELSE status END
     WHERE id = @id`,
    { id, t },
  );
  await pollAgainBy(db, id, t);
}

/** A count of 0 for each of `keys`. */
export function zeroCounts<K extends string>(keys: readonly K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
}

/** Holds the feed's row until the transaction ends, so that two transactions storing the feed's entries at once (a
 *  poll's and a push's, or two nodes') take turns, and the second reads the keys the first stored: each entry is new to
 *  one of them only. A poll's record and a push take it before they read the feed again, so the second also reads the
 *  row as the first left it, and what it writes back from it (entry_count, status) loses none of the first's writes.
 *  SQLite's write transaction already excludes every other writer; PostgreSQL locks the row. */
export async function lockFeed(db: Sql, feedId: string): Promise<void> {
  if (db.dialect === 'postgres')
    await db.get('SELECT 1 AS locked FROM feeds WHERE id = ? FOR UPDATE', [feedId]);
}
