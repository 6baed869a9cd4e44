// SQL for feeds: one record per normalized URL (and credentials), with its fetch state and health.
import type { Db } from '../db/open.ts';
import { prepared, updateRow } from './sql.ts';
import { newId } from '../ids.ts';
import { toPage, type Page } from './page.ts';

export type FeedStatus = 'pending' | 'active' | 'error' | 'gone' | 'identity_changed';
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
  lease_until: string | null;
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
};

/** Returns the feed for this URL and credentials, creating it (due now) when missing. */
export function upsertFeed(
  db: Db,
  url: string,
  credentials: string | null,
  credentialKey: string,
  now: Date,
): FeedRow {
  const found = prepared(db, 'SELECT * FROM feeds WHERE url = ? AND credential_key = ?').get(
    url,
    credentialKey,
  ) as FeedRow | undefined;
  if (found) return found;
  const t = now.toISOString();
  return prepared(
    db,
    `INSERT INTO feeds (id, url, credentials, credential_key, fetch_url, next_poll_at, created_at, updated_at)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
  ).get(newId(now), url, credentials, credentialKey, url, t, t, t) as FeedRow;
}

/** Returns the feed with this id, or undefined. */
export function getFeed(db: Db, id: string): FeedRow | undefined {
  return prepared(db, 'SELECT * FROM feeds WHERE id = ?').get(id) as FeedRow | undefined;
}

type FeedPatch = Partial<
  Omit<FeedRow, 'id' | 'url' | 'credentials' | 'credential_key' | 'created_at'>
>;

function patchFeed(
  db: Db,
  id: string,
  patch: FeedPatch,
  now: Date,
  increments: Partial<
    Record<'error_count' | 'network_error_count' | 'http_error_count' | 'parse_error_count', number>
  > = {},
): void {
  const counts = Object.entries(increments).map(([k, n]) => `${k} = ${k} + ${Number(n)}`);
  updateRow(db, 'feeds', patch, { id }, now, [...counts, 'lease_until = NULL']);
}

/** Leases up to `limit` feeds that have an active subscription and are due (or all of them with `ignoreSchedule`). */
export function claimDueFeeds(
  db: Db,
  now: Date,
  leaseMs: number,
  limit: number,
  ignoreSchedule = false,
): FeedRow[] {
  const t = now.toISOString();
  return prepared(
    db,
    `
    UPDATE feeds SET lease_until = @lease
    WHERE id IN (
      SELECT f.id FROM feeds f
      WHERE f.status <> 'gone' AND (@all = 1 OR f.next_poll_at <= @t) AND (f.lease_until IS NULL OR f.lease_until <= @t)
        AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.status = 'active')
      ORDER BY f.next_poll_at LIMIT @limit)
    RETURNING *`,
  ).all({
    lease: new Date(now.getTime() + leaseMs).toISOString(),
    t,
    limit,
    all: ignoreSchedule ? 1 : 0,
  }) as FeedRow[];
}

/** The earliest next_poll_at among pollable feeds, to sleep until then; undefined when none. */
export function nextFeedDueAt(db: Db): string | undefined {
  return (
    (prepared(
      db,
      `SELECT min(next_poll_at) FROM feeds f WHERE status <> 'gone'
                      AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.status = 'active')`,
    )
      .pluck()
      .get() as string | null) ?? undefined
  );
}

/** A fetch that produced a parsed document: new state, cleared error run, next poll. Call inside the poll transaction. */
export function recordPollSuccess(
  db: Db,
  id: string,
  state: Pick<
    FeedRow,
    | 'status'
    | 'title'
    | 'site_url'
    | 'format'
    | 'etag'
    | 'last_modified'
    | 'body_hash'
    | 'last_http_status'
    | 'next_poll_at'
    | 'interval_seconds'
    | 'ttl_seconds'
    | 'degraded'
    | 'hub_url'
    | 'self_url'
    | 'fetch_url'
    | 'discovered_url'
    | 'redirect_url'
    | 'redirect_count'
    | 'baseline_at'
    | 'entry_count'
  >,
  now: Date,
): void {
  const t = now.toISOString();
  patchFeed(db, id, { ...state, last_polled_at: t, last_success_at: t, error_count: 0 }, now);
}

/** A 304 or an identical body: only validators, status, redirect tracking and schedule change. */
export function recordPollUnchanged(
  db: Db,
  id: string,
  state: Pick<
    FeedRow,
    | 'etag'
    | 'last_modified'
    | 'last_http_status'
    | 'next_poll_at'
    | 'interval_seconds'
    | 'fetch_url'
    | 'discovered_url'
    | 'redirect_url'
    | 'redirect_count'
  >,
  status: FeedStatus,
  now: Date,
): void {
  const t = now.toISOString();
  patchFeed(
    db,
    id,
    { ...state, status, last_polled_at: t, last_success_at: t, error_count: 0 },
    now,
  );
}

/** A failed fetch or parse: counted by kind, recorded with its message, backed off; the feed keeps being polled. */
export function recordPollFailure(
  db: Db,
  id: string,
  failure: {
    errorClass: 'network' | 'http' | 'parse';
    message: string;
    httpStatus: number | null;
    nextPollAt: string;
  },
  now: Date,
): void {
  const t = now.toISOString();
  patchFeed(
    db,
    id,
    {
      status: 'error',
      last_error: failure.message,
      last_error_at: t,
      last_http_status: failure.httpStatus,
      next_poll_at: failure.nextPollAt,
      last_polled_at: t,
    },
    now,
    { error_count: 1, [`${failure.errorClass}_error_count`]: 1 },
  );
}

/** A 429/503 with Retry-After: not an error, just a later poll. */
export function recordPollThrottled(
  db: Db,
  id: string,
  httpStatus: number,
  nextPollAt: string,
  now: Date,
): void {
  patchFeed(
    db,
    id,
    { last_http_status: httpStatus, next_poll_at: nextPollAt, last_polled_at: now.toISOString() },
    now,
  );
}

/** A 410: the feed is gone and is no longer polled. */
export function recordFeedGone(db: Db, id: string, now: Date): void {
  const t = now.toISOString();
  patchFeed(
    db,
    id,
    {
      status: 'gone',
      last_http_status: 410,
      last_error: 'fetch: the server answered 410 Gone; polling stopped',
      last_error_at: t,
      last_polled_at: t,
    },
    now,
  );
}

/** A churn hold was resolved: its `count` keys are now known and the feed is active again. */
export function recordHoldReleased(db: Db, id: string, count: number, now: Date): void {
  prepared(
    db,
    "UPDATE feeds SET status = 'active', entry_count = entry_count + ?, updated_at = ? WHERE id = ?",
  ).run(count, now.toISOString(), id);
}

/** Number of feeds in each status (every status present, zero when none), for metrics. */
export function countFeedsByStatus(db: Db): Record<FeedStatus, number> {
  const out: Record<FeedStatus, number> = {
    pending: 0,
    active: 0,
    error: 0,
    gone: 0,
    identity_changed: 0,
  };
  for (const row of prepared(
    db,
    'SELECT status, count(*) AS n FROM feeds GROUP BY status',
  ).all() as { status: FeedStatus; n: number }[])
    out[row.status] = row.n;
  return out;
}

/** The feeds an application's subscriptions use, newest first, optionally of some statuses, with how many of its subscriptions use each. */
export function listFeedsOfApplication(
  db: Db,
  applicationId: string,
  q: { limit: number; after?: string | undefined; statuses?: FeedStatus[] | undefined },
): Page<FeedRow & { subscription_count: number }> {
  const statuses = q.statuses ?? [];
  const rows = prepared(
    db,
    `SELECT f.*, (SELECT count(*) FROM subscriptions s WHERE s.feed_id = f.id AND s.application_id = @app) AS subscription_count
    FROM feeds f WHERE EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.application_id = @app)
      ${statuses.length ? `AND f.status IN (${statuses.map((_, i) => `@s${i}`).join(', ')})` : ''} ${q.after ? 'AND f.id < @after' : ''}
    ORDER BY f.id DESC LIMIT @limit`,
  ).all({
    app: applicationId,
    limit: q.limit + 1,
    ...(q.after ? { after: q.after } : {}),
    ...Object.fromEntries(statuses.map((s, i) => [`s${i}`, s])),
  }) as (FeedRow & { subscription_count: number })[];
  return toPage(rows, q.limit);
}

/** How many of the feeds an application's subscriptions use are in each status. */
export function countFeedsOfApplication(db: Db, applicationId: string): Record<FeedStatus, number> {
  const out: Record<FeedStatus, number> = {
    pending: 0,
    active: 0,
    error: 0,
    gone: 0,
    identity_changed: 0,
  };
  const rows = prepared(
    db,
    `SELECT f.status, count(*) AS n FROM feeds f
    WHERE EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id AND s.application_id = ?) GROUP BY f.status`,
  ).all(applicationId) as { status: FeedStatus; n: number }[];
  for (const row of rows) out[row.status] = row.n;
  return out;
}
