// SQL for the entry history: each feed's newest entries as webhooks show them, with the facts the trace reads (the
// key's source, when and by which fetch it was first seen, what was done with it), bounded per feed in entries and bytes.
import type { Sql } from '../db/engine.ts';
import type { IdentityKey } from '../feed/identity/keys.ts';
import type { KnownEntries } from '../feed/parse/read-document.ts';
import { changeFeedStorage, HISTORY_ROW_BYTES } from './storage.ts';
import { jsonText } from './sql.ts';

/** What was done with an entry the feed showed: recorded by a baseline (never sent), sent to the subscriptions active
 *  then, recorded as seen by a parser upgrade (never sent), or held by the churn guard, then released or discarded. */
export type HistoryFate = 'baseline' | 'new' | 'revealed' | 'released' | 'discarded';
export type HistoryVia = 'poll' | 'push';

/** One stored entry: `entry` is its JSON exactly as a webhook carries it. */
export type HistoryRow = {
  key: string;
  key_source: string | null;
  entry: string;
  content_hash: string;
  first_seen_at: string;
  via: HistoryVia;
  fate: HistoryFate;
  changed_at: string | null;
};

/** What one feed's history keeps: its `entries` newest entries within `bytes` of JSON, but never fewer than `floor`. */
export type HistoryLimits = { entries: number; bytes: number; floor: number };

/** A row to store: its entry and facts, and the source hash of its texts (feed/parse/entry.ts sourceHash; null when
 *  it was read finished). */
export type NewHistoryRow = Omit<HistoryRow, 'changed_at'> & { source_hash?: string | null };

/** Stores entries the feed had not stored yet, oldest first (the order they are given in, so that of one document the
 *  entry above another one is the newer); a stored key keeps its row. Returns how many were new. */
export async function insertHistory(
  db: Sql,
  feedId: string,
  rows: Iterable<NewHistoryRow>,
): Promise<number> {
  if (db.dialect === 'postgres') {
    // One statement for the document, its rows numbered in the order given (rowid orders entries first seen together).
    const list = [...rows];
    if (list.length === 0) return 0;
    const sizes = await db.column<number>(
      `INSERT INTO entry_history (feed_id, key, key_source, entry, content_hash, first_seen_at, via, fate, source_hash)
       SELECT @feed, r.key, r.key_source, r.entry, r.content_hash, r.first_seen_at, r.via, r.fate, r.source_hash
         FROM ROWS FROM (json_to_recordset(@rows::json) AS (key text, key_source text, entry text,
                content_hash text, first_seen_at text, via text, fate text, source_hash text))
              WITH ORDINALITY AS r(key, key_source, entry, content_hash, first_seen_at, via, fate, source_hash, n)
        ORDER BY r.n
       ON CONFLICT DO NOTHING RETURNING octet_length(entry)`,
      { feed: feedId, rows: JSON.stringify(list) },
    );
    await changeFeedStorage(db, feedId, {
      bytes: sizes.reduce((n, size) => n + size + HISTORY_ROW_BYTES, 0),
    });
    return sizes.length;
  }
  const insert = `INSERT INTO entry_history (feed_id, key, key_source, entry, content_hash, first_seen_at, via, fate,
                                            source_hash)
     VALUES (@feed, @key, @key_source, @entry, @content_hash, @first_seen_at, @via, @fate, @source_hash)
     ON CONFLICT DO NOTHING`;
  let added = 0;
  let bytes = 0;
  for (const row of rows) {
    const n = await db.run(insert, { feed: feedId, ...row, source_hash: row.source_hash ?? null });
    added += n;
    bytes += n * (Buffer.byteLength(row.entry) + HISTORY_ROW_BYTES);
  }
  await changeFeedStorage(db, feedId, { bytes });
  return added;
}

/** The stored content hash and first sighting of each entry of the feed's history (at most its bound: one read per
 *  poll). */
export async function historyHashes(
  db: Sql,
  feedId: string,
): Promise<Map<string, Pick<HistoryRow, 'content_hash' | 'first_seen_at'>>> {
  const rows = await db.all<Pick<HistoryRow, 'key' | 'content_hash' | 'first_seen_at'>>(
    'SELECT key, content_hash, first_seen_at FROM entry_history WHERE feed_id = ?',
    [feedId],
  );
  return new Map(rows.map((r) => [r.key, r]));
}

/** Stores a new version of a stored entry (its JSON and content hash), changed at `at`. */
export async function storeNewVersion(
  db: Sql,
  feedId: string,
  row: Pick<NewHistoryRow, 'key' | 'entry' | 'content_hash' | 'source_hash'>,
  at: Date,
): Promise<void> {
  const before = (await db.value(
    'SELECT octet_length(entry) FROM entry_history WHERE feed_id = ? AND key = ?',
    [feedId, row.key],
  )) as number | undefined;
  if (before === undefined) return;
  await db.run(
    `UPDATE entry_history SET entry = ?, content_hash = ?, source_hash = ?, changed_at = ?
      WHERE feed_id = ? AND key = ?`,
    [row.entry, row.content_hash, row.source_hash ?? null, at.toISOString(), feedId, row.key],
  );
  await changeFeedStorage(db, feedId, { bytes: Buffer.byteLength(row.entry) - before });
}

/** What a document of the feed is read against (feed/parse/read-document.ts KnownEntries): its key source, and its
 *  stored entries that have a source hash (at most the history's bound); one read per changed document, before it is
 *  read. Undefined when the feed is gone, or was last read by another parser version than `parserVersion` (which
 *  reads its entries anew: actions/ingest/entries.ts stores what it reads differently). */
export async function knownEntries(
  db: Sql,
  feedId: string,
  parserVersion: number,
): Promise<KnownEntries | undefined> {
  const rows = await db.all<{
    identity_key: IdentityKey;
    parser_version: number;
    source_hash: string | null;
    key: string | null;
    content_hash: string | null;
  }>(
    `SELECT f.identity_key, f.parser_version, h.source_hash, h.key, h.content_hash
       FROM feeds f LEFT JOIN entry_history h ON h.feed_id = f.id AND h.source_hash IS NOT NULL
      WHERE f.id = ?`,
    [feedId],
  );
  if (rows.length === 0 || rows[0]!.parser_version !== parserVersion) return undefined;
  return {
    identityKey: rows[0]!.identity_key,
    rows: rows.flatMap((r) =>
      r.source_hash === null
        ? []
        : [[r.source_hash, r.key!, r.content_hash!] as [string, string, string]],
    ),
  };
}

/** Deletes the feed's oldest entries beyond its limits (see HistoryLimits); returns how many. Call after storing. */
export async function boundHistory(
  db: Sql,
  feedId: string,
  limits: HistoryLimits,
): Promise<number> {
  const sizes = await db.all<{ rowid: number; size: number }>(
    `SELECT rowid, octet_length(entry) AS size FROM entry_history WHERE feed_id = ?
     ORDER BY first_seen_at DESC, rowid DESC`,
    [feedId],
  );
  let bytes = 0;
  const cut = sizes.findIndex(({ size }, i) => {
    bytes += size;
    return i >= limits.entries || (i >= limits.floor && bytes > limits.bytes);
  });
  if (cut < 0) return 0;
  const del = 'DELETE FROM entry_history WHERE rowid = ?';
  let freed = 0;
  for (const { rowid, size } of sizes.slice(cut)) {
    await db.run(del, [rowid]);
    freed += size + HISTORY_ROW_BYTES;
  }
  await changeFeedStorage(db, feedId, { bytes: -freed });
  return sizes.length - cut;
}

/** Up to `limit` of the feed's stored entries, newest first, after the entry `afterKey` (none when it is not stored:
 *  an entry pruned meanwhile was older than everything still stored). */
export async function recentHistory(
  db: Sql,
  feedId: string,
  limit: number,
  afterKey?: string,
): Promise<HistoryRow[]> {
  if (afterKey === undefined)
    return db.all<HistoryRow>(
      `SELECT key, key_source, entry, content_hash, first_seen_at, via, fate, changed_at FROM entry_history
       WHERE feed_id = ? ORDER BY first_seen_at DESC, rowid DESC LIMIT ?`,
      [feedId, limit],
    );
  return db.all<HistoryRow>(
    `SELECT key, key_source, entry, content_hash, first_seen_at, via, fate, changed_at FROM entry_history
     WHERE feed_id = @feed AND (first_seen_at, rowid) <
       (SELECT first_seen_at, rowid FROM entry_history WHERE feed_id = @feed AND key = @after)
     ORDER BY first_seen_at DESC, rowid DESC LIMIT @limit`,
    { feed: feedId, after: afterKey, limit },
  );
}

const HISTORY_COLUMNS =
  'key, key_source, entry, content_hash, first_seen_at, via, fate, changed_at';

/** The stored entry of the feed with this key, or the newest one whose guid, else whose URL, is `text`. */
export async function findHistory(
  db: Sql,
  feedId: string,
  text: string,
): Promise<(HistoryRow & { matched_by: 'id' | 'guid' | 'url' }) | undefined> {
  const byKey = await db.get(
    `SELECT ${HISTORY_COLUMNS}, 'id' AS matched_by FROM entry_history WHERE feed_id = ? AND key = ?`,
    [feedId, text],
  );
  if (byKey !== undefined) return byKey as HistoryRow & { matched_by: 'id' };
  return (await historyBy(db, 'guid', feedId, text)) ?? (await historyBy(db, 'url', feedId, text));
}

/** The newest stored entry of the feed whose `field` is `text`: one seek in entry_history_by_guid (or _by_url), which
 *  orders the entries sharing a value by first sighting, then rowid, so the newest is the first one read. */
async function historyBy<F extends 'guid' | 'url'>(
  db: Sql,
  field: F,
  feedId: string,
  text: string,
): Promise<(HistoryRow & { matched_by: F }) | undefined> {
  return db.get<HistoryRow & { matched_by: F }>(
    `SELECT ${HISTORY_COLUMNS}, '${field}' AS matched_by FROM entry_history
     WHERE feed_id = ? AND ${jsonText(db, 'entry', field)} = ? ORDER BY first_seen_at DESC, rowid DESC LIMIT 1`,
    [feedId, text],
  );
}

/** Deletes the feed's stored entries whose key the feed no longer stores (the key was pruned): an entry in the history
 *  never outlives the key that makes it known. Returns how many. */
export async function pruneHistoryWithoutKeys(db: Sql, feedId: string): Promise<number> {
  const sizes = await db.column<number>(
    `DELETE FROM entry_history WHERE feed_id = @feed AND NOT EXISTS (
       SELECT 1 FROM entries e WHERE e.feed_id = @feed AND e.key = entry_history.key)
     RETURNING octet_length(entry)`,
    { feed: feedId },
  );
  const bytes = sizes.reduce((sum, size) => sum + size + HISTORY_ROW_BYTES, 0);
  await changeFeedStorage(db, feedId, { bytes: -bytes });
  return sizes.length;
}

/** Number of stored entries of the feed. */
export async function countHistory(db: Sql, feedId: string): Promise<number> {
  return (await db.value('SELECT count(*) FROM entry_history WHERE feed_id = ?', [
    feedId,
  ])) as number;
}
