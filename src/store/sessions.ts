// SQL for dashboard sessions: a cookie's SHA-256 hash bound to a live API key, with a CSRF token and an idle clock.
import type { Sql } from '../db/engine.ts';

export type SessionRow = {
  id_hash: string;
  application_id: string;
  api_key_id: string;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
};
/** A live session with its application's name. */
export type LiveSession = SessionRow & { application_name: string };

/** Stores a new session. */
export async function insertSession(db: Sql, row: SessionRow): Promise<void> {
  await db.run(
    `INSERT INTO sessions (id_hash, application_id, api_key_id, csrf_token, created_at, last_seen_at)
              VALUES (@id_hash, @application_id, @api_key_id, @csrf_token, @created_at, @last_seen_at)`,
    row,
  );
}

/** The session with this hash when it was seen after `idleCutoff` and its key is not revoked; undefined otherwise. */
export async function findLiveSession(
  db: Sql,
  idHash: string,
  idleCutoff: string,
): Promise<LiveSession | undefined> {
  return db.get<LiveSession>(
    `SELECT s.*, a.name AS application_name FROM sessions s
                     JOIN api_keys k ON k.id = s.api_key_id AND k.revoked_at IS NULL
                     JOIN applications a ON a.id = s.application_id
                     WHERE s.id_hash = ? AND s.last_seen_at > ?`,
    [idHash, idleCutoff],
  );
}

/** Moves the idle clock forward to `at` (an ISO time); never back. */
export async function touchSession(db: Sql, idHash: string, at: string): Promise<void> {
  await db.run('UPDATE sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at < ?', [
    at,
    idHash,
    at,
  ]);
}

/** Deletes one session (sign-out); false when there was none. */
export async function deleteSession(db: Sql, idHash: string): Promise<boolean> {
  return (await db.run('DELETE FROM sessions WHERE id_hash = ?', [idHash])) > 0;
}

/** Deletes every session idle since before `idleCutoff`; returns how many. */
export async function deleteIdleSessions(db: Sql, idleCutoff: string): Promise<number> {
  return db.run('DELETE FROM sessions WHERE last_seen_at <= ?', [idleCutoff]);
}

/** Deletes the key's sessions beyond its `keep` most recently used; returns how many. */
export async function deleteSessionsBeyond(
  db: Sql,
  apiKeyId: string,
  keep: number,
): Promise<number> {
  return db.run(
    `DELETE FROM sessions WHERE api_key_id = @key AND id_hash NOT IN (
       SELECT id_hash FROM sessions WHERE api_key_id = @key ORDER BY last_seen_at DESC LIMIT @keep)`,
    { key: apiKeyId, keep },
  );
}
