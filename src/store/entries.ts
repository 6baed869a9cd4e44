// SQL for entry keys: every key a feed has shown (with the fingerprint that tells a recycled guid apart), kept as a
// tombstone after the entry leaves the feed; and the entries the churn guard holds back.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

/** A key to record: its fingerprint (null for content keys) and other spellings of it to record beside it. */
export type KeyRow = { key: string; fingerprint: string | null; aliases?: string[] };

/** What the feed stored under `key`: undefined when it never showed it, else its fingerprint (null when none). */
export function storedFingerprint(db: Db, feedId: string, key: string): string | null | undefined {
  return prepared(db, 'SELECT fingerprint FROM entries WHERE feed_id = ? AND key = ?')
    .pluck()
    .get(feedId, key) as string | null | undefined;
}

/** Records keys as seen at `at` (existing ones keep their first-seen time and fingerprint), and their aliases.
 *  Returns how many of the keys (aliases not counted) were new. Call inside a transaction. */
export function recordKeys(db: Db, feedId: string, rows: Iterable<KeyRow>, at: Date): number {
  const insert = prepared(
    db,
    'INSERT OR IGNORE INTO entries (feed_id, key, first_seen_at, fingerprint) VALUES (?, ?, ?, ?)',
  );
  const t = at.toISOString();
  let added = 0;
  for (const row of rows) {
    added += insert.run(feedId, row.key, t, row.fingerprint).changes;
    for (const alias of row.aliases ?? []) insert.run(feedId, alias, t, null);
  }
  return added;
}

/** Stores fingerprints for known keys that have none yet (keys recorded before fingerprints existed). */
export function fillFingerprints(
  db: Db,
  feedId: string,
  rows: Iterable<{ key: string; fingerprint: string }>,
): void {
  const update = prepared(
    db,
    'UPDATE entries SET fingerprint = ? WHERE feed_id = ? AND key = ? AND fingerprint IS NULL',
  );
  for (const row of rows) update.run(row.fingerprint, feedId, row.key);
}

/** An entry held back by the churn guard: its key and fingerprint, the entry as JSON, its place, when it was seen. */
export type HeldEntry = {
  key: string;
  fingerprint: string | null;
  entry: string;
  position: number;
  held_at: string;
};

/** Holds entries back (churn guard), first seen at `at`; returns how many were not held already. Call inside a
 *  transaction. */
export function holdEntries(
  db: Db,
  feedId: string,
  held: (Omit<HeldEntry, 'held_at' | 'fingerprint'> & { fingerprint?: string | null })[],
  at: Date,
): number {
  const insert = prepared(
    db,
    'INSERT OR IGNORE INTO held_entries (feed_id, key, fingerprint, entry, position, held_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  let added = 0;
  for (const h of held)
    added += insert.run(
      feedId,
      h.key,
      h.fingerprint,
      h.entry,
      h.position,
      at.toISOString(),
    ).changes;
  return added;
}

/** The held entries of a feed in document order. */
export function listHeldEntries(db: Db, feedId: string): HeldEntry[] {
  return prepared(
    db,
    'SELECT key, fingerprint, entry, position, held_at FROM held_entries WHERE feed_id = ? ORDER BY position, held_at',
  ).all(feedId) as HeldEntry[];
}

/** Number of held entries of a feed. */
export function countHeldEntries(db: Db, feedId: string): number {
  return prepared(db, 'SELECT count(*) FROM held_entries WHERE feed_id = ?')
    .pluck()
    .get(feedId) as number;
}

/** Drops a feed's held entries. */
export function clearHeldEntries(db: Db, feedId: string): void {
  prepared(db, 'DELETE FROM held_entries WHERE feed_id = ?').run(feedId);
}
