// SQL for quota_usage: the recent uses of the quotas that count over a window (new feed URLs per hour, test events
// per minute, backfill entries per hour), per application; old rows are deleted before each new one, so the table
// stays bounded.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

export type QuotaUsageRow = {
  application_id: string;
  quota: string;
  /** What was used, when a repeat should not count twice (the feed id of a new feed URL); null otherwise. */
  subject: string | null;
  used_at: string;
  /** What the use counts towards its limit (the entries a backfill asks for); 1 when absent. */
  amount?: number;
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

/** How much of `quota` the application used after `since` (its uses' amounts added up). */
export function countQuotaUsage(
  db: Db,
  applicationId: string,
  quota: string,
  since: string,
): number {
  return prepared(
    db,
    `SELECT coalesce(sum(amount), 0) FROM quota_usage
      WHERE application_id = ? AND quota = ? AND used_at > ?`,
  )
    .pluck()
    .get(applicationId, quota, since) as number;
}

/** The application's uses of `quota` after `since`, oldest first (at most the quota's limit of them). */
export function quotaUsesSince(
  db: Db,
  applicationId: string,
  quota: string,
  since: string,
): Pick<QuotaUsageRow, 'used_at' | 'amount'>[] {
  return prepared(
    db,
    `SELECT used_at, amount FROM quota_usage
      WHERE application_id = ? AND quota = ? AND used_at > ? ORDER BY used_at`,
  ).all(applicationId, quota, since) as Pick<QuotaUsageRow, 'used_at' | 'amount'>[];
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
    `INSERT INTO quota_usage (application_id, quota, subject, used_at, amount)
              VALUES (@application_id, @quota, @subject, @used_at, @amount)`,
  ).run({ amount: 1, ...row });
}
