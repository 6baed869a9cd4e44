// SQL for events (one webhook message for one subscription): queueing, reading, counting, requeueing and pruning.
import type { Sql } from '../db/engine.ts';
import { cursor, toPage, type Page, type PageQuery } from './page.ts';
import { changeEventStorage, eventBytes, forgetEvents, type DeletedEvent } from './storage.ts';
import { indexedBy } from './sql.ts';

export type EventStatus = 'pending' | 'delivered' | 'failed' | 'dead';
export type EventRow = {
  id: string;
  application_id: string;
  endpoint_id: string;
  subscription_id: string | null;
  type: string;
  sequence: number | null;
  status: EventStatus;
  attempt_count: number;
  next_attempt_at: string;
  lease_until: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
  updated_at: string;
  /** What it keeps, as the storage budget counts it (store/storage.ts): body, row, entries carried, attempts. */
  stored_bytes: number;
};

/** An event with the exact body it is sent with. */
export type EventWithBody = EventRow & { body: string };

// Every column but the body, for reads that do not send or show it.
const COLUMNS = `id, application_id, endpoint_id, subscription_id, type, sequence, status, attempt_count, next_attempt_at, lease_until,
  last_status_code, last_error, created_at, delivered_at, updated_at, stored_bytes`;

/** Queues an event, due at `dueAt` (now by default), and counts what it keeps for its application: its body and the
 *  `entries` it carries (their event_entries rows, recorded beside it). */
export async function insertEvent(
  db: Sql,
  e: Pick<
    EventWithBody,
    'id' | 'application_id' | 'endpoint_id' | 'subscription_id' | 'type' | 'sequence' | 'body'
  > & { entries?: number },
  now: Date,
  dueAt: Date = now,
): Promise<void> {
  const t = now.toISOString();
  const stored = eventBytes(e.body, e.entries ?? 0);
  await db.run(
    `INSERT INTO events (id, application_id, endpoint_id, subscription_id, type, sequence, next_attempt_at, created_at, updated_at,
                         stored_bytes)
              VALUES (@id, @application_id, @endpoint_id, @subscription_id, @type, @sequence, @due, @t, @t, @stored)`,
    {
      id: e.id,
      application_id: e.application_id,
      endpoint_id: e.endpoint_id,
      subscription_id: e.subscription_id,
      type: e.type,
      sequence: e.sequence,
      due: dueAt.toISOString(),
      t,
      stored,
    },
  );
  await db.run('INSERT INTO event_bodies (event_id, body) VALUES (?, ?)', [e.id, e.body]);
  await changeEventStorage(db, e.application_id, e.id, stored);
}

/** The application's event with its body, or undefined. */
export async function getEvent(
  db: Sql,
  applicationId: string,
  id: string,
): Promise<EventWithBody | undefined> {
  return db.get<EventWithBody>(
    `SELECT e.*, b.body FROM events e JOIN event_bodies b ON b.event_id = e.id WHERE e.id = ? AND e.application_id = ?`,
    [id, applicationId],
  );
}

/** One page of the application's events, newest first, with optional filters; `tests` true lists only test pings
 *  (endpoint.test), false none of them. */
export async function listEvents(
  db: Sql,
  applicationId: string,
  q: PageQuery & {
    subscription?: string | undefined;
    endpoint?: string | undefined;
    status?: EventStatus | undefined;
    tests?: boolean | undefined;
  },
): Promise<Page<EventRow>> {
  const where = ['application_id = ?'];
  const params: unknown[] = [applicationId];
  if (q.subscription) {
    where.push('subscription_id = ?');
    params.push(q.subscription);
  }
  if (q.endpoint) {
    where.push('endpoint_id = ?');
    params.push(q.endpoint);
  }
  if (q.status) {
    where.push('status = ?');
    params.push(q.status);
  }
  if (q.tests !== undefined)
    where.push(q.tests ? 'subscription_id IS NULL' : 'subscription_id IS NOT NULL');
  const c = cursor(q.after);
  const rows = await db.all<EventRow>(
    `SELECT ${COLUMNS} FROM events${q.subscription ? indexedBy(db, 'events_by_subscription') : ''}
      WHERE ${where.join(' AND ')}${c.sql} ORDER BY id DESC LIMIT ?`,
    [...params, ...c.params, q.limit + 1],
  );
  return toPage(rows, q.limit);
}

/** Counts of events by status, for summaries and metrics. One query per partial index (events_due, events_delivered,
 *  events_dead) so each count walks a narrow index holding only the rows it counts, not the table with its bodies.
 *  INDEXED BY pins them: without it the planner walks the whole of events_by_application_status, every event ("SCAN
 *  events USING COVERING INDEX events_by_application_status"). */
export async function countEventsByStatus(db: Sql): Promise<Record<EventStatus, number>> {
  const out: Record<EventStatus, number> = { pending: 0, delivered: 0, failed: 0, dead: 0 };
  for (const row of await db.all<{ status: EventStatus; n: number }>(
    `SELECT status, count(*) AS n FROM events${indexedBy(db, 'events_due')} WHERE status IN ('pending', 'failed') GROUP BY status`,
  ))
    out[row.status] = row.n;
  out.delivered = (await db.value(
    `SELECT count(*) FROM events${indexedBy(db, 'events_delivered')} WHERE status = 'delivered'`,
  )) as number;
  out.dead = (await db.value(
    `SELECT count(*) FROM events${indexedBy(db, 'events_dead')} WHERE status = 'dead'`,
  )) as number;
  return out;
}

/** Events waiting for delivery (pending or failed), counted on the events_due index (pinned: see countEventsByStatus). */
export async function countWaitingEvents(db: Sql): Promise<number> {
  return (await db.value(
    `SELECT count(*) FROM events${indexedBy(db, 'events_due')} WHERE status IN ('pending', 'failed')`,
  )) as number;
}

/** Queues an event again with a fresh retry schedule, due now (resend). Returns false when it is being sent right now
 *  (leased) or still waiting for its first attempt. Its attempts so far are kept. */
export async function requeueEvent(db: Sql, id: string, now: Date): Promise<boolean> {
  const t = now.toISOString();
  return (
    (await db.run(
      `UPDATE events SET status = 'pending', attempt_count = 0, next_attempt_at = @t, lease_until = NULL, updated_at = @t
                     WHERE id = @id AND status IN ('delivered', 'dead', 'failed') AND (lease_until IS NULL OR lease_until <= @t)`,
      { id, t },
    )) > 0
  );
}

/** Queues again, with a fresh retry schedule, every dead or failed event of the endpoint created at or after `since`
 *  (test pings excepted, and events being sent right now); returns how many (recover). */
export async function requeueEndpointEvents(
  db: Sql,
  endpointId: string,
  since: string,
  now: Date,
): Promise<number> {
  const t = now.toISOString();
  return db.run(
    `UPDATE events SET status = 'pending', attempt_count = 0, next_attempt_at = @t, lease_until = NULL, updated_at = @t
                     WHERE endpoint_id = @endpointId AND status IN ('dead', 'failed') AND created_at >= @since AND type <> 'endpoint.test'
                       AND (lease_until IS NULL OR lease_until <= @t)`,
    { endpointId, since, t },
  );
}

/** Makes the endpoint's events that wait for a retry due now (the endpoint was re-enabled); their attempt counts stay. */
export async function hastenEndpointRetries(
  db: Sql,
  endpointId: string,
  now: Date,
): Promise<number> {
  const t = now.toISOString();
  return db.run(
    "UPDATE events SET next_attempt_at = @t, updated_at = @t WHERE endpoint_id = @endpointId AND status = 'failed' AND next_attempt_at > @t",
    { endpointId, t },
  );
}

/** Deletes up to `limit` events (their attempts cascade) that were delivered before `before`, or are test pings that
 *  died before it; returns how many. Pending, failed and other dead events are kept until handled. */
export async function pruneFinishedEvents(db: Sql, before: string, limit: number): Promise<number> {
  const delivered = await db.all<DeletedEvent>(
    `DELETE FROM events WHERE id IN (
      SELECT id FROM events WHERE status = 'delivered' AND delivered_at < ? LIMIT ?)
     RETURNING id, application_id, stored_bytes`,
    [before, limit],
  );
  await forgetEvents(db, delivered);
  const pings = await db.all<DeletedEvent>(
    `DELETE FROM events WHERE id IN (
      SELECT id FROM events WHERE status = 'dead' AND created_at < ? AND type = 'endpoint.test' LIMIT ?)
     RETURNING id, application_id, stored_bytes`,
    [before, Math.max(0, limit - delivered.length)],
  );
  await forgetEvents(db, pings);
  return delivered.length + pings.length;
}

/** Deletes up to `limit` events of a subscription (their bodies and attempts cascade); returns how many. */
export async function deleteSubscriptionEvents(
  db: Sql,
  subscriptionId: string,
  limit: number,
): Promise<number> {
  const deleted = await db.all<DeletedEvent>(
    `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE subscription_id = ? LIMIT ?)
     RETURNING id, application_id, stored_bytes`,
    [subscriptionId, limit],
  );
  await forgetEvents(db, deleted);
  return deleted.length;
}

/** Deletes every event of an endpoint (test pings, and events of subscriptions that moved to another endpoint), as
 *  the endpoint goes. Call in the transaction that deletes it. */
export async function deleteEndpointEvents(db: Sql, endpointId: string): Promise<void> {
  await forgetEvents(
    db,
    await db.all<DeletedEvent>(
      'DELETE FROM events WHERE endpoint_id = ? RETURNING id, application_id, stored_bytes',
      [endpointId],
    ),
  );
}

/** True when the subscription has more than `n` events (counting no further than n + 1). */
export async function hasMoreEventsThan(
  db: Sql,
  subscriptionId: string,
  n: number,
): Promise<boolean> {
  return (
    ((await db.value(
      'SELECT count(*) FROM (SELECT 1 FROM events WHERE subscription_id = ? LIMIT ?) e',
      [subscriptionId, n + 1],
    )) as number) > n
  );
}

/** created_at of the oldest event the deliverer is trying to send, or undefined when none: waiting (pending or failed),
 *  its endpoint active and its subscription not paused. Events a paused subscription or a disabled endpoint holds are
 *  left out: they wait by someone's decision, and an alert on this age must not fire for them. Per subscription only the
 *  head of its queue counts (the oldest, by the FIFO): the heads come from the events_waiting index alone (one entry per
 *  waiting event, no row read), then one row, subscription and endpoint each; test pings (no subscription) resent by
 *  hand come from the same index's NULL range. */
export async function oldestSendableEventAt(db: Sql): Promise<string | undefined> {
  return (
    ((await db.value(`SELECT min(created_at) FROM (
         SELECT e.created_at FROM (
             SELECT subscription_id AS sid, min(sequence) AS seq FROM events
              WHERE status IN ('pending', 'failed') AND subscription_id IS NOT NULL GROUP BY subscription_id) h
           JOIN events e ON e.subscription_id = h.sid AND e.sequence = h.seq AND e.status IN ('pending', 'failed')
           JOIN subscriptions s ON s.id = h.sid AND s.status = 'active'
           JOIN endpoints ep ON ep.id = e.endpoint_id AND ep.status = 'active'
         UNION ALL
         SELECT e.created_at FROM events e JOIN endpoints ep ON ep.id = e.endpoint_id AND ep.status = 'active'
          WHERE e.subscription_id IS NULL AND e.status IN ('pending', 'failed')) heads`)) as
      string | null) ?? undefined
  );
}
