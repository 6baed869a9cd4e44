// SQL for bounding entry keys and held entries: which keys have been gone long enough to prune, deleting them in small
// batches, trimming a hold past its cap, and emptying a feed before it is deleted.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

/** The seen_at before which the feed's keys may be pruned, or undefined when none may: keys not shown within `windowMs`
 *  before the feed's latest sighting (so a feed whose document stopped changing keeps every key), and never one of its
 *  `keep` most recently shown keys (the bound is the seen_at of the keep+1-th, exclusive). */
export function keyPruneBound(
  db: Db,
  feedId: string,
  windowMs: number,
  keep: number,
): string | undefined {
  const beyond = prepared(
    db,
    'SELECT seen_at FROM entries WHERE feed_id = ? ORDER BY seen_at DESC LIMIT 1 OFFSET ?',
  )
    .pluck()
    .get(feedId, keep) as string | null | undefined;
  if (beyond === undefined || beyond === null) return undefined;
  const latest = prepared(db, 'SELECT max(seen_at) FROM entries WHERE feed_id = ?')
    .pluck()
    .get(feedId) as string;
  const windowStart = new Date(Date.parse(latest) - windowMs).toISOString();
  return windowStart < beyond ? windowStart : beyond;
}

/** Deletes up to `limit` of the feed's keys last shown before `before`, oldest first; returns how many. */
export function deleteKeysSeenBefore(
  db: Db,
  feedId: string,
  before: string,
  limit: number,
): number {
  return prepared(
    db,
    `DELETE FROM entries WHERE feed_id = @feed AND key IN (
       SELECT key FROM entries WHERE feed_id = @feed AND seen_at < @before ORDER BY seen_at LIMIT @limit)`,
  ).run({ feed: feedId, before, limit }).changes;
}

/** Number of keys the feed stores (aliases included). */
export function countFeedKeys(db: Db, feedId: string): number {
  return prepared(db, 'SELECT count(*) FROM entries WHERE feed_id = ?')
    .pluck()
    .get(feedId) as number;
}

/** Deletes up to `limit` held entries of the feed from the end of the hold in document order (what a lowered cap, or a
 *  hold made before there was one, no longer keeps); returns how many. */
export function trimHeldEntries(db: Db, feedId: string, limit: number): number {
  return prepared(
    db,
    `DELETE FROM held_entries WHERE feed_id = @feed AND key IN (
       SELECT key FROM held_entries WHERE feed_id = @feed ORDER BY position DESC, held_at DESC LIMIT @limit)`,
  ).run({ feed: feedId, limit }).changes;
}

/** Deletes up to `limit` of the feed's held entries, then up to the rest of `limit` of its keys: a feed about to be
 *  deleted is emptied a batch at a time. Returns how many rows went. */
export function emptyFeed(db: Db, feedId: string, limit: number): number {
  const held = prepared(
    db,
    'DELETE FROM held_entries WHERE feed_id = @feed AND key IN (SELECT key FROM held_entries WHERE feed_id = @feed LIMIT @limit)',
  ).run({ feed: feedId, limit }).changes;
  if (held === limit) return held;
  return (
    held +
    prepared(
      db,
      'DELETE FROM entries WHERE feed_id = @feed AND key IN (SELECT key FROM entries WHERE feed_id = @feed LIMIT @limit)',
    ).run({ feed: feedId, limit: limit - held }).changes
  );
}
