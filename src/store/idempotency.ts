// SQL for Idempotency-Key records: the first response to a POST, replayed for 24 hours.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

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
export function findIdempotency(
  db: Db,
  applicationId: string,
  key: string,
  since: string,
): IdempotencyRow | undefined {
  return prepared(
    db,
    'SELECT * FROM idempotency_keys WHERE application_id = ? AND key = ? AND created_at > ?',
  ).get(applicationId, key, since) as IdempotencyRow | undefined;
}

/** Stores (or replaces an expired) record. */
export function saveIdempotency(db: Db, row: IdempotencyRow): void {
  prepared(
    db,
    `INSERT OR REPLACE INTO idempotency_keys (application_id, key, method, path, request_hash, status, response, created_at)
              VALUES (@application_id, @key, @method, @path, @request_hash, @status, @response, @created_at)`,
  ).run(row);
}

/** Deletes up to `limit` records older than `before`, oldest first; returns how many. */
export function pruneIdempotency(db: Db, before: string, limit: number): number {
  return prepared(
    db,
    `DELETE FROM idempotency_keys WHERE (application_id, key) IN (
       SELECT application_id, key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
  ).run(before, limit).changes;
}
