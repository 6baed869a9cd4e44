// Feed use-cases: the health view a subscriber may read.
import * as v from 'valibot';
import { conflict, invalid, notFound, tooManyRequests } from '../errors.ts';
import { contentHash } from '../feed/identity/content-hash.ts';
import type { Entry } from '../feed/types.ts';
import {
  countHeldEntries,
  deleteHeldEntries,
  heldEntriesFromEnd,
  recordKeys,
} from '../store/entries.ts';
import {
  FEED_STATUSES,
  countFeedsOfApplication,
  getFeed,
  lockFeed,
  makeFeedDueNow,
  PARKED_AT,
  recordHoldReleased,
  type FeedRow,
  type FeedStatus,
} from '../store/feeds.ts';
import { listFeedsOfApplication } from '../store/feeds-list.ts';
import type { Page } from '../store/page.ts';
import { applicationUsesFeed, feedHasActiveSubscription } from '../store/subscriptions.ts';
import { transaction, type Ctx } from '../context.ts';
import { CHUNK_ROWS, nextTurn } from './chunks.ts';
import { queueEntryEvents, toEventEntry } from './entry-events.ts';
import { recordHistory } from './entry-history.ts';
import { budgetHoldView, type BudgetHoldView } from './budget.ts';
import { validate } from './validate.ts';
import { pushView, type PushView } from './websub.ts';

export type FeedView = {
  id: string;
  url: string;
  feed_url: string;
  discovered_url: string | null;
  title: string | null;
  site_url: string | null;
  format: string | null;
  status: FeedRow['status'];
  last_polled_at: string | null;
  last_success_at: string | null;
  next_poll_at: string | null;
  interval_seconds: number | null;
  last_http_status: number | null;
  error_count: number;
  network_error_count: number;
  http_error_count: number;
  parse_error_count: number;
  last_error: string | null;
  last_error_at: string | null;
  degraded: string | null;
  entry_count: number;
  held_entries: number;
  held_entries_dropped: number;
  identity_key: FeedRow['identity_key'];
  /** What the feed keeps (entry keys, held entries, history, identity probe), as the storage budget counts it. */
  stored_bytes: number;
  /** Why the feed is held for its application's storage budget (status over_budget), or null. */
  over_budget: BudgetHoldView | null;
  /** WebSub: the hub the feed advertises and where our subscription to it stands. */
  push: PushView;
  created_at: string;
  updated_at: string;
};

export const IdentityChangeInput = v.strictObject({
  action: v.picklist(
    ['deliver', 'discard'],
    'must be "deliver" (send the held entries) or "discard" (mark them seen, send nothing)',
  ),
});

/** The feed view for an application that has a subscription to it; 404 otherwise. */
export async function requireFeedView(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<FeedView> {
  const feed = await getFeed(ctx.db, id);
  if (!feed || !(await applicationUsesFeed(ctx.db, applicationId, id))) throw notFound('Feed');
  return feedView(
    feed,
    await countHeldEntries(ctx.db, id),
    await pushView(ctx, feed),
    await budgetHoldView(ctx, feed),
  );
}

/** Resolves a GUID-churn hold on a feed (shared by every subscriber, so any of them may resolve it): "deliver" sends
 *  the held entries as events, "discard" records them as seen. An entry was first seen when it was held, so a
 *  subscription created after that never receives it. The hold as it stood when the request came is released
 *  CHUNK_ROWS entries per transaction, from its end, with a turn of the event loop between two: a large hold never
 *  blocks other requests, a chunk is never released twice, and events keep the order one release would give them.
 *  409 when the feed holds nothing. */
export async function resolveIdentityChange(
  ctx: Ctx,
  applicationId: string,
  id: string,
  input: unknown,
): Promise<FeedView & { released: number; events: number }> {
  await requireFeedView(ctx, applicationId, id);
  const body = validate(IdentityChangeInput, input);
  const until = ctx.clock.now().toISOString();
  const result = { released: 0, events: 0 };
  for (;;) {
    const step = await transaction(ctx, async (tx) => releaseChunk(tx, id, body.action, until));
    if (step.released === 0 && result.released === 0)
      throw conflict('This feed holds no entries: its identity has not changed.');
    result.released += step.released;
    result.events += step.events;
    if (step.events > 0) ctx.nudgeDeliverer(); // the first chunks go out while the rest are released
    if (step.released < CHUNK_ROWS) break;
    await nextTurn();
  }
  return { ...(await requireFeedView(ctx, applicationId, id)), ...result };
}

/** Releases the last CHUNK_ROWS entries (in document order) held at or before `until`; the hold ends with its last. */
async function releaseChunk(
  ctx: Ctx,
  id: string,
  action: 'deliver' | 'discard',
  until: string,
): Promise<{ released: number; events: number }> {
  // A poll storing the feed's entries (which may hold more) waits for the chunk, or the chunk for it: the hold ends
  // only when no entry is held once both have committed.
  await lockFeed(ctx.db, id);
  const feed = await getFeed(ctx.db, id);
  const held = feed ? (await heldEntriesFromEnd(ctx.db, id, until, CHUNK_ROWS)).reverse() : [];
  if (!feed || held.length === 0) return { released: 0, events: 0 };
  const now = ctx.clock.now();
  const added = await recordKeys(
    ctx.db,
    id,
    held.map((h) => ({ key: h.key, fingerprint: h.fingerprint })),
    now,
  );
  const events =
    action === 'deliver'
      ? await queueEntryEvents(
          ctx,
          feed,
          feed,
          held.map((h) => ({
            entry: toEventEntry(h.key, JSON.parse(h.entry) as Entry, new Date(h.held_at)),
            firstSeenAt: h.held_at,
          })),
          now,
        )
      : 0;
  const heldAt = new Map(held.map((h) => [h.key, h.held_at]));
  await recordHistory(
    ctx,
    id,
    held.map((h) => {
      const entry = JSON.parse(h.entry) as Entry;
      return { key: h.key, source: h.key_source, entry, hash: contentHash(entry) }; // a held entry: hashed here
    }),
    {
      firstSeenAt: (e) => heldAt.get(e.key)!,
      fate: action === 'deliver' ? 'released' : 'discarded',
      via: 'poll',
    },
  );
  await deleteHeldEntries(
    ctx.db,
    id,
    held.map((h) => h.key),
  );
  await recordHoldReleased(ctx.db, id, added, now);
  return { released: held.length, events };
}

/** The public fields of a feed record (never its credentials). */
export function feedView(
  f: FeedRow,
  heldEntries = 0,
  push: PushView = { hub: f.hub_url, status: 'none', lease_expires_at: null, last_push_at: null },
  overBudget: BudgetHoldView | null = null,
): FeedView {
  return {
    id: f.id,
    url: f.url,
    feed_url: f.fetch_url,
    discovered_url: f.discovered_url,
    title: f.title,
    site_url: f.site_url,
    format: f.format,
    status: f.status,
    last_polled_at: f.last_polled_at,
    last_success_at: f.last_success_at,
    next_poll_at: f.status === 'gone' || f.next_poll_at === PARKED_AT ? null : f.next_poll_at,
    interval_seconds: f.interval_seconds,
    last_http_status: f.last_http_status,
    error_count: f.error_count,
    network_error_count: f.network_error_count,
    http_error_count: f.http_error_count,
    parse_error_count: f.parse_error_count,
    last_error: f.last_error,
    last_error_at: f.last_error_at,
    degraded: f.degraded,
    entry_count: f.entry_count,
    held_entries: heldEntries,
    held_entries_dropped: f.held_dropped,
    identity_key: f.identity_key,
    stored_bytes: f.stored_bytes,
    over_budget: overBudget,
    push,
    created_at: f.created_at,
    updated_at: f.updated_at,
  };
}

/** One page of the feeds the application's subscriptions use, newest first, optionally of some statuses. */
export async function listApplicationFeeds(
  ctx: Ctx,
  applicationId: string,
  q: { limit: number; after?: string | undefined; statuses?: FeedStatus[] | undefined },
): Promise<Page<FeedView & { subscription_count: number }>> {
  const page = await listFeedsOfApplication(ctx.db, applicationId, q);
  const data: (FeedView & { subscription_count: number })[] = [];
  for (const f of page.data)
    data.push({
      ...feedView(f, f.held_entries, await pushView(ctx, f), await budgetHoldView(ctx, f)),
      subscription_count: f.subscription_count,
    });
  return {
    data,
    next: page.next,
  };
}

/** How many of the application's feeds are in each status. */
export async function countApplicationFeeds(
  ctx: Ctx,
  applicationId: string,
): Promise<Record<FeedStatus, number>> {
  return countFeedsOfApplication(ctx.db, applicationId);
}

/** The `status` filter of GET /v1/feeds: none, a feed status, or `failing` for every feed not fetched successfully
 *  now (error and gone). */
export const FeedStatusFilter = v.optional(
  v.pipe(
    v.picklist(
      [...FEED_STATUSES, 'failing'],
      'must be one of pending, active, error, gone, identity_changed, over_budget, failing (= error and gone)',
    ),
    v.description(
      'Only feeds in this status; `failing` is every feed not fetched successfully now (`error` and `gone`).',
    ),
  ),
);

/** One page of the application's feeds (GET /v1/feeds), newest first, optionally of one status; 400 for an unknown
 *  status. */
export async function listFeedsFromQuery(
  ctx: Ctx,
  applicationId: string,
  q: { limit: number; after?: string | undefined; status?: string | undefined },
): Promise<Page<FeedView & { subscription_count: number }>> {
  // An empty parameter is none.
  const result = v.safeParse(FeedStatusFilter, q.status === '' ? undefined : q.status);
  if (!result.success)
    throw invalid(
      [{ path: 'status', message: result.issues[0].message }],
      'The query string has invalid parameters.',
    );
  const status = result.output;
  const statuses: FeedStatus[] | undefined =
    status === undefined ? undefined : status === 'failing' ? ['error', 'gone'] : [status];
  return listApplicationFeeds(ctx, applicationId, { limit: q.limit, after: q.after, statuses });
}

/** Asks for the feed to be fetched now (POST /v1/feeds/:id/refresh): it is due at once and the poller is woken; a
 *  gone feed is polled again. A shared feed is fetched on request at most once per poll.min_interval_seconds, whoever
 *  asks: sooner answers 429 with the wait. 404 for a feed the application does not use; 409 when no subscription of
 *  the feed is active (it is not polled). */
export async function requestFeedRefresh(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<FeedView> {
  await requireFeedView(ctx, applicationId, id);
  const now = ctx.clock.now();
  const minSeconds = ctx.config.poll.min_interval_seconds;
  await transaction(ctx, async (tx) => {
    const feed = (await getFeed(tx.db, id))!;
    if (!(await feedHasActiveSubscription(tx.db, id)))
      throw conflict(
        'No subscription of this feed is active, so it is not polled: resume one (PATCH /v1/subscriptions/:id {"status": "active"}) first.',
      );
    const wait = refreshWaitSeconds(feed.last_polled_at, now, minSeconds);
    if (wait > 0)
      throw tooManyRequests(
        'feed_refresh',
        1,
        wait,
        `The feed was fetched less than poll.min_interval_seconds (${minSeconds} s) ago; a refresh may fetch it again in ${wait} s.`,
      );
    await makeFeedDueNow(tx.db, id, now);
  });
  ctx.nudgePoller();
  return requireFeedView(ctx, applicationId, id);
}

/** Whole seconds until a feed last polled at `lastPolledAt` may be fetched on request again; 0 when it may now. */
export function refreshWaitSeconds(
  lastPolledAt: string | null,
  now: Date,
  minSeconds: number,
): number {
  if (lastPolledAt === null) return 0;
  const ready = Date.parse(lastPolledAt) + minSeconds * 1000;
  return Math.max(0, Math.ceil((ready - now.getTime()) / 1000));
}
