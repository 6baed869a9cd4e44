// WebSub callbacks as use-cases: answering a hub's verification of intent or denial (WebSub §5.2, §5.3), finding the
// subscription a content delivery (§7) is for, and the feed's push state as the API shows it.
import type { Ctx } from '../context.ts';
import { decideHubQuery, renewalAt, tokenMatches, type HubQuery } from '../feed/websub.ts';
import type { FeedRow } from '../store/feeds.ts';
import { pollFeedBy } from '../store/feeds-push.ts';
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

/** A denied subscription (§5.2) is asked again after a day: a hub may deny for a while (quota, maintenance). */
const DENIED_RETRY_MS = 86_400_000;
const FEED_ID = /^[0-9a-f]{24}$/;

/** The subscription a callback URL names, when its token is right; undefined otherwise (the caller answers 404 either
 *  way, never telling an unknown feed from a wrong token). */
export function callbackSubscription(
  ctx: Ctx,
  feedId: string,
  token: string,
): WebSubRow | undefined {
  if (!FEED_ID.test(feedId)) return undefined;
  const row = getWebSub(ctx.db, feedId);
  return row !== undefined && tokenMatches(token, row.secret, feedId) ? row : undefined;
}

/** A hub's GET to the callback: the challenge to echo (2xx) when it verifies the request we are waiting on, '' for a
 *  denial taken, undefined for 404 (§5.3.1: anything we did not ask for). A verified subscribe starts the lease (renewed
 *  at 80 %); a verified unsubscribe forgets the subscription; a denial stops push. Push stopping puts the feed back on
 *  its normal poll schedule now. */
export function answerHub(
  ctx: Ctx,
  feedId: string,
  token: string,
  query: HubQuery,
): string | undefined {
  return ctx.db
    .transaction(() => {
      const row = callbackSubscription(ctx, feedId, token);
      if (row === undefined) return undefined;
      const pending = row.pending === null ? null : { mode: row.pending, topic: row.topic_url };
      const decision = decideHubQuery(pending, query);
      const now = ctx.clock.now();
      switch (decision.kind) {
        case 'refuse':
          return undefined;
        case 'denied':
          updateWebSub(
            ctx.db,
            feedId,
            {
              status: 'denied',
              pending: null,
              lease_expires_at: null,
              last_error: `websub: the hub denied the subscription${decision.reason ? `: ${decision.reason}` : ''}`,
              next_action_at: new Date(now.getTime() + DENIED_RETRY_MS).toISOString(),
            },
            now,
          );
          pollFeedBy(ctx.db, feedId, now);
          return '';
        case 'confirm':
          if (decision.mode === 'unsubscribe') deleteWebSub(ctx.db, feedId);
          else confirmLease(ctx, feedId, decision.leaseSeconds ?? 0, now);
          return decision.challenge;
      }
    })
    .immediate();
}

/** The hub verified our subscribe for `leaseSeconds`: push is on until then, renewed at 80 % of it. */
function confirmLease(ctx: Ctx, feedId: string, leaseSeconds: number, now: Date): void {
  updateWebSub(
    ctx.db,
    feedId,
    {
      status: 'active',
      pending: null,
      lease_expires_at: new Date(now.getTime() + leaseSeconds * 1000).toISOString(),
      next_action_at: renewalAt(now, leaseSeconds).toISOString(),
      attempts: 0,
      last_error: null,
    },
    now,
  );
}

/** The feed's push state for the API: 'none' without a subscription (no hub, or server.public_url unset). */
export function pushView(ctx: Ctx, feed: Pick<FeedRow, 'id' | 'hub_url'>): PushView {
  const row = getWebSub(ctx.db, feed.id);
  return {
    hub: row?.hub_url ?? feed.hub_url,
    status: row?.status ?? 'none',
    lease_expires_at: row?.lease_expires_at ?? null,
    last_push_at: row?.last_push_at ?? null,
  };
}
