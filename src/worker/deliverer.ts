// The deliverer's tick: claim due events into free concurrency slots (per-subscription FIFO, global and per-endpoint
// caps), POST them signed, record each attempt and decide retries, dead events and endpoint disabling.
// An event's way: claimed here (store/events-claim.ts) → startAttempt, in a slot (in-flight.ts) → attemptDelivery
// (attempt.ts) → recordOutcome (outcome.ts) in a group commit (group-commit.ts) that claims for the slots it frees.
import type { Ctx } from '../context.ts';
import { getEndpointById, type EndpointRow } from '../store/endpoints.ts';
import { claimDueEvents, nextEventDueAt, type ClaimedEvent } from '../store/events-claim.ts';
import { attemptDelivery, type AttemptDeps } from './attempt.ts';
import { groupCommit, type CommitRefill } from './group-commit.ts';
import { track, type InFlight } from './in-flight.ts';
import type { Outcome } from './outcome.ts';

export type DelivererDeps = AttemptDeps & {
  inFlight: InFlight;
  /** Set by the running loop: a slot freed by a finished attempt is refilled at once, by a claim in the transaction
   *  that records the outcome (or, for an attempt that records none, on the next turn of the event loop). `idle()`
   *  (the loop's nudge) works out when to look again when slots are free but nothing is due. Unset, as in one-shot
   *  commands and tests, a tick starts only what it claims itself. */
  refill?: { isRunning: () => boolean; idle: () => void };
};
export type DeliverySummary = {
  attempted: number;
  delivered: number;
  failed: number;
  dead: number;
};

/** A lease outlives the attempt it covers (bounded by delivery.timeout_seconds) by this much, so a crashed process's
 *  claims are taken over soon after, while a live one always records its attempt before the lease ends. */
export const LEASE_MARGIN_MS = 10_000;
const IDLE_MS = 60_000;

/** One delivery tick: claims the due events that fit in the free slots and starts their attempts. With `wait` (the
 *  default; one-shot commands and tests) it resolves once they are recorded and `summary` counts them; the loop passes
 *  wait: false, and `deps.refill` refills the slots as attempts finish. `nextDelayMs`: when something may next be due.
 *  Never rejects on a failed attempt. */
export async function deliverTick(
  ctx: Ctx,
  deps: DelivererDeps,
  opts: { wait?: boolean } = {},
): Promise<{ summary: DeliverySummary; started: number; nextDelayMs: number }> {
  const summary = emptySummary();
  const runs = startDue(ctx, deps, summary);
  if (opts.wait ?? true) {
    await Promise.all(runs);
    if (runs.length > 0) return { summary, started: runs.length, nextDelayMs: 0 };
  }
  // Attempts still in flight count by the end of their lease; their group commit refills sooner.
  const due = nextEventDueAt(ctx.db);
  const wait = due === undefined ? IDLE_MS : Date.parse(due) - ctx.clock.now().getTime();
  return { summary, started: runs.length, nextDelayMs: Math.min(IDLE_MS, Math.max(1000, wait)) };
}

/** Claims the due events that fit in the free slots and starts their attempts; returns them running. Synchronous up to
 *  the first network write, so two callers in one process never claim the same slot. */
export function startDue(
  ctx: Ctx,
  deps: DelivererDeps,
  summary: DeliverySummary = emptySummary(),
): Promise<void>[] {
  return startClaimed(ctx, deps, claimFreeSlots(ctx, deps), summary);
}

/** Resolves true once every attempt in flight has been recorded, false when `timeoutMs` passed first (graceful stop). */
export async function drainDeliveries(inFlight: InFlight, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    while (inFlight.running.size > 0) {
      if (
        !(await Promise.race([Promise.allSettled([...inFlight.running]).then(() => true), timeout]))
      )
        return false;
    }
    return true;
  } finally {
    clearTimeout(timer);
  }
}

/** Leases the due events that fit in the slots free now (global and per endpoint). */
function claimFreeSlots(ctx: Ctx, deps: DelivererDeps): ClaimedEvent[] {
  const { delivery } = ctx.config;
  return claimDueEvents(
    ctx.db,
    ctx.clock.now(),
    delivery.timeout_seconds * 1000 + LEASE_MARGIN_MS,
    {
      limit: delivery.concurrency - deps.inFlight.total,
      perEndpoint: delivery.per_endpoint_concurrency,
      busy: Object.fromEntries(deps.inFlight.byEndpoint),
    },
  );
}

/** Starts an attempt for each claimed event, in its slot. */
function startClaimed(
  ctx: Ctx,
  deps: DelivererDeps,
  events: ClaimedEvent[],
  summary: DeliverySummary,
): Promise<void>[] {
  const endpoints = new Map<string, EndpointRow | undefined>(); // read once per claim, not once per event
  const endpointOf = (id: string) =>
    endpoints.has(id) ? endpoints.get(id) : endpoints.set(id, getEndpointById(ctx.db, id)).get(id);
  return events.map((event) =>
    startAttempt(ctx, deps, event, endpointOf(event.endpoint_id), summary),
  );
}

/** Runs one attempt in a slot of its endpoint. The slot is freed when the attempt's outcome is committed (where the
 *  group commit refills it), or else when the attempt settles, whatever happens. */
function startAttempt(
  ctx: Ctx,
  deps: DelivererDeps,
  event: ClaimedEvent,
  endpoint: EndpointRow | undefined,
  summary: DeliverySummary,
): Promise<void> {
  const commitRefill = () => (deps.refill?.isRunning() ? refillInCommit(ctx, deps) : undefined);
  const attempt = async (release: () => void) => {
    const outcome = await attemptDelivery(ctx, deps, event, endpoint, (record) =>
      groupCommit(ctx.db, deps.inFlight.writes, record, release, commitRefill),
    );
    if (outcome) count(summary, outcome);
  };
  return track(deps.inFlight, event.endpoint_id, attempt, {
    // The lease stays, so the event is tried again once it expires: at-least-once even when recording failed.
    failed: (err) =>
      deps.logger.error('deliver: unable to record attempt', {
        event_id: event.id,
        endpoint_id: event.endpoint_id,
        error: err instanceof Error ? err.message : String(err),
      }),
    freed: () => refillSoon(ctx, deps),
  });
}

/** The running loop's claim inside a group commit: the events for the slots the commit frees start right after it;
 *  when the batch was rolled back, the slots are refilled on the next turn. */
function refillInCommit(ctx: Ctx, deps: DelivererDeps): CommitRefill {
  return {
    claim: () => {
      const claimed = claimFreeSlots(ctx, deps);
      return () => startOrIdle(ctx, deps, claimed);
    },
    failed: () => refillSoon(ctx, deps),
  };
}

/** After an attempt that recorded no outcome (its endpoint became inactive, or recording failed): once this turn of the
 *  event loop is over, starts what fits in the free slots, or calls `idle()` when slots are free but nothing is due.
 *  Does nothing unless the loop runs. Never throws. */
function refillSoon(ctx: Ctx, deps: DelivererDeps): void {
  const { refill, inFlight } = deps;
  if (!refill?.isRunning() || inFlight.refillQueued) return;
  inFlight.refillQueued = true;
  setImmediate(() => {
    inFlight.refillQueued = false;
    if (!refill.isRunning()) return;
    try {
      startOrIdle(ctx, deps, claimFreeSlots(ctx, deps));
    } catch (err) {
      deps.logger.error('deliver: unable to claim events', {
        error: err instanceof Error ? err.message : String(err),
      });
      refill.idle();
    }
  });
}

/** The running loop's refill: starts what was claimed for the free slots or, when slots are free but nothing was due,
 *  calls `idle()` to work out when to look again. */
function startOrIdle(ctx: Ctx, deps: DelivererDeps, claimed: ClaimedEvent[]): void {
  if (claimed.length > 0) startClaimed(ctx, deps, claimed, emptySummary());
  else if (ctx.config.delivery.concurrency - deps.inFlight.total > 0) deps.refill?.idle();
}

function count(summary: DeliverySummary, outcome: Outcome): void {
  summary.attempted += 1;
  summary[outcome === 'delivered' ? 'delivered' : outcome === 'dead' ? 'dead' : 'failed'] += 1;
}

function emptySummary(): DeliverySummary {
  return { attempted: 0, delivered: 0, failed: 0, dead: 0 };
}
