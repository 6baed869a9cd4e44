// SQL for what the storage budget counts (quotas.storage_bytes_per_application; docs/decisions/storage-budget.md): the
// bytes each feed keeps (its entry keys, held entries, entry history and identity probe), the application that alone
// uses it, and per application the bytes of those feeds and of its events. The writes that add or remove rows change
// the counts in their own transaction; the maintenance pass recounts them from the rows.
import type { Sql } from '../db/engine.ts';

// What a row is counted as: the bytes of its JSON (or body) as stored, plus a fixed amount for its other columns and
// its index entries, as dbstat shows rows of the usual shape. SQLite's pages add their slack on top.
/** An entry key: its row of entries and its entries_seen entry. */
export const KEY_ROW_BYTES = 255;
/** Beside a held entry's JSON: its key, fingerprint and times, and its two index entries. */
export const HELD_ROW_BYTES = 390;
/** Beside an entry history row's JSON: its key, hash and facts, and its two index entries. */
export const HISTORY_ROW_BYTES = 300;
/** Beside an identity probe's JSON. */
export const PROBE_ROW_BYTES = 50;
/** Beside an event's body: its row and its index entries, and its body's row. */
export const EVENT_ROW_BYTES = 700;
/** Per entry an event carries: its event_entries row and index entry. */
export const EVENT_ENTRY_BYTES = 205;
/** Per attempt of an event, beside the response it keeps: its row and its two index entries. */
export const ATTEMPT_ROW_BYTES = 260;

/** The bytes counted for an event with this body carrying `entries` entries. */
export function eventBytes(body: string, entries: number): number {
  return Buffer.byteLength(body) + EVENT_ROW_BYTES + entries * EVENT_ENTRY_BYTES;
}

/** The bytes counted for an attempt that kept this response. */
export function attemptBytes(responseBody: string | null): number {
  return ATTEMPT_ROW_BYTES + (responseBody === null ? 0 : Buffer.byteLength(responseBody));
}

/** A change to what a feed stores: entry keys (added, or removed when negative) and bytes. */
export type FeedStorageChange = { keys?: number; bytes: number };

/** Adds `change` to the feed's counts and, when one application alone uses the feed, to that application's. Call in
 *  the transaction that made the change. */
export async function changeFeedStorage(
  db: Sql,
  feedId: string,
  change: FeedStorageChange,
): Promise<void> {
  const keys = change.keys ?? 0;
  if (keys === 0 && change.bytes === 0) return;
  const sole = (await db.value(
    `UPDATE feeds SET stored_keys = stored_keys + ?, stored_bytes = stored_bytes + ? WHERE id = ?
     RETURNING sole_application_id`,
    [keys, change.bytes, feedId],
  )) as string | null | undefined;
  if (sole) await changeApplicationFeedBytes(db, sole, feedId, change.bytes);
}

/** Adds `bytes` to the application's count of the feeds it alone uses, for a change to feed `feedId`; a change behind
 *  the maintenance pass's walk of those feeds is noted for the walk. */
async function changeApplicationFeedBytes(
  db: Sql,
  applicationId: string,
  feedId: string,
  bytes: number,
) {
  if (bytes === 0) return;
  await db.run(
    `INSERT INTO application_storage (application_id, feed_bytes) VALUES (@app, @bytes)
     ON CONFLICT (application_id) DO UPDATE SET feed_bytes = application_storage.feed_bytes + @bytes,
       feed_walk_change = application_storage.feed_walk_change
         + CASE WHEN @feed <= application_storage.feed_walk_at THEN @bytes ELSE 0 END`,
    { app: applicationId, bytes, feed: feedId },
  );
}

/** Adds `bytes` to the application's count of its events' bytes, for a change to event `eventId` (made, grown by an
 *  attempt, or deleted: negative); a change behind the maintenance pass's walk of its events is noted for the walk. */
export async function changeEventStorage(
  db: Sql,
  applicationId: string,
  eventId: string,
  bytes: number,
): Promise<void> {
  if (bytes === 0) return;
  await db.run(
    `INSERT INTO application_storage (application_id, event_bytes) VALUES (@app, @bytes)
     ON CONFLICT (application_id) DO UPDATE SET event_bytes = application_storage.event_bytes + @bytes,
       event_walk_change = application_storage.event_walk_change
         + CASE WHEN @event <= application_storage.event_walk_at THEN @bytes ELSE 0 END`,
    { app: applicationId, bytes, event: eventId },
  );
}

/** Deleted events as their DELETE … RETURNING reads them. */
export type DeletedEvent = { id: string; application_id: string; stored_bytes: number };

/** Takes deleted events out of their applications' counts. Call in the transaction that deleted them. */
export async function forgetEvents(db: Sql, deleted: readonly DeletedEvent[]): Promise<void> {
  for (const e of deleted) await changeEventStorage(db, e.application_id, e.id, -e.stored_bytes);
}

/** Records which application alone uses the feed now (after a subscription to it was made or deleted; null: none, or
 *  several) and moves the feed's bytes from the application that had them to the one that has them now. */
export async function refreshSoleApplication(db: Sql, feedId: string): Promise<void> {
  const apps = await db.column<string>(
    'SELECT DISTINCT application_id FROM subscriptions WHERE feed_id = ? LIMIT 2',
    [feedId],
  );
  const sole = apps.length === 1 ? apps[0]! : null;
  const feed = await db.get<{ sole_application_id: string | null; stored_bytes: number }>(
    'SELECT sole_application_id, stored_bytes FROM feeds WHERE id = ?',
    [feedId],
  );
  if (feed === undefined || feed.sole_application_id === sole) return;
  await db.run('UPDATE feeds SET sole_application_id = ? WHERE id = ?', [sole, feedId]);
  if (feed.sole_application_id !== null)
    await changeApplicationFeedBytes(db, feed.sole_application_id, feedId, -feed.stored_bytes);
  if (sole !== null) await changeApplicationFeedBytes(db, sole, feedId, feed.stored_bytes);
}

/** How many entry keys the feed stores, as counted (0 for a feed that is gone). */
export async function storedKeyCount(db: Sql, feedId: string): Promise<number> {
  return (
    ((await db.value('SELECT stored_keys FROM feeds WHERE id = ?', [feedId])) as
      number | undefined) ?? 0
  );
}

/** What an application keeps: the bytes of the feeds only its subscriptions use, and of its events. */
export type ApplicationStorage = { feed_bytes: number; event_bytes: number };

/** The application's counts (zero before it kept anything). */
export async function applicationStorage(
  db: Sql,
  applicationId: string,
): Promise<ApplicationStorage> {
  return (
    (await db.get<ApplicationStorage>(
      'SELECT feed_bytes, event_bytes FROM application_storage WHERE application_id = ?',
      [applicationId],
    )) ?? { feed_bytes: 0, event_bytes: 0 }
  );
}

/** What a feed stores, counted from its rows. */
export type FeedStorage = { keys: number; held: number; bytes: number };

/** Counts what the feed stores from its rows, as the writes count it: its keys, held entries, history and probe. Each
 *  is bounded per feed ([retention]), so this is a few index ranges and at most a few thousand small row reads. */
export async function countFeedStorage(db: Sql, feedId: string): Promise<FeedStorage> {
  const keys = (await db.value('SELECT count(*) FROM entries WHERE feed_id = ?', [
    feedId,
  ])) as number;
  const held = (await db.get<{ n: number; bytes: number }>(
    'SELECT count(*) AS n, coalesce(sum(octet_length(entry)), 0) AS bytes FROM held_entries WHERE feed_id = ?',
    [feedId],
  ))!;
  const history = (await db.get<{ n: number; bytes: number }>(
    'SELECT count(*) AS n, coalesce(sum(octet_length(entry)), 0) AS bytes FROM entry_history WHERE feed_id = ?',
    [feedId],
  ))!;
  const probe =
    ((await db.value('SELECT octet_length(probe) FROM feed_probes WHERE feed_id = ?', [feedId])) as
      number | undefined) ?? null;
  return {
    keys,
    held: held.n,
    bytes:
      keys * KEY_ROW_BYTES +
      held.bytes +
      held.n * HELD_ROW_BYTES +
      history.bytes +
      history.n * HISTORY_ROW_BYTES +
      (probe === null ? 0 : probe + PROBE_ROW_BYTES),
  };
}

/** Sets the feed's counts and its sole application to what its rows and subscriptions are now, moving the difference
 *  to the applications' counts; returns what it counted and how many bytes the counts were off by (0 when exact).
 *  Call inside a transaction. */
export async function recountFeedStorage(
  db: Sql,
  feedId: string,
): Promise<(FeedStorage & { drift: number }) | undefined> {
  await refreshSoleApplication(db, feedId);
  const stored = await db.get<{ stored_keys: number; stored_bytes: number }>(
    'SELECT stored_keys, stored_bytes FROM feeds WHERE id = ?',
    [feedId],
  );
  if (stored === undefined) return undefined;
  const counted = await countFeedStorage(db, feedId);
  await changeFeedStorage(db, feedId, {
    keys: counted.keys - stored.stored_keys,
    bytes: counted.bytes - stored.stored_bytes,
  });
  return { ...counted, drift: stored.stored_bytes - counted.bytes };
}

/** Which of an application's sums a walk recounts: the feeds only it uses, or its events. */
export type StoragePart = 'feed' | 'event';

/** One step of the maintenance pass's walk over an application's feeds or events, in id order: sums the stored bytes
 *  of up to `limit` of them after `after` (null: the walk starts, and what changed behind an earlier walk is
 *  forgotten), and notes how far the walk has come, so that a change behind it is added to what the walk counted. */
export async function walkStorage(
  db: Sql,
  applicationId: string,
  part: StoragePart,
  after: string | null,
  limit: number,
): Promise<{ n: number; bytes: number; last: string | null }> {
  const q = { app: applicationId, after: after ?? '', limit };
  let step: { n: number; bytes: number; last: string | null };
  // On PostgreSQL a change commits beside the step, not only between steps: the step holds the application's sums
  // until it ends, so a change either commits before its sum is read (and is in it) or updates the sums after the step
  // moved the walk (and, behind it, is added to the change).
  if (db.dialect === 'postgres' && after !== null)
    await db.get(
      'SELECT 1 AS locked FROM application_storage WHERE application_id = ? FOR UPDATE',
      [applicationId],
    );
  // A statement per part, each a literal (the plan test reads them from this file).
  if (part === 'feed') {
    if (after === null)
      await db.run(
        `INSERT INTO application_storage (application_id, feed_walk_at) VALUES (?, '')
         ON CONFLICT (application_id) DO UPDATE SET feed_walk_at = '', feed_walk_change = 0`,
        [applicationId],
      );
    step = (await db.get<typeof step>(
      `SELECT count(*) AS n, coalesce(sum(stored_bytes), 0) AS bytes, max(id) AS last FROM (
         SELECT id, stored_bytes FROM feeds WHERE sole_application_id = @app AND id > @after ORDER BY id LIMIT @limit) p`,
      q,
    ))!;
    if (step.last !== null)
      await db.run('UPDATE application_storage SET feed_walk_at = ? WHERE application_id = ?', [
        step.last,
        applicationId,
      ]);
  } else {
    if (after === null)
      await db.run(
        `INSERT INTO application_storage (application_id, event_walk_at) VALUES (?, '')
         ON CONFLICT (application_id) DO UPDATE SET event_walk_at = '', event_walk_change = 0`,
        [applicationId],
      );
    step = (await db.get<typeof step>(
      `SELECT count(*) AS n, coalesce(sum(stored_bytes), 0) AS bytes, max(id) AS last FROM (
         SELECT id, stored_bytes FROM events WHERE application_id = @app AND id > @after ORDER BY id LIMIT @limit) p`,
      q,
    ))!;
    if (step.last !== null)
      await db.run('UPDATE application_storage SET event_walk_at = ? WHERE application_id = ?', [
        step.last,
        applicationId,
      ]);
  }
  return step;
}

/** Ends a walk that counted `counted` bytes to its end (in this transaction): the application's sum becomes that plus
 *  what changed behind the walk meanwhile. Returns how many bytes the sum was off by (0 when exact). */
export async function finishStorageWalk(
  db: Sql,
  applicationId: string,
  part: StoragePart,
  counted: number,
): Promise<number> {
  type Sum = { sum: number; change: number } | undefined;
  if (part === 'feed') {
    const before = (await db.get<Sum>(
      'SELECT feed_bytes AS sum, feed_walk_change AS change FROM application_storage WHERE application_id = ?',
      [applicationId],
    ))!;
    if (before === undefined) return 0;
    await db.run(
      `UPDATE application_storage SET feed_bytes = ?, feed_walk_at = NULL, feed_walk_change = 0
       WHERE application_id = ?`,
      [counted + before.change, applicationId],
    );
    return before.sum - (counted + before.change);
  }
  const before = (await db.get<Sum>(
    'SELECT event_bytes AS sum, event_walk_change AS change FROM application_storage WHERE application_id = ?',
    [applicationId],
  ))!;
  if (before === undefined) return 0;
  await db.run(
    `UPDATE application_storage SET event_bytes = ?, event_walk_at = NULL, event_walk_change = 0
     WHERE application_id = ?`,
    [counted + before.change, applicationId],
  );
  return before.sum - (counted + before.change);
}

/** Up to `limit` application ids after `after`, in id order: the maintenance pass walks them a slice at a time. */
export async function applicationsAfter(db: Sql, after: string, limit: number): Promise<string[]> {
  return db.column<string>('SELECT id FROM applications WHERE id > ? ORDER BY id LIMIT ?', [
    after,
    limit,
  ]);
}
