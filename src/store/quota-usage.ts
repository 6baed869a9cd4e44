// SQL for quota_usage: the recent uses of the quotas that count over a window (new feed URLs per hour, test events
// per minute, backfill entries per hour), per application; old rows are deleted before each new one, so the table
// stays bounded.
import type { Sql } from '../db/engine.ts';

export type QuotaUsageRow = {
  application_id: string;
  quota: string;
  /** What was used, when a repeat should not count twice (the feed id of a new feed URL); null otherwise. */
  subject: string | null;
  used_at: string;
  /** What the use counts towards its limit (the entries a backfill asks for); 1 when absent. */
  amount?: number;
};

/** Holds the application's `quota` until the transaction ends, so that two transactions checking it at once take turns:
 *  the second counts what the first recorded. On SQLite a write transaction already excludes every other writer; on
 *  PostgreSQL it is a transaction-level advisory lock on the pair (at READ COMMITTED both would count the same rows
 *  and both take the last use). */
export async function lockQuota(db: Sql, applicationId: string, quota: string): Promise<void> {
  if (db.dialect === 'postgres')
    await db.get('SELECT pg_advisory_xact_lock(hashtextextended(@key, 0)) AS locked', {
      key: `feedsub.quota:${applicationId}:${quota}`,
    });
}

/** Deletes the application's uses of `quota` at or before `before` (out of a window that starts after it). */
export async function pruneQuotaUsage(
  db: Sql,
  applicationId: string,
  quota: string,
  before: string,
): Promise<number> {
  return db.run('DELETE FROM quota_usage WHERE application_id = ? AND quota = ? AND used_at <= ?', [
    applicationId,
    quota,
    before,
  ]);
}

/** How much of `quota` the application used after `since` (its uses' amounts added up). */
export async function countQuotaUsage(
  db: Sql,
  applicationId: string,
  quota: string,
  since: string,
): Promise<number> {
  return (await db.value(
    `SELECT coalesce(sum(amount), 0) FROM quota_usage
      WHERE application_id = ? AND quota = ? AND used_at > ?`,
    [applicationId, quota, since],
  )) as number;
}

/** The application's uses of `quota` after `since`, oldest first (at most the quota's limit of them). */
export async function quotaUsesSince(
  db: Sql,
  applicationId: string,
  quota: string,
  since: string,
): Promise<Pick<QuotaUsageRow, 'used_at' | 'amount'>[]> {
  return db.all<Pick<QuotaUsageRow, 'used_at' | 'amount'>>(
    `SELECT used_at, amount FROM quota_usage
      WHERE application_id = ? AND quota = ? AND used_at > ? ORDER BY used_at`,
    [applicationId, quota, since],
  );
}

/** True when the application used `quota` on `subject` after `since`. */
export async function usedQuotaOn(
  db: Sql,
  applicationId: string,
  quota: string,
  subject: string,
  since: string,
): Promise<boolean> {
  return (
    (await db.get(
      `SELECT 1 FROM quota_usage
        WHERE application_id = ? AND quota = ? AND used_at > ? AND subject = ? LIMIT 1`,
      [applicationId, quota, since, subject],
    )) !== undefined
  );
}

/** Records one use. */
export async function recordQuotaUsage(db: Sql, row: QuotaUsageRow): Promise<void> {
  await db.run(
    `INSERT INTO quota_usage (application_id, quota, subject, used_at, amount)
              VALUES (@application_id, @quota, @subject, @used_at, @amount)`,
    { amount: 1, ...row },
  );
}
