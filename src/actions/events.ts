// Event use-cases shared by the API, the dashboard and the CLI: list and read events with their attempts, resend one,
// and send an endpoint a signed test event now.
import type { Dispatcher } from 'undici';
import * as v from 'valibot';
import { conflict, invalid, notFound } from '../errors.ts';
import { createGuardedAgent } from '../net/guard.ts';
import { newId } from '../ids.ts';
import { userAgent } from '../net/user-agent.ts';
import { RawJson } from '../rawjson.ts';
import { listAttempts, recordAttempt, type AttemptRow } from '../store/attempts.ts';
import {
  getEvent,
  insertEvent,
  listEvents,
  requeueEvent,
  type EventRow,
  type EventStatus,
  type EventWithBody,
} from '../store/events.ts';
import type { Page, PageQuery } from '../store/page.ts';
import { buildTestEvent } from '../webhook/event.ts';
import { sendWebhook } from '../webhook/send.ts';
import { headersOf } from './endpoint-options.ts';
import { signingSecrets, webhookHeaders } from '../webhook/sign.ts';
import { transaction, type Ctx } from '../context.ts';
import { requireEndpoint } from './endpoints.ts';
import { chargeTestEvent } from './quotas.ts';

export type EventView = {
  id: string;
  type: string;
  status: EventStatus;
  endpoint: string;
  subscription: string | null;
  sequence: number | null;
  attempt_count: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
  updated_at: string;
};
export type AttemptView = {
  started_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_body: string | null;
};
/** One event in full: `payload` is the exact body sent on every attempt, `attempts` oldest first. */
export type EventDetailView = EventView & { payload: RawJson; attempts: AttemptView[] };
export type TestEventResult = { event: string; delivered: boolean; attempt: AttemptView };
export type EventFilters = {
  subscription?: string | undefined;
  endpoint?: string | undefined;
  status?: string | undefined;
  /** true: only test pings (endpoint.test); false: none of them; undefined: every event. */
  tests?: boolean | undefined;
};

/** An event's status. */
export const EventStatusValue = v.picklist(
  ['pending', 'delivered', 'failed', 'dead'],
  'must be pending, delivered, failed or dead',
);
/** The `status` filter of GET /v1/events: none, or one event status. */
export const EventStatusFilter = v.optional(EventStatusValue);

/** The API view of an event (its body is only in the detail view). `next_attempt_at` only while it waits to be sent. */
export function eventView(e: EventRow): EventView {
  const waiting = e.status === 'pending' || e.status === 'failed';
  return {
    id: e.id,
    type: e.type,
    status: e.status,
    endpoint: e.endpoint_id,
    subscription: e.subscription_id,
    sequence: e.sequence,
    attempt_count: e.attempt_count,
    next_attempt_at: waiting ? e.next_attempt_at : null,
    last_status_code: e.last_status_code,
    last_error: e.last_error,
    created_at: e.created_at,
    delivered_at: e.delivered_at,
    updated_at: e.updated_at,
  };
}

/** The API view of one attempt. */
export function attemptView(
  a: Pick<AttemptRow, 'started_at' | 'status_code' | 'duration_ms' | 'error' | 'response_body'>,
): AttemptView {
  return {
    started_at: a.started_at,
    status_code: a.status_code,
    duration_ms: a.duration_ms,
    error: a.error,
    response_body: a.response_body,
  };
}

/** One page of the application's events, newest first; filters by subscription, endpoint and status (400 for an
 *  unknown status). Another application's ids simply match nothing. */
export async function listEventViews(
  ctx: Ctx,
  applicationId: string,
  q: PageQuery & EventFilters,
): Promise<Page<EventView>> {
  const status = validateStatus(q.status);
  const page = await listEvents(ctx.db, applicationId, {
    limit: q.limit,
    after: q.after,
    subscription: q.subscription,
    endpoint: q.endpoint,
    status,
    tests: q.tests,
  });
  return { data: page.data.map(eventView), next: page.next };
}

/** The application's event; 404 when unknown or another application's. */
export async function requireEvent(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<EventWithBody> {
  const row = await getEvent(ctx.db, applicationId, id);
  if (!row) throw notFound('Event');
  return row;
}

/** The application's event with its payload and attempts; 404 when unknown or another application's. */
export async function requireEventDetail(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<EventDetailView> {
  const row = await requireEvent(ctx, applicationId, id);
  return {
    ...eventView(row),
    payload: new RawJson(row.body),
    attempts: (await listAttempts(ctx.db, row.id)).map(attemptView),
  };
}

/** Queues a delivered, dead or failed event again: same webhook-id, byte-identical body, a fresh retry schedule, due now.
 *  It keeps its sequence, so it waits behind earlier undelivered events of its subscription and later ones wait for it.
 *  409 when it has not been tried yet or is being sent right now. */
export async function resendEvent(ctx: Ctx, applicationId: string, id: string): Promise<EventView> {
  const now = ctx.clock.now();
  const row = await transaction(ctx, async (tx) => {
    const current = await requireEvent(tx, applicationId, id);
    if (!(await requeueEvent(tx.db, id, now))) {
      const leased = current.lease_until !== null && current.lease_until > now.toISOString();
      throw conflict(
        leased
          ? 'The event is being delivered right now; resend it once this attempt is recorded.'
          : 'The event is already queued and has not been tried yet.',
      );
    }
    return (await getEvent(tx.db, applicationId, id))!;
  });
  ctx.nudgeDeliverer();
  return eventView(row);
}

/** Sends the endpoint a signed `endpoint.test` event now, whatever its status, and records it as an event with its one
 *  attempt (delivered, or dead: a test is never retried). 429, before anything is sent, past the application's
 *  quotas.test_events_per_minute. `agent` defaults to a guarded one made for this call. */
export async function sendTestEvent(
  ctx: Ctx,
  applicationId: string,
  endpointId: string,
  opts: { agent?: Dispatcher } = {},
): Promise<TestEventResult> {
  const now = ctx.clock.now();
  const endpoint = await transaction(ctx, async (tx) => {
    const found = await requireEndpoint(tx, applicationId, endpointId);
    await chargeTestEvent(tx, applicationId, now);
    return found;
  });
  const timeoutMs = ctx.config.delivery.timeout_seconds * 1000;
  const agent =
    opts.agent ??
    createGuardedAgent({
      allowPrivate: ctx.config.network.allow_private,
      connectTimeoutMs: Math.min(10_000, timeoutMs),
    });
  const id = newId(now);
  const body = buildTestEvent(endpoint.id, now);
  try {
    const result = await sendWebhook({
      url: endpoint.url,
      body,
      headers: webhookHeaders(
        signingSecrets(endpoint, now),
        id,
        Math.floor(now.getTime() / 1000),
        body,
        headersOf(endpoint.headers),
      ),
      agent,
      timeoutMs,
      userAgent: userAgent(ctx.config),
      now: () => ctx.clock.now(),
    });
    const attempt = {
      started_at: now.toISOString(),
      status_code: result.statusCode,
      duration_ms: result.durationMs,
      error: result.error,
      response_body: result.responseBody,
    };
    await recordTestEvent(
      ctx,
      applicationId,
      endpointId,
      { id, body, attempt, delivered: result.ok },
      now,
    );
    return { event: id, delivered: result.ok, attempt: attemptView(attempt) };
  } finally {
    if (!opts.agent) await agent.close();
  }
}

/** Stores a test event sent at `now` with its one attempt: delivered, or dead (a test is never retried). 404 when the
 *  endpoint was deleted while the test was being sent: there is nothing to record it against. */
async function recordTestEvent(
  ctx: Ctx,
  applicationId: string,
  endpointId: string,
  test: {
    id: string;
    body: string;
    attempt: Omit<AttemptRow, 'id' | 'event_id' | 'endpoint_id'>;
    delivered: boolean;
  },
  now: Date,
): Promise<void> {
  await transaction(ctx, async (tx) => {
    await requireEndpoint(tx, applicationId, endpointId); // deleted while we waited: nothing to record it against
    await insertEvent(
      tx.db,
      {
        id: test.id,
        application_id: applicationId,
        endpoint_id: endpointId,
        subscription_id: null,
        type: 'endpoint.test',
        sequence: null,
        body: test.body,
      },
      now,
    );
    await recordAttempt(
      tx.db,
      { ...test.attempt, event_id: test.id, endpoint_id: endpointId },
      { status: test.delivered ? 'delivered' : 'dead', nextAttemptAt: null },
      tx.clock.now(),
    );
  });
}

/** The status filter; an empty parameter is none. */
function validateStatus(status: string | undefined): EventStatus | undefined {
  const result = v.safeParse(EventStatusFilter, status === '' ? undefined : status);
  if (result.success) return result.output;
  throw invalid(
    [{ path: 'status', message: result.issues[0].message }],
    'The query string has invalid parameters.',
  );
}
