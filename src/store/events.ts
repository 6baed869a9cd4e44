// SQL for events (one webhook message for one subscription) and their attempts.
import type { Db } from '../db/open.ts';
import { newId } from '../ids.ts';
import { cursor, toPage, type Page, type PageQuery } from './page.ts';

export type EventStatus = 'pending' | 'delivered' | 'failed' | 'dead';
export type EventRow = {
  id: string; application_id: string; endpoint_id: string; subscription_id: string | null; type: string;
  sequence: number | null; body: string; status: EventStatus; attempt_count: number; next_attempt_at: string;
  lease_until: string | null; last_status_code: number | null; last_error: string | null;
  created_at: string; delivered_at: string | null; updated_at: string;
};
export type AttemptRow = {
  id: string; event_id: string; endpoint_id: string; started_at: string; status_code: number | null;
  duration_ms: number; error: string | null; response_body: string | null;
};

/** Queues an event, due at `dueAt` (now by default). */
export function insertEvent(db: Db, e: Pick<EventRow, 'id' | 'application_id' | 'endpoint_id' | 'subscription_id' | 'type' | 'sequence' | 'body'>, now: Date, dueAt: Date = now): void {
  const t = now.toISOString();
  db.prepare(`INSERT INTO events (id, application_id, endpoint_id, subscription_id, type, sequence, body, next_attempt_at, created_at, updated_at)
              VALUES (@id, @application_id, @endpoint_id, @subscription_id, @type, @sequence, @body, @due, @t, @t)`)
    .run({ ...e, due: dueAt.toISOString(), t });
}

/** Leases up to `limit` due events for `leaseMs`. An event is due only when its endpoint is active, its subscription is
 *  not paused, and every earlier event of its subscription is delivered or dead (per-subscription FIFO). */
export function claimDueEvents(db: Db, now: Date, leaseMs: number, limit: number): EventRow[] {
  const t = now.toISOString();
  return db.prepare(`
    UPDATE events SET lease_until = @lease, updated_at = @t
    WHERE id IN (
      SELECT e.id FROM events e
      JOIN endpoints ep ON ep.id = e.endpoint_id AND ep.status = 'active'
      LEFT JOIN subscriptions s ON s.id = e.subscription_id
      WHERE e.status IN ('pending', 'failed') AND e.next_attempt_at <= @t
        AND (e.lease_until IS NULL OR e.lease_until <= @t)
        AND (s.id IS NULL OR s.status = 'active')
        AND (e.subscription_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM events p WHERE p.subscription_id = e.subscription_id AND p.sequence < e.sequence AND p.status IN ('pending', 'failed')))
      ORDER BY e.next_attempt_at, e.sequence LIMIT @limit)
    RETURNING *`).all({ lease: new Date(now.getTime() + leaseMs).toISOString(), t, limit }) as EventRow[];
}

/** Records one attempt and its outcome on the event. Call inside a transaction with the endpoint update. */
export function recordAttempt(db: Db, a: Omit<AttemptRow, 'id'>, outcome: { status: EventStatus; nextAttemptAt: string | null }, now: Date): void {
  const t = now.toISOString();
  db.prepare(`INSERT INTO attempts (id, event_id, endpoint_id, started_at, status_code, duration_ms, error, response_body)
              VALUES (@id, @event_id, @endpoint_id, @started_at, @status_code, @duration_ms, @error, @response_body)`).run({ ...a, id: newId(now) });
  db.prepare(`UPDATE events SET status = @status, attempt_count = attempt_count + 1, lease_until = NULL,
                next_attempt_at = coalesce(@next, next_attempt_at), last_status_code = @code, last_error = @error,
                delivered_at = CASE WHEN @status = 'delivered' THEN @t ELSE delivered_at END, updated_at = @t
              WHERE id = @id`).run({ status: outcome.status, next: outcome.nextAttemptAt, code: a.status_code, error: a.error, t, id: a.event_id });
}


/** Releases a lease without an attempt (e.g. the endpoint became disabled while the event waited). */
export function releaseEvent(db: Db, id: string): void {
  db.prepare('UPDATE events SET lease_until = NULL WHERE id = ?').run(id);
}

/** The application's event, or undefined. */
export function getEvent(db: Db, applicationId: string, id: string): EventRow | undefined {
  return db.prepare('SELECT * FROM events WHERE id = ? AND application_id = ?').get(id, applicationId) as EventRow | undefined;
}

/** The attempts of an event, oldest first. */
export function listAttempts(db: Db, eventId: string): AttemptRow[] {
  return db.prepare('SELECT * FROM attempts WHERE event_id = ? ORDER BY started_at, id').all(eventId) as AttemptRow[];
}

/** One page of the application's events, newest first, with optional filters. */
export function listEvents(db: Db, applicationId: string, q: PageQuery & { subscription?: string | undefined; endpoint?: string | undefined; status?: EventStatus | undefined }): Page<EventRow> {
  const where = ['application_id = ?'];
  const params: unknown[] = [applicationId];
  if (q.subscription) { where.push('subscription_id = ?'); params.push(q.subscription); }
  if (q.endpoint) { where.push('endpoint_id = ?'); params.push(q.endpoint); }
  if (q.status) { where.push('status = ?'); params.push(q.status); }
  const c = cursor(q.after);
  const rows = db.prepare(`SELECT * FROM events WHERE ${where.join(' AND ')}${c.sql} ORDER BY id DESC LIMIT ?`).all(...params, ...c.params, q.limit + 1) as EventRow[];
  return toPage(rows, q.limit);
}

/** Counts of events by status, for summaries and metrics. */
export function countEventsByStatus(db: Db): Record<EventStatus, number> {
  const out: Record<EventStatus, number> = { pending: 0, delivered: 0, failed: 0, dead: 0 };
  for (const row of db.prepare('SELECT status, count(*) AS n FROM events GROUP BY status').all() as { status: EventStatus; n: number }[]) out[row.status] = row.n;
  return out;
}

/** The earliest time an event could become due, to sleep until then; undefined when nothing waits. */
export function nextEventDueAt(db: Db): string | undefined {
  return db.prepare("SELECT min(next_attempt_at) FROM events WHERE status IN ('pending', 'failed')").pluck().get() as string | undefined ?? undefined;
}

/** created_at of the oldest event still waiting for delivery (pending or failed), or undefined when none waits. */
export function oldestPendingEventAt(db: Db): string | undefined {
  return (db.prepare("SELECT min(created_at) FROM events WHERE status IN ('pending', 'failed')").pluck().get() as string | null) ?? undefined;
}
