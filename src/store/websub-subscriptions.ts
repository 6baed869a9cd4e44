// SQL for websub_subscriptions: each feed's subscription at its WebSub hub, its pending request, lease and schedule.
import type { Db } from '../db/open.ts';
import { prepared, updateRow } from './sql.ts';

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
export function getWebSub(db: Db, feedId: string): WebSubRow | undefined {
  return prepared(db, 'SELECT * FROM websub_subscriptions WHERE feed_id = ?').get(feedId) as
    WebSubRow | undefined;
}

/** Starts a subscription of the feed to `hub` for `topic` with a new secret (null for a plain-http hub) and callback
 *  token, due now; replaces one for another hub or topic (its callbacks stop answering). */
export function startWebSub(
  db: Db,
  r: { feedId: string; hub: string; topic: string; secret: string | null; token: string },
  now: Date,
): void {
  const t = now.toISOString();
  prepared(
    db,
    `INSERT INTO websub_subscriptions (feed_id, hub_url, topic_url, secret, callback_token, status, pending,
       next_action_at, created_at, updated_at)
     VALUES (@feedId, @hub, @topic, @secret, @token, 'subscribing', 'subscribe', @t, @t, @t)
     ON CONFLICT (feed_id) DO UPDATE SET hub_url = @hub, topic_url = @topic, secret = @secret, callback_token = @token,
       previous_token = NULL, status = 'subscribing', pending = 'subscribe', lease_expires_at = NULL,
       next_action_at = @t, attempts = 0, last_error = NULL, updated_at = @t`,
  ).run({ ...r, t });
}

/** Sets `patch` on the feed's subscription; returns whether it exists. */
export function updateWebSub(db: Db, feedId: string, patch: WebSubPatch, now: Date): boolean {
  return updateRow(db, 'websub_subscriptions', patch, { feed_id: feedId }, now) > 0;
}

/** Forgets the feed's subscription (the hub confirmed the unsubscription, or we gave up telling it). */
export function deleteWebSub(db: Db, feedId: string): void {
  prepared(db, 'DELETE FROM websub_subscriptions WHERE feed_id = ?').run(feedId);
}

/** Up to `limit` subscriptions whose next action is due, earliest first. */
export function dueWebSubs(db: Db, now: Date, limit: number): WebSubRow[] {
  return prepared(
    db,
    'SELECT * FROM websub_subscriptions WHERE next_action_at <= ? ORDER BY next_action_at LIMIT ?',
  ).all(now.toISOString(), limit) as WebSubRow[];
}

/** The feed's last active subscription went away: its WebSub subscription is looked at now (and unsubscribed). */
export function webSubFeedIdle(db: Db, feedId: string, now: Date): void {
  const t = now.toISOString();
  prepared(
    db,
    `UPDATE websub_subscriptions SET next_action_at = min(next_action_at, @t), updated_at = @t
     WHERE feed_id = @id
       AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = @id AND s.status = 'active')`,
  ).run({ id: feedId, t });
}

/** Whether the feed's content arrives by push now: a verified subscription whose lease has not ended. */
export function isPushHealthy(db: Db, feedId: string, now: Date): boolean {
  return (
    prepared(
      db,
      `SELECT 1 FROM websub_subscriptions
       WHERE feed_id = ? AND status = 'active' AND lease_expires_at > ?`,
    ).get(feedId, now.toISOString()) !== undefined
  );
}
