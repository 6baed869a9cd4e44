// A feed's advertised WebSub hub, noted from each polled document inside the poll transaction: a hub starts (or moves)
// the feed's subscription at it, and a hub no longer advertised has the WebSub loop unsubscribe.
import { randomBytes } from 'node:crypto';
import type { Ctx } from '../../context.ts';
import {
  CALLBACK_TOKEN_BYTES,
  hubGetsSecret,
  SECRET_BYTES,
  webSubTarget,
  type WebSubLinks,
} from '../../feed/websub.ts';
import { feedHasActiveSubscription } from '../../store/subscriptions.ts';
import { getWebSub, startWebSub, updateWebSub } from '../../store/websub-subscriptions.ts';

/** Inside the poll transaction, after a parsed document is stored: when server.public_url is set and the feed is
 *  subscribed to, the hub the document advertised (`links`, WebSub §4; the topic is its self URL, else `fetchedUrl`)
 *  gets a subscription (a new hub or topic: a new one, with a new secret, none for a plain-http hub); a hub no longer
 *  advertised makes the WebSub loop look now (and unsubscribe). */
export async function noteWebSub(
  ctx: Ctx,
  feedId: string,
  advertised: { links: WebSubLinks; fetchedUrl: string },
  now: Date,
): Promise<void> {
  if (ctx.config.server.public_url === '') return;
  const found = webSubTarget(advertised.links, advertised.fetchedUrl);
  const row = await getWebSub(ctx.db, feedId);
  if (found === null) {
    if (row !== undefined && row.status !== 'unsubscribing')
      await updateWebSub(ctx.db, feedId, { next_action_at: now.toISOString() }, now);
    return;
  }
  if (row !== undefined && row.hub_url === found.hub && row.topic_url === found.topic) return;
  if (!(await feedHasActiveSubscription(ctx.db, feedId))) return;
  const secret = hubGetsSecret(found.hub) ? randomBytes(SECRET_BYTES).toString('hex') : null;
  const token = randomBytes(CALLBACK_TOKEN_BYTES).toString('base64url');
  await startWebSub(ctx.db, { feedId, hub: found.hub, topic: found.topic, secret, token }, now);
}
