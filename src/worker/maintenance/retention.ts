// The retention part of maintenance: walks every feed a slice at a time; deletes the feeds no subscription has used for
// [retention] orphaned_feed_days with their keys and held entries, prunes the other feeds' keys to their window, trims
// holds over their cap; then recounts what each feed stores for the storage budget (store/storage.ts), which is also
// what the bounded tables hold, for the metrics. Every deletion is a short transaction with a turn of the event loop
// after it.
import { CHUNK_ROWS, nextTurn } from '../../actions/chunks.ts';
import { transaction, type Ctx } from '../../context.ts';
import { countHeldEntries } from '../../store/entries.ts';
import {
  deleteKeysWithin,
  emptyFeed,
  keyPruneBound,
  trimHeldEntries,
} from '../../store/entries-retention.ts';
import { pruneHistoryWithoutKeys } from '../../store/entry-history.ts';
import { addHeldDropped, deleteUnusedFeed, feedsAfter } from '../../store/feeds.ts';
import { recountFeedStorage } from '../../store/storage.ts';
import { feedHasSubscription } from '../../store/subscriptions.ts';

/** What the bounded tables hold after a complete pass (the metrics' gauges). */
export type RetainedCounts = { entryKeys: number; heldEntries: number; orphanedFeeds: number };

export type RetentionSummary = {
  feedsDeleted: number;
  keysPruned: number;
  heldTrimmed: number;
  /** Bytes by which the feeds' storage counts were off, in all (0 when every write counted what it did). */
  storageDrift: number;
  /** Set when the pass walked every feed; a pass that spent its budget stops early and the next tick walks again. */
  counts?: RetainedCounts;
};

/** Deletion batches one maintenance tick may still run (each is a transaction followed by a turn of the event loop). */
export type Budget = { batches: number };

const DAY_MS = 86_400_000;
/** Feeds read per step of the walk: each costs a few index lookups. */
const FEEDS_PER_STEP = 100;

/** One pass over every feed (see the file comment), within `budget`. */
export async function retentionPass(
  ctx: Ctx,
  now: Date,
  budget: Budget,
): Promise<RetentionSummary> {
  const orphanedBefore = new Date(
    now.getTime() - ctx.config.retention.orphaned_feed_days * DAY_MS,
  ).toISOString();
  const summary: RetentionSummary = {
    feedsDeleted: 0,
    keysPruned: 0,
    heldTrimmed: 0,
    storageDrift: 0,
  };
  const counts: RetainedCounts = { entryKeys: 0, heldEntries: 0, orphanedFeeds: 0 };
  for (let after = ''; ;) {
    const feeds = await feedsAfter(ctx.db, after, FEEDS_PER_STEP);
    for (const feed of feeds) {
      let used = feed.used === 1;
      if (!used && feed.updated_at < orphanedBefore) {
        const outcome = await deleteOrphan(ctx, feed.id, budget);
        if (outcome === 'out of budget') return summary;
        if (outcome === 'deleted') {
          summary.feedsDeleted += 1;
          continue;
        }
        used = true; // a subscription came back meanwhile
      }
      if (!(await boundFeed(ctx, feed.id, budget, summary, counts))) return summary;
      if (!used) counts.orphanedFeeds += 1;
    }
    if (feeds.length < FEEDS_PER_STEP) return { ...summary, counts };
    after = feeds.at(-1)!.id;
    await nextTurn();
  }
}

/** Empties a feed no subscription uses, a batch per transaction, then deletes it; stops as soon as a subscription
 *  uses it again (it then takes a fresh baseline, for which it needs none of the keys). */
async function deleteOrphan(
  ctx: Ctx,
  feedId: string,
  budget: Budget,
): Promise<'deleted' | 'used' | 'out of budget'> {
  for (;;) {
    if (budget.batches <= 0) return 'out of budget';
    budget.batches -= 1;
    const outcome = await transaction(ctx, async (tx) => {
      if (await feedHasSubscription(tx.db, feedId)) return 'used';
      if ((await emptyFeed(tx.db, feedId, CHUNK_ROWS)) === CHUNK_ROWS) return 'more';
      await deleteUnusedFeed(tx.db, feedId);
      return 'deleted';
    });
    if (outcome !== 'more') return outcome;
    await nextTurn();
  }
}

/** Trims the feed's hold to its cap and prunes its keys to their window, then recounts what it keeps (one
 *  transaction: the feed's storage counts and its application's are set to what its rows are); false when the budget
 *  ran out first. */
async function boundFeed(
  ctx: Ctx,
  feedId: string,
  budget: Budget,
  summary: RetentionSummary,
  counts: RetainedCounts,
): Promise<boolean> {
  const r = ctx.config.retention;
  let over = (await countHeldEntries(ctx.db, feedId)) - r.held_entries_per_feed;
  while (over > 0) {
    if (budget.batches-- <= 0) return false;
    const n = await transaction(ctx, async (tx) => {
      const trimmed = await trimHeldEntries(tx.db, feedId, Math.min(CHUNK_ROWS, over));
      await addHeldDropped(tx.db, feedId, trimmed);
      return trimmed;
    });
    summary.heldTrimmed += n;
    over = n === 0 ? 0 : over - n;
    await nextTurn();
  }
  const bound = await keyPruneBound(
    ctx.db,
    feedId,
    r.entry_key_days * DAY_MS,
    r.entry_keys_per_feed,
  );
  for (let n = CHUNK_ROWS; bound !== undefined && n === CHUNK_ROWS;) {
    if (budget.batches-- <= 0) return false;
    n = await transaction(ctx, async (tx) => {
      const pruned = await deleteKeysWithin(tx.db, feedId, bound, CHUNK_ROWS);
      // A stored entry never outlives its key: it would show as known in the history while it would be sent again.
      if (pruned > 0) await pruneHistoryWithoutKeys(tx.db, feedId);
      return pruned;
    });
    summary.keysPruned += n;
    await nextTurn();
  }
  const kept = await transaction(ctx, async (tx) => recountFeedStorage(tx.db, feedId));
  if (kept !== undefined) {
    counts.entryKeys += kept.keys;
    counts.heldEntries += kept.held;
    summary.storageDrift += Math.abs(kept.drift);
  }
  return true;
}
