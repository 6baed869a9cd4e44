// The backfill loop: queues the events of ready backfills (actions/backfills.ts) one chunk per transaction, with a turn
// of the event loop between two, taking applications turn about; woken by a create or a baseline (ctx.nudgeBackfiller).
import { queueBackfillChunk } from '../actions/backfills.ts';
import { nextTurn } from '../actions/chunks.ts';
import type { Ctx } from '../context.ts';
import type { Logger } from '../log.ts';
import { createLoop, type Loop } from './loop.ts';

/** Chunks one tick queues before it gives the loop back (which runs the next tick at once): a stop waits for the tick
 *  in flight, so at most this many. */
export const BACKFILL_CHUNKS_PER_TICK = 50;
/** With no backfill ready the loop looks again after this long; a create or a baseline wakes it at once. */
export const BACKFILL_IDLE_MS = 60_000;

/** Where the turn about stands: the application whose backfill the last chunk served ('' before the first). */
export type BackfillTurn = { after: string };

/** Creates (but does not start) the backfill loop; started, it first finishes what a stopped daemon left. */
export function createBackfiller(ctx: Ctx, logger: Logger): Loop {
  const turn: BackfillTurn = { after: '' };
  const log = logger.child({ loop: 'backfill' });
  return createLoop('backfill', () => backfillTick(ctx, turn, log), {
    idleMs: BACKFILL_IDLE_MS,
    logger,
  });
}

/** Queues up to `max` chunks of ready backfills, the next application's after each, with a turn of the event loop
 *  between two (so requests and deliveries are served meanwhile), and wakes the deliverer for each event. Resolves 0
 *  when it stopped at `max` (more may be ready), undefined when none is. */
export async function backfillTick(
  ctx: Ctx,
  turn: BackfillTurn,
  logger: Logger,
  max = BACKFILL_CHUNKS_PER_TICK,
): Promise<number | void> {
  for (let i = 0; i < max; i++) {
    if (i > 0) await nextTurn();
    const chunk = await queueBackfillChunk(ctx, turn.after);
    if (chunk === undefined) return;
    turn.after = chunk.applicationId;
    if (chunk.events > 0) ctx.nudgeDeliverer();
    if (chunk.done) logger.debug('backfill: queued', { subscription_id: chunk.subscriptionId });
  }
  return 0;
}
