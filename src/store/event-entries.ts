// SQL for which entries each event carries (by key, per subscription): the trace's way from an entry to its events.
// Rows go with their event (ON DELETE CASCADE), so they are bounded by the events' retention.
import type { Sql } from '../db/engine.ts';
import type { EventStatus } from './events.ts';
import { type Dialect } from '../db/engine.ts';
import { jsonValues } from './sql.ts';

/** Records that the event carries these entry keys. Call inside the transaction that inserts the event. */
export async function recordEventEntries(
  db: Sql,
  subscriptionId: string,
  eventId: string,
  keys: Iterable<string>,
): Promise<void> {
  if (db.dialect === 'postgres') {
    await db.run(
      `INSERT INTO event_entries (subscription_id, key, event_id)
       SELECT @sub, j.value, @event FROM (${jsonValues(db, '@keys')}) j
       ON CONFLICT DO NOTHING`,
      { sub: subscriptionId, event: eventId, keys: JSON.stringify([...keys]) },
    );
    return;
  }
  const insert =
    'INSERT INTO event_entries (subscription_id, key, event_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
  for (const key of keys) await db.run(insert, [subscriptionId, key, eventId]);
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

/** 1 when the event's body says `data.backfill: true`, else 0 (SQLite's ->> reads JSON true as 1). */
const BACKFILL: Readonly<Record<Dialect, string>> = {
  sqlite:
    "coalesce((SELECT b.body ->> '$.data.backfill' FROM event_bodies b WHERE b.event_id = e.id), 0)",
  postgres:
    "coalesce((SELECT (b.body::json #>> '{data,backfill}' = 'true')::int FROM event_bodies b WHERE b.event_id = e.id), 0)",
};

/** The subscription's events that carry the entry, in sequence order (at most `limit`, the first ones). */
export async function eventsOfEntry(
  db: Sql,
  subscriptionId: string,
  key: string,
  limit: number,
): Promise<EntryEventRow[]> {
  return db.all<EntryEventRow>(
    `SELECT e.id, e.type, e.sequence, e.status, e.attempt_count, e.next_attempt_at, e.created_at, e.delivered_at,
            ${BACKFILL[db.dialect]} AS backfill
     FROM event_entries x JOIN events e ON e.id = x.event_id
     WHERE x.subscription_id = ? AND x.key = ? ORDER BY e.sequence, e.id LIMIT ?`,
    [subscriptionId, key, limit],
  );
}
