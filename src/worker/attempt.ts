// One delivery attempt of a claimed event: POST its stored body with fresh signature headers (Standard Webhooks),
// record the outcome through the group commit (outcome.ts), then measure and log it.
import type { Dispatcher } from 'undici';
import type { Ctx } from '../context.ts';
import type { Logger } from '../log.ts';
import type { EndpointRow } from '../store/endpoints.ts';
import { releaseEvent, type ClaimedEvent } from '../store/events-claim.ts';
import type { Telemetry } from '../telemetry.ts';
import { sendWebhook, type SendResult } from '../webhook/send.ts';
import { signingSecrets, webhookHeaders } from '../webhook/sign.ts';
import { recordOutcome, type Outcome } from './outcome.ts';

/** What an attempt needs besides the context; `random` is the retry jitter's source (tests fix it). */
export type AttemptDeps = {
  agent: Dispatcher;
  logger: Logger;
  telemetry: Telemetry;
  userAgent: string;
  random?: () => number;
};
/** Runs `record` in a write transaction; resolves with its value once committed. */
export type Commit = <T>(record: () => T) => Promise<T>;

/** Sends `event` to `endpoint` and records the outcome through `commit`; resolves to the outcome, or to undefined
 *  without sending when the endpoint is gone or not active (the lease is given back). A failed send is an outcome;
 *  rejects only when recording failed. */
export async function attemptDelivery(
  ctx: Ctx,
  deps: AttemptDeps,
  event: ClaimedEvent,
  endpoint: EndpointRow | undefined,
  commit: Commit,
): Promise<Outcome | undefined> {
  if (!endpoint || endpoint.status !== 'active') {
    releaseEvent(ctx.db, event.id);
    return undefined;
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
  const { outcome, disabled } = await commit(() =>
    recordOutcome(ctx, event, endpoint, result, startedAt, deps.random),
  );
  report(ctx, deps, event, endpoint, result, outcome, disabled);
  return outcome;
}

/** Measures and logs one recorded attempt. */
function report(
  ctx: Ctx,
  deps: AttemptDeps,
  event: ClaimedEvent,
  endpoint: EndpointRow,
  result: SendResult,
  outcome: Outcome,
  disabled: string | null,
): void {
  const latency =
    outcome === 'delivered' ? ctx.clock.now().getTime() - Date.parse(event.created_at) : null;
  deps.telemetry.attempted(outcome, result.durationMs, latency, endpoint.id);
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
