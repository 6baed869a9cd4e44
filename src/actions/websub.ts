// WebSub callbacks as use-cases: answering a hub's verification of intent or denial (WebSub §5.2, §5.3), finding the
// subscription a content delivery (§7) is for, a push taken only as a sign of change (the feed is polled), and the
// feed's push state as the API shows it.
import { transaction, type Ctx } from '../context.ts';
import { decideHubQuery, renewalAt, tokenMatches, type HubQuery } from '../feed/websub.ts';
import { getFeed, type FeedRow } from '../store/feeds.ts';
import { pollFeedBy, pollPushedFeedBy } from '../store/feeds-push.ts';
import {
  deleteWebSub,
  getWebSub,
  updateWebSub,
  type WebSubRow,
} from '../store/websub-subscriptions.ts';

/** The push state of a feed in the API: its hub, where its subscription stands, its lease, the last delivery. */
export type PushView = {
  hub: string | null;
  status: 'none' | WebSubRow['status'];
  lease_expires_at: string | null;
  last_push_at: string | null;
};
/** A callback URL's subscription, and whether the URL names its latest request or the verified callback a pending
 *  renewal replaces. */
export type Callback = { row: WebSubRow; latest: boolean };

/** A denied subscription (§5.2) is asked again after a day: a hub may deny for a while (quota, maintenance). */
const DENIED_RETRY_MS = 86_400_000;
const FEED_ID = /^[0-9a-f]{24}$/;

/** The subscription a callback URL names (its latest token, or the one a pending renewal replaces); undefined for
 *  anything else, never telling an unknown feed from a wrong token. */
export async function findCallback(
  ctx: Ctx,
  feedId: string,
  token: string,
): Promise<Callback | undefined> {
  if (!FEED_ID.test(feedId)) return undefined;
  const row = await getWebSub(ctx.db, feedId);
  if (row === undefined) return undefined;
  if (tokenMatches(token, row.callback_token)) return { row, latest: true };
  if (tokenMatches(token, row.previous_token)) return { row, latest: false };
  return undefined;
}

/** The subscription a content delivery (§7) to this callback is taken for: one the hub verified and whose lease runs
 *  (on its verified callback: the latest token, or the one a renewal replaces until the renewal is verified);
 *  undefined for every other callback — unknown, replaced, denied, lapsed, unsubscribed — which answers 410 Gone
 *  (§7: the hub may end the subscription). */
export async function pushTarget(
  ctx: Ctx,
  feedId: string,
  token: string,
): Promise<WebSubRow | undefined> {
  const found = await findCallback(ctx, feedId, token);
  if (found === undefined || found.row.status !== 'active') return undefined;
  const verified = found.row.previous_token === null ? found.latest : !found.latest;
  return verified ? found.row : undefined;
}

/** A hub's GET to the callback: the challenge to echo (2xx) when it verifies the request awaiting verification at this
 *  callback, '' for a denial taken, undefined for 404 (§5.3.1: anything we did not ask for). A verified subscribe
 *  starts the lease (renewed at 80 %) and retires the callback it renews; a verified unsubscribe forgets the
 *  subscription; a denial (§5.2: at any time, even of a verified subscription) stops push. Push stopping makes the
 *  feed due now and wakes the poller. */
export async function answerHub(
  ctx: Ctx,
  feedId: string,
  token: string,
  query: HubQuery,
): Promise<string | undefined> {
  const answer = await transaction(ctx, async (tx) => {
    const found = await findCallback(tx, feedId, token);
    if (found === undefined) return undefined;
    const { row } = found;
    const decision = decideHubQuery(
      {
        topic: row.topic_url,
        pending: found.latest ? row.pending : null,
        askedLeaseSeconds: tx.config.poll.push_lease_seconds,
      },
      query,
    );
    const now = tx.clock.now();
    switch (decision.kind) {
      case 'refuse':
        return undefined;
      case 'denied':
        return { text: '', pushStopped: await deny(tx, row, decision.reason, now) };
      case 'confirm':
        if (decision.mode === 'unsubscribe') await deleteWebSub(tx.db, feedId);
        else await confirmLease(tx, feedId, decision.leaseSeconds ?? 0, now);
        return { text: decision.challenge, pushStopped: false };
    }
  });
  if (answer?.pushStopped) ctx.nudgePoller();
  return answer?.text;
}

/** The hub denied the subscription: push stops (the feed is due now) and it is asked again a day later; a denial of
 *  our unsubscription leaves nothing to unsubscribe. Returns whether push stopped. */
async function deny(ctx: Ctx, row: WebSubRow, reason: string | null, now: Date): Promise<boolean> {
  if (row.status === 'unsubscribing') {
    await deleteWebSub(ctx.db, row.feed_id);
    return false;
  }
  await updateWebSub(
    ctx.db,
    row.feed_id,
    {
      status: 'denied',
      pending: null,
      previous_token: null,
      lease_expires_at: null,
      last_error: `websub: the hub denied the subscription${reason ? `: ${reason}` : ''}`,
      next_action_at: new Date(now.getTime() + DENIED_RETRY_MS).toISOString(),
    },
    now,
  );
  if ((await getFeed(ctx.db, row.feed_id)) === undefined) return false;
  await pollFeedBy(ctx.db, row.feed_id, now);
  return true;
}

/** The hub verified our subscribe for `leaseSeconds`: push is on until then, renewed at 80 % of it; the callback a
 *  renewal replaced is retired (a push to it now answers 410). */
async function confirmLease(
  ctx: Ctx,
  feedId: string,
  leaseSeconds: number,
  now: Date,
): Promise<void> {
  await updateWebSub(
    ctx.db,
    feedId,
    {
      status: 'active',
      pending: null,
      previous_token: null,
      lease_expires_at: new Date(now.getTime() + leaseSeconds * 1000).toISOString(),
      next_action_at: renewalAt(now, leaseSeconds).toISOString(),
      attempts: 0,
      last_error: null,
    },
    now,
  );
}

/** A push that is taken only as a sign that the feed changed (unsigned from a plain-http hub, or too large or too slow
 *  to read): the feed is polled now, or poll.min_interval_seconds after its last poll if that is later, whoever
 *  pushes; the poller is woken. */
export async function pollPushedFeed(ctx: Ctx, feedId: string): Promise<void> {
  const now = ctx.clock.now();
  await transaction(ctx, async (tx) => {
    const feed = await getFeed(tx.db, feedId);
    if (feed === undefined) return;
    const ready =
      feed.last_polled_at === null
        ? now.getTime()
        : Date.parse(feed.last_polled_at) + tx.config.poll.min_interval_seconds * 1000;
    await pollPushedFeedBy(tx.db, feedId, new Date(Math.max(now.getTime(), ready)));
  });
  ctx.nudgePoller();
}

/** The feed's push state for the API: 'none' without a subscription (no hub, or server.public_url unset). */
export async function pushView(ctx: Ctx, feed: Pick<FeedRow, 'id' | 'hub_url'>): Promise<PushView> {
  const row = await getWebSub(ctx.db, feed.id);
  return {
    hub: row?.hub_url ?? feed.hub_url,
    status: row?.status ?? 'none',
    lease_expires_at: row?.lease_expires_at ?? null,
    last_push_at: row?.last_push_at ?? null,
  };
}
