// The poller's tick: claim due feeds with a lease, refresh them concurrently, then store each outcome in ONE transaction.
import type { Ctx } from '../context.ts';
import type { Limiter } from '../feed/limiter.ts';
import {
  refreshFeed,
  type RefreshDeps,
  type RefreshOutcome,
  type RefreshTarget,
} from '../feed/refresh.ts';
import type { Logger } from '../log.ts';
import type { FeedRow } from '../store/feeds.ts';
import { claimDueFeeds, nextFeedDueAt } from '../store/feeds-poll.ts';
import type { Telemetry } from '../telemetry.ts';
import { applyOutcome } from './poll-outcome.ts';
import type { Stored } from './poll-parsed.ts';

export type PollSummary = {
  fetched: number;
  notModified: number;
  failed: number;
  newEntries: number;
  events: number;
};
export type PollerDeps = {
  refresh: Omit<RefreshDeps, 'now'>;
  limiter: Limiter;
  logger: Logger;
  telemetry: Telemetry;
};

const BATCH = 64;

/** One poll tick; `all` ignores schedules (poll --once). Returns what happened and the ms until the next due feed. */
export async function pollTick(
  ctx: Ctx,
  deps: PollerDeps,
  opts: { all?: boolean } = {},
): Promise<{ summary: PollSummary; nextDelayMs: number }> {
  const summary: PollSummary = { fetched: 0, notModified: 0, failed: 0, newEntries: 0, events: 0 };
  const now = ctx.clock.now();
  // Covers a fetch and a discovery's extra fetches (up to 5 in all) and the parse; a crashed poll's feed is retried after it.
  const leaseMs = (ctx.config.poll.timeout_seconds * 5 + 10) * 1000;
  const feeds = claimDueFeeds(ctx.db, now, leaseMs, opts.all ? 1_000_000 : BATCH, opts.all);
  await Promise.all(
    feeds.map((feed) =>
      deps.limiter.run(hostOf(feed.fetch_url), () => pollOne(ctx, deps, feed, summary)),
    ),
  );
  if (feeds.length >= BATCH && !opts.all) return { summary, nextDelayMs: 0 };
  const due = nextFeedDueAt(ctx.db);
  const wait = due === undefined ? 60_000 : Date.parse(due) - ctx.clock.now().getTime();
  return { summary, nextDelayMs: Math.min(60_000, Math.max(feeds.length > 0 ? 0 : 1000, wait)) };
}

async function pollOne(
  ctx: Ctx,
  deps: PollerDeps,
  feed: FeedRow,
  summary: PollSummary,
): Promise<void> {
  const seenAt = ctx.clock.now();
  const outcome = await refreshFeed(refreshTarget(feed), {
    ...deps.refresh,
    now: () => ctx.clock.now(),
  });
  const now = ctx.clock.now();
  const result = ctx.db.transaction(() => applyOutcome(ctx, feed, outcome, now, seenAt))();
  if (result.events > 0) ctx.nudgeDeliverer(); // each feed's events go out as soon as they are stored, not after the round
  summary.fetched += 1;
  if (outcome.kind === 'unchanged') summary.notModified += 1;
  if (outcome.kind === 'error') summary.failed += 1;
  summary.newEntries += result.newEntries;
  summary.events += result.events;
  report(deps, feed, outcome, result);
}

/** What to fetch for a feed. A feed awaiting its baseline is fetched without validators: a 304 would leave it without
 *  one, and the entries of its next change would be swallowed by that late baseline. */
export function refreshTarget(feed: FeedRow): RefreshTarget {
  const fresh = feed.baseline_at === null;
  return {
    url: feed.url,
    fetchUrl: feed.fetch_url,
    credentials: feed.credentials,
    etag: fresh ? null : feed.etag,
    lastModified: fresh ? null : feed.last_modified,
    bodyHash: fresh ? null : feed.body_hash,
    discovered: feed.discovered_url !== null,
    keyBase: feed.discovered_url ?? feed.url,
  };
}

/** Measures and logs one stored refresh. */
function report(deps: PollerDeps, feed: FeedRow, outcome: RefreshOutcome, result: Stored): void {
  deps.telemetry.polled(
    outcome.kind,
    'meta' in outcome ? outcome.meta.durationMs : outcome.durationMs,
  );
  const fields = {
    feed_id: feed.id,
    outcome: outcome.kind,
    http_status: 'meta' in outcome ? outcome.meta.status : outcome.status,
    new_entries: result.newEntries,
    events: result.events,
    duration_ms: 'meta' in outcome ? outcome.meta.durationMs : outcome.durationMs,
    ...(result.switchedTo ? { identity_switched_to: result.switchedTo } : {}),
  };
  if (outcome.kind === 'error')
    deps.logger.warn('poll: feed failed', {
      ...fields,
      error_class: outcome.errorClass,
      error: outcome.message,
    });
  else if (outcome.kind === 'gone') deps.logger.warn('poll: feed gone, polling stopped', fields);
  else deps.logger.info('poll: feed polled', fields);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
