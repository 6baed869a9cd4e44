// The deliverer's tick: claim due events into free concurrency slots (per-subscription FIFO, global and per-endpoint
// caps), POST them signed, record each attempt and decide retries, dead events and endpoint disabling.
import type { Dispatcher } from 'undici';
import type { Ctx } from '../context.ts';
import type { Logger } from '../log.ts';
import {
  disableEndpoint,
  getEndpointById,
  markEndpointFailing,
  markEndpointHealthy,
  type EndpointRow,
} from '../store/endpoints.ts';
import { recordAttempt } from '../store/attempts.ts';
import {
  claimDueEvents,
  nextEventDueAt,
  releaseEvent,
  type ClaimedEvent,
} from '../store/events-claim.ts';
import { nextRetry } from '../webhook/retry.ts';
import { sendWebhook, type SendResult } from '../webhook/send.ts';
import { signingSecrets, webhookHeaders } from '../webhook/sign.ts';
import type { Telemetry } from '../telemetry.ts';

/** An outcome waiting for the next group commit; `release` frees its attempt's concurrency slot. */
type Write = {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  release: () => void;
};
/** Attempts in flight, shared by every tick of one deliverer: the concurrency slots in use, the outcomes waiting for
 *  the next group commit, and whether a refill is already queued for the next turn of the event loop. */
export type InFlight = {
  total: number;
  byEndpoint: Map<string, number>;
  running: Set<Promise<void>>;
  writes: Write[];
  refillQueued: boolean;
};
export type DelivererDeps = {
  agent: Dispatcher;
  logger: Logger;
  telemetry: Telemetry;
  userAgent: string;
  random?: () => number;
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
export type Outcome = 'delivered' | 'retry' | 'dead';

/** A lease outlives the attempt it covers (bounded by delivery.timeout_seconds) by this much, so a crashed process's
 *  claims are taken over soon after, while a live one always records its attempt before the lease ends. */
export const LEASE_MARGIN_MS = 10_000;
const IDLE_MS = 60_000;

/** No attempt in flight. */
export function createInFlight(): InFlight {
  return { total: 0, byEndpoint: new Map(), running: new Set(), writes: [], refillQueued: false };
}

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
  return events.map((event) => track(ctx, deps, event, endpointOf(event.endpoint_id), summary));
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

/** Runs one attempt in a slot. The slot is freed when the attempt's outcome is committed (where the group commit
 *  refills it), or else when the attempt settles, whatever happens. */
function track(
  ctx: Ctx,
  deps: DelivererDeps,
  event: ClaimedEvent,
  endpoint: EndpointRow | undefined,
  summary: DeliverySummary,
): Promise<void> {
  const { inFlight } = deps;
  inFlight.total += 1;
  inFlight.byEndpoint.set(event.endpoint_id, (inFlight.byEndpoint.get(event.endpoint_id) ?? 0) + 1);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    inFlight.total -= 1;
    const left = (inFlight.byEndpoint.get(event.endpoint_id) ?? 1) - 1;
    if (left > 0) inFlight.byEndpoint.set(event.endpoint_id, left);
    else inFlight.byEndpoint.delete(event.endpoint_id);
  };
  // Assigned before the finally below runs: the body always suspends at its await first.
  let run!: Promise<void>;
  run = (async () => {
    try {
      await deliverOne(ctx, deps, event, endpoint, summary, release);
    } catch (err) {
      // The lease stays, so the event is tried again once it expires: at-least-once even when recording failed.
      deps.logger.error('deliver: unable to record attempt', {
        event_id: event.id,
        endpoint_id: event.endpoint_id,
        error: err instanceof Error ? err.message : String(err),
      });
    } finally {
      inFlight.running.delete(run);
      if (!released) {
        // else the group commit that recorded the outcome refilled the slot
        release();
        refillSoon(ctx, deps);
      }
    }
  })();
  inFlight.running.add(run);
  return run;
}

async function deliverOne(
  ctx: Ctx,
  deps: DelivererDeps,
  event: ClaimedEvent,
  endpoint: EndpointRow | undefined,
  summary: DeliverySummary,
  release: () => void,
): Promise<void> {
  if (!endpoint || endpoint.status !== 'active') {
    releaseEvent(ctx.db, event.id);
    return;
  }
  const startedAt = ctx.clock.now();
  const timestamp = Math.floor(startedAt.getTime() / 1000);
  const result = await sendWebhook({
    url: endpoint.url,
    body: event.body,
    headers: webhookHeaders(signingSecrets(endpoint, startedAt), event.id, timestamp, event.body),
    agent: deps.agent,
    timeoutMs: ctx.config.delivery.timeout_seconds * 1000,
    userAgent: deps.userAgent,
    now: () => ctx.clock.now(),
  });
  const { outcome, disabled } = await groupCommit(
    ctx,
    deps,
    () => recordOutcome(ctx, deps, event, endpoint, result, startedAt),
    release,
  );
  summary.attempted += 1;
  summary[outcome === 'delivered' ? 'delivered' : outcome === 'dead' ? 'dead' : 'failed'] += 1;
  const latency =
    outcome === 'delivered' ? ctx.clock.now().getTime() - Date.parse(event.created_at) : null;
  deps.telemetry.attempted(outcome, result.durationMs, latency);
  const fields = {
    event_id: event.id,
    endpoint_id: endpoint.id,
    subscription_id: event.subscription_id,
    attempt: event.attempt_count + 1,
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    outcome,
  };
  if (result.ok) deps.logger.info('deliver: event delivered', fields);
  else deps.logger.warn('deliver: attempt failed', { ...fields, error: result.error });
  if (disabled)
    deps.logger.warn('deliver: endpoint disabled', { endpoint_id: endpoint.id, reason: disabled });
}

/** Stores the attempt, the event's new state and the endpoint's health; runs in one transaction.
 *  Returns the outcome and, when this attempt disabled the endpoint, why. */
function recordOutcome(
  ctx: Ctx,
  deps: DelivererDeps,
  event: ClaimedEvent,
  endpoint: EndpointRow,
  result: SendResult,
  startedAt: Date,
): { outcome: Outcome; disabled: string | null } {
  const now = ctx.clock.now();
  const { delivery } = ctx.config;
  const attempt = {
    event_id: event.id,
    endpoint_id: endpoint.id,
    started_at: startedAt.toISOString(),
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    error: result.error,
    response_body: result.responseBody,
  };
  if (result.ok) {
    recordAttempt(ctx.db, attempt, { status: 'delivered', nextAttemptAt: null }, now);
    markEndpointHealthy(ctx.db, endpoint.id);
    return { outcome: 'delivered', disabled: null };
  }
  const decision = nextRetry({
    attempt: event.attempt_count + 1,
    schedule: delivery.retry_schedule_seconds,
    now,
    random: deps.random,
    retryAfterSeconds: result.retryAfterSeconds,
    maxRetryAfterSeconds: delivery.retry_after_max_seconds,
  });
  recordAttempt(
    ctx.db,
    attempt,
    decision.kind === 'dead'
      ? { status: 'dead', nextAttemptAt: null }
      : { status: 'failed', nextAttemptAt: decision.at.toISOString() },
    now,
  );
  const failingSince = markEndpointFailing(ctx.db, endpoint.id, now);
  let disabled: string | null = null;
  if (result.statusCode === 410) {
    disabled = 'the receiver answered 410 Gone';
  } else if (now.getTime() - Date.parse(failingSince) >= delivery.disable_after_seconds * 1000) {
    disabled = `every delivery failed for ${describeSeconds(delivery.disable_after_seconds)} (since ${failingSince})`;
  }
  if (disabled) disableEndpoint(ctx.db, endpoint.id, disabled, now);
  return { outcome: decision.kind === 'dead' ? 'dead' : 'retry', disabled };
}

/** Runs `fn` in one write transaction with the other outcomes recorded in the same turn of the event loop (a commit
 *  costs more than the writes of one attempt). While the loop runs, the same transaction claims events for the slots
 *  these attempts free, and they start right after the commit. When an outcome throws, the batch is rolled back and
 *  each runs again in a transaction of its own, so only the one that throws fails. Resolves only after the commit. */
function groupCommit<T>(
  ctx: Ctx,
  deps: DelivererDeps,
  fn: () => T,
  release: () => void,
): Promise<T> {
  const { writes } = deps.inFlight;
  return new Promise<T>((resolve, reject) => {
    writes.push({ fn, resolve: resolve as (value: unknown) => void, reject, release });
    if (writes.length === 1) setImmediate(() => flushWrites(ctx, deps));
  });
}

function flushWrites(ctx: Ctx, deps: DelivererDeps): void {
  const { db } = ctx;
  const batch = deps.inFlight.writes.splice(0);
  for (const w of batch) w.release(); // their HTTP exchanges are over
  const refilling = deps.refill?.isRunning() ?? false;
  let values: unknown[] = [];
  let claimed: ClaimedEvent[] = [];
  try {
    db.transaction(() => {
      values = batch.map((w) => w.fn());
      if (refilling) claimed = claimFreeSlots(ctx, deps);
    })();
  } catch {
    // One write threw (or the claim did) and the batch was rolled back: run each alone, so only the one that throws
    // fails; the slots are refilled on the next turn.
    for (const w of batch) {
      try {
        w.resolve(db.transaction(w.fn)());
      } catch (error) {
        w.reject(error);
      }
    }
    if (refilling) refillSoon(ctx, deps);
    return;
  }
  batch.forEach((w, i) => w.resolve(values[i]));
  if (refilling) startOrIdle(ctx, deps, claimed);
}

/** The running loop's refill: starts what was claimed for the free slots or, when slots are free but nothing was due,
 *  calls `idle()` to work out when to look again. */
function startOrIdle(ctx: Ctx, deps: DelivererDeps, claimed: ClaimedEvent[]): void {
  if (claimed.length > 0) startClaimed(ctx, deps, claimed, emptySummary());
  else if (ctx.config.delivery.concurrency - deps.inFlight.total > 0) deps.refill?.idle();
}

function emptySummary(): DeliverySummary {
  return { attempted: 0, delivered: 0, failed: 0, dead: 0 };
}

/** "5 days", "6 hours", "90 seconds": the largest whole unit. */
function describeSeconds(s: number): string {
  const unit =
    s % 86_400 === 0
      ? (['day', 86_400] as const)
      : s % 3600 === 0
        ? (['hour', 3600] as const)
        : s % 60 === 0
          ? (['minute', 60] as const)
          : (['second', 1] as const);
  const n = s / unit[1];
  return `${n} ${unit[0]}${n === 1 ? '' : 's'}`;
}
