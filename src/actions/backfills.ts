// Backfills (docs/webhooks.md › Entry history, backfill and updates) off the request path: a create or a baseline only
// makes a subscription's backfill ready; the backfill loop (worker/backfiller.ts) queues its events here, one event per
// transaction, applications turn about, its progress in the database so a crash neither repeats nor skips an entry.
import { transaction, type Ctx } from '../context.ts';
import { newId } from '../ids.ts';
import {
  backfillCandidates,
  backfillEntries,
  backfillSizes,
  dropBackfillEntries,
  takeBackfillEntries,
  takeBackfillKeys,
} from '../store/backfill-entries.ts';
import { getEndpoint } from '../store/endpoints.ts';
import { findHistory } from '../store/entry-history.ts';
import { recordEventEntries } from '../store/event-entries.ts';
import { getFeed } from '../store/feeds.ts';
import {
  backfillTaken,
  endBackfill,
  getSubscription,
  lockSubscription,
  nextBackfill,
  type SubscriptionRow,
} from '../store/subscriptions.ts';
import {
  entryEventBody,
  envelopeBytes,
  MAX_ENTRIES_PER_EVENT,
  MAX_EVENT_BYTES,
  startsNewEvent,
  storedEntryText,
  type EntriesEnvelope,
  type EventEntry,
} from '../webhook/event.ts';
import { eventFeed, queueSubscriptionEvents } from './entry-events.ts';
import { entrySieve } from './filter.ts';

/** At most this many entries in a backfill. */
export const BACKFILL_MAX = 100;

/** What one chunk did: whose backfill it served, the events it queued (0 or 1), and whether that backfill is over. */
export type BackfillChunk = {
  applicationId: string;
  subscriptionId: string;
  events: number;
  done: boolean;
};

/** Queues the next event of a ready backfill, in one transaction: the backfill of the first application after
 *  `afterApplication` (id order, wrapping around) that has one ready, its earliest subscription's. The first chunk of a
 *  backfill takes its entries from the history (see takeBackfillEntries); each chunk queues the next event of them as
 *  buildEntryEvents would split them all (≤ 100 entries, ≤ 256 KiB), with the subscription's next sequence, and deletes
 *  what it queued from the backfill's entries in the same transaction. A subscription paused meanwhile, or whose
 *  endpoint leaves out subscription.entries, ends its backfill with no event; a deleted one took its backfill with it.
 *  Undefined when no backfill is ready. */
export async function queueBackfillChunk(
  ctx: Ctx,
  afterApplication: string,
): Promise<BackfillChunk | undefined> {
  return await transaction(ctx, async (tx): Promise<BackfillChunk | undefined> => {
    const next =
      (await nextBackfill(tx.db, afterApplication)) ??
      (afterApplication === '' ? undefined : await nextBackfill(tx.db, ''));
    if (next === undefined) return undefined;
    // Read under the row's lock: another node may have taken this step meanwhile (or ended the backfill, or deleted
    // the subscription), and what it committed is what this one goes on from.
    await lockSubscription(tx.db, next.id);
    const sub = await getSubscription(tx.db, next.application_id, next.id);
    const chunk = { applicationId: next.application_id, subscriptionId: next.id, events: 0 };
    if (sub === undefined || sub.backfill_at === null) return { ...chunk, done: true };
    if (sub.status !== 'active' || !(await receivesEntries(tx, sub))) {
      await endSubscriptionBackfill(tx, sub.id);
      return { ...chunk, done: true };
    }
    if (sub.backfill > 0) {
      await takeBackfill(tx, sub, Math.min(sub.backfill, BACKFILL_MAX));
      await backfillTaken(tx.db, sub.id);
    }
    const queued = await queueNextEvent(tx, sub);
    if (queued.left === 0) await endSubscriptionBackfill(tx, sub.id);
    return { ...chunk, events: queued.events, done: queued.left === 0 };
  });
}

/** Ends the subscription's backfill, waiting, ready or started: what it has not queued is never sent. Pausing does
 *  this (a paused subscription gets nothing new). Call inside a transaction. */
export async function endSubscriptionBackfill(ctx: Ctx, subscriptionId: string): Promise<void> {
  await dropBackfillEntries(ctx.db, subscriptionId);
  await endBackfill(ctx.db, subscriptionId);
}

/** Takes the subscription's backfill from its feed's history: the `n` newest entries no entries event of it carries
 *  (takeBackfillEntries) and, for a subscription with a filter, the `n` newest of those its filter sends (read from
 *  the whole history, at most its bound per feed; the others are not counted as filtered: they were not new). */
async function takeBackfill(ctx: Ctx, sub: SubscriptionRow, n: number): Promise<void> {
  if (sub.entry_filter === null) {
    await takeBackfillEntries(ctx.db, sub, n);
    return;
  }
  const sieve = entrySieve(ctx, { count: false });
  const keys: string[] = [];
  for (const c of await backfillCandidates(ctx.db, sub)) {
    const entry = JSON.parse(c.entry) as EventEntry;
    if ((await sieve(sub, [entry])).length > 0) keys.push(c.key);
    if (keys.length === n) break;
  }
  await takeBackfillKeys(ctx.db, sub.id, keys);
}

/** True when the subscription's endpoint receives subscription.entries (its filter_types is null or lists it). */
async function receivesEntries(ctx: Ctx, sub: SubscriptionRow): Promise<boolean> {
  const endpoint = await getEndpoint(ctx.db, sub.application_id, sub.endpoint_id);
  if (endpoint === undefined) return false;
  return (
    endpoint.filter_types === null ||
    (JSON.parse(endpoint.filter_types) as string[]).includes('subscription.entries')
  );
}

/** Queues the event that carries the backfill's next entries and deletes them from what is left to send (entries the
 *  history dropped meanwhile are deleted unsent). The event's entries are read twice: their sizes first, which decide
 *  where the event ends, then the JSON of those it carries, so no more than one event's entries is ever read; the
 *  stored JSON goes into the body as it is (storedEntryText). Returns the events queued and the entries left. */
async function queueNextEvent(
  ctx: Ctx,
  sub: SubscriptionRow,
): Promise<{ events: number; left: number }> {
  const now = ctx.clock.now();
  const feed = (await getFeed(ctx.db, sub.feed_id))!;
  const envelope: EntriesEnvelope = {
    subscription: { id: sub.id, url: sub.url, metadata: sub.metadata },
    feed: eventFeed(feed, feed),
    now,
    backfill: true,
  };
  const empty = envelopeBytes(envelope);
  const room = MAX_EVENT_BYTES - empty;
  let count = 0;
  let bytes = empty;
  let through = 0;
  // Entries longer than the room are cut to it (rare: a feed title or metadata making the envelope over 24 KiB).
  const cut = new Map<number, string>();
  for (const planned of await backfillSizes(ctx.db, sub, MAX_ENTRIES_PER_EVENT)) {
    let size = planned.bytes;
    if (size !== null && size > room) {
      const text = storedEntryText(
        (await findHistory(ctx.db, sub.feed_id, planned.key))!.entry,
        room,
      );
      cut.set(planned.position, text);
      size = Buffer.byteLength(text);
    }
    if (size !== null && startsNewEvent(count, bytes, size)) break;
    through = planned.position;
    if (size === null) continue; // dropped from the history since the backfill began
    count += 1;
    bytes += size + 1;
  }
  if (count === 0) return { events: 0, left: await dropBackfillEntries(ctx.db, sub.id, through) };
  const rows = await backfillEntries(ctx.db, sub, through);
  const texts = rows.map((r) => cut.get(r.position) ?? r.entry);
  const id = newId(now);
  await queueSubscriptionEvents(ctx, sub, 'subscription.entries', now, (sequence) => [
    { id, sequence, body: entryEventBody(envelope, sequence, texts) },
  ]);
  await recordEventEntries(
    ctx.db,
    sub.id,
    id,
    rows.map((r) => r.key),
  );
  return { events: 1, left: await dropBackfillEntries(ctx.db, sub.id, through) };
}
