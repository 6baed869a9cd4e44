// The storage budget (quotas.storage_bytes_per_application; docs/decisions/storage-budget.md): what an application
// keeps against it, storing a document only while it fits, and retrying the feeds held for it once there is room.
import { transaction, type Ctx } from '../context.ts';
import {
  countHeldFeedsOf,
  heldFeedsAfter,
  heldFeedsOf,
  retryHeldFeed,
  type FeedRow,
  type HeldFeed,
} from '../store/feeds.ts';
import { applicationStorage } from '../store/storage.ts';

/** The budget that counts a feed: that of the one application all its subscriptions belong to. */
export type FeedBudget = { applicationId: string; limit: number };

/** The budget that counts `feed`, or null when none does: no budget is set (0), or no application, or several, use
 *  the feed (a feed shared with another application is never held on one tenant's account). */
export function feedBudget(
  ctx: Ctx,
  feed: Pick<FeedRow, 'sole_application_id'>,
): FeedBudget | null {
  const limit = ctx.config.quotas.storage_bytes_per_application;
  if (limit === 0 || feed.sole_application_id === null) return null;
  return { applicationId: feed.sole_application_id, limit };
}

/** The bytes an application keeps: the feeds only its subscriptions use, and its events (one row read). */
export async function storageUsed(ctx: Ctx, applicationId: string): Promise<number> {
  const kept = await applicationStorage(ctx.db, applicationId);
  return kept.feed_bytes + kept.event_bytes;
}

/** Thrown inside the savepoint of storeWithinBudget to undo what did not fit. */
class OverBudget extends Error {}

/** Runs `store` (the writes a document makes: keys, history, holds, events) and keeps what it wrote only when the
 *  feed's budget has room: the application was under its budget before and is within it after. Otherwise nothing is
 *  kept (a savepoint rolled back) and the result is 'over'. Without a budget, runs `store`. Call inside a
 *  transaction. */
export async function storeWithinBudget<T>(
  ctx: Ctx,
  feed: Pick<FeedRow, 'sole_application_id'>,
  store: () => Promise<T>,
): Promise<T | 'over'> {
  const budget = feedBudget(ctx, feed);
  if (budget === null) return store();
  if ((await storageUsed(ctx, budget.applicationId)) >= budget.limit) return 'over';
  try {
    return await ctx.db.savepoint(async () => {
      const stored = await store();
      if ((await storageUsed(ctx, budget.applicationId)) > budget.limit) throw new OverBudget();
      return stored;
    });
  } catch (err) {
    if (err instanceof OverBudget) return 'over';
    throw err;
  }
}

/** Makes due the parked feeds held for a budget that may have room again: their application is under its budget, or
 *  none is set any more, or the feed is shared now. Only those of `applicationId` when given (one of its subscriptions
 *  or their events went), else every held feed (the maintenance pass, after its recount, and at start, which is when
 *  a raised budget applies). The poll that comes decides: it resumes the feed when what the feed shows fits. Returns
 *  how many feeds were made due, and wakes the poller for them. */
export async function retryHeldFeeds(ctx: Ctx, applicationId?: string): Promise<number> {
  const now = ctx.clock.now();
  let retried = 0;
  const room = new Map<string, boolean>();
  const hasRoom = async (tx: Ctx, feed: HeldFeed) => {
    const budget = feedBudget(tx, feed);
    if (budget === null) return true;
    let yes = room.get(budget.applicationId);
    if (yes === undefined) {
      yes = (await storageUsed(tx, budget.applicationId)) < budget.limit;
      room.set(budget.applicationId, yes);
    }
    return yes;
  };
  const retry = async (feeds: HeldFeed[]) =>
    await transaction(ctx, async (tx) => {
      for (const feed of feeds)
        if ((await hasRoom(tx, feed)) && (await retryHeldFeed(tx.db, feed.id, now))) retried++;
    });
  if (applicationId !== undefined) await retry(await heldFeedsOf(ctx.db, applicationId));
  else
    for (let after = ''; ;) {
      const feeds = await heldFeedsAfter(ctx.db, after, 500);
      await retry(feeds);
      if (feeds.length < 500) break;
      after = feeds.at(-1)!.id;
    }
  if (retried > 0) ctx.nudgePoller();
  return retried;
}

/** An application's storage as the API shows it (GET /v1/storage). */
export type StorageView = {
  /** What it keeps: `feed_bytes` + `event_bytes`. */
  used_bytes: number;
  /** quotas.storage_bytes_per_application; 0 = no budget. */
  budget_bytes: number;
  /** The entry keys, held entries, history and probes of the feeds only its subscriptions use. */
  feed_bytes: number;
  /** Its events: bodies, the entries they carry, their attempts. */
  event_bytes: number;
  /** Its feeds held for the budget (status over_budget). */
  held_feeds: number;
};

/** What the application keeps against its budget. */
export async function storageView(ctx: Ctx, applicationId: string): Promise<StorageView> {
  const kept = await applicationStorage(ctx.db, applicationId);
  return {
    used_bytes: kept.feed_bytes + kept.event_bytes,
    budget_bytes: ctx.config.quotas.storage_bytes_per_application,
    feed_bytes: kept.feed_bytes,
    event_bytes: kept.event_bytes,
    held_feeds: await countHeldFeedsOf(ctx.db, applicationId),
  };
}

/** Why a feed is held, as its API view shows it. */
export type BudgetHoldView = {
  held_at: string;
  used_bytes: number;
  budget_bytes: number;
  detail: string;
};

/** Why `feed` is held for its application's budget, or null when it is not held. */
export async function budgetHoldView(
  ctx: Ctx,
  feed: Pick<FeedRow, 'budget_held_at' | 'sole_application_id'>,
): Promise<BudgetHoldView | null> {
  if (feed.budget_held_at === null) return null;
  const budget = ctx.config.quotas.storage_bytes_per_application;
  const used =
    feed.sole_application_id === null ? 0 : await storageUsed(ctx, feed.sole_application_id);
  return {
    held_at: feed.budget_held_at,
    used_bytes: used,
    budget_bytes: budget,
    detail: `Polling is held: the feeds only your subscriptions use and your events keep ${used} bytes, and what the feed shows would take them past your storage budget of ${budget} bytes (quotas.storage_bytes_per_application). It resumes by itself, sending what the feed shows then, once there is room: delete subscriptions or events you no longer need (delivered events go after delivery.retention_days), or ask the operator to raise the budget.`,
  };
}
