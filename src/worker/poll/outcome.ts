// Storing one refresh outcome, inside the poll transaction: each kind's feed state and next poll time (a parsed
// document's entries and events are in parsed.ts) within the application's storage budget (budget.ts), then the health
// events of the transitions it made.
import type { Ctx } from '../../context.ts';
import { queueHealthEvents } from '../../actions/feed-events.ts';
import type { RefreshOutcome } from '../../feed/fetch/refresh.ts';
import { nextPoll, pushedLimits, type ScheduleLimits } from '../../feed/schedule.ts';
import { hasHeldEntries } from '../../store/entries.ts';
import { getFeed, lockFeed, type FeedRow } from '../../store/feeds.ts';
import type { PollTarget } from '../../store/feeds-poll.ts';
import {
  recordFeedGone,
  recordPollFailure,
  recordPollThrottled,
  recordPollUnchanged,
  recordQuietUnchanged,
} from '../../store/feeds-record.ts';
import { isPushHealthy } from '../../store/websub-subscriptions.ts';
import { noteWebSub } from '../../actions/ingest/websub.ts';
import { storeBudgeted } from './budget.ts';
import { advertised, applyParsed, type Stored } from './parsed.ts';
import { redirectState } from './redirect-state.ts';

type OutcomeOf<K extends RefreshOutcome['kind']> = Extract<RefreshOutcome, { kind: K }>;

/** Stores one refresh outcome; runs inside the poll transaction. `claimed` is the feed as claimed before the fetch:
 *  what subscribers changed meanwhile (a baseline restarted, a hold released) is read again here, except by a quiet
 *  304, whose one UPDATE checks that nothing did. `seenAt`, when the fetch began, is the first sighting of the entries
 *  it finds. A feed deleted meanwhile records nothing. */
export async function applyOutcome(
  ctx: Ctx,
  claimed: PollTarget,
  outcome: RefreshOutcome,
  now: Date,
  seenAt: Date = now,
): Promise<Stored> {
  if (outcome.kind === 'unchanged' && (await applyQuietUnchanged(ctx, claimed, outcome, now)))
    return { newEntries: 0, events: 0 };
  // Locked before it is read again: a push another node stores meanwhile commits before this read or after this
  // transaction, so what is written back from the row read here (entry_count, status) overwrites none of its writes.
  await lockFeed(ctx.db, claimed.id);
  const feed = await getFeed(ctx.db, claimed.id);
  if (!feed) return { newEntries: 0, events: 0, deleted: true };
  const stored = await storeBudgeted(ctx, feed, outcome, { now, seenAt }, () =>
    storeOutcome(ctx, feed, outcome, now, seenAt),
  );
  // A hub the document advertises starts (or moves) the feed's WebSub subscription.
  if (outcome.kind === 'parsed')
    await noteWebSub(
      ctx,
      feed.id,
      { links: advertised(outcome), fetchedUrl: outcome.meta.finalUrl },
      now,
    );
  // The failing, recovered, gone and moved transitions this poll made, one event per subscription.
  const health = await queueHealthEvents(ctx, feed, seenAt);
  return { ...stored, events: stored.events + health };
}

/** Stores the outcome for `feed`, as re-read in this transaction. */
async function storeOutcome(
  ctx: Ctx,
  feed: FeedRow,
  outcome: RefreshOutcome,
  now: Date,
  seenAt: Date,
): Promise<Stored> {
  const limits = await scheduleLimits(ctx, feed.id, now);
  switch (outcome.kind) {
    case 'unchanged':
      await applyUnchanged(ctx, feed, outcome, now, limits);
      break;
    case 'gone':
      await recordFeedGone(ctx.db, feed.id, now);
      break;
    case 'throttled':
      await applyThrottled(ctx, feed, outcome, now, limits);
      break;
    case 'error':
      await applyError(ctx, feed, outcome, now, limits);
      break;
    case 'parsed':
      return applyParsed(ctx, feed, outcome, { now, seenAt }, limits);
  }
  return { newEntries: 0, events: 0 };
}

/** The most common poll, cut short: a 304 (or identical body) of a healthy feed (active, no error run, alert, hold or
 *  redirect being counted) that points nowhere else. Returns false, having written nothing, when the claimed feed or
 *  the answer is anything else, or when the row changed since the claim; applyUnchanged then records it. */
async function applyQuietUnchanged(
  ctx: Ctx,
  claimed: PollTarget,
  { meta }: OutcomeOf<'unchanged'>,
  now: Date,
): Promise<boolean> {
  const quiet =
    claimed.status === 'active' &&
    claimed.error_count === 0 &&
    claimed.health_alert === null &&
    claimed.baseline_at !== null &&
    claimed.redirect_url === null &&
    (meta.permanentRedirectTo === null || meta.permanentRedirectTo === claimed.fetch_url);
  if (!quiet) return false;
  const next = nextPoll(
    {
      kind: 'unchanged',
      cacheSeconds: meta.cacheSeconds,
      previousIntervalSeconds: claimed.interval_seconds,
    },
    await scheduleLimits(ctx, claimed.id, now),
  );
  return recordQuietUnchanged(
    ctx.db,
    claimed.id,
    {
      etag: meta.etag ?? claimed.etag,
      last_modified: meta.lastModified ?? claimed.last_modified,
      last_http_status: meta.status,
      fetch_url: claimed.fetch_url,
      next_poll_at: inPhase(claimed.next_poll_at, next, now),
      interval_seconds: next.intervalSeconds,
    },
    now,
  );
}

/** The next poll of a quiet feed polled on time: one interval after the time it was due, so it keeps its place in the
 *  schedule. Feeds polled one after another are then due again one after another, and the index of due times takes
 *  their new times at its end, a page for many, instead of at random places, a page each. Its jitter spread it when it
 *  was first scheduled; a feed polled late (a backlog, a restart) is jittered from now, as every other outcome is. A
 *  feed polled before it was due (`poll --once`: serve claims only due feeds) keeps its due time: null, nothing of the
 *  schedule written, so a one-shot poll does not move each feed it polls to a random place in feeds_due. */
function inPhase(
  due: string,
  next: { delaySeconds: number; intervalSeconds: number },
  now: Date,
): string | null {
  const dueMs = Date.parse(due);
  if (dueMs > now.getTime()) return null;
  const inPlace = dueMs + next.intervalSeconds * 1000;
  return inPlace >= now.getTime() + next.intervalSeconds * 900
    ? new Date(inPlace).toISOString()
    : after(now, next.delaySeconds);
}

/** A 304 or an identical body: new validators, redirect tracking and the next poll; an identity hold stays. When the
 *  feed's baseline was restarted while this conditional fetch ran, it is fetched again at once for the baseline. */
async function applyUnchanged(
  ctx: Ctx,
  feed: FeedRow,
  outcome: OutcomeOf<'unchanged'>,
  now: Date,
  limits: ScheduleLimits,
): Promise<void> {
  const next = nextPoll(
    {
      kind: 'unchanged',
      cacheSeconds: outcome.meta.cacheSeconds,
      previousIntervalSeconds: feed.interval_seconds,
    },
    limits,
  );
  // A hold outlives a failed poll (which records status error): held entries, not the last status, decide.
  const status = (await hasHeldEntries(ctx.db, feed.id)) ? 'identity_changed' : 'active';
  await recordPollUnchanged(
    ctx.db,
    feed.id,
    {
      etag: outcome.meta.etag ?? feed.etag,
      last_modified: outcome.meta.lastModified ?? feed.last_modified,
      last_http_status: outcome.meta.status,
      next_poll_at: after(now, feed.baseline_at === null ? 0 : next.delaySeconds),
      interval_seconds: next.intervalSeconds,
      ...redirectState(feed, outcome.meta.permanentRedirectTo, null),
    },
    status,
    now,
  );
}

/** A 429/503 with Retry-After: only a later poll. */
async function applyThrottled(
  ctx: Ctx,
  feed: FeedRow,
  outcome: OutcomeOf<'throttled'>,
  now: Date,
  limits: ScheduleLimits,
): Promise<void> {
  const next = nextPoll(
    { kind: 'throttled', retryAfterSeconds: outcome.retryAfterSeconds },
    limits,
  );
  await recordPollThrottled(
    ctx.db,
    feed.id,
    outcome.meta.status,
    after(now, next.delaySeconds),
    now,
  );
}

/** A failed fetch or parse: recorded, and the next poll backed off by the run of errors. */
async function applyError(
  ctx: Ctx,
  feed: FeedRow,
  outcome: OutcomeOf<'error'>,
  now: Date,
  limits: ScheduleLimits,
): Promise<void> {
  const next = nextPoll(
    {
      kind: 'error',
      consecutiveErrors: feed.error_count + 1,
      retryAfterSeconds: outcome.retryAfterSeconds,
    },
    limits,
  );
  await recordPollFailure(
    ctx.db,
    feed.id,
    {
      errorClass: outcome.errorClass,
      message: outcome.message,
      httpStatus: outcome.status,
      nextPollAt: after(now, next.delaySeconds),
    },
    now,
  );
}

function after(now: Date, seconds: number): string {
  return new Date(now.getTime() + seconds * 1000).toISOString();
}

/** The feed's poll schedule limits; slower while a hub pushes its content (polling is then the fallback). Without
 *  server.public_url no hub can reach the callback, whatever the feed's stored WebSub subscription says. */
async function scheduleLimits(ctx: Ctx, feedId: string, now: Date): Promise<ScheduleLimits> {
  const pushed = ctx.config.server.public_url !== '' && (await isPushHealthy(ctx.db, feedId, now));
  const limits = {
    intervalSeconds: ctx.config.poll.interval_seconds,
    minSeconds: ctx.config.poll.min_interval_seconds,
    maxSeconds: ctx.config.poll.max_interval_seconds,
  };
  return pushed ? pushedLimits(limits, ctx.config.poll.push_interval_seconds) : limits;
}
