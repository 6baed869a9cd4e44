// SQL for which entries each event carries (by key, per subscription): the trace's way from an entry to its events.
// Rows go with their event (ON DELETE CASCADE), so they are bounded by the events' retention.
import type { Db } from '../db/open.ts';
import type { EventStatus } from './events.ts';
import { prepared } from './sql.ts';

/** Records that the event carries these entry keys. Call inside the transaction that inserts the event. */
export function recordEventEntries(
  db: Db,
  subscriptionId: string,
  eventId: string,
  keys: Iterable<string>,
): void {
  const insert = prepared(
    db,
    'INSERT OR IGNORE INTO event_entries (subscription_id, key, event_id) VALUES (?, ?, ?)',
  );
  for (const key of keys) insert.run(subscriptionId, key, eventId);
}

/** An event that carried an entry, as the trace shows it. */
export type EntryEventRow = {
  id: string;
  type: string;
  sequence: number | null;
  status: EventStatus;
  attempt_count: number;
  next_attempt_at: string;
  created_at: string;
  delivered_at: string | null;
  /** 1 when the event is a backfill (`data.backfill` in its body). */
  backfill: number;
};

/** The subscription's events that carry the entry, in sequence order (at most `limit`, the first ones). */
export function eventsOfEntry(
  db: Db,
  subscriptionId: string,
  key: string,
  limit: number,
): EntryEventRow[] {
  return prepared(
    db,
    `SELECT e.id, e.type, e.sequence, e.status, e.attempt_count, e.next_attempt_at, e.created_at, e.delivered_at,
            coalesce((SELECT b.body ->> '$.data.backfill' FROM event_bodies b WHERE b.event_id = e.id), 0) AS backfill
     FROM event_entries x JOIN events e ON e.id = x.event_id
     WHERE x.subscription_id = ? AND x.key = ? ORDER BY e.sequence, e.id LIMIT ?`,
  ).all(subscriptionId, key, limit) as EntryEventRow[];
}
