// The deliverer: an event's way from claim to recorded outcome, on the work pool's core alone (worker/pool/core.ts).
// claim: each free slot goes to the application holding the fewest, then to its endpoint holding the fewest, among due
// sendable events (store/events-claim.ts: per-subscription FIFO) → run: one signed POST that ends by its total deadline
// (webhook/send.ts) → record: the attempt, the event's next state, the endpoint's health (outcome.ts), in the group
// commit that claims for the slots it frees → report: metrics and one log line (worker/deliver/report.ts).
import type { Dispatcher } from 'undici';
import { headersOf } from '../../actions/endpoint-options.ts';
import { within, type Ctx } from '../../context.ts';
import type { Logger } from '../../log.ts';
import { getEndpointById, type EndpointRow } from '../../store/endpoints.ts';
import {
  applicationsWithDueEvents,
  leaseEvents,
  nextWaitingEventAfter,
  releaseEvents,
  walkDueEvents,
  type ClaimedEvent,
  type DueEvent,
} from '../../store/events-claim.ts';
import type { Telemetry } from '../../telemetry.ts';
import { sendWebhook, type SendResult } from '../../webhook/send.ts';
import { signingSecrets, webhookHeaders } from '../../webhook/sign.ts';
import { EndpointHealth } from './endpoint-health.ts';
import { EndpointRates } from './endpoint-rate.ts';
import { pickFairly, type Candidate } from '../pool/fair.ts';
import { reportAttempt } from './report.ts';
import { recordOutcome, type Outcome } from './outcome.ts';
import { Pool } from '../pool/core.ts';
import type { Room } from '../pool/spec.ts';
import { leaseOf } from '../nodes.ts';

/** What an attempt needs besides the context; `random` is the retry jitter's source (tests fix it). */
export type AttemptDeps = {
  agent: Dispatcher;
  logger: Logger;
  telemetry: Telemetry;
  userAgent: string;
  random?: () => number;
};
export type DelivererDeps = AttemptDeps & {
  pool: DeliveryPool;
  health: EndpointHealth;
  /** When rate-limited endpoints started their attempts within the last second. */
  rates: EndpointRates;
  /** Whether the last claim stopped at its scan bound (more may be due than it saw), and when it looked (ms). */
  claim: { cut: boolean; atMs: number };
};
export type DeliverySummary = {
  attempted: number;
  delivered: number;
  failed: number;
  dead: number;
};

/** A claimed event with its endpoint and the pool keys it holds. */
type Claimed = ClaimedEvent & { endpoint: EndpointRow; keys: readonly string[] };
type Sent = { result: SendResult; startedAt: Date };
type Recorded = Awaited<ReturnType<typeof recordOutcome>>;
type DeliveryPool = Pool<Claimed, Sent, Recorded>;

/** A lease outlives the attempt it covers (which ends by delivery.timeout_seconds) by this much, so a crashed process's
 *  claims are taken over soon after, while a live one always records its attempt before the lease ends. */
export const LEASE_MARGIN_MS = 10_000;
const IDLE_MS = 60_000;
/** Waiting rows a claim reads at most, in all and per application: a claim costs about what it takes. */
const MAX_CLAIM_SCAN = 5000;
const MAX_SCAN_PER_APPLICATION = 1000;
/** The soonest the loop looks again, for a retry or an endpoint held back by its rate: a timer per millisecond would
 *  cost more than the few ms an attempt waits past its turn. */
const MIN_RATE_WAKE_MS = 10;

/** The deliverer's pool and what it remembers; `idle` is the loop's nudge (slots free, nothing due). */
export function createDelivererDeps(
  ctx: Ctx,
  deps: AttemptDeps,
  idle: () => void = () => {},
): DelivererDeps {
  const { delivery } = ctx.config;
  const health = new EndpointHealth();
  // Unproven endpoints (new, or timing out) of one application share at most half the slots: slow receivers cannot
  // hold them all, and another application's proven endpoints always find a free one.
  const unprovenCap = Math.max(1, Math.floor(delivery.concurrency / 2));
  const capOf = (key: string): number =>
    key.startsWith('endpoint:')
      ? health.capOf(
          key.slice('endpoint:'.length),
          ctx.node.share(delivery.per_endpoint_concurrency),
        )
      : key.startsWith('unproven:')
        ? unprovenCap
        : Infinity;
  const out: DelivererDeps = {
    ...deps,
    health,
    rates: new EndpointRates(),
    claim: { cut: false, atMs: 0 },
    pool: undefined!,
  };
  out.pool = new Pool<Claimed, Sent, Recorded>(
    ctx.store,
    {
      name: 'deliver',
      slots: delivery.concurrency,
      keysOf: (e) => e.keys,
      capOf,
      claim: (free, room, db) => claimFairly(within(ctx, db), out, capOf, free, room),
      run: (e) => attempt(ctx, out, e),
      record: (e, sent, db) =>
        recordOutcome(within(ctx, db), e, e.endpoint, sent.result, sent.startedAt, deps.random),
      recorded: (e, sent, recorded) => reportAttempt(ctx, out, e, sent.result, recorded),
      release: async (events, db) => {
        await releaseEvents(
          db,
          events.map((e) => e.id),
        );
      },
      idle,
    },
    deps.logger,
  );
  return out;
}

/** One delivery tick: fills the free slots. With `wait` (the default: one-shot commands and tests) it resolves once
 *  those attempts are recorded and `summary` counts them; the loop passes wait: false, and its commits refill the slots
 *  as attempts finish. `nextDelayMs`: when to look again if nothing wakes the loop before. */
export async function deliverTick(
  ctx: Ctx,
  deps: DelivererDeps,
  opts: { wait?: boolean } = {},
): Promise<{ summary: DeliverySummary; started: number; nextDelayMs: number }> {
  const summary: DeliverySummary = { attempted: 0, delivered: 0, failed: 0, dead: 0 };
  const settled = await deps.pool.fill();
  if (opts.wait ?? true)
    for (const recorded of await Promise.all(settled))
      if (recorded) count(summary, recorded.outcome);
  return { summary, started: settled.length, nextDelayMs: await nextDelayMs(ctx, deps) };
}

/** Resolves true once every attempt in flight has been recorded, false when `timeoutMs` passed first (graceful stop). */
export function drainDeliveries(deps: DelivererDeps, timeoutMs: number): Promise<boolean> {
  return deps.pool.drain(timeoutMs);
}

/** The claim: the due events of each application with due work (its own index seek, so one backlog never hides
 *  another's events), at most what each endpoint has room for (its concurrency cap, and its rate limit: an endpoint
 *  over its rate is skipped unread), then the fair pick (worker/pool/fair.ts), leased; the rate-limited picks are noted
 *  started. */
async function claimFairly(
  ctx: Ctx,
  deps: DelivererDeps,
  capOf: (key: string) => number,
  free: number,
  room: Room,
): Promise<Claimed[]> {
  const now = ctx.clock.now();
  const nowMs = now.getTime();
  deps.claim.atMs = nowMs;
  const full = fullEndpoints(deps, capOf, nowMs);
  const underRate = rateGate(deps.rates, nowMs);
  const apps = (await applicationsWithDueEvents(ctx.db, now)).sort(
    (a, b) => room.held(`app:${a}`) - room.held(`app:${b}`),
  );
  const candidates: Candidate<DueEvent>[] = [];
  let budget = MAX_CLAIM_SCAN;
  deps.claim.cut = false;
  for (const app of apps) {
    const maxRows = Math.min(budget, MAX_SCAN_PER_APPLICATION);
    if (maxRows <= 0) {
      deps.claim.cut = true;
      break;
    }
    const counted = new Map<string, number>(); // this application's candidates per endpoint so far
    const { taken, read } = await walkDueEvents(ctx.db, app, now, {
      full,
      limit: free,
      maxRows,
      take: (e) => {
        // An endpoint's rate limit holds for all nodes together: this node starts its share.
        if (e.rate_limit !== null) e.rate_limit = ctx.node.share(e.rate_limit);
        const endpoint = `endpoint:${e.endpoint_id}`;
        const keys = eventKeys(e, deps.health);
        const n = counted.get(endpoint) ?? 0;
        if (room.held(endpoint) + n >= capOf(endpoint) || !underRate(e, n) || !room.fits(keys))
          return false;
        counted.set(endpoint, n + 1);
        candidates.push({ value: e, keys, groups: [`app:${app}`, endpoint] });
        return true;
      },
    });
    budget -= read;
    if (read >= maxRows && taken.length < free) deps.claim.cut = true;
  }
  const picked = pickFairly(candidates, free, room);
  for (const e of picked) deps.rates.started(e.endpoint_id, e.rate_limit, nowMs);
  const keys = new Map(candidates.map((c) => [c.value.id, c.keys]));
  const endpoints = new Map<string, EndpointRow | undefined>(); // read once per claim, not once per event
  const leased = await leaseEvents(
    ctx.db,
    picked,
    now,
    ...leaseOf(ctx, ctx.config.delivery.timeout_seconds * 1000 + LEASE_MARGIN_MS),
  );
  const claimed: Claimed[] = [];
  for (const e of leased) {
    if (!endpoints.has(e.endpoint_id))
      endpoints.set(e.endpoint_id, await getEndpointById(ctx.db, e.endpoint_id));
    // The claim joined the endpoint as active in this same transaction: it is there.
    claimed.push({ ...e, endpoint: endpoints.get(e.endpoint_id)!, keys: keys.get(e.id)! });
  }
  return claimed;
}

/** The endpoints the walk skips unread: at their cap of attempts in flight, or with no room left under their rate. */
function fullEndpoints(
  deps: DelivererDeps,
  capOf: (key: string) => number,
  nowMs: number,
): string[] {
  return [...deps.pool.heldKeys]
    .filter(([key, n]) => key.startsWith('endpoint:') && n >= capOf(key))
    .map(([key]) => key.slice('endpoint:'.length))
    .concat(deps.rates.full(nowMs));
}

/** Whether an event fits under its endpoint's rate when the claim has `n` of that endpoint already; each endpoint's
 *  room is read once per claim. */
function rateGate(rates: EndpointRates, nowMs: number): (e: DueEvent, n: number) => boolean {
  const room = new Map<string, number>();
  return (e, n) => {
    if (e.rate_limit === null) return true;
    if (!room.has(e.endpoint_id))
      room.set(e.endpoint_id, rates.room(e.endpoint_id, e.rate_limit, nowMs));
    return n < room.get(e.endpoint_id)!;
  };
}

/** The pool keys of an event: its endpoint (capped), its application (shared fairly), and, while its endpoint is not
 *  proven, its application's share of unproven endpoints. */
function eventKeys(e: DueEvent, health: EndpointHealth): string[] {
  const keys = [`endpoint:${e.endpoint_id}`, `app:${e.application_id}`];
  if (!health.proven(e.endpoint_id)) keys.push(`unproven:${e.application_id}`);
  return keys;
}

/** One attempt: the stored body with fresh signature headers (Standard Webhooks), within delivery.timeout_seconds in
 *  all. Its answer updates the endpoint's health before the commit, so the claim in that commit sees it. */
async function attempt(ctx: Ctx, deps: DelivererDeps, e: Claimed): Promise<Sent> {
  const startedAt = ctx.clock.now();
  const timestamp = Math.floor(startedAt.getTime() / 1000);
  const result = await sendWebhook({
    url: e.endpoint.url,
    body: e.body,
    headers: webhookHeaders(
      signingSecrets(e.endpoint, startedAt),
      e.id,
      timestamp,
      e.body,
      headersOf(e.endpoint.headers),
    ),
    agent: deps.agent,
    timeoutMs: ctx.config.delivery.timeout_seconds * 1000,
    userAgent: deps.userAgent,
    now: () => ctx.clock.now(),
  });
  deps.health.attempted(e.endpoint_id, result);
  return { result, startedAt };
}

/** When the loop should look again if nothing wakes it first: never while every slot is busy (their commits refill),
 *  soon when the last claim stopped at its scan bound, else when the next retry falls due (up to 60 s) or, sooner,
 *  when an endpoint held back by its rate limit may start again; 10 ms at least. The next retry counts from the last
 *  claim's time, not from now: one falling due between the two (a timer fires a millisecond before the clock reaches
 *  the time it was set for) was not claimed and is due now, so it wakes the loop at once instead of being passed over
 *  until an idle minute ends. */
async function nextDelayMs(ctx: Ctx, deps: DelivererDeps): Promise<number> {
  if (deps.pool.free <= 0) return IDLE_MS;
  if (deps.claim.cut) return 1000;
  const now = ctx.clock.now();
  const next = await nextWaitingEventAfter(
    ctx.db,
    new Date(Math.min(deps.claim.atMs, now.getTime())),
  );
  const wait = next === undefined ? IDLE_MS : Date.parse(next) - now.getTime();
  const retry = Math.min(IDLE_MS, Math.max(MIN_RATE_WAKE_MS, wait));
  // As the last claim saw them: an endpoint that had no room then and has some by now was not claimed, and must still
  // wake the loop (seen from now, its window would be free and the loop would sleep until the next retry, up to 60 s).
  const rateFree = deps.rates.nextFreeAt(Math.min(deps.claim.atMs, now.getTime()));
  return rateFree === undefined
    ? retry
    : Math.min(retry, Math.max(MIN_RATE_WAKE_MS, rateFree - now.getTime()));
}

function count(summary: DeliverySummary, outcome: Outcome): void {
  summary.attempted += 1;
  summary[outcome === 'delivered' ? 'delivered' : outcome === 'dead' ? 'dead' : 'failed'] += 1;
}
