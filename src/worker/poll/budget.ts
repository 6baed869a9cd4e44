// The storage budget inside the poll transaction: a document (or a 304 ending a hold) is stored only while the feed's
// application has room (actions/budget.ts); otherwise the feed is held — recorded as fetched, nothing stored, parked —
// and its subscribers told once (feed.over_budget); the poll that fits again ends the hold (feed.within_budget).
import type { Ctx } from '../../context.ts';
import { feedBudget, storageUsed, storeWithinBudget } from '../../actions/budget.ts';
import { queueOverBudget, queueWithinBudget } from '../../actions/feed-events.ts';
import type { RefreshOutcome } from '../../feed/fetch/refresh.ts';
import { getFeed, type FeedRow } from '../../store/feeds.ts';
import { endBudgetHold, recordBudgetHold } from '../../store/feeds-record.ts';
import type { Stored } from './parsed.ts';

/** Stores `outcome` for `feed` through `store` within its application's storage budget: a document, or a 304 of a
 *  held feed (which must find its application back under its budget), is kept only when it fits; else the feed is
 *  held. Other outcomes (errors, 410, 429) store nothing and pass. Call inside the poll transaction. */
export async function storeBudgeted(
  ctx: Ctx,
  feed: FeedRow,
  outcome: RefreshOutcome,
  at: { now: Date; seenAt: Date },
  store: () => Promise<Stored>,
): Promise<Stored> {
  const held = feed.budget_held_at !== null;
  if (outcome.kind !== 'parsed' && !(outcome.kind === 'unchanged' && held)) return store();
  const stored = await storeWithinBudget(ctx, feed, store);
  if (stored === 'over') return holdForBudget(ctx, feed, outcome.meta.status, at);
  if (!held) return stored;
  await endBudgetHold(ctx.db, feed.id);
  const announced = await queueWithinBudget(
    ctx,
    feed.id,
    feed.budget_held_at!,
    await usage(ctx, feed),
    at.seenAt,
  );
  return { ...stored, events: stored.events + announced };
}

/** Records the hold (nothing of the document stored) and, when it begins, announces it. */
async function holdForBudget(
  ctx: Ctx,
  feed: FeedRow,
  httpStatus: number,
  at: { now: Date; seenAt: Date },
): Promise<Stored> {
  const heldAt = feed.budget_held_at ?? at.seenAt.toISOString();
  await recordBudgetHold(
    ctx.db,
    feed.id,
    { last_http_status: httpStatus, held_at: heldAt },
    at.now,
  );
  if (feed.budget_held_at !== null) return { newEntries: 0, events: 0 };
  const events = await queueOverBudget(
    ctx,
    (await getFeed(ctx.db, feed.id))!,
    await usage(ctx, feed),
    at.seenAt,
  );
  return { newEntries: 0, events };
}

/** What the feed's application keeps and its budget (0: none counts the feed). */
async function usage(ctx: Ctx, feed: FeedRow): Promise<{ used: number; budget: number }> {
  const budget = feedBudget(ctx, feed);
  return budget === null
    ? { used: 0, budget: 0 }
    : { used: await storageUsed(ctx, budget.applicationId), budget: budget.limit };
}
