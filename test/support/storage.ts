// The storage counts as the rows say they should be: every feed's, every event's and every application's, counted from
// scratch, for tests that check the counts the writes keep (store/storage.ts) are exact.
import type { Sql } from '../../src/db/engine.ts';
import {
  attemptBytes,
  countFeedStorage,
  EVENT_ENTRY_BYTES,
  EVENT_ROW_BYTES,
} from '../../src/store/storage.ts';

/** Every count that differs from what the rows say, as readable lines (none when every count is exact). */
export async function storageOffBy(db: Sql): Promise<string[]> {
  const off: string[] = [];
  const feeds = await db.all<{
    id: string;
    sole_application_id: string | null;
    stored_keys: number;
    stored_bytes: number;
  }>('SELECT id, sole_application_id, stored_keys, stored_bytes FROM feeds');
  const feedBytes = new Map<string, number>();
  for (const f of feeds) {
    const counted = await countFeedStorage(db, f.id);
    if (counted.keys !== f.stored_keys || counted.bytes !== f.stored_bytes)
      off.push(
        `feed ${f.id}: counts ${f.stored_keys} keys, ${f.stored_bytes} bytes; stores ${counted.keys}, ${counted.bytes}`,
      );
    const apps = await db.column<string>(
      'SELECT DISTINCT application_id FROM subscriptions WHERE feed_id = ?',
      [f.id],
    );
    const sole = apps.length === 1 ? apps[0]! : null;
    if (sole !== f.sole_application_id)
      off.push(`feed ${f.id}: counted for ${f.sole_application_id}, used by ${apps.join(', ')}`);
    if (f.sole_application_id !== null)
      feedBytes.set(
        f.sole_application_id,
        (feedBytes.get(f.sole_application_id) ?? 0) + f.stored_bytes,
      );
  }
  const events = await db.all<{
    id: string;
    application_id: string;
    stored_bytes: number;
    body: string;
    entries: number;
  }>(
    `SELECT e.id, e.application_id, e.stored_bytes, b.body,
       (SELECT count(*) FROM event_entries x WHERE x.event_id = e.id) AS entries
     FROM events e JOIN event_bodies b ON b.event_id = e.id`,
  );
  const eventBytes = new Map<string, number>();
  for (const e of events) {
    const responses = await db.column<string | null>(
      'SELECT response_body FROM attempts WHERE event_id = ?',
      [e.id],
    );
    const counted =
      Buffer.byteLength(e.body) +
      EVENT_ROW_BYTES +
      e.entries * EVENT_ENTRY_BYTES +
      responses.reduce((n, r) => n + attemptBytes(r), 0);
    if (counted !== e.stored_bytes)
      off.push(`event ${e.id}: counts ${e.stored_bytes} bytes; keeps ${counted}`);
    eventBytes.set(e.application_id, (eventBytes.get(e.application_id) ?? 0) + e.stored_bytes);
  }
  const apps = await db.column<string>('SELECT id FROM applications');
  for (const app of apps) {
    const row = (await db.get<{ feed_bytes: number; event_bytes: number }>(
      'SELECT feed_bytes, event_bytes FROM application_storage WHERE application_id = ?',
      [app],
    )) ?? {
      feed_bytes: 0,
      event_bytes: 0,
    };
    const feedsOf = feedBytes.get(app) ?? 0;
    const eventsOf = eventBytes.get(app) ?? 0;
    if (row.feed_bytes !== feedsOf || row.event_bytes !== eventsOf)
      off.push(
        `application ${app}: counts ${row.feed_bytes} + ${row.event_bytes} bytes; keeps ${feedsOf} + ${eventsOf}`,
      );
  }
  return off;
}
