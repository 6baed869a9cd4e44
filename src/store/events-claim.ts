// SQL for claiming events to send: which events are sendable (per-subscription FIFO), leasing the due ones within the
// concurrency caps, when the next one is due, and giving a lease back.
import type { Db } from '../db/open.ts';
import type { EventRow } from './events.ts';
import { prepared } from './sql.ts';

/** What a delivery attempt needs of a claimed event: a claim reads no more (each column is a string made per event). */
export type ClaimedEvent = Pick<
  EventRow,
  'id' | 'endpoint_id' | 'subscription_id' | 'attempt_count' | 'created_at'
> & { body: string };

/** Which events a claim may take: at most `limit` in all, and per endpoint at most `perEndpoint` minus the attempts
 *  already in flight to it (`busy`: endpoint id → count). */
export type ClaimLimits = { limit: number; perEndpoint: number; busy?: Record<string, number> };

// An event can be sent when its endpoint is active, its subscription is not paused, and no earlier event of its
// subscription is still undelivered (pending or failed): per-subscription FIFO. Dead events no longer hold the line.
const SENDABLE = `
  FROM events e
  JOIN endpoints ep ON ep.id = e.endpoint_id AND ep.status = 'active'
  LEFT JOIN subscriptions s ON s.id = e.subscription_id
  WHERE e.status IN ('pending', 'failed') AND (s.id IS NULL OR s.status = 'active')
    AND (e.subscription_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM events p WHERE p.subscription_id = e.subscription_id AND p.sequence < e.sequence AND p.status IN ('pending', 'failed')))`;

/** Rows a claim looks at, at most: the scan walks the due index lazily and usually stops after `limit` rows. */
const MAX_CLAIM_SCAN = 5000;

/** Leases the due, sendable events (see SENDABLE) for `leaseMs`, earliest due first, within `limits`. The due index is
 *  walked lazily and stops once `limit` events are picked, so a claim costs about what it takes, not the queue's length;
 *  endpoints already at their cap are skipped in SQL. */
export function claimDueEvents(
  db: Db,
  now: Date,
  leaseMs: number,
  limits: ClaimLimits,
): ClaimedEvent[] {
  if (limits.limit <= 0) return [];
  const t = now.toISOString();
  const room = new Map(
    Object.entries(limits.busy ?? {}).map(([endpoint, n]) => [endpoint, limits.perEndpoint - n]),
  );
  const full = [...room].filter(([, left]) => left <= 0).map(([endpoint]) => endpoint);
  return db.transaction(() => {
    const picked: ClaimedEvent[] = [];
    const rowids: number[] = [];
    // A row read here is nearly always picked (skipped only when its endpoint's slots are full), so its body comes with it.
    const candidates = prepared(
      db,
      `SELECT e.rowid, e.id, e.endpoint_id, e.subscription_id, e.attempt_count, e.created_at,
          (SELECT body FROM event_bodies WHERE event_id = e.id) AS body ${SENDABLE}
        AND e.next_attempt_at <= @t AND (e.lease_until IS NULL OR e.lease_until <= @t)
        AND e.endpoint_id NOT IN (SELECT value FROM json_each(@full))
      ORDER BY e.next_attempt_at`,
    ).iterate({ t, full: JSON.stringify(full) }) as IterableIterator<
      ClaimedEvent & { rowid: number }
    >;
    let scanned = 0;
    for (const c of candidates) {
      const left = room.get(c.endpoint_id) ?? limits.perEndpoint;
      if (left > 0) {
        const { rowid, ...event } = c;
        picked.push(event);
        rowids.push(rowid);
        room.set(c.endpoint_id, left - 1);
      }
      if (picked.length >= limits.limit || ++scanned >= MAX_CLAIM_SCAN) {
        candidates.return?.();
        break;
      }
    }
    if (picked.length === 0) return [];
    // By rowid, straight to each row: the scan already read what an attempt needs.
    prepared(
      db,
      'UPDATE events SET lease_until = @lease, updated_at = @t WHERE rowid IN (SELECT value FROM json_each(@rowids))',
    ).run({
      lease: new Date(now.getTime() + leaseMs).toISOString(),
      t,
      rowids: JSON.stringify(rowids),
    });
    return picked;
  })();
}

/** The earliest time a sendable event (see SENDABLE) becomes due or its lease ends, to sleep until then; undefined when
 *  nothing can be sent (events behind a disabled endpoint, a paused subscription or an earlier event do not count). */
export function nextEventDueAt(db: Db): string | undefined {
  return (
    (prepared(db, `SELECT min(max(e.next_attempt_at, coalesce(e.lease_until, ''))) ${SENDABLE}`)
      .pluck()
      .get() as string | null) ?? undefined
  );
}

/** Releases a lease without an attempt (e.g. the endpoint became disabled while the event waited). */
export function releaseEvent(db: Db, id: string): void {
  prepared(db, 'UPDATE events SET lease_until = NULL WHERE id = ?').run(id);
}

/** Ends the lease of every waiting event. Only for `serve` at start, under the data directory's lock (see
 *  releaseAllFeedLeases): the attempts those leases covered died with their process, so the events are sent at once. */
export function releaseAllEventLeases(db: Db): number {
  return prepared(
    db,
    `UPDATE events SET lease_until = NULL
      WHERE status IN ('pending', 'failed') AND lease_until IS NOT NULL`,
  ).run().changes;
}
