// Turning newly seen entries into queued events for every active subscription of their feed (a polled or pushed
// document, a churn release), and the queueing every subscription event shares: who receives a type, and the
// subscription's sequence numbers.
import type { Ctx } from '../context.ts';
import { fromV1Entry } from '../feed/parse/entry.ts';
import type { Entry } from '../feed/types.ts';
import { newId } from '../ids.ts';
import { entrySieve, type EntrySieve } from './filter.ts';
import { recordEventEntries } from '../store/event-entries.ts';
import { insertEvent } from '../store/events.ts';
import type { FeedRow } from '../store/feeds.ts';
import {
  activeSubscriptionsOfFeed,
  allocateSequences,
  type SubscriptionRow,
} from '../store/subscriptions.ts';
import {
  buildEntryEvents,
  deliveryOrder,
  type BuiltEvent,
  type EntriesEventType,
  type EventEntry,
  type EventFeed,
  type SubscriptionEventType,
} from '../webhook/event.ts';

/** An entry as events carry it: its key as id; an undated entry gets its first-seen time. An entry held by version 1
 *  (without typed text) is typed first. */
export function toEventEntry(key: string, entry: Entry, firstSeen: Date): EventEntry {
  const typed = fromV1Entry(entry);
  return { id: key, ...typed, published_at: typed.published_at ?? firstSeen.toISOString() };
}

/** An entry to send and when feedsub first saw it (ISO 8601, as stored). */
export type SeenEntry = { entry: EventEntry; firstSeenAt: string };

/** Creates the events of every active subscription of the feed for `entries` (document order); returns how many.
 *  A subscription receives only the entries first seen at or after its creation (the baseline rule: one created
 *  while a fetch was in flight, or after entries were held, gets none of them), none when its endpoint's
 *  filter_types leaves entries out, and only those its filter sends (actions/filter.ts). Call inside the transaction
 *  that records the entries' keys. */
export async function queueEntryEvents(
  ctx: Ctx,
  feed: Pick<FeedRow, 'id' | 'url' | 'discovered_url'>,
  meta: { title: string | null; site_url: string | null },
  entries: SeenEntry[],
  now: Date,
  sieve: EntrySieve = entrySieve(ctx),
): Promise<number> {
  let count = 0;
  for (const sub of await activeSubscriptionsOfFeed(ctx.db, feed.id, 'subscription.entries')) {
    const own = entries.filter((e) => e.firstSeenAt >= sub.created_at).map((e) => e.entry);
    const sent = own.length === 0 ? own : await sieve(sub, own);
    if (sent.length === 0) continue;
    count += await queueEntriesFor(ctx, sub, { feed, meta }, sent, now);
  }
  return count;
}

/** Queues the events carrying `entries` (document order: newest first) to one subscription that receives their type,
 *  and records which entries each event carries (the trace reads it); returns how many events. */
export async function queueEntriesFor(
  ctx: Ctx,
  sub: SubscriptionRow,
  source: {
    feed: Pick<FeedRow, 'id' | 'url' | 'discovered_url'>;
    meta: { title: string | null; site_url: string | null };
  },
  entries: EventEntry[],
  now: Date,
  kind: { type?: EntriesEventType; backfill?: boolean } = {},
): Promise<number> {
  const ordered = deliveryOrder(entries);
  let built: BuiltEvent[] = [];
  const count = await queueSubscriptionEvents(
    ctx,
    sub,
    kind.type ?? 'subscription.entries',
    now,
    (firstSequence) =>
      (built = buildEntryEvents({
        subscription: { id: sub.id, url: sub.url, metadata: sub.metadata },
        feed: eventFeed(source.feed, source.meta),
        entries: ordered,
        now,
        firstSequence,
        newId: () => newId(now),
        ...kind,
      })),
  );
  let next = 0;
  for (const e of built) {
    const carried = ordered.slice(next, next + e.entryCount).map((entry) => entry.id);
    await recordEventEntries(ctx.db, sub.id, e.id, carried);
    next += e.entryCount;
  }
  return count;
}

/** The feed as every event shows it: its id, the subscribed URL (or the feed discovered behind it), title and site. */
export function eventFeed(
  feed: Pick<FeedRow, 'id' | 'url' | 'discovered_url'>,
  meta: { title: string | null; site_url: string | null },
): EventFeed {
  return {
    id: feed.id,
    url: feed.discovered_url ?? feed.url,
    title: meta.title,
    site_url: meta.site_url,
  };
}

/** Queues the events `build` makes for one subscription, numbered from its next sequence on (one counter per
 *  subscription, across every event type), and advances the counter; returns how many. Call inside a transaction,
 *  for a subscription that receives `type` (activeSubscriptionsOfFeed): an event its endpoint filters out is never
 *  created, so it takes no sequence number and never waits in the subscription's line. */
export async function queueSubscriptionEvents(
  ctx: Ctx,
  sub: SubscriptionRow,
  type: SubscriptionEventType,
  now: Date,
  build: (
    firstSequence: number,
  ) => (Pick<BuiltEvent, 'id' | 'sequence' | 'body'> & { entryCount?: number })[],
): Promise<number> {
  const built = build(sub.last_sequence + 1);
  await allocateSequences(ctx.db, sub.id, built.length);
  for (const e of built) {
    await insertEvent(
      ctx.db,
      {
        id: e.id,
        application_id: sub.application_id,
        endpoint_id: sub.endpoint_id,
        subscription_id: sub.id,
        type,
        sequence: e.sequence,
        body: e.body,
        entries: e.entryCount ?? 0,
      },
      now,
    );
  }
  return built.length;
}
