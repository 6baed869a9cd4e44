// SQL for claiming events to send: which events are sendable (per-subscription FIFO), the applications with due events
// and each one's due events (the deliverer picks among them fairly), leasing the picked ones, when the next one falls
// due, and giving leases back.
import type { Sql } from '../db/engine.ts';
import type { EventRow } from './events.ts';
import { indexedBy, jsonValues, larger } from './sql.ts';

/** What a delivery attempt needs of a claimed event: a claim reads no more (each column is a string made per event). */
export type ClaimedEvent = Pick<
  EventRow,
  'id' | 'application_id' | 'endpoint_id' | 'subscription_id' | 'attempt_count' | 'created_at'
> & { body: string };

/** A due, sendable event found by a claim, before it is leased, with its endpoint's rate limit. */
export type DueEvent = Omit<ClaimedEvent, 'body'> & { rowid: number; rate_limit: number | null };

// An event can be sent when its endpoint is active, its subscription is not paused, and no earlier event of its
// subscription is still undelivered (pending or failed): per-subscription FIFO. A dead event does not hold the line.
const SENDABLE = `
  FROM events e
  JOIN endpoints ep ON ep.id = e.endpoint_id AND ep.status = 'active'
  LEFT JOIN subscriptions s ON s.id = e.subscription_id
  WHERE e.status IN ('pending', 'failed') AND (s.id IS NULL OR s.status = 'active')
    AND (e.subscription_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM events p WHERE p.subscription_id = e.subscription_id AND p.sequence < e.sequence AND p.status IN ('pending', 'failed')))`;

/** The applications whose earliest waiting event is due at `now`, with that time. One index seek per application that
 *  has waiting events (a loose scan of events_waiting_by_application), whatever the backlog behind each. The index is
 *  pinned: events_by_application_status also starts with application_id, and its min() would walk every delivered
 *  event of the first applications to reach a waiting one. */
export async function applicationsWithDueEvents(db: Sql, now: Date): Promise<string[]> {
  return db.column<string>(
    `WITH RECURSIVE apps(id) AS (
       SELECT ${db.dialect === 'sqlite' ? "''" : `'' COLLATE "C"`}
       UNION ALL
       SELECT (SELECT min(application_id) FROM events${indexedBy(db, 'events_waiting_by_application')}
                WHERE status IN ('pending', 'failed') AND application_id > apps.id)
         FROM apps WHERE apps.id IS NOT NULL)
     SELECT id FROM apps WHERE id IS NOT NULL AND id <> ''
       AND (SELECT min(next_attempt_at) FROM events${indexedBy(db, 'events_waiting_by_application')}
             WHERE application_id = apps.id AND status IN ('pending', 'failed')) <= ?`,
    [now.toISOString()],
  );
}

/** Walks one application's due, sendable, unleased events, earliest due first, skipping endpoints in `full`, and hands
 *  each to `take` until it has taken `limit` or `maxRows` were read. Reads a page at a time along
 *  events_waiting_by_application (due time, then rowid), each page about twice what is left to take: a claim that finds
 *  its events at once reads a few rows, not `maxRows`. Returns those taken and how many rows were read. */
export async function walkDueEvents(
  db: Sql,
  applicationId: string,
  now: Date,
  opts: { full: readonly string[]; limit: number; maxRows: number; take: (e: DueEvent) => boolean },
): Promise<{ taken: DueEvent[]; read: number }> {
  const t = now.toISOString();
  const full = JSON.stringify(opts.full);
  const taken: DueEvent[] = [];
  let read = 0;
  // The first page starts before every due time ('' sorts first) and every rowid.
  let after = { at: '', rowid: 0 };
  while (taken.length < opts.limit && read < opts.maxRows) {
    const page = Math.min(
      opts.maxRows - read,
      Math.max(WALK_PAGE_MIN, 2 * (opts.limit - taken.length)),
    );
    const rows = await db.all<DueEvent & { due_at: string }>(
      `SELECT e.rowid, e.id, e.application_id, e.endpoint_id, e.subscription_id, e.attempt_count, e.created_at,
              ep.rate_limit, e.next_attempt_at AS due_at
         ${SENDABLE}
          AND e.application_id = @app AND e.next_attempt_at <= @t AND (e.lease_until IS NULL OR e.lease_until <= @t)
          AND (e.next_attempt_at, e.rowid) > (@after_at, @after_rowid)
          AND e.endpoint_id NOT IN (${jsonValues(db, '@full')})
        ORDER BY e.next_attempt_at, e.rowid LIMIT @page`,
      { app: applicationId, t, full, after_at: after.at, after_rowid: after.rowid, page },
    );
    for (const { due_at: _due, ...row } of rows) {
      read += 1;
      if (opts.take(row)) taken.push(row);
      if (taken.length >= opts.limit) break;
    }
    if (rows.length < page) break;
    const last = rows.at(-1)!;
    after = { at: last.due_at, rowid: last.rowid };
  }
  return { taken, read };
}

/** The fewest rows a page of walkDueEvents reads. */
const WALK_PAGE_MIN = 16;

/** Leases the picked events (by rowid, straight to each row) for `leaseMs`, for `node` (whose heartbeat renews them;
 *  null for a process that is not a node), and reads their bodies; `picked` in order.
 *  An event another claim took since it was read is left out: the lease is taken only where none runs and the event is
 *  still due, conditions a writer that waited on another's row lock checks again on the row as that one left it. An
 *  attempt recorded in between ends its lease, so "no lease" alone would let a second node send an event another has
 *  just delivered, or retry a failed one before its time. */
export async function leaseEvents(
  db: Sql,
  picked: readonly DueEvent[],
  now: Date,
  leaseMs: number,
  node: string | null = null,
): Promise<ClaimedEvent[]> {
  if (picked.length === 0) return [];
  const leased = new Set(
    await db.column<number>(
      `UPDATE events SET lease_until = @lease, lease_node = @node, updated_at = @t
        WHERE rowid IN (${jsonValues(db, '@rowids', 'bigint')}) AND (lease_until IS NULL OR lease_until <= @t)
          AND status IN ('pending', 'failed') AND next_attempt_at <= @t
        RETURNING rowid`,
      {
        lease: new Date(now.getTime() + leaseMs).toISOString(),
        node,
        t: now.toISOString(),
        rowids: JSON.stringify(picked.map((e) => e.rowid)),
      },
    ),
  );
  const won = leased.size === picked.length ? picked : picked.filter((e) => leased.has(e.rowid));
  if (won.length === 0) return [];
  const bodies = new Map(
    (
      await db.all<{ event_id: string; body: string }>(
        `SELECT event_id, body FROM event_bodies WHERE event_id IN (${jsonValues(db, '?')})`,
        [JSON.stringify(won.map((e) => e.id))],
      )
    ).map((row) => [row.event_id, row.body]),
  );
  return won.map(({ rowid: _r, rate_limit: _l, ...e }) => ({
    ...e,
    body: bodies.get(e.id) ?? '',
  }));
}

/** The earliest next attempt time after `now` among waiting events: when a retry falls due. An index seek; events due
 *  already but held back (by a cap, or behind an earlier event) do not count: a commit claims those once they can go. */
export async function nextWaitingEventAfter(db: Sql, now: Date): Promise<string | undefined> {
  return (
    ((await db.value(
      `SELECT min(next_attempt_at) FROM events WHERE status IN ('pending', 'failed') AND next_attempt_at > ?`,
      [now.toISOString()],
    )) as string | null) ?? undefined
  );
}

/** The earliest time a sendable event (see SENDABLE) becomes due or its lease ends, to sleep until then; undefined when
 *  nothing can be sent (events behind a disabled endpoint, a paused subscription or an earlier event do not count). */
export async function nextEventDueAt(db: Sql): Promise<string | undefined> {
  return (
    ((await db.value(
      `SELECT min(${larger(db, 'e.next_attempt_at', "coalesce(e.lease_until, '')")}) ${SENDABLE}`,
    )) as string | null) ?? undefined
  );
}

/** Releases leases without an attempt (their attempt could not be recorded, or their endpoint became inactive). */
export async function releaseEvents(db: Sql, ids: readonly string[]): Promise<void> {
  await db.run(`UPDATE events SET lease_until = NULL WHERE id IN (${jsonValues(db, '?')})`, [
    JSON.stringify(ids),
  ]);
}

/** Ends the lease of every waiting event. Only for `serve` or `poll --once` at start, under the data directory's lock
 *  (see releaseAllFeedLeases): the attempts those leases covered died with their process, so the events are sent at
 *  once. */
export async function releaseAllEventLeases(db: Sql): Promise<number> {
  return db.run(`UPDATE events SET lease_until = NULL
      WHERE status IN ('pending', 'failed') AND lease_until IS NOT NULL`);
}
