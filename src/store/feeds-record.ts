// SQL for recording a poll's outcome on its feed (success, unchanged, quiet unchanged, failure, throttled, gone): each
// ends the poll's lease (feeds-poll.ts).
import type { Sql } from '../db/engine.ts';
import { PARKED_AT, storeFeedProbe, type FeedRow, type FeedStatus } from './feeds.ts';
import { endLease } from './feed-leases.ts';
import { updateRow } from './sql.ts';

type FeedPatch = Partial<
  Omit<FeedRow, 'id' | 'url' | 'credentials' | 'credential_key' | 'created_at'>
>;

/** Sets `patch`, adds `increments` to the error counters and ends the lease: every poll outcome is recorded here. */
async function patchFeed(
  db: Sql,
  id: string,
  patch: FeedPatch,
  now: Date,
  increments: Partial<
    Record<'error_count' | 'network_error_count' | 'http_error_count' | 'parse_error_count', number>
  > = {},
): Promise<void> {
  const counts = Object.entries(increments).map(([k, n]) => `${k} = ${k} + ${Number(n)}`);
  await updateRow(db, 'feeds', patch, { id }, now, counts);
  await endLease(db, id);
}

/** A fetch that produced a parsed document: new state, cleared error run, next poll. Call inside the poll transaction. */
export async function recordPollSuccess(
  db: Sql,
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
    | 'identity_key'
    | 'identity_rotations'
    | 'held_dropped'
    | 'parser_version'
  > & { identity_probe?: string },
  now: Date,
): Promise<void> {
  const t = now.toISOString();
  const row = await storeFeedProbe(db, id, state);
  await patchFeed(db, id, { ...row, last_polled_at: t, last_success_at: t, error_count: 0 }, now);
}

/** What an unchanged poll records, however it is recorded: validators, status code, URL fetched, schedule. */
type UnchangedState = Pick<
  FeedRow,
  'etag' | 'last_modified' | 'last_http_status' | 'fetch_url' | 'next_poll_at' | 'interval_seconds'
>;

/** A 304 or an identical body: only validators, status, redirect tracking and schedule change. */
export async function recordPollUnchanged(
  db: Sql,
  id: string,
  state: UnchangedState & Pick<FeedRow, 'discovered_url' | 'redirect_url' | 'redirect_count'>,
  status: FeedStatus,
  now: Date,
): Promise<void> {
  const t = now.toISOString();
  const patch: FeedPatch = { ...state, status, error_count: 0 };
  // Only what changed is written: a column in SET rewrites every index holding it even when its value is the same
  // (status is in feeds_by_status and in feeds_due's WHERE), and a 304 changes little but the schedule.
  const current = await db.get<Record<string, unknown>>('SELECT * FROM feeds WHERE id = ?', [id]);
  for (const k of Object.keys(patch) as (keyof FeedPatch)[])
    if (current !== undefined && current[k] === patch[k]) delete patch[k];
  await patchFeed(db, id, { ...patch, last_polled_at: t, last_success_at: t }, now);
}

/** A quiet 304 (or identical body): the feed was active, without errors, alert, hold or pending redirect when claimed,
 *  and the answer moved it nowhere. One fixed UPDATE records it (validators, status code, schedule, poll times, lease),
 *  provided the row is still in that state — what a subscriber changed while the fetch ran (a baseline restarted)
 *  makes it update nothing, and the caller records the poll the long way. Of the indexed columns only next_poll_at is
 *  written, and not even it when `next_poll_at` is null (the schedule stays: a poll before the feed was due, which only
 *  `poll --once` makes). Returns whether it recorded the poll. */
export async function recordQuietUnchanged(
  db: Sql,
  id: string,
  state: Omit<UnchangedState, 'next_poll_at'> & { next_poll_at: string | null },
  now: Date,
): Promise<boolean> {
  // A column in SET rewrites every index holding it, even to the value it had: two statements, not one.
  const schedule = state.next_poll_at === null ? '' : 'next_poll_at = @next_poll_at,';
  const recorded =
    (await db.run(
      `UPDATE feeds SET etag = @etag, last_modified = @last_modified, last_http_status = @last_http_status,
         ${schedule} interval_seconds = @interval_seconds, last_polled_at = @t, last_success_at = @t,
         updated_at = @t
       WHERE id = @id AND status = 'active' AND error_count = 0 AND health_alert IS NULL AND baseline_at IS NOT NULL
         AND fetch_url = @fetch_url AND redirect_url IS NULL
         AND NOT EXISTS (SELECT 1 FROM held_entries h WHERE h.feed_id = @id)`,
      { ...state, id, t: now.toISOString() },
    )) === 1;
  if (recorded) await endLease(db, id);
  return recorded;
}

/** A document (or a 304) that its feed's application has no room for in its storage budget: the fetch is recorded as
 *  a success, but nothing it showed is stored, validators included, so that the next fetch reads it whole. The feed is
 *  held (over_budget, since `heldAt`) and parked until its application has room again. */
export async function recordBudgetHold(
  db: Sql,
  id: string,
  state: { last_http_status: number; held_at: string },
  now: Date,
): Promise<void> {
  const t = now.toISOString();
  await patchFeed(
    db,
    id,
    {
      status: 'over_budget',
      budget_held_at: state.held_at,
      last_http_status: state.last_http_status,
      next_poll_at: PARKED_AT,
      last_polled_at: t,
      last_success_at: t,
      error_count: 0,
    },
    now,
  );
}

/** A poll stored what its feed showed within its application's storage budget: the hold is over. */
export async function endBudgetHold(db: Sql, id: string): Promise<void> {
  await db.run('UPDATE feeds SET budget_held_at = NULL WHERE id = ?', [id]);
}

/** A failed fetch or parse: counted by kind, recorded with its message, backed off; the feed keeps being polled. */
export async function recordPollFailure(
  db: Sql,
  id: string,
  failure: {
    errorClass: 'network' | 'http' | 'parse';
    message: string;
    httpStatus: number | null;
    nextPollAt: string;
  },
  now: Date,
): Promise<void> {
  const t = now.toISOString();
  await patchFeed(
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
export async function recordPollThrottled(
  db: Sql,
  id: string,
  httpStatus: number,
  nextPollAt: string,
  now: Date,
): Promise<void> {
  await patchFeed(
    db,
    id,
    { last_http_status: httpStatus, next_poll_at: nextPollAt, last_polled_at: now.toISOString() },
    now,
  );
}

/** A 410: the feed is gone and is no longer polled. */
export async function recordFeedGone(db: Sql, id: string, now: Date): Promise<void> {
  const t = now.toISOString();
  await patchFeed(
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
