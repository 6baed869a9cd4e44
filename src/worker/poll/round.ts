// `poll --once` and the tests' poll: one round of feeds, awaited, through a pool of its own with the daemon's pool spec
// and per-host caps (poller.ts), resolving once each outcome is recorded.
import type { Ctx } from '../../context.ts';
import type { Sql } from '../../db/engine.ts';
import { writePollCounts } from '../../actions/poll-counts.ts';
import { retryWhileBusy } from '../../db/busy.ts';
import type { RefreshOutcome } from '../../feed/fetch/refresh.ts';
import {
  claimDueFeeds,
  feedsToPollAfter,
  leaseFeeds,
  nextFeedDueAfter,
  type PollTarget,
} from '../../store/feeds-poll.ts';
import { pickFairly } from '../pool/fair.ts';
import type { Stored } from './parsed.ts';
import {
  feedKeys,
  hostOf,
  IDLE_MS,
  leaseMs,
  MIN_WAKE_MS,
  pollSpec,
  type Claimed,
  type PollDeps,
  type PollSummary,
} from './poller.ts';
import { Pool } from '../pool/core.ts';
import type { Room } from '../pool/spec.ts';

/** One poll round, awaited (poll --once, tests). Without `all`: leases up to 64 due feeds, looks up their hosts, runs
 *  them through a pool of poll.concurrency slots under the same per-host caps, and resolves once each is recorded. With
 *  `all` (ignoring schedules): every feed with an active subscription, read ONCE_CHUNK at a time in id order, each
 *  leased only as its slot starts it, so no lease runs out while it waits its turn. Returns what happened and the ms
 *  until the next feed falls due. */
export async function pollTick(
  ctx: Ctx,
  deps: PollDeps,
  opts: { all?: boolean } = {},
): Promise<{ summary: PollSummary; nextDelayMs: number }> {
  const summary: PollSummary = { fetched: 0, notModified: 0, failed: 0, newEntries: 0, events: 0 };
  if (opts.all)
    for (let after = ''; ;) {
      const chunk = await feedsToPollAfter(ctx.db, after, ctx.clock.now(), ONCE_CHUNK);
      if (chunk.length === 0) break;
      after = chunk[chunk.length - 1]!.id;
      await pollRound(ctx, deps, summary, chunk);
    }
  else
    await pollRound(
      ctx,
      deps,
      summary,
      await claimDueFeeds(ctx.db, ctx.clock.now(), leaseMs(ctx), 64),
    );
  // The chart's counts of this round's polls (serve writes them by the minute; a one-shot poll before it returns).
  await writePollCounts(ctx).catch((err: unknown) =>
    deps.logger.warn('poll: the poll counts of the dashboard chart were not written', {
      error: err instanceof Error ? err.message : String(err),
    }),
  );
  const next = await nextFeedDueAfter(ctx.db, ctx.clock.now());
  const wait = next === undefined ? IDLE_MS : Date.parse(next) - ctx.clock.now().getTime();
  return { summary, nextDelayMs: Math.min(IDLE_MS, Math.max(MIN_WAKE_MS, wait)) };
}

/** How many times a round takes back a feed the pool gave back unpolled. */
const RETURNS = 2;

/** Feeds `poll --once` reads at a time: each chunk's hosts are looked up together, then it runs through the pool. */
const ONCE_CHUNK = 256;

/** Runs `feeds` through a pool of their own and resolves once each is recorded. Feeds given as poll targets are leased
 *  already; the others (an id and a URL) are leased by the claim that starts them. */
async function pollRound(
  ctx: Ctx,
  deps: PollDeps,
  summary: PollSummary,
  feeds: readonly (PollTarget | Pick<PollTarget, 'id' | 'fetch_url'>)[],
): Promise<void> {
  await Promise.all(
    [...new Set(feeds.map((f) => hostOf(f.fetch_url)))].map((h) => deps.resolver.refresh(h)),
  );
  const waiting: { feed: (typeof feeds)[number]; keys: readonly string[] }[] = feeds.map(
    (feed) => ({
      feed,
      keys: feedKeys(deps.resolver, feed.fetch_url, null),
    }),
  );
  const claim = async (free: number, room: Room, db: Sql): Promise<Claimed[]> => {
    const picked = pickFairly(
      waiting.map((c) => ({ value: c, keys: c.keys, groups: c.keys.slice(0, 1) })),
      free,
      room,
    );
    for (const c of picked) waiting.splice(waiting.indexOf(c), 1);
    const leased = picked.filter((c) => 'url' in c.feed) as Claimed[];
    const keys = new Map(picked.map((c) => [c.feed.id, c.keys]));
    const toLease = picked.filter((c) => !('url' in c.feed)).map((c) => c.feed.id);
    for (const feed of await leaseFeeds(db, toLease, ctx.clock.now(), leaseMs(ctx)))
      leased.push({ feed, keys: keys.get(feed.id)! });
    return leased;
  };
  const spec = pollSpec(
    ctx,
    deps,
    claim,
    () => {},
    (r) => count(summary, r),
  );
  // A feed the pool gives back unpolled (it waited past the queue's limit for a slot, or its run failed) rejoins the
  // round once its lease is released, to be claimed afresh, up to RETURNS times: the round polls every feed it has.
  const returned = new Map<string, number>();
  const release = async (items: readonly Claimed[], db: Sql) => {
    await spec.release(items, db);
    for (const { feed, keys } of items) {
      const times = returned.get(feed.id) ?? 0;
      if (times >= RETURNS || waiting.some((c) => c.feed.id === feed.id)) continue;
      returned.set(feed.id, times + 1);
      waiting.push({ feed: { id: feed.id, fetch_url: feed.fetch_url }, keys });
    }
  };
  const pool = new Pool(ctx.store, { ...spec, release }, deps.logger);
  pool.start();
  await retryWhileBusy(() => pool.fill()); // poll --once --force beside serve: the write lock may be taken for a while
  await pool.drain(leaseMs(ctx) * Math.max(1, feeds.length));
  pool.stop();
}

function count(
  summary: PollSummary,
  { outcome, stored }: { outcome: RefreshOutcome; stored: Stored },
): void {
  summary.fetched += 1;
  if (outcome.kind === 'unchanged') summary.notModified += 1;
  if (outcome.kind === 'error') summary.failed += 1;
  summary.newEntries += stored.newEntries;
  summary.events += stored.events;
}
