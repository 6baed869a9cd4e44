// SQL for feed_poll_hours: each feed's polls counted per UTC hour (the dashboard's 24 h chart), and their pruning.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

/** A refresh's outcome kind, as the poller reports it (feed/refresh.ts). */
export type PollKind = 'parsed' | 'unchanged' | 'gone' | 'throttled' | 'error';
/** How a poll counts on the chart: ok (parsed or unchanged), failed (error or gone), throttled (told to wait). */
const RESULT: Record<PollKind, 'ok' | 'failed' | 'throttled'> = {
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

/** Counts one poll of `feedId` at `at` in its hour. Runs in the poll transaction: one upsert on the primary key,
 *  which touches the hour index only for the hour's first poll. */
export function countPoll(
  db: Db,
  feedId: string,
  kind: PollKind,
  newEntries: number,
  at: Date,
): void {
  const one = (r: (typeof RESULT)[PollKind]) => (RESULT[kind] === r ? 1 : 0);
  prepared(
    db,
    `INSERT INTO feed_poll_hours (feed_id, hour, ok, failed, throttled, new_entries) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (feed_id, hour) DO UPDATE SET ok = ok + excluded.ok, failed = failed + excluded.failed,
       throttled = throttled + excluded.throttled, new_entries = new_entries + excluded.new_entries`,
  ).run(feedId, hourOf(at), one('ok'), one('failed'), one('throttled'), newEntries);
}

/** The feed's hours from `sinceHour` on, oldest first. Reads the primary key's range (feed_id, hour): at most 25 rows. */
export function pollHours(db: Db, feedId: string, sinceHour: string): PollHourRow[] {
  return prepared(
    db,
    `SELECT hour, ok, failed, throttled, new_entries FROM feed_poll_hours
      WHERE feed_id = ? AND hour >= ? ORDER BY hour`,
  ).all(feedId, sinceHour) as PollHourRow[];
}

/** Deletes up to `limit` rows of hours before `beforeHour` (index feed_poll_hours_by_hour); returns how many. */
export function prunePollHours(db: Db, beforeHour: string, limit: number): number {
  return prepared(
    db,
    `DELETE FROM feed_poll_hours WHERE (feed_id, hour) IN (
       SELECT feed_id, hour FROM feed_poll_hours WHERE hour < ? LIMIT ?)`,
  ).run(beforeHour, limit).changes;
}
