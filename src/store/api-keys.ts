// SQL for API keys: stored only as SHA-256 hashes, revocable.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

export type ApiKeyRow = {
  id: string;
  application_id: string;
  name: string | null;
  prefix: string;
  hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
};
export type ApiKeyListed = Omit<ApiKeyRow, 'hash'> & { application_name: string };

/** Stores a new key record (its hash, never the key). */
export function insertApiKey(db: Db, row: Omit<ApiKeyRow, 'last_used_at' | 'revoked_at'>): void {
  prepared(
    db,
    `INSERT INTO api_keys (id, application_id, name, prefix, hash, created_at)
              VALUES (@id, @application_id, @name, @prefix, @hash, @created_at)`,
  ).run(row);
}

/** Returns the live (not revoked) key with this hash, or undefined. */
export function findLiveKeyByHash(db: Db, hash: string): ApiKeyRow | undefined {
  return prepared(db, 'SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL').get(hash) as
    ApiKeyRow | undefined;
}

/** Moves the key's last use forward to `at` (an ISO time); never back. */
export function recordKeyUse(db: Db, id: string, at: string): void {
  prepared(
    db,
    'UPDATE api_keys SET last_used_at = @at WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @at)',
  ).run({ id, at });
}

/** Every key with its application's name, newest first; never the hash. */
export function listApiKeys(db: Db): ApiKeyListed[] {
  return prepared(
    db,
    `SELECT k.id, k.application_id, a.name AS application_name, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at
                     FROM api_keys k JOIN applications a ON a.id = k.application_id ORDER BY k.id DESC`,
  ).all() as ApiKeyListed[];
}

/** Marks the key revoked and ends its dashboard sessions; returns false when no live key has this id. */
export function revokeApiKey(db: Db, id: string, now: Date): boolean {
  return db
    .transaction(() => {
      const changed = prepared(
        db,
        'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
      ).run(now.toISOString(), id).changes;
      prepared(db, 'DELETE FROM sessions WHERE api_key_id = ?').run(id);
      return changed > 0;
    })
    .immediate();
}
