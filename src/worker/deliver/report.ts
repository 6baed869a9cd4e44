// The report of one recorded delivery attempt: its metrics (outcome, duration, created → delivered latency) and one log
// line, plus one when the outcome disabled the endpoint.
import type { Ctx } from '../../context.ts';
import type { Logger } from '../../log.ts';
import type { ClaimedEvent } from '../../store/events-claim.ts';
import type { Telemetry } from '../../telemetry.ts';
import type { SendResult } from '../../webhook/send.ts';
import type { recordOutcome } from './outcome.ts';

/** Measures and logs one recorded attempt (nothing when its event was deleted meanwhile). */
export function reportAttempt(
  ctx: Ctx,
  deps: { telemetry: Telemetry; logger: Logger },
  e: ClaimedEvent,
  result: SendResult,
  recorded: Awaited<ReturnType<typeof recordOutcome>>,
): void {
  if (!recorded) return;
  const { outcome, disabled } = recorded;
  const latency =
    outcome === 'delivered' ? ctx.clock.now().getTime() - Date.parse(e.created_at) : null;
  deps.telemetry.attempted(outcome, result.durationMs, latency, e.endpoint_id);
  const fields = {
    event_id: e.id,
    endpoint_id: e.endpoint_id,
    subscription_id: e.subscription_id,
    attempt: e.attempt_count + 1,
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    outcome,
  };
  if (result.ok && !result.timedOut) deps.logger.info('deliver: event delivered', fields);
  else if (result.ok)
    deps.logger.warn('deliver: event delivered late', { ...fields, error: result.error });
  else deps.logger.warn('deliver: attempt failed', { ...fields, error: result.error });
  if (disabled)
    deps.logger.warn('deliver: endpoint disabled', {
      endpoint_id: e.endpoint_id,
      reason: disabled,
    });
}
