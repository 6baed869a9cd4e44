// SQL for entry keys: every key a feed has shown (with the fingerprint that tells a recycled guid apart and when a
// document last showed it), kept as a tombstone after the entry leaves the feed; and the entries the churn guard holds
// back, up to a cap per feed. Pruning keys and deleting a feed's rows are in entries-retention.ts.
import type { Sql } from '../db/engine.ts';
import { changeFeedStorage, HELD_ROW_BYTES, KEY_ROW_BYTES } from './storage.ts';
import { jsonText, jsonValues } from './sql.ts';

/** A key to record: its fingerprint (null for content keys) and other spellings of it to record beside it. */
export type KeyRow = { key: string; fingerprint: string | null; aliases?: string[] };

/** What the feed stores under each of `keys` that it stores (and maybe under others): the fingerprint and when a
 *  document last showed it. A feed that stores not many more keys than asked for (a steady feed stores about its
 *  document's) is read whole along its primary key, a walk of a few pages: cheaper than a seek per key. Else one
 *  statement seeks each key. */
export async function storedKeys(
  db: Sql,
  feedId: string,
  keys: readonly string[],
): Promise<StoredKey[]> {
  if (keys.length === 0) return [];
  const most = keys.length * 2 + 64;
  const all = await db.all<StoredKey>(
    'SELECT key, fingerprint, seen_at FROM entries WHERE feed_id = ? LIMIT ?',
    [feedId, most],
  );
  if (all.length < most) return all;
  return db.all<StoredKey>(
    `SELECT key, fingerprint, seen_at FROM entries WHERE feed_id = ? AND key IN (${jsonValues(db, '?')})`,
    [feedId, JSON.stringify(keys)],
  );
}

/** A stored key: its fingerprint, and when a document last showed it. */
export type StoredKey = { key: string; fingerprint: string | null; seen_at: string };

/** What the feed stored under `key`: undefined when it never showed it, else its fingerprint (null when none). */
export async function storedFingerprint(
  db: Sql,
  feedId: string,
  key: string,
): Promise<string | null | undefined> {
  return (await db.value('SELECT fingerprint FROM entries WHERE feed_id = ? AND key = ?', [
    feedId,
    key,
  ])) as string | null | undefined;
}

/** Records keys as seen at `at` (existing ones keep their first-seen time and fingerprint), and their aliases.
 *  Returns how many of the keys (aliases not counted) were new. Call inside a transaction. */
export async function recordKeys(
  db: Sql,
  feedId: string,
  rows: Iterable<KeyRow>,
  at: Date,
): Promise<number> {
  const t = at.toISOString();
  if (db.dialect === 'postgres') {
    // One statement for the document: each key as its first mention (a key, or the alias of an earlier one) makes it.
    const first = new Map<string, { key: string; fingerprint: string | null; alias: boolean }>();
    for (const row of rows) {
      if (!first.has(row.key))
        first.set(row.key, { key: row.key, fingerprint: row.fingerprint, alias: false });
      for (const alias of row.aliases ?? [])
        if (!first.has(alias)) first.set(alias, { key: alias, fingerprint: null, alias: true });
    }
    if (first.size === 0) return 0;
    const made = await db.column<string>(
      `INSERT INTO entries (feed_id, key, first_seen_at, seen_at, fingerprint)
       SELECT @feed, r.key, @t, @t, r.fingerprint
         FROM ROWS FROM (json_to_recordset(@rows::json) AS (key text, fingerprint text))
              WITH ORDINALITY AS r(key, fingerprint, n)
        ORDER BY r.n
       ON CONFLICT DO NOTHING RETURNING key`,
      { feed: feedId, t, rows: JSON.stringify([...first.values()]) },
    );
    const added = made.filter((key) => !first.get(key)!.alias).length;
    await changeFeedStorage(db, feedId, { keys: made.length, bytes: made.length * KEY_ROW_BYTES });
    return added;
  }
  const insert =
    'INSERT INTO entries (feed_id, key, first_seen_at, seen_at, fingerprint) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING';
  let added = 0;
  let aliases = 0;
  for (const row of rows) {
    added += await db.run(insert, [feedId, row.key, t, t, row.fingerprint]);
    for (const alias of row.aliases ?? [])
      aliases += await db.run(insert, [feedId, alias, t, t, null]);
  }
  const stored = added + aliases;
  await changeFeedStorage(db, feedId, { keys: stored, bytes: stored * KEY_ROW_BYTES });
  return added;
}

/** How far a key's seen_at may lag behind a document showing it: a day, so a steady feed rewrites each of its keys at
 *  most once a day, not on every poll (the window it serves is counted in days). */
export const SEEN_AT_GRANULARITY_MS = 86_400_000;

/** Notes that a document shown at `at` showed these stored keys: seen_at moves to `at` where it is over a day older. */
export async function markKeysSeen(
  db: Sql,
  feedId: string,
  keys: Iterable<string>,
  at: Date,
): Promise<void> {
  const t = at.toISOString();
  const stale = new Date(at.getTime() - SEEN_AT_GRANULARITY_MS).toISOString();
  if (db.dialect === 'postgres') {
    const list = [...keys];
    if (list.length > 0)
      await db.run(
        `UPDATE entries SET seen_at = @t
          WHERE feed_id = @feed AND key IN (${jsonValues(db, '@keys')})
            AND seen_at < @stale`,
        { t, feed: feedId, keys: JSON.stringify(list), stale },
      );
    return;
  }
  const update = 'UPDATE entries SET seen_at = ? WHERE feed_id = ? AND key = ? AND seen_at < ?';
  for (const key of keys) await db.run(update, [t, feedId, key, stale]);
}

/** Stores fingerprints for known keys that have none yet (keys recorded before fingerprints existed). */
export async function fillFingerprints(
  db: Sql,
  feedId: string,
  rows: Iterable<{ key: string; fingerprint: string }>,
): Promise<void> {
  const update =
    'UPDATE entries SET fingerprint = ? WHERE feed_id = ? AND key = ? AND fingerprint IS NULL';
  for (const row of rows) await db.run(update, [row.fingerprint, feedId, row.key]);
}

/** An entry held back by the churn guard: its key and fingerprint, the entry as JSON, its place, when it was seen. */
export type HeldEntry = {
  key: string;
  fingerprint: string | null;
  /** The identity source of the key (null for entries held before schema version 8). */
  key_source: string | null;
  entry: string;
  position: number;
  held_at: string;
};

/** What one feed may hold: entries, and bytes of their JSON ([retention] held_entries_per_feed, held_bytes_per_feed). */
export type HoldLimits = { entries: number; bytes: number };

/** What holding a document's unseen entries did: `added` now held, `dropped` left out because the hold was full,
 *  `repeated` held already; `before`, how many entries the feed held before. */
export type HoldResult = { added: number; dropped: number; repeated: number; before: number };

/** Holds entries back (churn guard), first seen at `at`, while the feed holds fewer than `limits` allow. Call inside a
 *  transaction. */
export async function holdEntries(
  db: Sql,
  feedId: string,
  held: (Omit<HeldEntry, 'held_at' | 'fingerprint' | 'key_source'> & {
    fingerprint?: string | null;
    key_source?: string | null;
  })[],
  at: Date,
  limits: HoldLimits,
): Promise<HoldResult> {
  const insert = `INSERT INTO held_entries (feed_id, key, fingerprint, key_source, entry, position, held_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`;
  const isHeld = 'SELECT 1 FROM held_entries WHERE feed_id = ? AND key = ?';
  // octet_length reads only the record header, not the JSON, so sizing the hold costs one pass over its index.
  const usage = (await db.get<{ count: number; bytes: number }>(
    'SELECT count(*) AS count, coalesce(sum(octet_length(entry)), 0) AS bytes FROM held_entries WHERE feed_id = ?',
    [feedId],
  ))!;
  const result: HoldResult = { added: 0, dropped: 0, repeated: 0, before: usage.count };
  let stored = 0;
  for (const h of held) {
    const size = Buffer.byteLength(h.entry);
    if (usage.count < limits.entries && usage.bytes + size <= limits.bytes) {
      const n = await db.run(insert, [
        feedId,
        h.key,
        h.fingerprint ?? null,
        h.key_source ?? null,
        h.entry,
        h.position,
        at.toISOString(),
      ]);
      result.added += n;
      result.repeated += 1 - n;
      usage.count += n;
      usage.bytes += n * size;
      stored += n * (size + HELD_ROW_BYTES);
    } else if ((await db.value(isHeld, [feedId, h.key])) === undefined) result.dropped += 1;
    else result.repeated += 1;
  }
  await changeFeedStorage(db, feedId, { bytes: stored });
  return result;
}

/** The held entries of a feed in document order. */
export async function listHeldEntries(db: Sql, feedId: string): Promise<HeldEntry[]> {
  return db.all<HeldEntry>(
    'SELECT key, fingerprint, key_source, entry, position, held_at FROM held_entries WHERE feed_id = ? ORDER BY position, held_at',
    [feedId],
  );
}

/** Up to `limit` of a feed's entries held at or before `until`, last in document order first: a release walks the hold
 *  from its end, so each chunk, reversed, is a piece of the document in order. */
export async function heldEntriesFromEnd(
  db: Sql,
  feedId: string,
  until: string,
  limit: number,
): Promise<HeldEntry[]> {
  return db.all<HeldEntry>(
    `SELECT key, fingerprint, key_source, entry, position, held_at FROM held_entries WHERE feed_id = ? AND held_at <= ?
     ORDER BY position DESC, held_at DESC, key DESC LIMIT ?`,
    [feedId, until, limit],
  );
}

/** Drops these held entries of a feed (they were released). */
export async function deleteHeldEntries(
  db: Sql,
  feedId: string,
  keys: Iterable<string>,
): Promise<void> {
  if (db.dialect === 'postgres') {
    const sizes = await db.column<number>(
      `DELETE FROM held_entries
        WHERE feed_id = @feed AND key IN (${jsonValues(db, '@keys')})
        RETURNING octet_length(entry)`,
      { feed: feedId, keys: JSON.stringify([...keys]) },
    );
    await changeFeedStorage(db, feedId, {
      bytes: -sizes.reduce((n, size) => n + size + HELD_ROW_BYTES, 0),
    });
    return;
  }
  const del =
    'DELETE FROM held_entries WHERE feed_id = ? AND key = ? RETURNING octet_length(entry)';
  let bytes = 0;
  for (const key of keys) {
    const size = (await db.value(del, [feedId, key])) as number | undefined;
    if (size !== undefined) bytes += size + HELD_ROW_BYTES;
  }
  await changeFeedStorage(db, feedId, { bytes: -bytes });
}

/** Counts held entries that went (their JSON sizes, as DELETE … RETURNING octet_length(entry) reads them) out of the
 *  feed's storage; returns how many. */
export async function forgetHeldEntries(
  db: Sql,
  feedId: string,
  sizes: readonly number[],
): Promise<number> {
  const bytes = sizes.reduce((sum, size) => sum + size + HELD_ROW_BYTES, 0);
  await changeFeedStorage(db, feedId, { bytes: -bytes });
  return sizes.length;
}

/** Number of held entries of a feed. */
export async function countHeldEntries(db: Sql, feedId: string): Promise<number> {
  return (await db.value('SELECT count(*) FROM held_entries WHERE feed_id = ?', [
    feedId,
  ])) as number;
}

/** True when the feed holds entries back (a churn hold): its status is identity_changed until they are released,
 *  whatever a failed poll in between made it. */
export async function hasHeldEntries(db: Sql, feedId: string): Promise<boolean> {
  return (
    (await db.get('SELECT 1 FROM held_entries WHERE feed_id = ? LIMIT 1', [feedId])) !== undefined
  );
}

/** Drops a feed's held entries (at most [retention] held_entries_per_feed, so one statement). */
export async function clearHeldEntries(db: Sql, feedId: string): Promise<void> {
  const sizes = await db.column<number>(
    'DELETE FROM held_entries WHERE feed_id = ? RETURNING octet_length(entry)',
    [feedId],
  );
  await forgetHeldEntries(db, feedId, sizes);
}

/** When the feed first saw a stored key, or undefined when it stores no such key (never shown, or pruned). */
export async function keyFirstSeen(
  db: Sql,
  feedId: string,
  key: string,
): Promise<string | undefined> {
  return (await db.value('SELECT first_seen_at FROM entries WHERE feed_id = ? AND key = ?', [
    feedId,
    key,
  ])) as string | undefined;
}

const HELD_COLUMNS = 'key, fingerprint, key_source, entry, position, held_at';

/** The held entry of the feed with this key, or the first one (document order) whose guid, else URL, is `text`. */
export async function findHeldEntry(
  db: Sql,
  feedId: string,
  text: string,
): Promise<(HeldEntry & { matched_by: 'id' | 'guid' | 'url' }) | undefined> {
  const byKey = await db.get(
    `SELECT ${HELD_COLUMNS}, 'id' AS matched_by FROM held_entries WHERE feed_id = ? AND key = ?`,
    [feedId, text],
  );
  if (byKey !== undefined) return byKey as HeldEntry & { matched_by: 'id' };
  return (await heldBy(db, 'guid', feedId, text)) ?? (await heldBy(db, 'url', feedId, text));
}

/** The first held entry of the feed (document order) whose `field` is `text`: one seek in held_entries_by_guid (or
 *  _by_url), which orders the entries sharing a value by position, so the first one read is the answer. */
async function heldBy<F extends 'guid' | 'url'>(
  db: Sql,
  field: F,
  feedId: string,
  text: string,
): Promise<(HeldEntry & { matched_by: F }) | undefined> {
  return db.get<HeldEntry & { matched_by: F }>(
    `SELECT ${HELD_COLUMNS}, '${field}' AS matched_by FROM held_entries
     WHERE feed_id = ? AND ${jsonText(db, 'entry', field)} = ? ORDER BY position LIMIT 1`,
    [feedId, text],
  );
}
