// SQL for attempts (one HTTP try of an event): recording one with its event's outcome, listing an event's attempts.
import type { Sql } from '../db/engine.ts';
import type { EventStatus } from './events.ts';
import { attemptBytes, changeEventStorage } from './storage.ts';

export type AttemptRow = {
  id: number;
  event_id: string;
  endpoint_id: string;
  started_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_body: string | null;
};

/** Records one attempt and its outcome on the event; false, recording nothing, when the event is gone (its
 *  subscription was deleted while the attempt ran). Call inside a transaction with the endpoint update. */
export async function recordAttempt(
  db: Sql,
  a: Omit<AttemptRow, 'id'>,
  outcome: { status: EventStatus; nextAttemptAt: string | null },
  now: Date,
): Promise<boolean> {
  const t = now.toISOString();
  const stored = attemptBytes(a.response_body);
  // Positional parameters: this runs for every attempt, and binding by name costs more.
  const application = (await db.value(
    `UPDATE events SET status = ?, attempt_count = attempt_count + 1, lease_until = NULL,
                next_attempt_at = coalesce(?, next_attempt_at), last_status_code = ?, last_error = ?,
                delivered_at = coalesce(?, delivered_at), updated_at = ?, stored_bytes = stored_bytes + ?
              WHERE id = ? RETURNING application_id`,
    [
      outcome.status,
      outcome.nextAttemptAt,
      a.status_code,
      a.error,
      outcome.status === 'delivered' ? t : null,
      t,
      stored,
      a.event_id,
    ],
  )) as string | undefined;
  if (application === undefined) return false;
  await changeEventStorage(db, application, a.event_id, stored);
  await db.run(
    `INSERT INTO attempts (event_id, endpoint_id, started_at, status_code, duration_ms, error, response_body) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [
      a.event_id,
      a.endpoint_id,
      a.started_at,
      a.status_code,
      a.duration_ms,
      a.error,
      a.response_body,
    ],
  );
  return true;
}

/** The attempts of an event, oldest first. */
export async function listAttempts(db: Sql, eventId: string): Promise<AttemptRow[]> {
  return db.all<AttemptRow>('SELECT * FROM attempts WHERE event_id = ? ORDER BY started_at, id', [
    eventId,
  ]);
}

/** One endpoint's attempts in one UTC hour ('YYYY-MM-DDTHH'): how many, how many got a 2xx, and their durations. */
export type AttemptHourRow = {
  hour: string;
  attempts: number;
  delivered: number;
  total_ms: number;
  max_ms: number;
};

/** The endpoint's attempts per UTC hour since `since` (an ISO time), oldest first; test pings included (they are
 *  attempts at the endpoint too). Reads only the covering index attempts_by_endpoint (endpoint_id, started_at,
 *  status_code, duration_ms): a range of the endpoint's last day, never a row with its response. */
export async function attemptHours(
  db: Sql,
  endpointId: string,
  since: string,
): Promise<AttemptHourRow[]> {
  return db.all<AttemptHourRow>(
    `SELECT substr(started_at, 1, 13) AS hour, count(*) AS attempts,
            sum(CASE WHEN status_code BETWEEN 200 AND 299 THEN 1 ELSE 0 END) AS delivered, sum(duration_ms) AS total_ms, max(duration_ms) AS max_ms
       FROM attempts WHERE endpoint_id = ? AND started_at >= ? GROUP BY hour ORDER BY hour`,
    [endpointId, since],
  );
}
