// SQL for websub_subscriptions: each feed's subscription at its WebSub hub, its pending request, lease and schedule.
import type { Sql } from '../db/engine.ts';
import { smaller, updateRow } from './sql.ts';

export type WebSubStatus =
  'subscribing' | 'active' | 'expired' | 'denied' | 'failed' | 'unsubscribing';
export type WebSubRow = {
  feed_id: string;
  hub_url: string;
  topic_url: string;
  /** hub.secret; null for a plain-http hub, which is never sent one. */
  secret: string | null;
  /** The token of the callback named by the latest request. */
  callback_token: string;
  /** The token of the verified callback a pending renewal replaces; it takes pushes until the renewal is verified. */
  previous_token: string | null;
  status: WebSubStatus;
  pending: 'subscribe' | 'unsubscribe' | null;
  lease_expires_at: string | null;
  next_action_at: string;
  attempts: number;
  last_push_at: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
};
type WebSubPatch = Partial<Omit<WebSubRow, 'feed_id' | 'created_at' | 'updated_at'>>;

/** The feed's WebSub subscription, if any. */
export async function getWebSub(db: Sql, feedId: string): Promise<WebSubRow | undefined> {
  return db.get<WebSubRow>('SELECT * FROM websub_subscriptions WHERE feed_id = ?', [feedId]);
}

/** Starts a subscription of the feed to `hub` for `topic` with a new secret (null for a plain-http hub) and callback
 *  token, due now; replaces one for another hub or topic (its callbacks stop answering). */
export async function startWebSub(
  db: Sql,
  r: { feedId: string; hub: string; topic: string; secret: string | null; token: string },
  now: Date,
): Promise<void> {
  const t = now.toISOString();
  await db.run(
    `INSERT INTO websub_subscriptions (feed_id, hub_url, topic_url, secret, callback_token, status, pending,
       next_action_at, created_at, updated_at)
     VALUES (@feedId, @hub, @topic, @secret, @token, 'subscribing', 'subscribe', @t, @t, @t)
     ON CONFLICT (feed_id) DO UPDATE SET hub_url = @hub, topic_url = @topic, secret = @secret, callback_token = @token,
       previous_token = NULL, status = 'subscribing', pending = 'subscribe', lease_expires_at = NULL,
       next_action_at = @t, attempts = 0, last_error = NULL, updated_at = @t`,
    { ...r, t },
  );
}

/** Sets `patch` on the feed's subscription; returns whether it exists. */
export async function updateWebSub(
  db: Sql,
  feedId: string,
  patch: WebSubPatch,
  now: Date,
): Promise<boolean> {
  return (await updateRow(db, 'websub_subscriptions', patch, { feed_id: feedId }, now)) > 0;
}

/** Forgets the feed's subscription (the hub confirmed the unsubscription, or we gave up telling it). */
export async function deleteWebSub(db: Sql, feedId: string): Promise<void> {
  await db.run('DELETE FROM websub_subscriptions WHERE feed_id = ?', [feedId]);
}

/** Up to `limit` subscriptions whose next action is due, earliest first. */
export async function dueWebSubs(db: Sql, now: Date, limit: number): Promise<WebSubRow[]> {
  return db.all<WebSubRow>(
    'SELECT * FROM websub_subscriptions WHERE next_action_at <= ? ORDER BY next_action_at LIMIT ?',
    [now.toISOString(), limit],
  );
}

/** The feed's last active subscription went away: its WebSub subscription is looked at now (and unsubscribed). */
export async function webSubFeedIdle(db: Sql, feedId: string, now: Date): Promise<void> {
  const t = now.toISOString();
  await db.run(
    `UPDATE websub_subscriptions SET next_action_at = ${smaller(db, 'next_action_at', '@t')}, updated_at = @t
     WHERE feed_id = @id
       AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = @id AND s.status = 'active')`,
    { id: feedId, t },
  );
}

/** Whether the feed's content arrives by push now: a verified subscription whose lease has not ended. */
export async function isPushHealthy(db: Sql, feedId: string, now: Date): Promise<boolean> {
  return (
    (await db.get(
      `SELECT 1 FROM websub_subscriptions
       WHERE feed_id = ? AND status = 'active' AND lease_expires_at > ?`,
      [feedId, now.toISOString()],
    )) !== undefined
  );
}
