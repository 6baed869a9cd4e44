// The maintenance loop: retention of delivered events and their attempts, expired Idempotency-Keys and dashboard
// sessions, the bounds on entry keys, held entries and orphaned feeds (retention.ts), idle feeds parked, the storage
// counts recounted (storage.ts).
import { retryHeldFeeds } from '../../actions/budget.ts';
import { EVENT_CHUNK, nextTurn } from '../../actions/chunks.ts';
import { expireIdleSessions } from '../../actions/sessions.ts';
import type { Ctx } from '../../context.ts';
import type { Logger } from '../../log.ts';
import { pruneFinishedEvents } from '../../store/events.ts';
import { hourOf, prunePollHours } from '../../store/feed-poll-hours.ts';
import { parkIdleDueFeeds } from '../../store/feeds.ts';
import { pruneIdempotency } from '../../store/idempotency.ts';
import { holdRole } from '../../store/nodes.ts';
import { noTelemetry, type Telemetry } from '../../telemetry.ts';
import { createLoop, type Loop } from '../loop.ts';
import { retentionPass, type Budget, type RetentionSummary } from './retention.ts';
import { recountStorage, type StorageRecount } from './storage.ts';

export type MaintenanceSummary = {
  events: number;
  idempotencyKeys: number;
  pollHours: number;
  sessions: number;
  /** Due feeds no active subscription uses, moved out of the due range (store/feeds.ts PARKED_AT). */
  parkedFeeds: number;
  retention: RetentionSummary;
  /** Each application's storage sums (storage.ts), recounted after the feeds' counts (retention.ts). */
  storage: StorageRecount;
  /** Feeds held for a storage budget made due again, their application having room now (actions/budget.ts). */
  heldFeedsRetried: number;
};

/** How often maintenance runs; the first run is at start-up. */
export const MAINTENANCE_INTERVAL_MS = 10 * 60_000;
/** Idempotency-Key records deleted per statement (events go EVENT_CHUNK at a time: they carry their bodies), so one
 *  statement never holds the write lock long; the loop yields between batches. */
export const PRUNE_BATCH = 1000;
// Per tick, for each kind of deletion: 200 batches (20,000 events, 200,000 Idempotency-Key records, 100,000 keys or
// held entries); the rest waits for the next tick, a second later, so that stopping the daemon never waits long.
const MAX_BATCHES_PER_TICK = 200;
const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
// Polls per feed and hour feed the dashboard's chart of the last 24 hours; one hour more is kept for the hour under way.
const POLL_HOURS_MS = 24 * 3600_000;

/** One maintenance pass: deletes events delivered more than delivery.retention_days ago (attempts cascade) and test
 *  pings that died as long ago, Idempotency-Key records past their 24 h, feeds' poll counts of hours more than a day
 *  old, dashboard sessions idle past their limit; parks due feeds no active subscription uses; bounds entry keys, held
 *  entries and orphaned feeds (retention.ts), recounts what each feed and application stores (retention.ts,
 *  storage.ts) and makes due the feeds held for a storage budget that has room again. Pending, failed and other dead
 *  events are kept until handled (resent, recovered or deleted with their subscription). It does not checkpoint: the
 *  checkpoint thread does, off the event loop, and the WAL file's size is bounded at each reset (db/open.ts
 *  WAL_SIZE_LIMIT_BYTES); a TRUNCATE checkpoint here would hold the event loop for its fsyncs under write load. */
export async function maintenanceTick(
  ctx: Ctx,
  deps: { logger: Logger; telemetry?: Telemetry },
): Promise<{ summary: MaintenanceSummary; nextDelayMs: number }> {
  const now = ctx.clock.now();
  const before = (ms: number) => new Date(now.getTime() - ms).toISOString();
  const eventsBefore = before(ctx.config.delivery.retention_days * 86_400_000);
  const events = await inBatches(EVENT_CHUNK, (n) => pruneFinishedEvents(ctx.db, eventsBefore, n));
  const idempotencyBefore = before(IDEMPOTENCY_TTL_MS);
  const idempotency = await inBatches(PRUNE_BATCH, (n) =>
    pruneIdempotency(ctx.db, idempotencyBefore, n),
  );
  const hoursBefore = hourOf(new Date(now.getTime() - POLL_HOURS_MS));
  const pollHours = await inBatches(PRUNE_BATCH, (n) => prunePollHours(ctx.db, hoursBefore, n));
  const sessions = await expireIdleSessions(ctx);
  const parked = await inBatches(PRUNE_BATCH, (n) => parkIdleDueFeeds(ctx.db, now, n));
  const budget: Budget = { batches: MAX_BATCHES_PER_TICK };
  const retention = await retentionPass(ctx, now, budget);
  if (retention.counts) (deps.telemetry ?? noTelemetry).retained(retention.counts);
  const storage = await recountStorage(ctx);
  const heldFeedsRetried = await retryHeldFeeds(ctx);
  const summary: MaintenanceSummary = {
    events: events.rows,
    idempotencyKeys: idempotency.rows,
    pollHours: pollHours.rows,
    sessions,
    parkedFeeds: parked.rows,
    retention,
    storage,
    heldFeedsRetried,
  };
  log(deps.logger, summary);
  const more =
    events.more ||
    idempotency.more ||
    pollHours.more ||
    parked.more ||
    retention.counts === undefined;
  return { summary, nextDelayMs: more ? 1000 : MAINTENANCE_INTERVAL_MS };
}

/** Runs `prune` (deleting up to n rows, returning how many) `size` rows at a time, with a turn of the event loop
 *  between batches, until it deletes fewer or MAX_BATCHES_PER_TICK batches ran. */
async function inBatches(
  size: number,
  prune: (n: number) => Promise<number>,
): Promise<{ rows: number; more: boolean }> {
  let rows = 0;
  for (let batch = 0; batch < MAX_BATCHES_PER_TICK; batch++) {
    const n = await prune(size);
    rows += n;
    if (n < size) return { rows, more: false };
    await nextTurn(); // let HTTP requests and deliveries in between
  }
  return { rows, more: true };
}

/** One line per pass: info when it deleted something, found a storage count off or retried held feeds, else debug. */
function log(logger: Logger, s: MaintenanceSummary): void {
  const r = s.retention;
  const deleted =
    s.events +
    s.idempotencyKeys +
    s.pollHours +
    s.sessions +
    s.parkedFeeds +
    r.feedsDeleted +
    r.keysPruned +
    r.heldTrimmed;
  // A storage count found off means a write that did not count what it did: worth seeing at info as well.
  const drift = r.storageDrift + s.storage.driftBytes;
  logger[deleted > 0 || drift > 0 || s.heldFeedsRetried > 0 ? 'info' : 'debug'](
    'maintenance: done',
    {
      events_pruned: s.events,
      idempotency_keys_pruned: s.idempotencyKeys,
      poll_hours_pruned: s.pollHours,
      sessions_expired: s.sessions,
      feeds_parked: s.parkedFeeds,
      feeds_deleted: r.feedsDeleted,
      entry_keys_pruned: r.keysPruned,
      held_entries_trimmed: r.heldTrimmed,
      storage_drift_bytes: drift,
      held_feeds_retried: s.heldFeedsRetried,
      ...(r.counts
        ? {
            entry_keys: r.counts.entryKeys,
            held_entries: r.counts.heldEntries,
            orphaned_feeds: r.counts.orphanedFeeds,
          }
        : {}),
    },
  );
}

/** How long a node holds the maintenance role past its last pass: a node that dies holding it hands it over this
 *  long after; one that stops lets go at once (worker/nodes.ts leave). */
export const MAINTENANCE_ROLE_MS = MAINTENANCE_INTERVAL_MS + 5 * 60_000;

/** The maintenance loop (not started). Of the nodes on one database, the one holding the maintenance role runs it (the
 *  first to ask, until it stops or lapses); the others look again at each interval. */
export function createMaintenance(
  ctx: Ctx,
  logger: Logger,
  telemetry: Telemetry = noTelemetry,
): Loop {
  const log = logger.child({ loop: 'maintenance' });
  return createLoop(
    'maintenance',
    async () => {
      const now = ctx.clock.now();
      const mine = await ctx.store.write((db) =>
        holdRole(
          db,
          'maintenance',
          ctx.node.id,
          now,
          new Date(now.getTime() + MAINTENANCE_ROLE_MS),
        ),
      );
      if (!mine) return MAINTENANCE_INTERVAL_MS;
      return (await maintenanceTick(ctx, { logger: log, telemetry })).nextDelayMs;
    },
    { idleMs: MAINTENANCE_INTERVAL_MS, logger },
  );
}
