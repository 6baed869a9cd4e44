// Storing a parsed document, inside the poll transaction: the first one is the baseline, identity churn is held,
// otherwise new entries are recorded and become events; then the feed's state and next poll.
import type { Ctx } from '../context.ts';
import { queueEntryEvents, toEventEntry } from '../actions/entry-events.ts';
import { isIdentityChurn } from '../feed/identity.ts';
import type { RefreshOutcome } from '../feed/refresh.ts';
import { nextPoll, type ScheduleLimits } from '../feed/schedule.ts';
import type { Entry, ParsedFeed } from '../feed/types.ts';
import { holdEntries, insertKeys, unseenKeys } from '../store/entries.ts';
import type { FeedRow } from '../store/feeds.ts';
import { recordPollSuccess } from '../store/feeds-poll.ts';
import { redirectState } from './redirect-state.ts';

/** What storing an outcome added: new entries (none for a baseline) and events queued. */
export type Stored = { newEntries: number; events: number };

/** Stores a parsed document's new entries (see storeEntries), then the feed's state and next poll. */
export function applyParsed(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Extract<RefreshOutcome, { kind: 'parsed' }>,
  now: Date,
  limits: ScheduleLimits,
): Stored {
  const { parsed, keys, meta } = outcome;
  const stored = storeEntries(ctx, feed, parsed, keys, now);
  const next = nextPoll(
    {
      kind: 'success',
      publishedAt: parsed.entries.map((e) => e.published_at),
      ttlSeconds: parsed.ttl_seconds,
      cacheSeconds: meta.cacheSeconds,
      previousIntervalSeconds: feed.interval_seconds,
    },
    limits,
  );
  const moved = redirectState(feed, meta.permanentRedirectTo, outcome.discoveredUrl);
  recordPollSuccess(
    ctx.db,
    feed.id,
    {
      status: stored.status,
      title: parsed.title,
      site_url: parsed.site_url,
      format: parsed.format,
      etag: meta.etag,
      last_modified: meta.lastModified,
      body_hash: outcome.bodyHash,
      last_http_status: meta.status,
      next_poll_at: new Date(now.getTime() + next.delaySeconds * 1000).toISOString(),
      interval_seconds: next.intervalSeconds,
      ttl_seconds: parsed.ttl_seconds,
      degraded: parsed.degraded,
      hub_url: parsed.hub_url,
      self_url: parsed.self_url,
      baseline_at: feed.baseline_at ?? now.toISOString(),
      entry_count: feed.entry_count + stored.added,
      ...moved,
    },
    now,
  );
  return { newEntries: feed.baseline_at === null ? 0 : stored.fresh, events: stored.events };
}

/** The document's unseen entries: on the first fetch their keys are the baseline and nothing is sent; when most keys
 *  are suddenly unseen (identity churn) they are held and the feed is marked identity_changed; else their keys are
 *  recorded and events queued. Returns the feed's status, the keys added, the unseen entries and the events. */
function storeEntries(
  ctx: Ctx,
  feed: FeedRow,
  parsed: ParsedFeed,
  keys: string[],
  now: Date,
): { status: FeedRow['status']; added: number; fresh: number; events: number } {
  const unseen = unseenKeys(ctx.db, feed.id, keys);
  const fresh = uniqueFresh(parsed.entries, keys, unseen);
  const status: FeedRow['status'] =
    feed.status === 'identity_changed' ? 'identity_changed' : 'active';
  const stored = { status, added: 0, fresh: fresh.length, events: 0 };
  if (feed.baseline_at === null) {
    return { ...stored, added: insertKeys(ctx.db, feed.id, keys, now) }; // the baseline: nothing is sent
  }
  if (isIdentityChurn({ knownBefore: feed.entry_count, total: keys.length, unseen: unseen.size })) {
    holdEntries(
      ctx.db,
      feed.id,
      fresh.map((f) => ({ key: f.key, entry: JSON.stringify(f.entry), position: f.position })),
      now,
    );
    return { ...stored, status: 'identity_changed' };
  }
  if (fresh.length === 0) return stored;
  const added = insertKeys(
    ctx.db,
    feed.id,
    fresh.map((f) => f.key),
    now,
  );
  const events = queueEntryEvents(
    ctx,
    feed,
    parsed,
    fresh.map((f) => toEventEntry(f.key, f.entry, now)),
    now,
  );
  return { ...stored, added, events };
}

/** Entries whose key is unseen, once each, in document order. */
function uniqueFresh(
  entries: Entry[],
  keys: string[],
  unseen: Set<string>,
): { key: string; entry: Entry; position: number }[] {
  const taken = new Set<string>();
  const out: { key: string; entry: Entry; position: number }[] = [];
  keys.forEach((key, i) => {
    if (!unseen.has(key) || taken.has(key)) return;
    taken.add(key);
    out.push({ key, entry: entries[i]!, position: i });
  });
  return out;
}
