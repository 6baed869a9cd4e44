// SQL for feed_leases: the polls in flight, each feed until its lease ends (the poll's deadline plus a margin), and the
// poll asked for by a time while one runs. Claiming and releasing leases in bulk is the poll claim's (feeds-poll.ts).
import type { Sql } from '../db/engine.ts';
import { smaller } from './sql.ts';

/** No live lease holds feed `f` at @t (a feed_leases seek by its key): the poll claim's and parkIdleDueFeeds' (feeds.ts). */
export const UNLEASED =
  'NOT EXISTS (SELECT 1 FROM feed_leases l WHERE l.feed_id = f.id AND l.until > @t)';

/** Ends the lease of a feed whose poll is recorded (feeds-record.ts), after the record set the next poll: a poll asked
 *  for by a time while this one ran (pollAgainBy) comes by that time. */
export async function endLease(db: Sql, id: string): Promise<void> {
  const again = (await db.value('DELETE FROM feed_leases WHERE feed_id = ? RETURNING again_at', [
    id,
  ])) as string | null | undefined;
  if (again)
    await db.run(
      `UPDATE feeds SET next_poll_at = ${smaller(db, 'next_poll_at', '?')} WHERE id = ?`,
      [again, id],
    );
}

/** Someone asked for the feed to be polled by `t` (a refresh, push stopping): when a poll of it is running, its lease
 *  notes the earliest such time, since the poll may have fetched before the ask and its record sets the next poll from
 *  its own answer. Nothing when no poll runs. */
export async function pollAgainBy(db: Sql, id: string, t: string): Promise<void> {
  await db.run(
    `UPDATE feed_leases SET again_at = ${smaller(db, 'coalesce(again_at, @t)', '@t')} WHERE feed_id = @id`,
    { id, t },
  );
}
