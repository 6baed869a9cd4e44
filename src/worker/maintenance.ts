// The maintenance loop: retention of delivered events and their attempts, expired Idempotency-Keys, WAL checkpoints.
import type { Ctx } from '../context.ts';
import type { Logger } from '../log.ts';
import { pruneFinishedEvents } from '../store/events.ts';
import { pruneIdempotency } from '../store/idempotency.ts';
import { checkpointWal } from '../store/maintenance.ts';
import { createLoop, type Loop } from './loop.ts';

export type MaintenanceSummary = {
  events: number;
  idempotencyKeys: number;
  checkpoint: { busy: boolean; walPages: number };
};

/** How often maintenance runs; the first run is at start-up. */
export const MAINTENANCE_INTERVAL_MS = 10 * 60_000;
/** Rows deleted per statement, so one statement never holds the write lock long; the loop yields between batches. */
export const PRUNE_BATCH = 1000;
const MAX_BATCHES_PER_TICK = 200; // 200,000 events per tick at most; the rest waits for the next tick
const IDEMPOTENCY_TTL_MS = 24 * 3600_000;

/** One maintenance pass: deletes events delivered more than delivery.retention_days ago (attempts cascade) and test
 *  pings that died as long ago, Idempotency-Key records past their 24 h, then truncates the WAL. Pending, failed and
 *  other dead events are kept until handled (resent, recovered or deleted with their subscription). */
export async function maintenanceTick(
  ctx: Ctx,
  deps: { logger: Logger },
): Promise<{ summary: MaintenanceSummary; nextDelayMs: number }> {
  const now = ctx.clock.now();
  const before = new Date(
    now.getTime() - ctx.config.delivery.retention_days * 86_400_000,
  ).toISOString();
  let events = 0;
  let more = true;
  for (let batch = 0; batch < MAX_BATCHES_PER_TICK && more; batch++) {
    const n = pruneFinishedEvents(ctx.db, before, PRUNE_BATCH);
    events += n;
    more = n === PRUNE_BATCH;
    if (more) await new Promise((resolve) => setImmediate(resolve)); // let HTTP requests and deliveries in between
  }
  const idempotencyKeys = pruneIdempotency(
    ctx.db,
    new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString(),
  );
  const cp = checkpointWal(ctx.db);
  const summary: MaintenanceSummary = {
    events,
    idempotencyKeys,
    checkpoint: { busy: cp.busy, walPages: cp.walPages },
  };
  const fields = {
    events_pruned: events,
    idempotency_keys_pruned: idempotencyKeys,
    wal_pages: cp.walPages,
    checkpoint_busy: cp.busy,
  };
  deps.logger[events + idempotencyKeys > 0 || cp.busy ? 'info' : 'debug'](
    'maintenance: done',
    fields,
  );
  return { summary, nextDelayMs: more ? 1000 : MAINTENANCE_INTERVAL_MS };
}

/** The maintenance loop (not started). */
export function createMaintenance(ctx: Ctx, logger: Logger): Loop {
  const log = logger.child({ loop: 'maintenance' });
  return createLoop(
    'maintenance',
    async () => (await maintenanceTick(ctx, { logger: log })).nextDelayMs,
    { idleMs: MAINTENANCE_INTERVAL_MS, logger },
  );
}
