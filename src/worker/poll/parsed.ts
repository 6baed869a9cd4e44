// Recording a polled document, inside the poll transaction: its entries (actions/ingest/entries.ts, the path a pushed
// document takes too), then what only a fetch says — the feed's validators, schedule, redirects and advertised hub.
import type { Ctx } from '../../context.ts';
import { storeEntries, type Sighting } from '../../actions/ingest/entries.ts';
import type { RefreshOutcome } from '../../feed/fetch/refresh.ts';
import type { IdentityKey } from '../../feed/identity/keys.ts';
import { PARSER_VERSION } from '../../feed/parse/parse.ts';
import { nextPoll, type ScheduleLimits } from '../../feed/schedule.ts';
import { advertisedLinks, type WebSubLinks } from '../../feed/websub.ts';
import type { FeedRow } from '../../store/feeds.ts';
import { recordPollSuccess } from '../../store/feeds-record.ts';
import { feedHasActiveSubscription } from '../../store/subscriptions.ts';
import { redirectState } from './redirect-state.ts';

/** A fetched and read document. */
export type Parsed = Extract<RefreshOutcome, { kind: 'parsed' }>;
/** What storing an outcome added: new entries (none for a baseline), events queued, backfills a baseline made ready
 *  (the backfill loop queues them), and the identity the feed moved to when a churn made it switch. */
export type Stored = {
  newEntries: number;
  events: number;
  backfills?: number;
  switchedTo?: IdentityKey;
  /** The feed was deleted while it was fetched: nothing was recorded. */
  deleted?: true;
};
/** Stores a parsed document's entries (see storeEntries), then the feed's state and next poll. `feed` is the record
 *  as it is now (re-read in this transaction). */
export async function applyParsed(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Parsed,
  at: { now: Date } & Sighting,
  limits: ScheduleLimits,
): Promise<Stored> {
  const { parsed, meta } = outcome;
  // No active subscription any more (all deleted or paused while this fetch ran): nothing is sent, and the next
  // document, once a subscription is active again, is a fresh baseline.
  const live = await feedHasActiveSubscription(ctx.db, feed.id);
  const stored = await storeEntries(ctx, feed, outcome, at, live);
  const next = nextPoll(
    {
      kind: 'success',
      publishedAt: outcome.entries.publishedAt,
      ttlSeconds: parsed.ttl_seconds,
      cacheSeconds: meta.cacheSeconds,
      previousIntervalSeconds: feed.interval_seconds,
    },
    limits,
  );
  const moved = redirectState(feed, meta.permanentRedirectTo, outcome.discoveredUrl);
  await recordPollSuccess(
    ctx.db,
    feed.id,
    {
      status: stored.status,
      title: parsed.title,
      site_url: parsed.site_url,
      format: parsed.format,
      etag: meta.etag,
      last_modified: meta.lastModified,
      body_hash: outcome.bodyHash,
      last_http_status: meta.status,
      // Without a subscription the feed is not polled; due now, its fresh baseline comes as soon as one is active.
      next_poll_at: new Date(
        at.now.getTime() + (live ? next.delaySeconds : 0) * 1000,
      ).toISOString(),
      interval_seconds: next.intervalSeconds,
      ttl_seconds: parsed.ttl_seconds,
      degraded: parsed.degraded,
      hub_url: advertised(outcome).hub,
      self_url: advertised(outcome).self,
      baseline_at: live ? (feed.baseline_at ?? at.now.toISOString()) : null,
      entry_count: feed.entry_count + stored.added,
      parser_version: PARSER_VERSION,
      held_dropped:
        stored.status === 'identity_changed' ? feed.held_dropped + (stored.heldDropped ?? 0) : 0,
      ...stored.identity,
      ...moved,
    },
    at.now,
  );
  const switched = stored.identity.identity_key !== feed.identity_key;
  return {
    newEntries: stored.fresh,
    events: stored.events,
    ...(stored.backfills ? { backfills: stored.backfills } : {}),
    ...(switched ? { switchedTo: stored.identity.identity_key } : {}),
  };
}

/** The hub and self URL the document advertises: WebSub §4, the Link headers when they name a hub, else the document. */
export function advertised({ meta, parsed }: Parsed): WebSubLinks {
  return advertisedLinks(meta.linkHeader, meta.finalUrl, {
    hub: parsed.hub_url,
    self: parsed.self_url,
  });
}
