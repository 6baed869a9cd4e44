// SQL for feeds written by the WebSub path: a pushed document's state, and the poll pulled forward when push stops.
import type { Sql } from '../db/engine.ts';
import { storeFeedProbe, type FeedRow } from './feeds.ts';
import { pollAgainBy } from './feed-leases.ts';
import { smaller, updateRow } from './sql.ts';

/** What a pushed document changes on its feed: entry count, identity and hold state. The fetch state (validators,
 *  body hash, schedule, health) stays the poll's: a push says nothing about whether the feed URL answers. */
export type PushedFeedState = Pick<
  FeedRow,
  'status' | 'entry_count' | 'identity_key' | 'identity_rotations' | 'held_dropped'
> & { identity_probe?: string };

/** Records a pushed document's state on its feed (a new identity probe apart from the row: feeds.ts). */
export async function recordPushedDocument(
  db: Sql,
  id: string,
  state: PushedFeedState,
  now: Date,
): Promise<void> {
  await updateRow(db, 'feeds', await storeFeedProbe(db, id, state), { id }, now);
}

/** Push stopped carrying the feed (a failed hub, a denial, an unsubscription): it is polled by `at` at the latest
 *  (a poll running now keeps that too), and the slow interval push allowed is forgotten, so its polls are back on the
 *  normal schedule (a 304 keeps the remembered interval). */
export async function pollFeedBy(db: Sql, id: string, at: Date): Promise<void> {
  const t = at.toISOString();
  await db.run(
    `UPDATE feeds SET next_poll_at = ${smaller(db, 'next_poll_at', '@t')}, interval_seconds = NULL WHERE id = @id`,
    {
      id,
      t,
    },
  );
  await pollAgainBy(db, id, t);
}

/** A push announced a change without content we could take: the feed is polled by `at` at the latest (a poll running
 *  now is followed by another by then), keeping the interval push allows. */
export async function pollPushedFeedBy(db: Sql, id: string, at: Date): Promise<void> {
  const t = at.toISOString();
  await db.run(
    `UPDATE feeds SET next_poll_at = ${smaller(db, 'next_poll_at', '@t')} WHERE id = @id`,
    {
      id,
      t,
    },
  );
  await pollAgainBy(db, id, t);
}
