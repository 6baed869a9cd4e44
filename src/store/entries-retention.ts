// SQL for bounding entry keys and held entries: which keys have been gone long enough to prune, deleting them in small
// batches, trimming a hold past its cap, and emptying a feed before it is deleted.
import type { Sql } from '../db/engine.ts';
import { forgetHeldEntries } from './entries.ts';
import { pruneHistoryWithoutKeys } from './entry-history.ts';
import { changeFeedStorage, KEY_ROW_BYTES } from './storage.ts';
import { jsonValues } from './sql.ts';

/** Which of a feed's keys may be pruned: those last shown before `windowStart`, and at or after `last` in newest-first
 *  order (seen_at, then key), the first key beyond the feed's `keep` most recently shown. */
export type KeyPruneBound = { windowStart: string; last: { seenAt: string; key: string } };

/** The feed's keys that may be pruned, or undefined when none may: keys not shown within `windowMs` before the feed's
 *  latest sighting (so a feed whose document stopped changing keeps every key), and never one of its `keep` most
 *  recently shown keys. */
export async function keyPruneBound(
  db: Sql,
  feedId: string,
  windowMs: number,
  keep: number,
): Promise<KeyPruneBound | undefined> {
  const last = await db.get<{ seenAt: string | null; key: string }>(
    'SELECT seen_at AS "seenAt", key FROM entries WHERE feed_id = ? ORDER BY seen_at DESC, key DESC LIMIT 1 OFFSET ?',
    [feedId, keep],
  );
  if (last === undefined || last.seenAt === null) return undefined;
  const latest = (await db.value('SELECT max(seen_at) FROM entries WHERE feed_id = ?', [
    feedId,
  ])) as string;
  const windowStart = new Date(Date.parse(latest) - windowMs).toISOString();
  return { windowStart, last: { seenAt: last.seenAt, key: last.key } };
}

/** Deletes up to `limit` of the feed's keys within `bound`, least recently shown first; returns how many. */
export async function deleteKeysWithin(
  db: Sql,
  feedId: string,
  bound: KeyPruneBound,
  limit: number,
): Promise<number> {
  const deleted = await db.run(
    `DELETE FROM entries WHERE feed_id = @feed AND key IN (
       SELECT key FROM entries WHERE feed_id = @feed AND seen_at < @windowStart AND (seen_at, key) <= (@seenAt, @key)
       ORDER BY seen_at, key LIMIT @limit)`,
    { feed: feedId, windowStart: bound.windowStart, ...bound.last, limit },
  );
  await changeFeedStorage(db, feedId, { keys: -deleted, bytes: -deleted * KEY_ROW_BYTES });
  return deleted;
}

/** Deletes up to `limit` of the feed's least recently shown keys (seen_at, then key) that are not among `keep` (every
 *  key the feed's latest document could be matched by), and the history of the keys that went; returns how many keys
 *  went. */
export async function pruneKeysBeyond(
  db: Sql,
  feedId: string,
  keep: readonly string[],
  limit: number,
): Promise<number> {
  const deleted = await db.run(
    `DELETE FROM entries WHERE feed_id = @feed AND key IN (
       SELECT key FROM entries WHERE feed_id = @feed AND key NOT IN (${jsonValues(db, '@keep')})
       ORDER BY seen_at, key LIMIT @limit)`,
    { feed: feedId, keep: JSON.stringify(keep), limit },
  );
  await changeFeedStorage(db, feedId, { keys: -deleted, bytes: -deleted * KEY_ROW_BYTES });
  if (deleted > 0) await pruneHistoryWithoutKeys(db, feedId);
  return deleted;
}

/** Number of keys the feed stores (aliases included). */
export async function countFeedKeys(db: Sql, feedId: string): Promise<number> {
  return (await db.value('SELECT count(*) FROM entries WHERE feed_id = ?', [feedId])) as number;
}

/** Deletes up to `limit` held entries of the feed from the end of the hold in document order (what the cap does not
 *  keep: it was lowered, or the hold was made without one); returns how many. */
export async function trimHeldEntries(db: Sql, feedId: string, limit: number): Promise<number> {
  const sizes = await db.column<number>(
    `DELETE FROM held_entries WHERE feed_id = @feed AND key IN (
       SELECT key FROM held_entries WHERE feed_id = @feed ORDER BY position DESC, held_at DESC LIMIT @limit)
     RETURNING octet_length(entry)`,
    { feed: feedId, limit },
  );
  return forgetHeldEntries(db, feedId, sizes);
}

/** Deletes up to `limit` of the feed's held entries, then up to the rest of `limit` of its keys: a feed about to be
 *  deleted is emptied a batch at a time. Returns how many rows went. */
export async function emptyFeed(db: Sql, feedId: string, limit: number): Promise<number> {
  const sizes = await db.column<number>(
    `DELETE FROM held_entries WHERE feed_id = @feed AND key IN (SELECT key FROM held_entries WHERE feed_id = @feed LIMIT @limit)
     RETURNING octet_length(entry)`,
    { feed: feedId, limit },
  );
  const held = await forgetHeldEntries(db, feedId, sizes);
  if (held === limit) return held;
  const keys = await db.run(
    'DELETE FROM entries WHERE feed_id = @feed AND key IN (SELECT key FROM entries WHERE feed_id = @feed LIMIT @limit)',
    { feed: feedId, limit: limit - held },
  );
  await changeFeedStorage(db, feedId, { keys: -keys, bytes: -keys * KEY_ROW_BYTES });
  return held + keys;
}
