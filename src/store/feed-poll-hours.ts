// SQL for feed_poll_hours: each feed's polls counted per UTC hour (the dashboard's 24 h chart), and their pruning.
// Keyed by hour, then feed: the polls of one hour are one range, so the counts a flush writes for that hour, sorted,
// fill a few pages in order rather than touching a page of each feed's own run of hours (actions/poll-counts.ts).
import type { PollCount } from '../context.ts';
import type { Sql } from '../db/engine.ts';
import { jsonValues } from './sql.ts';

/** A refresh's outcome kind, as the poller reports it (feed/fetch/refresh.ts). */
export type PollKind = 'parsed' | 'unchanged' | 'gone' | 'throttled' | 'error';
/** How a poll counts on the chart: ok (parsed or unchanged), failed (error or gone), throttled (told to wait). */
export const POLL_RESULT: Record<PollKind, 'ok' | 'failed' | 'throttled'> = {
  parsed: 'ok',
  unchanged: 'ok',
  gone: 'failed',
  error: 'failed',
  throttled: 'throttled',
};
/** One feed's polls in one UTC hour; `hour` is 'YYYY-MM-DDTHH'. */
export type PollHourRow = {
  hour: string;
  ok: number;
  failed: number;
  throttled: number;
  new_entries: number;
};

/** The UTC hour `at` falls in, as the table keys it ('YYYY-MM-DDTHH'). */
export function hourOf(at: Date): string {
  return at.toISOString().slice(0, 13);
}

/** Adds `count` to its feed's row of its hour (an upsert on the primary key). */
export async function addPollCounts(db: Sql, count: PollCount): Promise<void> {
  await db.run(
    `INSERT INTO feed_poll_hours (hour, feed_id, ok, failed, throttled, new_entries)
       VALUES (@hour, @feed_id, @ok, @failed, @throttled, @new_entries)
     ON CONFLICT (hour, feed_id) DO UPDATE SET ok = feed_poll_hours.ok + excluded.ok,
       failed = feed_poll_hours.failed + excluded.failed, throttled = feed_poll_hours.throttled + excluded.throttled,
       new_entries = feed_poll_hours.new_entries + excluded.new_entries`,
    count,
  );
}

/** The feed's rows of `hours` (at most 25), oldest first: one primary-key seek per hour. */
export async function pollHours(
  db: Sql,
  feedId: string,
  hours: readonly string[],
): Promise<PollHourRow[]> {
  return db.all<PollHourRow>(
    `SELECT hour, ok, failed, throttled, new_entries FROM feed_poll_hours
      WHERE hour IN (${jsonValues(db, '?')}) AND feed_id = ? ORDER BY hour`,
    [JSON.stringify(hours), feedId],
  );
}

/** Deletes up to `limit` rows of hours before `beforeHour` (the primary key's first range); returns how many. Rows of
 *  a deleted feed go this way too, within a day: the table has no foreign key, whose cascade would walk it whole. */
export async function prunePollHours(db: Sql, beforeHour: string, limit: number): Promise<number> {
  return db.run(
    `DELETE FROM feed_poll_hours WHERE (hour, feed_id) IN (
       SELECT hour, feed_id FROM feed_poll_hours WHERE hour < ? LIMIT ?)`,
    [beforeHour, limit],
  );
}
