// SQL for Idempotency-Key records: the first response to a POST, replayed for 24 hours.
import type { Sql } from '../db/engine.ts';

export type IdempotencyRow = {
  application_id: string;
  key: string;
  method: string;
  path: string;
  request_hash: string;
  status: number;
  response: string;
  created_at: string;
};

/** The record for this application and key made after `since`, or undefined. */
export async function findIdempotency(
  db: Sql,
  applicationId: string,
  key: string,
  since: string,
): Promise<IdempotencyRow | undefined> {
  return db.get<IdempotencyRow>(
    'SELECT * FROM idempotency_keys WHERE application_id = ? AND key = ? AND created_at > ?',
    [applicationId, key, since],
  );
}

/** Stores (or replaces an expired) record. */
export async function saveIdempotency(db: Sql, row: IdempotencyRow): Promise<void> {
  await db.run(
    `INSERT INTO idempotency_keys (application_id, key, method, path, request_hash, status, response, created_at)
       VALUES (@application_id, @key, @method, @path, @request_hash, @status, @response, @created_at)
     ON CONFLICT (application_id, key) DO UPDATE SET method = excluded.method, path = excluded.path,
       request_hash = excluded.request_hash, status = excluded.status, response = excluded.response,
       created_at = excluded.created_at`,
    row,
  );
}

/** Deletes up to `limit` records older than `before`, oldest first; returns how many. */
export async function pruneIdempotency(db: Sql, before: string, limit: number): Promise<number> {
  return db.run(
    `DELETE FROM idempotency_keys WHERE (application_id, key) IN (
       SELECT application_id, key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
    [before, limit],
  );
}
