// Feed-health events: the transitions a poll makes (failing, recovered, gone, moved, an identity hold starting, a
// storage budget hold starting and ending), each queued once as one event per active subscription of the feed, in the
// subscription's sequence like its entries.
import type { Ctx } from '../context.ts';
import { newId } from '../ids.ts';
import { countHeldEntries } from '../store/entries.ts';
import { getFeed, recordHealthAlert, type FeedRow } from '../store/feeds.ts';
import { activeSubscriptionsOfFeed } from '../store/subscriptions.ts';
import { buildHealthEvent, type FeedHealthEvent } from '../webhook/event.ts';
import { eventFeed, queueSubscriptionEvents } from './entry-events.ts';

/** A transition to announce: the event, and the time a subscription must have existed by to receive it. */
export type HealthTransition = { event: FeedHealthEvent; since: string };
type Alert = Pick<FeedRow, 'health_alert' | 'health_alert_at'>;

/** The health transitions between the feed as it was before a poll was stored (`before`) and as stored (`after`), and
 *  the outage alert to keep. Transitions, not states: feed.failing once when the run of failures reaches
 *  `failingAfter`; feed.gone once (410), even when a refresh finds it gone again; feed.recovered on the first
 *  success after either, to the subscriptions that existed when it was sent; feed.moved when permanent redirects
 *  changed the URL fetched (a feed discovered behind a web page is not a move). `at` is when the poll's fetch began:
 *  a subscription created after it gets nothing from the poll (the baseline rule). Pure. */
export function healthTransitions(
  before: FeedRow,
  after: FeedRow,
  failingAfter: number,
  at: Date,
): { transitions: HealthTransition[]; alert: Alert } {
  const t = at.toISOString();
  const transitions: HealthTransition[] = [];
  let alert: Alert = { health_alert: before.health_alert, health_alert_at: before.health_alert_at };
  const succeeded =
    after.last_success_at !== null && after.last_success_at !== before.last_success_at;
  if (succeeded && before.health_alert !== null) {
    transitions.push({ event: recovered(before, after), since: before.health_alert_at ?? t });
    alert = { health_alert: null, health_alert_at: null };
  }
  if (after.status === 'gone' && before.health_alert !== 'gone') {
    const { last_http_status, last_error } = after;
    transitions.push({ event: { type: 'feed.gone', last_http_status, last_error }, since: t });
    alert = { health_alert: 'gone', health_alert_at: t };
  } else if (
    after.status === 'error' &&
    after.error_count >= failingAfter &&
    before.health_alert === null
  ) {
    transitions.push({ event: failing(after), since: t });
    alert = { health_alert: 'failing', health_alert_at: t };
  }
  if (after.fetch_url !== before.fetch_url && after.discovered_url === before.discovered_url)
    transitions.push({
      event: { type: 'feed.moved', from: before.fetch_url, to: after.fetch_url },
      since: t,
    });
  return { transitions, alert };
}

/** Queues the health events of the poll just stored for `before` (the feed as it was read in this transaction),
 *  records the outage alert, and returns how many events were queued. Call inside the poll transaction, after the
 *  outcome is recorded. */
export async function queueHealthEvents(ctx: Ctx, before: FeedRow, at: Date): Promise<number> {
  const after = await getFeed(ctx.db, before.id);
  if (!after) return 0;
  const { transitions, alert } = healthTransitions(
    before,
    after,
    ctx.config.poll.failing_after,
    at,
  );
  if (
    alert.health_alert !== before.health_alert ||
    alert.health_alert_at !== before.health_alert_at
  )
    await recordHealthAlert(ctx.db, after.id, alert);
  let queued = 0;
  for (const tr of transitions) queued += await queueFeedEvent(ctx, after, tr, at);
  return queued;
}

/** A churn hold began when this poll held entries and the feed held none before them: queues feed.identity_hold with
 *  the count and how to release it; returns how many events were queued. Later polls that add to the hold send
 *  nothing. Call inside the poll transaction, after holding. */
export async function queueIdentityHold(
  ctx: Ctx,
  feed: FeedRow,
  newlyHeld: number,
  at: Date,
): Promise<number> {
  const held = await countHeldEntries(ctx.db, feed.id);
  if (newlyHeld === 0 || held !== newlyHeld) return 0;
  const event: FeedHealthEvent = {
    type: 'feed.identity_hold',
    held_entries: held,
    identity_key: feed.identity_key,
    release: {
      method: 'POST',
      path: `/v1/feeds/${feed.id}/accept-identity-change`,
      actions: ['deliver', 'discard'],
    },
  };
  const shown = { ...feed, status: 'identity_changed' as const };
  return queueFeedEvent(ctx, shown, { event, since: at.toISOString() }, at);
}

/** A poll held the feed for its application's storage budget, and it was not held before: queues feed.over_budget with
 *  what the application keeps and its budget, to the subscriptions created by `at` (when the fetch began). Returns
 *  how many events were queued. Call inside the poll transaction, after recording the hold. */
export async function queueOverBudget(
  ctx: Ctx,
  feed: FeedRow,
  usage: { used: number; budget: number },
  at: Date,
): Promise<number> {
  const event: FeedHealthEvent = {
    type: 'feed.over_budget',
    held_at: at.toISOString(),
    used_bytes: usage.used,
    budget_bytes: usage.budget,
    feed_bytes: feed.stored_bytes,
  };
  const shown = { ...feed, status: 'over_budget' as const };
  return queueFeedEvent(ctx, shown, { event, since: at.toISOString() }, at);
}

/** A poll stored what a feed held for its storage budget showed (its application had room again, or no budget counts
 *  the feed any more): queues feed.within_budget to the subscriptions that existed when the hold began (`heldAt`), as
 *  feed.recovered follows feed.failing. Returns how many events were queued. Call inside the poll transaction, after
 *  storing. */
export async function queueWithinBudget(
  ctx: Ctx,
  feedId: string,
  heldAt: string,
  usage: { used: number; budget: number },
  at: Date,
): Promise<number> {
  const feed = await getFeed(ctx.db, feedId);
  if (!feed) return 0;
  const event: FeedHealthEvent = {
    type: 'feed.within_budget',
    held_at: heldAt,
    used_bytes: usage.used,
    budget_bytes: usage.budget,
  };
  return queueFeedEvent(ctx, feed, { event, since: heldAt }, at);
}

/** One event of the transition per active subscription created by `since` whose endpoint receives its type. */
async function queueFeedEvent(
  ctx: Ctx,
  feed: FeedRow,
  tr: HealthTransition,
  now: Date,
): Promise<number> {
  let count = 0;
  for (const sub of await activeSubscriptionsOfFeed(ctx.db, feed.id, tr.event.type)) {
    if (sub.created_at > tr.since) continue;
    count += await queueSubscriptionEvents(ctx, sub, tr.event.type, now, (sequence) => {
      const body = buildHealthEvent({
        event: tr.event,
        subscription: { id: sub.id, url: sub.url, metadata: sub.metadata },
        feed: { ...eventFeed(feed, feed), feed_url: feed.fetch_url, status: feed.status },
        now,
        sequence,
      });
      return [{ id: newId(now), sequence, body }];
    });
  }
  return count;
}

function failing(after: FeedRow): FeedHealthEvent {
  return {
    type: 'feed.failing',
    consecutive_failures: after.error_count,
    last_error: after.last_error,
    last_http_status: after.last_http_status,
    last_error_at: after.last_error_at,
    last_success_at: after.last_success_at,
    next_poll_at: after.next_poll_at,
  };
}

function recovered(before: FeedRow, after: FeedRow): FeedHealthEvent {
  return {
    type: 'feed.recovered',
    recovered_from: before.health_alert === 'gone' ? 'feed.gone' : 'feed.failing',
    alerted_at: before.health_alert_at,
    consecutive_failures: before.error_count,
    last_error: before.last_error,
    last_http_status: after.last_http_status,
  };
}
