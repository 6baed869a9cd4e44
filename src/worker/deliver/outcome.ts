// What one attempt's result does to the database, inside the group commit: the attempt row, the event's next state
// (delivered, a retry on the schedule, or dead) and the endpoint's health, disabling an endpoint that keeps failing.
import type { Ctx } from '../../context.ts';
import { recordAttempt } from '../../store/attempts.ts';
import {
  disableEndpoint,
  markEndpointFailing,
  markEndpointHealthy,
  type EndpointRow,
} from '../../store/endpoints.ts';
import type { ClaimedEvent } from '../../store/events-claim.ts';
import { nextRetry } from '../../webhook/retry.ts';
import type { SendResult } from '../../webhook/send.ts';

export type Outcome = 'delivered' | 'retry' | 'dead';

/** Stores the attempt, the event's new state and the endpoint's health; runs in one transaction.
 *  Returns the outcome and, when this attempt disabled the endpoint, why; undefined, recording nothing, when the event
 *  was deleted (with its subscription) while the attempt ran. */
export async function recordOutcome(
  ctx: Ctx,
  event: ClaimedEvent,
  endpoint: EndpointRow,
  result: SendResult,
  startedAt: Date,
  random?: () => number,
): Promise<{ outcome: Outcome; disabled: string | null } | undefined> {
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
    if (!(await recordAttempt(ctx.db, attempt, { status: 'delivered', nextAttemptAt: null }, now)))
      return undefined;
    await markEndpointHealthy(ctx.db, endpoint.id);
    return { outcome: 'delivered', disabled: null };
  }
  const decision = nextRetry({
    attempt: event.attempt_count + 1,
    schedule: delivery.retry_schedule_seconds,
    now,
    random,
    retryAfterSeconds: result.retryAfterSeconds,
    maxRetryAfterSeconds: delivery.retry_after_max_seconds,
  });
  const recorded = await recordAttempt(
    ctx.db,
    attempt,
    decision.kind === 'dead'
      ? { status: 'dead', nextAttemptAt: null }
      : { status: 'failed', nextAttemptAt: decision.at.toISOString() },
    now,
  );
  if (!recorded) return undefined;
  const failingSince = await markEndpointFailing(ctx.db, endpoint.id, now);
  const disabled = disableReason(
    result.statusCode,
    failingSince,
    now,
    delivery.disable_after_seconds,
  );
  if (disabled) await disableEndpoint(ctx.db, endpoint.id, disabled, now);
  return { outcome: decision.kind === 'dead' ? 'dead' : 'retry', disabled };
}

/** Why a failed attempt disables its endpoint: a 410, or failures only since `failingSince` for `afterSeconds`
 *  (delivery.disable_after_seconds); null when it does not. */
function disableReason(
  statusCode: number | null,
  failingSince: string,
  now: Date,
  afterSeconds: number,
): string | null {
  if (statusCode === 410) return 'the receiver answered 410 Gone';
  if (now.getTime() - Date.parse(failingSince) >= afterSeconds * 1000)
    return `every delivery failed for ${describeSeconds(afterSeconds)} (since ${failingSince})`;
  return null;
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
