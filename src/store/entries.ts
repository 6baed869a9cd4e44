// SQL for entry keys: every key a feed has shown, kept as a tombstone after the entry leaves the feed.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

/** The subset of `keys` this feed has never shown. */
export function unseenKeys(db: Db, feedId: string, keys: string[]): Set<string> {
  const known = prepared(db, 'SELECT 1 FROM entries WHERE feed_id = ? AND key = ?').pluck();
  return new Set(keys.filter((k) => known.get(feedId, k) === undefined));
}

/** Records keys as seen at `now` (existing ones keep their first-seen time). Call inside a transaction. */
export function insertKeys(db: Db, feedId: string, keys: Iterable<string>, now: Date): number {
  const insert = prepared(
    db,
    'INSERT OR IGNORE INTO entries (feed_id, key, first_seen_at) VALUES (?, ?, ?)',
  );
  let added = 0;
  const t = now.toISOString();
  for (const key of keys) added += insert.run(feedId, key, t).changes;
  return added;
}

/** Holds entries back (churn guard). Call inside a transaction. */
export function holdEntries(
  db: Db,
  feedId: string,
  held: { key: string; entry: string; position: number }[],
  now: Date,
): void {
  const insert = prepared(
    db,
    'INSERT OR IGNORE INTO held_entries (feed_id, key, entry, position, held_at) VALUES (?, ?, ?, ?, ?)',
  );
  for (const h of held) insert.run(feedId, h.key, h.entry, h.position, now.toISOString());
}

/** The held entries of a feed in document order. */
export function listHeldEntries(
  db: Db,
  feedId: string,
): { key: string; entry: string; position: number }[] {
  return prepared(
    db,
    'SELECT key, entry, position FROM held_entries WHERE feed_id = ? ORDER BY position',
  ).all(feedId) as { key: string; entry: string; position: number }[];
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
