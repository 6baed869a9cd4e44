// Webhook event bodies: built once when the event is created, stored, and sent byte-identical on every attempt.
import type { Entry } from '../feed/types.ts';
import { RawJson, toJson } from '../rawjson.ts';

export const MAX_ENTRIES_PER_EVENT = 100;
/** The payload version every event body carries beside `type` (docs/webhooks.md): 2 since entries carry typed
 *  text (title and summary plain, summary_html / content_html / content_text, image). */
export const SCHEMA_VERSION = 2;
export const MAX_EVENT_BYTES = 256 * 1024;

/** An entry as events carry it: its key as id; `truncated` when it was cut to fit an event (docs/webhooks.md). */
export type EventEntry = Entry & { id: string; truncated?: true };
/** The event types that carry entries: new ones, and new versions of known ones (opt-in per subscription). */
export type EntriesEventType = 'subscription.entries' | 'subscription.entries_updated';
// Fields a too-large entry loses first: its long texts.
const LONG_TEXTS = { summary: null, summary_html: null, content_html: null, content_text: null };
export type EventSubscription = { id: string; url: string; metadata: string | null };
export type EventFeed = { id: string; url: string; title: string | null; site_url: string | null };
export type BuiltEvent = { id: string; sequence: number; body: string; entryCount: number };

/** The feed-health event types (docs/webhooks.md › Feed health): one per transition of a feed, sent to each
 *  subscription. */
export const FEED_EVENT_TYPES = [
  'feed.failing',
  'feed.recovered',
  'feed.gone',
  'feed.moved',
  'feed.identity_hold',
  'feed.over_budget',
  'feed.within_budget',
] as const;
/** The types a subscription's events have: what an endpoint's `filter_types` may list (`endpoint.test` always passes). */
export const SUBSCRIPTION_EVENT_TYPES = [
  'subscription.entries',
  'subscription.entries_updated',
  ...FEED_EVENT_TYPES,
] as const;
export type SubscriptionEventType = (typeof SUBSCRIPTION_EVENT_TYPES)[number];

/** A health event's own fields, beside the envelope's sequence, subscription, feed and metadata. */
export type FeedHealthEvent =
  | {
      type: 'feed.failing';
      consecutive_failures: number;
      last_error: string | null;
      last_http_status: number | null;
      last_error_at: string | null;
      last_success_at: string | null;
      next_poll_at: string;
    }
  | {
      type: 'feed.recovered';
      recovered_from: 'feed.failing' | 'feed.gone';
      alerted_at: string | null;
      consecutive_failures: number;
      last_error: string | null;
      last_http_status: number | null;
    }
  | { type: 'feed.gone'; last_http_status: number | null; last_error: string | null }
  | { type: 'feed.moved'; from: string; to: string }
  | {
      type: 'feed.identity_hold';
      held_entries: number;
      identity_key: string;
      release: { method: 'POST'; path: string; actions: ['deliver', 'discard'] };
    }
  | {
      type: 'feed.over_budget';
      held_at: string;
      used_bytes: number;
      budget_bytes: number;
      feed_bytes: number;
    }
  | { type: 'feed.within_budget'; held_at: string; used_bytes: number; budget_bytes: number };
/** The feed as health events show it: the entries event's fields, then the URL fetched and the feed's status. */
export type HealthFeed = EventFeed & { feed_url: string; status: string };

/** What entries events are built from: `type` defaults to subscription.entries; `backfill` marks the events that carry
 *  a new subscription's backfill (`data.backfill: true`). */
export type EntryEventsInput = {
  subscription: EventSubscription;
  feed: EventFeed;
  entries: EventEntry[];
  now: Date;
  firstSequence: number;
  newId: () => string;
  type?: EntriesEventType;
  backfill?: boolean;
};

/** Splits entries into events of ≤ 100 entries and ≤ 256 KiB each, numbered from `firstSequence`.
 *  An entry too large on its own is sent with its summary and content fields removed and `truncated: true`. */
export function buildEntryEvents(input: EntryEventsInput): BuiltEvent[] {
  const envelope = envelopeBytes(input);
  const batches: string[][] = [];
  let current: string[] = [];
  let bytes = envelope;
  for (const entry of input.entries) {
    const text = fitEntry(entry, MAX_EVENT_BYTES - envelope);
    const size = Buffer.byteLength(text);
    if (startsNewEvent(current.length, bytes, size)) {
      batches.push(current);
      current = [];
      bytes = envelope;
    }
    current.push(text);
    bytes += size + 1;
  }
  if (current.length > 0) batches.push(current);
  return batches.map((batch, i) => {
    const sequence = input.firstSequence + i;
    return {
      id: input.newId(),
      sequence,
      body: entryEventBody(input, sequence, batch),
      entryCount: batch.length,
    };
  });
}

/** What an entries event's envelope is built from: every field of EntryEventsInput but its entries and numbering. */
export type EntriesEnvelope = Omit<EntryEventsInput, 'entries' | 'firstSequence' | 'newId'>;

/** The bytes of an entries event without its entries, with room for its sequence's digits: the rest of MAX_EVENT_BYTES
 *  is what its entries share, and what one entry may take at most (a longer one is cut). */
export function envelopeBytes(input: EntriesEnvelope): number {
  return Buffer.byteLength(entryEventBody(input, 0, [])) + 16;
}

/** True when an entry whose text is `size` bytes starts a new event after `count` entries that bring the event being
 *  filled to `bytes` (its envelope included): an event holds at most MAX_ENTRIES_PER_EVENT entries and MAX_EVENT_BYTES,
 *  and always one entry. Events built one at a time with it split entries as buildEntryEvents does. */
export function startsNewEvent(count: number, bytes: number, size: number): boolean {
  return count > 0 && (count >= MAX_ENTRIES_PER_EVENT || bytes + size + 1 > MAX_EVENT_BYTES);
}

/** The text an event carries for an entry stored as `stored` (entryJson's text, as the entry history keeps it) when
 *  `room` bytes are left for one entry: the stored text as it is when it fits — what fitting the parsed entry would
 *  write again, byte for byte, since fitEntry writes a fixed order of fields — else the entry cut to the room. */
export function storedEntryText(stored: string, room: number): string {
  return Buffer.byteLength(stored) <= room
    ? stored
    : fitEntry(JSON.parse(stored) as EventEntry, room);
}

/** The body of a feed-health event for one subscription: the entries envelope, with the event's own fields between
 *  `feed` and `metadata`. */
export function buildHealthEvent(input: {
  event: FeedHealthEvent;
  subscription: EventSubscription;
  feed: HealthFeed;
  now: Date;
  sequence: number;
}): string {
  const { type, ...fields } = input.event;
  const { id, url, title, site_url, feed_url, status } = input.feed;
  return subscriptionBody(type, input, input.sequence, {
    feed: { id, url, title, site_url, feed_url, status },
    ...fields,
  });
}

/** The body of an endpoint.test event. */
export function buildTestEvent(endpointId: string, now: Date): string {
  return JSON.stringify({
    type: 'endpoint.test',
    schema_version: SCHEMA_VERSION,
    timestamp: now.toISOString(),
    data: { endpoint: { id: endpointId }, message: 'This is a test event from feedsub.' },
  });
}

/** Entry order inside events: oldest first, so a receiver can append in order (feeds list newest first). */
export function deliveryOrder<T>(documentOrder: T[]): T[] {
  return [...documentOrder].reverse();
}

/** An entry's JSON text as an event carries it: whole, or cut (`truncated`) to fit an event whose envelope leaves it
 *  ENTRY_ROOM bytes (what the entry history stores). */
export function entryJson(entry: EventEntry): string {
  return fitEntry(entry, ENTRY_ROOM);
}
/** Room for one entry in an event: the event's size less an envelope with the largest metadata (16 KiB) and a feed. */
const ENTRY_ROOM = MAX_EVENT_BYTES - 24 * 1024;

/** The body of the entries event numbered `sequence` carrying `entryTexts` (each entry's JSON, in order). */
export function entryEventBody(
  input: EntriesEnvelope,
  sequence: number,
  entryTexts: string[],
): string {
  const { id, url, title, site_url } = input.feed;
  return subscriptionBody(input.type ?? 'subscription.entries', input, sequence, {
    feed: { id, url, title, site_url },
    entries: new RawJson(`[${entryTexts.join(',')}]`),
    ...(input.backfill === true ? { backfill: true } : {}),
  });
}

/** The envelope every event of a subscription shares (docs/webhooks.md): `fields` (the feed first) sit between the
 *  subscription and the metadata, which is the subscription's text byte for byte. */
function subscriptionBody(
  type: SubscriptionEventType,
  input: { subscription: EventSubscription; now: Date },
  sequence: number,
  fields: Record<string, unknown>,
): string {
  const metadata =
    input.subscription.metadata === null ? null : new RawJson(input.subscription.metadata);
  return toJson({
    type,
    schema_version: SCHEMA_VERSION,
    timestamp: input.now.toISOString(),
    data: {
      sequence,
      subscription: { id: input.subscription.id, url: input.subscription.url, metadata },
      ...fields,
      metadata,
    },
  });
}

/** The entry's JSON text within `budget` bytes: whole; else without its summary and content fields; else with every
 *  field cut to a bounded size (an entry with thousands of authors or a megabyte title). Cut entries carry
 *  `truncated: true`. The key's source text (`key_source`) and what a slim entry keeps (`slim`) are never sent. */
function fitEntry(entry: EventEntry, budget: number): string {
  const ordered = {
    id: entry.id,
    guid: entry.guid,
    url: entry.url,
    title: entry.title,
    summary: entry.summary,
    summary_html: entry.summary_html,
    content_html: entry.content_html,
    content_text: entry.content_text,
    image: entry.image,
    authors: entry.authors,
    categories: entry.categories,
    enclosures: entry.enclosures,
    published_at: entry.published_at,
    updated_at: entry.updated_at,
    ...(entry.truncated === true ? { truncated: true } : {}),
  };
  // A slim entry (feed/slim.ts) lacks its long texts: it is never sent whole.
  const text = entry.slim === undefined ? JSON.stringify(ordered) : null;
  if (text !== null && Buffer.byteLength(text) <= budget) return text;
  const slim = JSON.stringify({ ...ordered, ...LONG_TEXTS, truncated: true });
  if (Buffer.byteLength(slim) <= budget) return slim;
  const cut = (s: string | null, n: number) => (s === null ? null : s.slice(0, n));
  return JSON.stringify({
    ...ordered,
    ...LONG_TEXTS,
    guid: cut(ordered.guid, 2048),
    url: cut(ordered.url, 2048),
    title: cut(ordered.title, 1000),
    image: cut(ordered.image, 2048),
    authors: ordered.authors.slice(0, 10).map((a) => a.slice(0, 200)),
    categories: ordered.categories.slice(0, 10).map((c) => c.slice(0, 200)),
    enclosures: ordered.enclosures
      .slice(0, 10)
      .map((e) => ({ ...e, url: e.url.slice(0, 2048), type: cut(e.type, 200) })),
    truncated: true,
  });
}
