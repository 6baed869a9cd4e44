// The WebSub side of the poll flow: what a fetched feed advertises (hub, self) starts or moves its subscription, and a
// pushed document is read and stored exactly as a polled one would be (same keys, same events), only without its
// fetch state.
import { randomBytes } from 'node:crypto';
import { storeWithinBudget } from '../../actions/budget.ts';
import type { Ctx } from '../../context.ts';
import type { FetchMeta } from '../../feed/fetch/fetch.ts';
import { EntryList } from '../../feed/entry-list.ts';
import { refreshTarget } from '../../feed/fetch/refresh.ts';
import type { DocumentReply, DocumentRequest } from '../../feed/parse/read-document.ts';
import {
  advertisedLinks,
  CALLBACK_TOKEN_BYTES,
  hubGetsSecret,
  SECRET_BYTES,
  webSubTarget,
} from '../../feed/websub.ts';
import type { Logger } from '../../log.ts';
import { getFeed, type FeedRow } from '../../store/feeds.ts';
import { recordPushedDocument } from '../../store/feeds-push.ts';
import { feedHasActiveSubscription } from '../../store/subscriptions.ts';
import { getWebSub, startWebSub, updateWebSub } from '../../store/websub-subscriptions.ts';
import type { HistoryVia } from '../../store/entry-history.ts';
import { storeEntries, type Stored } from '../poll/parsed.ts';
import type { Parsed } from '../../actions/ingest/keys.ts';

/** What reading a pushed body needs: the parse pool (or readDocument inline), within a deadline. */
export type PushDeps = {
  read: (doc: DocumentRequest, deadline: number) => Promise<DocumentReply>;
  /** A pushed document is read within this (poll.timeout_seconds). */
  timeoutMs: number;
  logger: Logger;
};
/** What became of a verified push. */
export type PushResult =
  { kind: 'stored'; newEntries: number; events: number } | { kind: 'ignored'; reason: string };

/** Inside the poll transaction, after a parsed document is stored: when server.public_url is set and the feed is
 *  subscribed to, a hub it advertises gets a subscription (a new hub or topic: a new one, with a new secret, none for a
 *  plain-http hub); a hub no longer advertised makes the WebSub loop look now (and unsubscribe). */
export function noteWebSub(ctx: Ctx, feedId: string, outcome: Parsed, now: Date): void {
  if (ctx.config.server.public_url === '') return;
  const { meta, parsed } = outcome;
  const found = webSubTarget(
    advertisedLinks(meta.linkHeader, meta.finalUrl, { hub: parsed.hub_url, self: parsed.self_url }),
    meta.finalUrl,
  );
  const row = getWebSub(ctx.db, feedId);
  if (found === null) {
    if (row !== undefined && row.status !== 'unsubscribing')
      updateWebSub(ctx.db, feedId, { next_action_at: now.toISOString() }, now);
    return;
  }
  if (row !== undefined && row.hub_url === found.hub && row.topic_url === found.topic) return;
  if (!feedHasActiveSubscription(ctx.db, feedId)) return;
  const secret = hubGetsSecret(found.hub) ? randomBytes(SECRET_BYTES).toString('hex') : null;
  const token = randomBytes(CALLBACK_TOKEN_BYTES).toString('base64url');
  startWebSub(ctx.db, { feedId, hub: found.hub, topic: found.topic, secret, token }, now);
}

/** Reads a pushed body (verified by its signature) as the feed's document and stores its entries in one transaction,
 *  through the poll's storeEntries with `via` 'push'. A feed awaiting its baseline, or with no active subscription,
 *  takes nothing from a push: its next poll decides. Never throws for a bad body: it is 'ignored' with the reason. */
export async function receivePush(
  ctx: Ctx,
  deps: PushDeps,
  push: { feedId: string; body: Uint8Array; contentType: string | null },
): Promise<PushResult> {
  const feed = getFeed(ctx.db, push.feedId);
  if (feed === undefined) return { kind: 'ignored', reason: 'unknown feed' };
  const seenAt = ctx.clock.now();
  const target = refreshTarget(feed);
  const reply = await deps.read(
    {
      bytes: push.body,
      contentType: push.contentType,
      mode: 'feed',
      parse: { baseUrl: feed.fetch_url, contentLocation: null },
      keyBase: target.keyBase,
    },
    performance.now() + deps.timeoutMs,
  );
  if (reply.kind !== 'feed')
    return { kind: 'ignored', reason: reply.kind === 'error' ? reply.message : 'not a feed' };
  const outcome: Parsed = {
    kind: 'parsed',
    meta: pushMeta(feed, push.contentType),
    bodyHash: '',
    parsed: reply.parsed,
    entries: new EntryList(reply.entries, reply.publishedAt),
    identities: reply.identities,
    contentHashes: reply.contentHashes,
    base: { keyBase: target.keyBase, documentUrl: feed.fetch_url },
    discoveredUrl: feed.discovered_url,
  };
  const stored = ctx.db
    .transaction(() => applyPushed(ctx, push.feedId, outcome, seenAt))
    .immediate();
  if (stored === undefined)
    return {
      kind: 'ignored',
      reason: 'feed awaiting its baseline, or without room in its storage budget',
    };
  if (stored.events > 0) ctx.nudgeDeliverer();
  return { kind: 'stored', newEntries: stored.newEntries, events: stored.events };
}

/** Stores a pushed document's entries for the feed as re-read in this transaction, and notes the push; undefined when
 *  the feed is gone, awaits its baseline, has no active subscription, or is held for its application's storage budget
 *  or would be taken past it (the next poll holds it, or reads the document whole once there is room). */
export function applyPushed(
  ctx: Ctx,
  feedId: string,
  outcome: Parsed,
  seenAt: Date,
  via: HistoryVia = 'push',
): Stored | undefined {
  const feed = getFeed(ctx.db, feedId);
  const now = ctx.clock.now();
  updateWebSub(ctx.db, feedId, { last_push_at: now.toISOString() }, now);
  if (feed === undefined || feed.baseline_at === null) return undefined;
  if (!feedHasActiveSubscription(ctx.db, feedId) || feed.budget_held_at !== null) return undefined;
  const r = storeWithinBudget(ctx, feed, () =>
    storeEntries(ctx, feed, outcome, { seenAt, via }, true),
  );
  if (r === 'over') return undefined;
  // Only the hold decides between active and identity_changed; a poll's error or pending status is the poll's.
  const status =
    r.status === 'identity_changed'
      ? 'identity_changed'
      : feed.status === 'identity_changed'
        ? 'active'
        : feed.status;
  recordPushedDocument(
    ctx.db,
    feedId,
    {
      status,
      entry_count: feed.entry_count + r.added,
      held_dropped: r.status === 'identity_changed' ? feed.held_dropped + (r.heldDropped ?? 0) : 0,
      ...r.identity,
    },
    now,
  );
  return { newEntries: r.fresh, events: r.events };
}

/** A pushed document's stand-in for the fetch metadata the poll path reads. */
function pushMeta(feed: FeedRow, contentType: string | null): FetchMeta {
  return {
    status: 200,
    finalUrl: feed.fetch_url,
    permanentRedirectTo: null,
    etag: null,
    lastModified: null,
    contentType,
    contentLocation: null,
    cacheSeconds: null,
    durationMs: 0,
  };
}
