// "Why was (or wasn't) this entry delivered?": the stored facts about one entry of a subscription's feed (its key and
// where it came from, when and how it was first seen, what was done with it, the events that carried it) and the
// decision they add up to for this subscription.
import * as v from 'valibot';
import type { Ctx } from '../context.ts';
import { invalid } from '../errors.ts';
import { RawJson } from '../rawjson.ts';
import { getEndpoint } from '../store/endpoints.ts';
import { findHeldEntry, keyFirstSeen } from '../store/entries.ts';
import { eventsOfEntry, type EntryEventRow } from '../store/event-entries.ts';
import { findHistory, type HistoryFate } from '../store/entry-history.ts';
import { listAttempts } from '../store/attempts.ts';
import type { SubscriptionRow } from '../store/subscriptions.ts';
import { toEventEntry } from './entry-events.ts';
import { entryJson } from '../webhook/event.ts';
import type { Entry } from '../feed/types.ts';
import { attemptView, type AttemptView } from './events.ts';
import { readPauses, requireSubscription, type Pause } from './subscriptions.ts';
import { judgeNow } from './filter.ts';
import type { FilterVerdict } from '../feed/filter/match.ts';
import { describeRule, readFilter, rulePath, type Filter } from '../feed/filter/rules.ts';

/** What happened to the entry for this subscription (docs/webhooks.md › Why was (or wasn't) this entry delivered?). */
export type TraceDecision =
  | 'delivered'
  | 'pending'
  | 'dead'
  | 'held'
  | 'discarded'
  | 'before_subscription'
  | 'baseline'
  | 'paused'
  | 'filtered'
  | 'unknown';

/** An event that carried the entry, with its attempts (oldest first). */
export type TraceEvent = {
  id: string;
  type: string;
  sequence: number | null;
  status: EntryEventRow['status'];
  backfill: boolean;
  created_at: string;
  delivered_at: string | null;
  next_attempt_at: string | null;
  attempts: AttemptView[];
};

export type TraceView = {
  query: string;
  matched_by: 'id' | 'guid' | 'url' | null;
  key: string | null;
  key_source: string | null;
  entry: RawJson | null;
  first_seen_at: string | null;
  via: 'poll' | 'push' | null;
  /** What feedsub did with the entry for the feed: a history fate, or `held` while the churn guard holds it. */
  fate: HistoryFate | 'held' | null;
  decision: TraceDecision;
  reason: string;
  /** What the subscription's filter, as it is now, decides about the entry; null without a filter or a stored entry. */
  filter: TraceFilter | null;
  subscription: {
    id: string;
    status: 'active' | 'paused';
    created_at: string;
    pauses: { paused_at: string; resumed_at: string | null }[];
  };
  events: TraceEvent[];
};

/** The subscription's filter judging the entry: `sent`, `blocked` by `rule` (its path, `filter.block[0]`), or
 *  `not_kept` (no keep rule matched); `changed_at`: when the filter was last set, and `as_seen` whether that was
 *  before the entry was first seen (so this is the filter that judged it). */
export type TraceFilter = {
  outcome: 'sent' | 'blocked' | 'not_kept';
  rule: string | null;
  changed_at: string | null;
  as_seen: boolean;
};

const ENTRY_QUERY = "must be an entry's id, guid or URL (1 to 2048 characters)";
/** The `entry` the trace is of (GET /v1/subscriptions/:id/trace?entry=). */
export const EntryQuery = v.pipe(
  v.string(ENTRY_QUERY),
  v.minLength(1, ENTRY_QUERY),
  v.maxLength(2048, ENTRY_QUERY),
  v.description(
    "The entry's id (the webhook's `entries[].id`), its guid or its URL, as the webhook shows them.",
  ),
);

/** Events of one entry a trace lists (the first ones, in sequence order). */
const TRACE_EVENTS = 20;
const KEY = /^[0-9a-f]{32}$/;

/** The trace of the entry `query` names (its id, guid or URL) for the application's subscription; 404 for another
 *  application's subscription, 400 for an empty or over-long query. An entry feedsub knows nothing about answers
 *  decision "unknown", with the reason. */
export async function traceEntry(
  ctx: Ctx,
  applicationId: string,
  subscriptionId: string,
  query: string | undefined,
): Promise<TraceView> {
  const sub = await requireSubscription(ctx, applicationId, subscriptionId);
  const parsed = v.safeParse(EntryQuery, query);
  if (!parsed.success)
    throw invalid(
      [{ path: 'entry', message: parsed.issues[0].message }],
      'The query string has invalid parameters.',
    );
  const facts = await entryFacts(ctx, sub.feed_id, parsed.output);
  const events = facts.key === null ? [] : await traceEvents(ctx, sub.id, facts.key);
  const endpoint = await getEndpoint(ctx.db, applicationId, sub.endpoint_id);
  const filtered =
    endpoint?.filter_types != null &&
    !(JSON.parse(endpoint.filter_types) as string[]).includes('subscription.entries');
  const pauses = readPauses(sub.pauses);
  const judged = judgeStored(ctx, sub, facts);
  const verdict = decide(facts, { sub, pauses, filtered, events, judged }, ctx.config);
  return {
    query: parsed.output,
    ...facts,
    ...verdict,
    filter: judged === undefined ? null : traceFilter(judged, sub, facts.first_seen_at),
    subscription: {
      id: sub.id,
      status: sub.status,
      created_at: sub.created_at,
      pauses: pauses.map(([paused_at, resumed_at]) => ({ paused_at, resumed_at })),
    },
    events,
  };
}

/** The subscription's filter (as it is now) and its verdict on the stored entry; undefined without either. */
type Judged = { filter: Filter; verdict: FilterVerdict };

function judgeStored(ctx: Ctx, sub: SubscriptionRow, facts: Facts): Judged | undefined {
  const filter = readFilter(sub.entry_filter);
  if (filter === undefined || facts.entry === null) return undefined;
  const verdict = judgeNow(ctx, sub.entry_filter, JSON.parse(facts.entry.text) as Entry);
  return verdict === undefined ? undefined : { filter, verdict };
}

function traceFilter(j: Judged, sub: SubscriptionRow, seen: string | null): TraceFilter {
  const v = j.verdict;
  return {
    outcome: v.kept ? 'sent' : v.reason,
    rule: !v.kept && v.reason === 'blocked' ? rulePath(v.rule.list, v.rule.index) : null,
    changed_at: sub.entry_filter_at,
    as_seen: asSeen(sub, seen),
  };
}

/** True when the filter the subscription has now was set before the entry was first seen. */
function asSeen(sub: SubscriptionRow, seen: string | null): boolean {
  return seen !== null && (sub.entry_filter_at === null || sub.entry_filter_at <= seen);
}

/** The filter's verdict in words: `blocked by rule filter.block[0] (author contains "bot")`, or `no keep rule matched
 *  (title contains "security", …)`; undefined when it sends the entry. */
function filterWords(j: Judged): string | undefined {
  const v = j.verdict;
  if (v.kept) return undefined;
  if (v.reason === 'blocked')
    return `blocked by rule ${rulePath(v.rule.list, v.rule.index)} (${describeRule(j.filter[v.rule.list][v.rule.index]!)})`;
  return `no keep rule matched (${j.filter.keep.map(describeRule).join('; ')})`;
}

type Facts = Pick<
  TraceView,
  'matched_by' | 'key' | 'key_source' | 'entry' | 'first_seen_at' | 'via' | 'fate'
>;

/** What the feed stores about the entry: its history row, else its held row, else only its key's first sighting. */
async function entryFacts(ctx: Ctx, feedId: string, query: string): Promise<Facts> {
  const stored = await findHistory(ctx.db, feedId, query);
  if (stored !== undefined)
    return {
      matched_by: stored.matched_by,
      key: stored.key,
      key_source: stored.key_source,
      entry: new RawJson(stored.entry),
      first_seen_at: stored.first_seen_at,
      via: stored.via,
      fate: stored.fate,
    };
  const held = await findHeldEntry(ctx.db, feedId, query);
  if (held !== undefined)
    return {
      matched_by: held.matched_by,
      key: held.key,
      key_source: held.key_source,
      entry: new RawJson(
        entryJson(toEventEntry(held.key, JSON.parse(held.entry) as Entry, new Date(held.held_at))),
      ),
      first_seen_at: held.held_at,
      via: null,
      fate: 'held',
    };
  const isKey = KEY.test(query);
  return {
    matched_by: isKey ? 'id' : null,
    key: isKey ? query : null,
    key_source: null,
    entry: null,
    first_seen_at: (isKey ? await keyFirstSeen(ctx.db, feedId, query) : undefined) ?? null,
    via: null,
    fate: null,
  };
}

/** The subscription's events carrying the key, with their attempts. */
async function traceEvents(ctx: Ctx, subscriptionId: string, key: string): Promise<TraceEvent[]> {
  const events: TraceEvent[] = [];
  for (const e of await eventsOfEntry(ctx.db, subscriptionId, key, TRACE_EVENTS))
    events.push({
      id: e.id,
      type: e.type,
      sequence: e.sequence,
      status: e.status,
      backfill: e.backfill === 1,
      created_at: e.created_at,
      delivered_at: e.delivered_at,
      next_attempt_at: e.status === 'pending' || e.status === 'failed' ? e.next_attempt_at : null,
      attempts: (await listAttempts(ctx.db, e.id)).map(attemptView),
    });
  return events;
}

/** The decision the facts add up to for the subscription, and why, in one sentence. Pure. */
export function decide(
  facts: Facts,
  s: {
    sub: SubscriptionRow;
    pauses: Pause[];
    filtered: boolean;
    events: TraceEvent[];
    judged?: Judged | undefined;
  },
  config: { delivery: { retention_days: number }; retention: { entry_history_per_feed: number } },
): Verdict {
  const carried = s.events.filter((e) => e.type === 'subscription.entries');
  const fromEvents = eventVerdict(carried);
  if (fromEvents) return fromEvents;
  if (facts.key === null || facts.first_seen_at === null)
    return {
      decision: 'unknown',
      reason: `No entry of this feed has this id, guid or URL in its history (its last ${config.retention.entry_history_per_feed} entries), its held entries or its keys: the feed never showed it here, or it was pruned.`,
    };
  return (
    factVerdict(facts.fate, facts.first_seen_at, s) ?? {
      decision: 'unknown',
      reason: `First seen at ${facts.first_seen_at}, but no stored event of this subscription carries it: delivered events are deleted after ${config.delivery.retention_days} days, or the endpoint filtered entries out then.`,
    }
  );
}

type Verdict = { decision: TraceDecision; reason: string };

/** The decision the subscription's entries events that carry the entry make: delivered, pending or dead; undefined
 *  when none does. */
function eventVerdict(carried: TraceEvent[]): Verdict | undefined {
  const sent = carried.find((e) => e.status === 'delivered');
  if (sent)
    return {
      decision: 'delivered',
      reason: `Delivered in event ${sent.id} (sequence ${sent.sequence}${sent.backfill ? ', a backfill' : ''}) at ${sent.delivered_at}.`,
    };
  const waiting = carried.find((e) => e.status === 'pending' || e.status === 'failed');
  if (waiting)
    return {
      decision: 'pending',
      reason: `Queued in event ${waiting.id} (${waiting.status}, ${waiting.attempts.length} attempts so far; next at ${waiting.next_attempt_at}).`,
    };
  if (carried.length === 0) return undefined;
  return {
    decision: 'dead',
    reason: `Event ${carried[0]!.id} carried it, and gave up after ${carried[0]!.attempts.length} attempts; POST /v1/events/${carried[0]!.id}/resend sends it again.`,
  };
  return undefined;
}

/** Why no event carried a known entry (first seen at `seen`): the first of the reasons that holds, in
 *  docs/webhooks.md's order; undefined when none does. */
function factVerdict(
  fate: Facts['fate'],
  seen: string,
  s: { sub: SubscriptionRow; pauses: Pause[]; filtered: boolean; judged?: Judged | undefined },
): Verdict | undefined {
  if (seen < s.sub.created_at)
    return {
      decision: 'before_subscription',
      reason: `First seen at ${seen}, before this subscription was created (${s.sub.created_at}): a subscription receives only entries first seen after it was created (backfill sends recent ones).`,
    };
  if (fate === 'held')
    return {
      decision: 'held',
      reason: `Held by the churn guard since ${seen} (most of the feed's ids changed at once); POST /v1/feeds/${s.sub.feed_id}/accept-identity-change delivers or discards it.`,
    };
  if (fate === 'discarded')
    return {
      decision: 'discarded',
      reason: `Held by the churn guard at ${seen}, then the hold was discarded: recorded as seen, sent to no one.`,
    };
  if (fate === 'baseline' || fate === 'revealed')
    return {
      decision: 'baseline',
      reason:
        fate === 'baseline'
          ? `First seen at ${seen} in a baseline (the first document of the feed, or the first after a time with no active subscription): recorded, sent to no one.`
          : `First read at ${seen} by a newer parser from an entry the feed already showed: recorded as seen, sent to no one.`,
    };
  const pause = s.pauses.find(([from, to]) => from <= seen && (to === null || seen <= to));
  if (pause)
    return {
      decision: 'paused',
      reason: `First seen at ${seen}, while this subscription was paused (${pause[0]} to ${pause[1] ?? 'now'}): entries seen during a pause are never sent to it.`,
    };
  if (s.filtered)
    return {
      decision: 'filtered',
      reason: "The endpoint's filter_types leaves out subscription.entries: no event was made.",
    };
  const words = s.judged === undefined ? undefined : filterWords(s.judged);
  if (words === undefined) return undefined;
  if (asSeen(s.sub, seen))
    return {
      decision: 'filtered',
      reason: `First seen at ${seen}; the subscription's filter ${words}: no event was made.`,
    };
  return {
    decision: 'unknown',
    reason: `First seen at ${seen}, and no stored event of this subscription carries it. The subscription's filter, changed at ${s.sub.entry_filter_at} (after that), would now say: ${words}; the filter it had then is not kept.`,
  };
}
