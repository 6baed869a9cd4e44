// SQL for API keys: stored only as SHA-256 hashes, revocable.
import type { Sql } from '../db/engine.ts';

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
export async function insertApiKey(
  db: Sql,
  row: Omit<ApiKeyRow, 'last_used_at' | 'revoked_at'>,
): Promise<void> {
  await db.run(
    `INSERT INTO api_keys (id, application_id, name, prefix, hash, created_at)
              VALUES (@id, @application_id, @name, @prefix, @hash, @created_at)`,
    row,
  );
}

/** Returns the live (not revoked) key with this hash, or undefined. */
export async function findLiveKeyByHash(db: Sql, hash: string): Promise<ApiKeyRow | undefined> {
  return db.get<ApiKeyRow>('SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL', [hash]);
}

/** Moves the key's last use forward to `at` (an ISO time); never back. */
export async function recordKeyUse(db: Sql, id: string, at: string): Promise<void> {
  await db.run(
    'UPDATE api_keys SET last_used_at = @at WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @at)',
    { id, at },
  );
}

/** Every key with its application's name, newest first; never the hash. */
export async function listApiKeys(db: Sql): Promise<ApiKeyListed[]> {
  return db.all<ApiKeyListed>(`SELECT k.id, k.application_id, a.name AS application_name, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at
                     FROM api_keys k JOIN applications a ON a.id = k.application_id ORDER BY k.id DESC`);
}

/** Marks the key revoked and ends its dashboard sessions; returns false when no live key has this id. Call inside a
 *  transaction. */
export async function revokeApiKey(db: Sql, id: string, now: Date): Promise<boolean> {
  const changed = await db.run(
    'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
    [now.toISOString(), id],
  );
  await db.run('DELETE FROM sessions WHERE api_key_id = ?', [id]);
  return changed > 0;
}
