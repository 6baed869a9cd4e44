// The deliverer's tick: claim due events (per-subscription FIFO), POST them signed, record each attempt and decide retries.
import type { Dispatcher } from 'undici';
import type { Ctx } from '../actions/context.ts';
import type { Limiter } from '../feed/limiter.ts';
import type { Logger } from '../log.ts';
import { disableEndpoint, getEndpointById, markEndpointFailing, markEndpointHealthy, type EndpointRow } from '../store/endpoints.ts';
import { claimDueEvents, nextEventDueAt, recordAttempt, releaseEvent, type EventRow } from '../store/events.ts';
import { nextRetry } from '../webhook/retry.ts';
import { sendWebhook, type SendResult } from '../webhook/send.ts';
import { webhookHeaders } from '../webhook/sign.ts';
import type { Telemetry } from './telemetry.ts';

export type DelivererDeps = { agent: Dispatcher; limiter: Limiter; logger: Logger; telemetry: Telemetry; userAgent: string; random?: () => number };
export type DeliverySummary = { attempted: number; delivered: number; failed: number; dead: number };

const MAX_RETRY_AFTER_SECONDS = 3600;

/** One delivery tick. Returns what happened and the ms until something may be due. */
export async function deliverTick(ctx: Ctx, deps: DelivererDeps): Promise<{ summary: DeliverySummary; nextDelayMs: number }> {
  const summary: DeliverySummary = { attempted: 0, delivered: 0, failed: 0, dead: 0 };
  const now = ctx.clock.now();
  const leaseMs = (ctx.config.delivery.timeout_seconds + 30) * 1000;
  const events = claimDueEvents(ctx.db, now, leaseMs, ctx.config.delivery.concurrency * 2);
  await Promise.all(events.map((event) => deps.limiter.run(event.endpoint_id, () => deliverOne(ctx, deps, event, summary))));
  if (summary.attempted > 0) return { summary, nextDelayMs: 0 };
  const due = nextEventDueAt(ctx.db);
  const wait = due === undefined ? 60_000 : Date.parse(due) - ctx.clock.now().getTime();
  return { summary, nextDelayMs: Math.min(60_000, Math.max(1000, wait)) };
}

/** The secrets to sign with: the current one, plus the previous one while a rotation's grace period lasts. */
export function signingSecrets(endpoint: EndpointRow, now: Date): string[] {
  const previousLive = endpoint.previous_secret !== null && endpoint.previous_secret_until !== null && endpoint.previous_secret_until > now.toISOString();
  return previousLive ? [endpoint.secret, endpoint.previous_secret!] : [endpoint.secret];
}

async function deliverOne(ctx: Ctx, deps: DelivererDeps, event: EventRow, summary: DeliverySummary): Promise<void> {
  const endpoint = getEndpointById(ctx.db, event.endpoint_id);
  if (!endpoint || endpoint.status !== 'active') { releaseEvent(ctx.db, event.id); return; }
  const startedAt = ctx.clock.now();
  const timestamp = Math.floor(startedAt.getTime() / 1000);
  const result = await sendWebhook({
    url: endpoint.url, body: event.body, headers: webhookHeaders(signingSecrets(endpoint, startedAt), event.id, timestamp, event.body),
    agent: deps.agent, timeoutMs: ctx.config.delivery.timeout_seconds * 1000, userAgent: deps.userAgent, now: () => ctx.clock.now(),
  });
  const outcome = ctx.db.transaction(() => recordOutcome(ctx, deps, event, endpoint, result, startedAt))();
  summary.attempted += 1;
  summary[outcome === 'delivered' ? 'delivered' : outcome === 'dead' ? 'dead' : 'failed'] += 1;
  const latency = outcome === 'delivered' ? ctx.clock.now().getTime() - Date.parse(event.created_at) : null;
  deps.telemetry.attempted(outcome, result.durationMs, latency);
  const fields = { event_id: event.id, endpoint_id: endpoint.id, attempt: event.attempt_count + 1, status_code: result.statusCode, duration_ms: result.durationMs, outcome };
  if (result.ok) deps.logger.info('deliver: event delivered', fields);
  else deps.logger.warn('deliver: attempt failed', { ...fields, error: result.error });
}

/** Stores the attempt, the event's new state and the endpoint's health; runs in one transaction. */
function recordOutcome(ctx: Ctx, deps: DelivererDeps, event: EventRow, endpoint: EndpointRow, result: SendResult, startedAt: Date): 'delivered' | 'retry' | 'dead' {
  const now = ctx.clock.now();
  const attempt = { event_id: event.id, endpoint_id: endpoint.id, started_at: startedAt.toISOString(), status_code: result.statusCode, duration_ms: result.durationMs, error: result.error, response_body: result.responseBody };
  if (result.ok) {
    recordAttempt(ctx.db, attempt, { status: 'delivered', nextAttemptAt: null }, now);
    markEndpointHealthy(ctx.db, endpoint.id);
    return 'delivered';
  }
  const decision = nextRetry({
    attempt: event.attempt_count + 1, schedule: ctx.config.delivery.retry_schedule_seconds, now, random: deps.random,
    retryAfterSeconds: result.retryAfterSeconds, maxRetryAfterSeconds: MAX_RETRY_AFTER_SECONDS,
  });
  recordAttempt(ctx.db, attempt, decision.kind === 'dead' ? { status: 'dead', nextAttemptAt: null } : { status: 'failed', nextAttemptAt: decision.at.toISOString() }, now);
  const failingSince = markEndpointFailing(ctx.db, endpoint.id, now);
  if (result.statusCode === 410) {
    disableEndpoint(ctx.db, endpoint.id, 'the receiver answered 410 Gone', now);
  } else if (now.getTime() - Date.parse(failingSince) >= ctx.config.delivery.disable_after_seconds * 1000) {
    disableEndpoint(ctx.db, endpoint.id, `every delivery failed for ${Math.round(ctx.config.delivery.disable_after_seconds / 3600)} hours (since ${failingSince})`, now);
  }
  return decision.kind === 'dead' ? 'dead' : 'retry';
}
