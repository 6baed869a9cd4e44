// SQL for quota_usage: the recent uses of the quotas that count over a window (new feed URLs per hour, test events
// per minute), per application; old rows are deleted before each new one, so the table stays bounded.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

export type QuotaUsageRow = {
  application_id: string;
  quota: string;
  /** What was used, when a repeat should not count twice (the feed id of a new feed URL); null otherwise. */
  subject: string | null;
  used_at: string;
};

/** Deletes the application's uses of `quota` at or before `before` (out of a window that starts after it). */
export function pruneQuotaUsage(
  db: Db,
  applicationId: string,
  quota: string,
  before: string,
): number {
  return prepared(
    db,
    'DELETE FROM quota_usage WHERE application_id = ? AND quota = ? AND used_at <= ?',
  ).run(applicationId, quota, before).changes;
}

/** How many uses of `quota` the application made after `since`, and the earliest of them (null when none). */
export function countQuotaUsage(
  db: Db,
  applicationId: string,
  quota: string,
  since: string,
): { count: number; oldest: string | null } {
  return prepared(
    db,
    `SELECT count(*) AS count, min(used_at) AS oldest FROM quota_usage
      WHERE application_id = ? AND quota = ? AND used_at > ?`,
  ).get(applicationId, quota, since) as { count: number; oldest: string | null };
}

/** True when the application used `quota` on `subject` after `since`. */
export function usedQuotaOn(
  db: Db,
  applicationId: string,
  quota: string,
  subject: string,
  since: string,
): boolean {
  return (
    prepared(
      db,
      `SELECT 1 FROM quota_usage
        WHERE application_id = ? AND quota = ? AND used_at > ? AND subject = ? LIMIT 1`,
    ).get(applicationId, quota, since, subject) !== undefined
  );
}

/** Records one use. */
export function recordQuotaUsage(db: Db, row: QuotaUsageRow): void {
  prepared(
    db,
    `INSERT INTO quota_usage (application_id, quota, subject, used_at)
              VALUES (@application_id, @quota, @subject, @used_at)`,
  ).run(row);
}
