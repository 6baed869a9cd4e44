// The poller: a feed's way from claim to recorded outcome, on the work pool and its throughput layer (worker/pool/).
// claim: among the earliest due feeds, each keyed by its host, every address the host resolves to (looked up before the
// claim) and one of its applications, picked fairly → run: refreshFeed, all of it within poll.timeout_seconds → record:
// applyOutcome (worker/poll/outcome.ts) in the group commit that claims for the slots it frees → report.
import { within, type Ctx } from '../../context.ts';
import type { Sql } from '../../db/engine.ts';
import { notePoll } from '../../actions/poll-counts.ts';
import {
  refreshFeed,
  refreshTarget,
  type RefreshDeps,
  type RefreshOutcome,
} from '../../feed/fetch/refresh.ts';
import type { Logger } from '../../log.ts';
import { addressKey, type Resolver } from '../../net/resolver.ts';
import { knownEntries } from '../../store/entry-history.ts';
import { PARSER_VERSION } from '../../feed/parse/parse.ts';
import {
  dueFeedWindow,
  leaseDueFeeds,
  nextFeedDueAfter,
  releaseFeedLeases,
  type DueFeed,
  type PollTarget,
} from '../../store/feeds-poll.ts';
import type { Telemetry } from '../../telemetry.ts';
import { pickFairly, type Candidate } from '../pool/fair.ts';
import { applyOutcome } from './outcome.ts';
import type { Stored } from './parsed.ts';
import { Pool } from '../pool/core.ts';
import type { PoolSpec, Room } from '../pool/spec.ts';
import { throughput } from '../pool/throughput.ts';
import { leaseOf } from '../nodes.ts';

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
  /** Whether the last claim saw a full window (more may be due than it saw), whether another node's claim leased
   *  feeds it picked first (more may be due than it took), when it looked (ms); host lookups under way. */
  claim: { cut: boolean; lost: boolean; atMs: number; lookups: number };
};

/** A claimed feed and the pool keys it holds. */
export type Claimed = { feed: PollTarget; keys: readonly string[] };
/** A poll's outcome, when its fetch began (`seenAt`) and when it ended: its commit may come later (a deferrable
 *  outcome, worker/pool/throughput.ts), and the next poll is scheduled from the end of this one. */
type Polled = { outcome: RefreshOutcome; seenAt: Date; endedAt: Date };
type PollPool = Pool<Claimed, Polled, Stored>;

/** A claim picks among this many of the earliest due feeds: fairness across applications and hosts holds within it. */
const DUE_WINDOW = 256;
/** Host lookups a claim starts at most while others are under way. */
const MAX_LOOKUPS = 64;
/** A lease outlives the refresh it covers (which ends by poll.timeout_seconds) by this much. */
const LEASE_MARGIN_MS = 10_000;
/** The longest a poller sleeps when nothing is due (pollFill, pollTick). */
export const IDLE_MS = 60_000;

/** The poller's pool; `idle` is the loop's nudge (slots free and nothing due, or a host lookup finished). */
export function createPollerDeps(
  ctx: Ctx,
  deps: PollDeps,
  idle: () => void = () => {},
): PollerDeps {
  const out: PollerDeps = {
    ...deps,
    claim: { cut: false, lost: false, atMs: 0, lookups: 0 },
    pool: undefined!,
  };
  const claim = (free: number, room: Room, db: Sql) =>
    claimFairly(within(ctx, db), out, free, room, idle);
  out.pool = new Pool(
    ctx.store,
    pollSpec(ctx, deps, claim, idle, () => {}),
    deps.logger,
  );
  return out;
}

/** The shortest sleep of an idle poller: a feed due in 300 ms is polled then, not at the next whole second, so a feed
 *  polled every few seconds keeps its interval. Only feeds falling due after the last claim looked count, so a due
 *  feed that cannot be claimed (its host at its cap) waits for a commit's wake instead of spinning the loop. */
export const MIN_WAKE_MS = 20;

/** The loop's tick: fills the free slots; returns when to look again if nothing wakes the loop first (never while
 *  every slot is busy; soon when the last claim saw a full window or another node leased what it picked; else when
 *  the next feed falls due, 20 ms to 60 s).
 *  "Next" counts from the claim's own time, not from now: a feed falling due between the two (a timer fires a
 *  millisecond before the clock reaches the time it was set for) was not claimed and is due now, so it wakes the loop
 *  at once instead of being passed over until an idle minute ends. */
export async function pollFill(ctx: Ctx, deps: PollerDeps): Promise<number> {
  await deps.pool.fill();
  if (deps.pool.free <= 0) return IDLE_MS;
  if (deps.claim.cut || deps.claim.lost) return 1000;
  const now = ctx.clock.now();
  const next = await nextFeedDueAfter(ctx.db, new Date(Math.min(deps.claim.atMs, now.getTime())));
  if (next === undefined) return IDLE_MS;
  return Math.min(IDLE_MS, Math.max(MIN_WAKE_MS, Date.parse(next) - now.getTime()));
}

/** The pool spec shared by the daemon's pool and pollTick's: only the claim, idle and the extra count differ. */
export function pollSpec(
  ctx: Ctx,
  deps: PollDeps,
  claim: (free: number, room: Room, db: Sql) => Promise<Claimed[]>,
  idle: () => void,
  counted: (r: { outcome: RefreshOutcome; stored: Stored }) => void,
): PoolSpec<Claimed, Polled, Stored> {
  const perHost = ctx.config.poll.per_host_concurrency;
  return {
    name: 'poll',
    slots: ctx.config.poll.concurrency,
    keysOf: (c) => c.keys,
    // A host's cap holds for all nodes together: this node takes its share.
    capOf: (key) =>
      key.startsWith('host:') || key.startsWith('addr:') ? ctx.node.share(perHost) : Infinity,
    claim,
    run: async ({ feed }) => {
      const seenAt = ctx.clock.now();
      // A feed past its baseline is read against its history: the entries it holds unchanged are not rendered again.
      const target = refreshTarget(feed);
      if (feed.baseline_at !== null)
        target.known = () => knownEntries(ctx.db, feed.id, PARSER_VERSION);
      const outcome = await refreshFeed(target, {
        ...deps.refresh,
        now: () => ctx.clock.now(),
      });
      return { outcome, seenAt, endedAt: ctx.clock.now() };
    },
    record: ({ feed }, { outcome, seenAt, endedAt }, db) =>
      applyOutcome(within(ctx, db), feed, outcome, endedAt, seenAt),
    weightOf: ({ outcome }) => (outcome.kind === 'parsed' ? outcome.entries.length : 0),
    recorded: ({ feed }, { outcome }, stored) => {
      if (stored.events > 0) ctx.nudgeDeliverer(); // each feed's events go out as soon as they are stored
      if (stored.backfills) ctx.nudgeBackfiller();
      // The dashboard's 24 h chart, once the outcome is committed (a rolled-back group commit records it again).
      if (!stored.deleted)
        notePoll(ctx.pollCounts, feed.id, outcome.kind, stored.newEntries, ctx.clock.now());
      counted({ outcome, stored });
      report(deps, feed, outcome, stored);
    },
    release: async (items, db) => {
      await releaseFeedLeases(
        db,
        items.map((c) => c.feed.id),
      );
    },
    idle,
    layer: throughput({
      // As many claimed feeds again wait for a slot, so a group commit records about a slot-full of polls: the pages a
      // 304 writes (of the WAL, then of the database) are shared by all of them.
      reserve: ctx.config.poll.concurrency,
      // Half the lease's margin: a feed that waited longer for a slot is claimed afresh, never run on a lease that ends.
      queueMs: LEASE_MARGIN_MS / 2,
      // Only a parsed document makes events: every other outcome (a 304 above all) may wait for a larger commit, so the
      // pages of feeds, feeds_due and feed_leases it writes are shared by more polls.
      deferrable: ({ outcome }) => outcome.kind !== 'parsed',
      // A parsed document's new entries are events a receiver waits for: its record lingers for no other.
      urgent: ({ outcome }) => outcome.kind === 'parsed',
    }),
  };
}

/** The daemon's claim: the window of earliest due feeds, those whose host is looked up and fit under their caps, picked
 *  fairly (applications, then hosts) and leased. A host not looked up (or stale) is looked up now; its feeds are
 *  claimed when that finishes, keyed by the addresses it found. */
async function claimFairly(
  ctx: Ctx,
  deps: PollerDeps,
  free: number,
  room: Room,
  idle: () => void,
): Promise<Claimed[]> {
  const now = ctx.clock.now();
  deps.claim.atMs = now.getTime();
  const window = await dueFeedWindow(ctx.db, now, DUE_WINDOW);
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
  const leased = await leaseDueFeeds(
    ctx.db,
    picked.map((f) => f.id),
    now,
    ...leaseOf(ctx, leaseMs(ctx)),
  );
  // Nodes woken together read the same window and pick alike: the one whose lease comes second takes few or none of
  // its picks while the rest of the due feeds wait. It looks again soon (pollFill), as after a full window, rather than
  // sleeping until the next feed falls due (a day away when every due feed is due now) and leaving them all to the
  // other node; not at once, since each look reads the window again, and two nodes looking at once collide again.
  deps.claim.lost = leased.length < picked.length;
  return leased.map((feed) => ({ feed, keys: keys.get(feed.id)! }));
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
export function feedKeys(resolver: Resolver, url: string, app: string | null): string[];
export function feedKeys(resolver: Resolver, url: string, app: string): string[] | undefined;
export function feedKeys(
  resolver: Resolver,
  url: string,
  app: string | null,
): string[] | undefined {
  const host = hostOf(url);
  const addresses = resolver.cached(host);
  if (addresses === undefined && app !== null) return undefined;
  const keys = [`host:${host}`, ...new Set((addresses ?? []).map((a) => `addr:${addressKey(a)}`))];
  return app === null ? keys : [`app:${app}`, ...keys];
}

/** The lease of a claimed feed: its refresh's deadline and a margin for recording it. */
export function leaseMs(ctx: Ctx): number {
  return ctx.config.poll.timeout_seconds * 1000 + LEASE_MARGIN_MS;
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

export function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}
