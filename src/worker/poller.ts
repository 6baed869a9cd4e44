// The poller: a feed's way from claim to recorded outcome, on the work pool (pool.ts; states in ARCHITECTURE.md).
// claim: among the earliest due feeds, each keyed by its host, every address the host resolves to (looked up before the
// claim) and one of its applications, picked fairly → run: refreshFeed, all of it within poll.timeout_seconds → record:
// applyOutcome (poll-outcome.ts) in the group commit that claims for the slots it frees → report.
import type { Ctx } from '../context.ts';
import { retryWhileBusy } from '../db/busy.ts';
import {
  refreshFeed,
  type RefreshDeps,
  type RefreshOutcome,
  type RefreshTarget,
} from '../feed/refresh.ts';
import type { Logger } from '../log.ts';
import { addressKey, type Resolver } from '../net/resolver.ts';
import type { FeedRow } from '../store/feeds.ts';
import {
  claimDueFeeds,
  dueFeedWindow,
  feedsToPollAfter,
  leaseFeeds,
  nextFeedDueAfter,
  releaseFeedLeases,
  type DueFeed,
  type PollTarget,
} from '../store/feeds-poll.ts';
import type { Telemetry } from '../telemetry.ts';
import { pickFairly, type Candidate } from './fair.ts';
import { applyOutcome } from './poll-outcome.ts';
import type { Stored } from './poll-parsed.ts';
import { Pool, type PoolSpec, type Room } from './pool.ts';

export type PollSummary = {
  fetched: number;
  notModified: number;
  failed: number;
  newEntries: number;
  events: number;
};
/** What polling needs besides the context: fetching and reading, the host lookups, measures and logs. */
export type PollDeps = {
  refresh: Omit<RefreshDeps, 'now'>;
  resolver: Resolver;
  logger: Logger;
  telemetry: Telemetry;
};
export type PollerDeps = PollDeps & {
  /** The daemon's pool (its loop fills it). */
  pool: PollPool;
  /** Whether the last claim saw a full window (more may be due than it saw); host lookups under way. */
  claim: { cut: boolean; lookups: number };
};

/** A claimed feed and the pool keys it holds. */
type Claimed = { feed: PollTarget; keys: readonly string[] };
type Polled = { outcome: RefreshOutcome; seenAt: Date };
type PollPool = Pool<Claimed, Polled, Stored>;

/** A claim picks among this many of the earliest due feeds: fairness across applications and hosts holds within it. */
const DUE_WINDOW = 256;
/** Host lookups a claim starts at most while others are under way. */
const MAX_LOOKUPS = 64;
/** A lease outlives the refresh it covers (which ends by poll.timeout_seconds) by this much. */
const LEASE_MARGIN_MS = 10_000;
const IDLE_MS = 60_000;

/** The poller's pool; `idle` is the loop's nudge (slots free and nothing due, or a host lookup finished). */
export function createPollerDeps(
  ctx: Ctx,
  deps: PollDeps,
  idle: () => void = () => {},
): PollerDeps {
  const out: PollerDeps = { ...deps, claim: { cut: false, lookups: 0 }, pool: undefined! };
  const claim = (free: number, room: Room) => claimFairly(ctx, out, free, room, idle);
  out.pool = new Pool(
    ctx.db,
    pollSpec(ctx, deps, claim, idle, () => {}),
    deps.logger,
  );
  return out;
}

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
      const chunk = feedsToPollAfter(ctx.db, after, ctx.clock.now(), ONCE_CHUNK);
      if (chunk.length === 0) break;
      after = chunk[chunk.length - 1]!.id;
      await pollRound(ctx, deps, summary, chunk);
    }
  else
    await pollRound(ctx, deps, summary, claimDueFeeds(ctx.db, ctx.clock.now(), leaseMs(ctx), 64));
  const next = nextFeedDueAfter(ctx.db, ctx.clock.now());
  const wait = next === undefined ? IDLE_MS : Date.parse(next) - ctx.clock.now().getTime();
  return { summary, nextDelayMs: Math.min(IDLE_MS, Math.max(1000, wait)) };
}

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
  const waiting = feeds.map((feed) => ({
    feed,
    keys: feedKeys(deps.resolver, feed.fetch_url, null),
  }));
  const claim = (free: number, room: Room): Claimed[] => {
    const picked = pickFairly(
      waiting.map((c) => ({ value: c, keys: c.keys, groups: c.keys.slice(0, 1) })),
      free,
      room,
    );
    for (const c of picked) waiting.splice(waiting.indexOf(c), 1);
    const leased = picked.filter((c) => 'url' in c.feed) as Claimed[];
    const keys = new Map(picked.map((c) => [c.feed.id, c.keys]));
    const toLease = picked.filter((c) => !('url' in c.feed)).map((c) => c.feed.id);
    for (const feed of leaseFeeds(ctx.db, toLease, ctx.clock.now(), leaseMs(ctx)))
      leased.push({ feed, keys: keys.get(feed.id)! });
    return leased;
  };
  const pool = new Pool(
    ctx.db,
    pollSpec(
      ctx,
      deps,
      claim,
      () => {},
      (r) => count(summary, r),
    ),
    deps.logger,
  );
  pool.start();
  await retryWhileBusy(() => pool.fill()); // poll --once --force beside serve: the write lock may be taken for a while
  await pool.drain(leaseMs(ctx) * Math.max(1, feeds.length));
  pool.stop();
}

/** The loop's tick: fills the free slots; returns when to look again if nothing wakes the loop first (never while
 *  every slot is busy; soon when the last claim saw a full window; else when the next feed falls due, 1 s to 60 s). */
export function pollFill(ctx: Ctx, deps: PollerDeps): number {
  deps.pool.fill();
  if (deps.pool.free <= 0) return IDLE_MS;
  if (deps.claim.cut) return 1000;
  const now = ctx.clock.now();
  const next = nextFeedDueAfter(ctx.db, now);
  return Math.min(
    IDLE_MS,
    Math.max(1000, (next === undefined ? IDLE_MS : Date.parse(next)) - now.getTime()),
  );
}

/** The pool spec shared by the daemon's pool and pollTick's: only the claim, idle and the extra count differ. */
function pollSpec(
  ctx: Ctx,
  deps: PollDeps,
  claim: (free: number, room: Room) => Claimed[],
  idle: () => void,
  counted: (r: { outcome: RefreshOutcome; stored: Stored }) => void,
): PoolSpec<Claimed, Polled, Stored> {
  const perHost = ctx.config.poll.per_host_concurrency;
  return {
    name: 'poll',
    slots: ctx.config.poll.concurrency,
    keysOf: (c) => c.keys,
    capOf: (key) => (key.startsWith('host:') || key.startsWith('addr:') ? perHost : Infinity),
    claim,
    run: async ({ feed }) => {
      const seenAt = ctx.clock.now();
      const outcome = await refreshFeed(refreshTarget(feed), {
        ...deps.refresh,
        now: () => ctx.clock.now(),
      });
      return { outcome, seenAt };
    },
    record: ({ feed }, { outcome, seenAt }) =>
      applyOutcome(ctx, feed, outcome, ctx.clock.now(), seenAt),
    recorded: ({ feed }, { outcome }, stored) => {
      if (stored.events > 0) ctx.nudgeDeliverer(); // each feed's events go out as soon as they are stored
      counted({ outcome, stored });
      report(deps, feed, outcome, stored);
    },
    release: (items) =>
      releaseFeedLeases(
        ctx.db,
        items.map((c) => c.feed.id),
      ),
    idle,
  };
}

/** The daemon's claim: the window of earliest due feeds, those whose host is looked up and fit under their caps, picked
 *  fairly (applications, then hosts) and leased. A host not looked up (or stale) is looked up now; its feeds are
 *  claimed when that finishes, keyed by the addresses it found. */
function claimFairly(
  ctx: Ctx,
  deps: PollerDeps,
  free: number,
  room: Room,
  idle: () => void,
): Claimed[] {
  const now = ctx.clock.now();
  const window = dueFeedWindow(ctx.db, now, DUE_WINDOW);
  deps.claim.cut = window.length >= DUE_WINDOW;
  const candidates: Candidate<DueFeed>[] = [];
  const unknown = new Set<string>();
  for (const f of window) {
    const keys = feedKeys(deps.resolver, f.fetch_url, f.application_id);
    if (keys === undefined) unknown.add(hostOf(f.fetch_url));
    else if (room.fits(keys)) candidates.push({ value: f, keys, groups: [keys[0]!, keys[1]!] });
  }
  lookUp(deps, [...unknown], idle);
  const picked = pickFairly(candidates, free, room);
  const keys = new Map(candidates.map((c) => [c.value.id, c.keys]));
  return leaseFeeds(
    ctx.db,
    picked.map((f) => f.id),
    now,
    leaseMs(ctx),
  ).map((feed) => ({
    feed,
    keys: keys.get(feed.id)!,
  }));
}

/** Starts lookups of `hosts` (at most MAX_LOOKUPS under way); each one that finishes wakes the loop to claim. */
function lookUp(deps: PollerDeps, hosts: string[], idle: () => void): void {
  for (const host of hosts) {
    if (deps.claim.lookups >= MAX_LOOKUPS) return;
    deps.claim.lookups += 1;
    void deps.resolver.refresh(host).then(() => {
      deps.claim.lookups -= 1;
      idle();
    });
  }
}

/** A feed's pool keys: its application first (null: none, as in pollTick), its host, then each address the host
 *  resolved to (so seven names of one server share one cap); undefined when the host is not looked up yet. */
function feedKeys(resolver: Resolver, url: string, app: string | null): string[];
function feedKeys(resolver: Resolver, url: string, app: string): string[] | undefined;
function feedKeys(resolver: Resolver, url: string, app: string | null): string[] | undefined {
  const host = hostOf(url);
  const addresses = resolver.cached(host);
  if (addresses === undefined && app !== null) return undefined;
  const keys = [`host:${host}`, ...new Set((addresses ?? []).map((a) => `addr:${addressKey(a)}`))];
  return app === null ? keys : [`app:${app}`, ...keys];
}

/** What to fetch for a feed. A feed awaiting its baseline is fetched without validators: a 304 would leave it without
 *  one, and the entries of its next change would be swallowed by that late baseline. */
export function refreshTarget(
  feed: Pick<
    PollTarget,
    | 'url'
    | 'fetch_url'
    | 'credentials'
    | 'etag'
    | 'last_modified'
    | 'body_hash'
    | 'baseline_at'
    | 'discovered_url'
  >,
): RefreshTarget {
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

/** The lease of a claimed feed: its refresh's deadline and a margin for recording it. */
function leaseMs(ctx: Ctx): number {
  return ctx.config.poll.timeout_seconds * 1000 + LEASE_MARGIN_MS;
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

/** Measures and logs one stored refresh. */
function report(deps: PollDeps, feed: PollTarget, outcome: RefreshOutcome, result: Stored): void {
  const durationMs = 'meta' in outcome ? outcome.meta.durationMs : outcome.durationMs;
  deps.telemetry.polled(outcome.kind, durationMs);
  const fields = {
    feed_id: feed.id,
    outcome: outcome.kind,
    http_status: 'meta' in outcome ? outcome.meta.status : outcome.status,
    new_entries: result.newEntries,
    events: result.events,
    duration_ms: durationMs,
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
    return new URL(url).hostname;
  } catch {
    return url;
  }
}
