// The entry history as use-cases: storing what a document showed (bounded per feed), telling a new version of a known
// entry from the stored one, and the list the API and the dashboard show (backfills read it: actions/backfills.ts).
import type { Ctx } from '../context.ts';
import type { Entry } from '../feed/types.ts';
import { RawJson } from '../rawjson.ts';
import {
  boundHistory,
  historyHashes,
  insertHistory,
  recentHistory,
  storeNewVersion,
  type HistoryFate,
  type HistoryVia,
} from '../store/entry-history.ts';
import type { FeedRow } from '../store/feeds.ts';
import type { Page } from '../store/page.ts';
import { activeSubscriptionsOfFeed } from '../store/subscriptions.ts';
import { entryJson, type EventEntry } from '../webhook/event.ts';
import { queueEntriesFor, toEventEntry } from './entry-events.ts';
import { entrySieve } from './filter.ts';

/** Never fewer entries per feed than this, whatever their size (docs/webhooks.md › Entry history). */
export const HISTORY_FLOOR = 50;

/** An entry of a document with its key, the identity source the key came from, its content hash
 *  (feed/identity/content-hash.ts, computed with the document) and the source hash of its texts (null or absent when
 *  it has none: feed/parse/entry.ts sourceHash). */
export type KeyedEntry = {
  key: string;
  source: string | null;
  entry: Entry;
  hash: string;
  sourceHash?: string | null;
};
/** The feed and the feed-level fields events show. */
type EventFeedSource = {
  feed: Pick<FeedRow, 'id' | 'url' | 'discovered_url'>;
  meta: { title: string | null; site_url: string | null };
};

/** Stores a document's entries (document order, newest first) as first seen at `firstSeenAt` by `via`, with what
 *  was done with them, then trims the feed's history to its bound. Entries stored already keep their facts. */
export async function recordHistory(
  ctx: Ctx,
  feedId: string,
  entries: KeyedEntry[],
  facts: { firstSeenAt: string | ((e: KeyedEntry) => string); fate: HistoryFate; via: HistoryVia },
): Promise<number> {
  if (entries.length === 0) return 0;
  const r = ctx.config.retention;
  // Inserted oldest first, so that among entries first seen at the same time the newest has the highest rowid.
  let candidates = [...entries].reverse().map((e) => ({
    e,
    at: typeof facts.firstSeenAt === 'string' ? facts.firstSeenAt : facts.firstSeenAt(e),
  }));
  // More entries than the history keeps (a release of a large hold, a baseline): those stored already would be
  // ignored, and of the rest only the newest entry_history_per_feed can outlast the bound below, which would delete
  // the others at once. Neither is inserted, nor its JSON made: a large share of a release chunk's work otherwise.
  if (candidates.length > r.entry_history_per_feed) {
    const stored = new Set((await historyHashes(ctx.db, feedId)).keys());
    // A key met again is ignored as well: the first one inserted stays.
    const fresh = candidates.filter((c) => !stored.has(c.e.key) && !!stored.add(c.e.key));
    const ranked = fresh
      .map((c, i) => ({ at: c.at, i }))
      .sort((a, b) => (a.at === b.at ? b.i - a.i : a.at < b.at ? 1 : -1));
    const kept = new Set(ranked.slice(0, r.entry_history_per_feed).map((x) => x.i));
    candidates = fresh.filter((_, i) => kept.has(i));
  }
  const rows = candidates.map(({ e, at }) => ({
    key: e.key,
    key_source: e.source,
    entry: entryJson(toEventEntry(e.key, e.entry, new Date(at))),
    content_hash: e.hash,
    source_hash: e.sourceHash ?? null,
    first_seen_at: at,
    via: facts.via,
    fate: facts.fate,
  }));
  const added = await insertHistory(ctx.db, feedId, rows);
  await boundHistory(ctx.db, feedId, {
    entries: r.entry_history_per_feed,
    bytes: r.entry_history_bytes_per_feed,
    floor: HISTORY_FLOOR,
  });
  return added;
}

/** The known entries of a document (not a baseline) whose title, summary, content or updated date changed since the
 *  stored version: the new version is stored, and returned as events carry it (at most once per key). Entries no
 *  longer in the history are not compared. */
export async function storeNewVersions(
  ctx: Ctx,
  feedId: string,
  known: KeyedEntry[],
  now: Date,
): Promise<EventEntry[]> {
  if (known.length === 0) return [];
  const stored = await historyHashes(ctx.db, feedId);
  const changed: EventEntry[] = [];
  for (const k of known) {
    const before = stored.get(k.key);
    const hash = k.hash;
    if (before === undefined || before.content_hash === hash) continue;
    stored.set(k.key, { ...before, content_hash: hash }); // a key twice in one document: one update
    // An undated entry keeps the date its first version was given (its first sighting).
    const event = toEventEntry(k.key, k.entry, new Date(before.first_seen_at));
    const entry = entryJson(event);
    await storeNewVersion(
      ctx.db,
      feedId,
      { key: k.key, entry, content_hash: hash, source_hash: k.sourceHash ?? null },
      now,
    );
    changed.push(JSON.parse(entry) as EventEntry);
  }
  return changed;
}

/** Queues subscription.entries_updated with the new versions for every active subscription of the feed that opted in
 *  (`updates`), created by the time the fetch that saw them began, whose endpoint receives the type, of the versions
 *  its filter sends (judged on the new version); returns how many events. */
export async function queueEntryUpdates(
  ctx: Ctx,
  source: EventFeedSource,
  entries: EventEntry[],
  seenAt: Date,
): Promise<number> {
  if (entries.length === 0) return 0;
  let count = 0;
  const seen = seenAt.toISOString();
  const sieve = entrySieve(ctx);
  for (const sub of await activeSubscriptionsOfFeed(
    ctx.db,
    source.feed.id,
    'subscription.entries_updated',
  )) {
    if (sub.updates !== 1 || sub.created_at > seen) continue;
    const sent = await sieve(sub, entries);
    if (sent.length === 0) continue;
    count += await queueEntriesFor(ctx, sub, source, sent, seenAt, {
      type: 'subscription.entries_updated',
    });
  }
  return count;
}

/** One page of the feed's stored entries, newest first, as events carry them; `next` is the id to pass as `after`. */
export async function listHistory(
  ctx: Ctx,
  feedId: string,
  q: { limit: number; after?: string | undefined },
): Promise<Page<RawJson>> {
  const rows = await recentHistory(ctx.db, feedId, q.limit + 1, q.after);
  const data = rows.slice(0, q.limit);
  return {
    data: data.map((r) => new RawJson(r.entry)),
    next: rows.length > q.limit ? (data.at(-1)?.key ?? null) : null,
  };
}
