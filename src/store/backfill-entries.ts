// SQL for backfill_entries: the entries a started backfill has still to send, by key and in the order its events carry
// them, taken from the entry history when it starts; a row goes in the transaction that queues its event.
import type { Sql } from '../db/engine.ts';

/** A backfill's entry still to send: its place (1 = the oldest) and key, and the size of its stored JSON; null when
 *  the history no longer holds it. */
export type BackfillSize = { position: number; key: string; bytes: number | null };
/** A backfill's entry still to send with its stored JSON (entryJson's text, as the history keeps it). */
export type BackfillEntry = { position: number; key: string; entry: string };

/** Takes the subscription's backfill from its feed's history: the `n` newest entries no entries event of the
 *  subscription carries, numbered oldest first; returns how many. The poll sends a subscription the entries it first
 *  sees after the subscription was created, and records them in the history in the same transaction, so the newest
 *  entries it has not been sent are those seen before it was created, and those of the baseline it waited for. */
export async function takeBackfillEntries(
  db: Sql,
  sub: { id: string; feed_id: string },
  n: number,
): Promise<number> {
  return db.run(
    `INSERT INTO backfill_entries (subscription_id, position, key)
     SELECT @sub, row_number() OVER (ORDER BY first_seen_at, r), key FROM (
       SELECT h.key, h.first_seen_at, h.rowid AS r FROM entry_history h
        WHERE h.feed_id = @feed AND NOT EXISTS (
          SELECT 1 FROM event_entries x JOIN events e ON e.id = x.event_id
           WHERE x.subscription_id = @sub AND x.key = h.key AND e.type = 'subscription.entries')
        ORDER BY h.first_seen_at DESC, h.rowid DESC LIMIT @n) newest`,
    { sub: sub.id, feed: sub.feed_id, n },
  );
}

/** An entry of the feed's history no entries event of the subscription carries, with its stored JSON. */
export type BackfillCandidate = { key: string; entry: string };

/** The feed's history entries no entries event of the subscription carries, newest first (what takeBackfillEntries
 *  takes the newest `n` of), with their JSON: at most the history's bound per feed. */
export async function backfillCandidates(
  db: Sql,
  sub: { id: string; feed_id: string },
): Promise<BackfillCandidate[]> {
  return db.all<BackfillCandidate>(
    `SELECT h.key, h.entry FROM entry_history h
      WHERE h.feed_id = @feed AND NOT EXISTS (
        SELECT 1 FROM event_entries x JOIN events e ON e.id = x.event_id
         WHERE x.subscription_id = @sub AND x.key = h.key AND e.type = 'subscription.entries')
      ORDER BY h.first_seen_at DESC, h.rowid DESC`,
    { sub: sub.id, feed: sub.feed_id },
  );
}

/** Takes `keys` (newest first) as the subscription's backfill, numbered oldest first; returns how many. */
export async function takeBackfillKeys(
  db: Sql,
  subscriptionId: string,
  keys: string[],
): Promise<number> {
  for (const [i, key] of keys.entries())
    await db.run('INSERT INTO backfill_entries (subscription_id, position, key) VALUES (?, ?, ?)', [
      subscriptionId,
      keys.length - i,
      key,
    ]);
  return keys.length;
}

/** The first `limit` entries the subscription's backfill has still to send, in order, with the size of each one's JSON
 *  (read without the JSON itself). */
export async function backfillSizes(
  db: Sql,
  sub: { id: string; feed_id: string },
  limit: number,
): Promise<BackfillSize[]> {
  return db.all<BackfillSize>(
    `SELECT b.position, b.key, octet_length(h.entry) AS bytes FROM backfill_entries b
       LEFT JOIN entry_history h ON h.feed_id = @feed AND h.key = b.key
      WHERE b.subscription_id = @sub ORDER BY b.position LIMIT @limit`,
    { sub: sub.id, feed: sub.feed_id, limit },
  );
}

/** The entries the subscription's backfill has still to send up to place `through`, in order, with their JSON (those
 *  the history no longer holds are left out). */
export async function backfillEntries(
  db: Sql,
  sub: { id: string; feed_id: string },
  through: number,
): Promise<BackfillEntry[]> {
  return db.all<BackfillEntry>(
    `SELECT b.position, b.key, h.entry FROM backfill_entries b
       JOIN entry_history h ON h.feed_id = @feed AND h.key = b.key
      WHERE b.subscription_id = @sub AND b.position <= @through ORDER BY b.position`,
    { sub: sub.id, feed: sub.feed_id, through },
  );
}

/** Deletes the subscription's backfill entries up to place `through` (all of them by default); returns how many are
 *  left. */
export async function dropBackfillEntries(
  db: Sql,
  subscriptionId: string,
  through = Number.MAX_SAFE_INTEGER,
): Promise<number> {
  await db.run('DELETE FROM backfill_entries WHERE subscription_id = ? AND position <= ?', [
    subscriptionId,
    through,
  ]);
  return (await db.value('SELECT count(*) FROM backfill_entries WHERE subscription_id = ?', [
    subscriptionId,
  ])) as number;
}
