// The poller's tick: claim due feeds with a lease, refresh them concurrently, then store each outcome in ONE transaction.
import type { Ctx } from '../context.ts';
import { queueEntryEvents, toEventEntry } from '../actions/entry-events.ts';
import { isIdentityChurn } from '../feed/identity.ts';
import type { Limiter } from '../feed/limiter.ts';
import { refreshFeed, type RefreshDeps, type RefreshOutcome } from '../feed/refresh.ts';
import { nextPoll, type ScheduleLimits } from '../feed/schedule.ts';
import type { Entry } from '../feed/types.ts';
import type { Logger } from '../log.ts';
import { holdEntries, insertKeys, unseenKeys } from '../store/entries.ts';
import type { FeedRow } from '../store/feeds.ts';
import {
  claimDueFeeds,
  nextFeedDueAt,
  recordFeedGone,
  recordPollFailure,
  recordPollSuccess,
  recordPollThrottled,
  recordPollUnchanged,
} from '../store/feeds-poll.ts';
import type { Telemetry } from '../telemetry.ts';

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
const PERMANENT_REDIRECTS_TO_MOVE = 3;

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
  const outcome = await refreshFeed(
    {
      fetchUrl: feed.fetch_url,
      credentials: feed.credentials,
      etag: feed.etag,
      lastModified: feed.last_modified,
      bodyHash: feed.body_hash,
      discovered: feed.discovered_url !== null,
    },
    { ...deps.refresh, now: () => ctx.clock.now() },
  );
  const now = ctx.clock.now();
  const result = ctx.db.transaction(() => applyOutcome(ctx, feed, outcome, now))();
  if (result.events > 0) ctx.nudgeDeliverer(); // each feed's events go out as soon as they are stored, not after the round
  summary.fetched += 1;
  if (outcome.kind === 'unchanged') summary.notModified += 1;
  if (outcome.kind === 'error') summary.failed += 1;
  summary.newEntries += result.newEntries;
  summary.events += result.events;
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

/** Stores one refresh outcome; runs inside the poll transaction. */
function applyOutcome(
  ctx: Ctx,
  feed: FeedRow,
  outcome: RefreshOutcome,
  now: Date,
): { newEntries: number; events: number } {
  const limits = scheduleLimits(ctx);
  const at = (seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString();
  switch (outcome.kind) {
    case 'unchanged': {
      const next = nextPoll(
        {
          kind: 'unchanged',
          cacheSeconds: outcome.meta.cacheSeconds,
          previousIntervalSeconds: feed.interval_seconds,
        },
        limits,
      );
      const status = feed.status === 'identity_changed' ? 'identity_changed' : 'active';
      recordPollUnchanged(
        ctx.db,
        feed.id,
        {
          etag: outcome.meta.etag ?? feed.etag,
          last_modified: outcome.meta.lastModified ?? feed.last_modified,
          last_http_status: outcome.meta.status,
          next_poll_at: at(next.delaySeconds),
          interval_seconds: next.intervalSeconds,
          ...redirectState(feed, outcome.meta.permanentRedirectTo, null),
        },
        status,
        now,
      );
      return { newEntries: 0, events: 0 };
    }
    case 'gone':
      recordFeedGone(ctx.db, feed.id, now);
      return { newEntries: 0, events: 0 };
    case 'throttled': {
      const next = nextPoll(
        { kind: 'throttled', retryAfterSeconds: outcome.retryAfterSeconds },
        limits,
      );
      recordPollThrottled(ctx.db, feed.id, outcome.meta.status, at(next.delaySeconds), now);
      return { newEntries: 0, events: 0 };
    }
    case 'error': {
      const next = nextPoll(
        {
          kind: 'error',
          consecutiveErrors: feed.error_count + 1,
          retryAfterSeconds: outcome.retryAfterSeconds,
        },
        limits,
      );
      recordPollFailure(
        ctx.db,
        feed.id,
        {
          errorClass: outcome.errorClass,
          message: outcome.message,
          httpStatus: outcome.status,
          nextPollAt: at(next.delaySeconds),
        },
        now,
      );
      return { newEntries: 0, events: 0 };
    }
    case 'parsed':
      return applyParsed(ctx, feed, outcome, now, limits);
  }
}

function applyParsed(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Extract<RefreshOutcome, { kind: 'parsed' }>,
  now: Date,
  limits: ScheduleLimits,
): { newEntries: number; events: number } {
  const { parsed, keys, meta } = outcome;
  const unseen = unseenKeys(ctx.db, feed.id, keys);
  const fresh = uniqueFresh(parsed.entries, keys, unseen);
  let status: FeedRow['status'] =
    feed.status === 'identity_changed' ? 'identity_changed' : 'active';
  let events = 0;
  let added = 0;
  if (feed.baseline_at === null) {
    added = insertKeys(ctx.db, feed.id, keys, now); // first fetch: the baseline, nothing is sent
  } else if (
    isIdentityChurn({ knownBefore: feed.entry_count, total: keys.length, unseen: unseen.size })
  ) {
    holdEntries(
      ctx.db,
      feed.id,
      fresh.map((f) => ({ key: f.key, entry: JSON.stringify(f.entry), position: f.position })),
      now,
    );
    status = 'identity_changed';
  } else if (fresh.length > 0) {
    added = insertKeys(
      ctx.db,
      feed.id,
      fresh.map((f) => f.key),
      now,
    );
    events = queueEntryEvents(
      ctx,
      feed,
      parsed,
      fresh.map((f) => toEventEntry(f.key, f.entry, now)),
      now,
    );
  }
  const next = nextPoll(
    {
      kind: 'success',
      publishedAt: parsed.entries.map((e) => e.published_at),
      ttlSeconds: parsed.ttl_seconds,
      cacheSeconds: meta.cacheSeconds,
      previousIntervalSeconds: feed.interval_seconds,
    },
    limits,
  );
  const moved = redirectState(feed, meta.permanentRedirectTo, outcome.discoveredUrl);
  recordPollSuccess(
    ctx.db,
    feed.id,
    {
      status,
      title: parsed.title,
      site_url: parsed.site_url,
      format: parsed.format,
      etag: meta.etag,
      last_modified: meta.lastModified,
      body_hash: outcome.bodyHash,
      last_http_status: meta.status,
      next_poll_at: new Date(now.getTime() + next.delaySeconds * 1000).toISOString(),
      interval_seconds: next.intervalSeconds,
      ttl_seconds: parsed.ttl_seconds,
      degraded: parsed.degraded,
      hub_url: parsed.hub_url,
      self_url: parsed.self_url,
      baseline_at: feed.baseline_at ?? now.toISOString(),
      entry_count: feed.entry_count + added,
      ...moved,
    },
    now,
  );
  return { newEntries: feed.baseline_at === null ? 0 : fresh.length, events };
}

/** Entries whose key is unseen, once each, in document order. */
function uniqueFresh(
  entries: Entry[],
  keys: string[],
  unseen: Set<string>,
): { key: string; entry: Entry; position: number }[] {
  const taken = new Set<string>();
  const out: { key: string; entry: Entry; position: number }[] = [];
  keys.forEach((key, i) => {
    if (!unseen.has(key) || taken.has(key)) return;
    taken.add(key);
    out.push({ key, entry: entries[i]!, position: i });
  });
  return out;
}

/** A discovered feed URL replaces the fetch URL at once; a permanent redirect only after repeated sightings (never 302/307). */
function redirectState(
  feed: FeedRow,
  permanentTo: string | null,
  discovered: string | null,
): Pick<FeedRow, 'fetch_url' | 'discovered_url' | 'redirect_url' | 'redirect_count'> {
  if (discovered)
    return {
      fetch_url: discovered,
      discovered_url: discovered,
      redirect_url: null,
      redirect_count: 0,
    };
  const target = permanentTo; // fetchFeed already leaves credentials out of it
  if (!target || target === feed.fetch_url)
    return {
      fetch_url: feed.fetch_url,
      discovered_url: feed.discovered_url,
      redirect_url: null,
      redirect_count: 0,
    };
  const count = feed.redirect_url === target ? feed.redirect_count + 1 : 1;
  if (count >= PERMANENT_REDIRECTS_TO_MOVE)
    return {
      fetch_url: target,
      discovered_url: feed.discovered_url,
      redirect_url: null,
      redirect_count: 0,
    };
  return {
    fetch_url: feed.fetch_url,
    discovered_url: feed.discovered_url,
    redirect_url: target,
    redirect_count: count,
  };
}

function scheduleLimits(ctx: Ctx): ScheduleLimits {
  return {
    intervalSeconds: ctx.config.poll.interval_seconds,
    minSeconds: ctx.config.poll.min_interval_seconds,
    maxSeconds: ctx.config.poll.max_interval_seconds,
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
