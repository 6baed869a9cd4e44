// Subscription use-cases shared by the API, the dashboard and the CLI.
import * as v from 'valibot';
import { ApiError, conflict, invalid } from '../errors.ts';
import { newId } from '../ids.ts';
import { minify, RawJson } from '../rawjson.ts';
import { getEndpoint, type EndpointRow } from '../store/endpoints.ts';
import { deleteSubscriptionEvents, hasMoreEventsThan } from '../store/events.ts';
import { getFeed, markFeedUnused, restartBaselineIfIdle, upsertFeed } from '../store/feeds.ts';
import { webSubFeedIdle } from '../store/websub-subscriptions.ts';
import type { Page, PageQuery } from '../store/page.ts';
import {
  deleteSubscription,
  findSubscriptionToSameFeed,
  getSubscription,
  insertSubscription,
  listSubscriptions,
  updateSubscription,
  type SubscriptionView,
} from '../store/subscriptions.ts';
import type { Ctx } from '../context.ts';
import { EVENT_CHUNK, nextTurn } from './chunks.ts';
import { chargeNewFeedUrl, checkSubscriptionQuota } from './quotas.ts';
import { normalizeFeedUrl, privateHostIssue } from './urls.ts';
import { HttpUrl, IdString, validate } from './validate.ts';

export const METADATA_MAX_BYTES = 16 * 1024;

export type SubscriptionApiView = {
  id: string;
  application: string;
  url: string;
  feed: string;
  endpoint: string;
  metadata: RawJson | null;
  status: 'active' | 'paused';
  feed_url: string;
  feed_status: string;
  created_at: string;
  updated_at: string;
};

const Metadata = v.nullable(
  v.custom<Record<string, unknown>>(
    (m) => typeof m === 'object' && m !== null && !Array.isArray(m),
    'must be a JSON object',
  ),
  undefined,
);

export const CreateSubscriptionInput = v.strictObject({
  endpoint: IdString,
  url: HttpUrl,
  metadata: v.optional(Metadata),
});
export const UpdateSubscriptionInput = v.strictObject({
  endpoint: v.optional(IdString),
  metadata: v.optional(Metadata),
  status: v.optional(v.picklist(['active', 'paused'], 'must be "active" or "paused"')),
});

/** `raw.metadata` is the client's JSON text of the metadata member, kept byte for byte (whitespace aside). */
export type RawParts = { metadata?: string | undefined };

/** The API view; metadata is the stored JSON text, written back exactly. */
export function subscriptionView(row: SubscriptionView): SubscriptionApiView {
  return {
    id: row.id,
    application: row.application_id,
    url: row.url,
    feed: row.feed_id,
    endpoint: row.endpoint_id,
    metadata: row.metadata === null ? null : new RawJson(row.metadata),
    status: row.status,
    feed_url: row.feed_discovered_url ?? row.feed_fetch_url,
    feed_status: row.feed_status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Creates a subscription (sharing the feed record of the same normalized URL) and wakes the poller.
 *  404 for an endpoint that is not the application's; 409 with the existing id when the endpoint already receives
 *  this feed (the same URL, or a web page and the feed it announces; see findSubscriptionToSameFeed); 429 past the
 *  application's subscriptions or new feed URLs per hour. */
export function createSubscription(
  ctx: Ctx,
  applicationId: string,
  input: unknown,
  raw: RawParts = {},
): SubscriptionApiView {
  const body = validate(CreateSubscriptionInput, input);
  const metadata = metadataText(body.metadata, raw.metadata);
  const target = normalizeFeedUrl(body.url);
  const issue = privateHostIssue('url', target.url, ctx.config.network.allow_private);
  if (issue) throw invalid([issue]);
  const now = ctx.clock.now();
  const id = ctx.db.transaction(() => {
    requireOwnEndpoint(ctx, applicationId, body.endpoint);
    const existing = findSubscriptionToSameFeed(
      ctx.db,
      body.endpoint,
      target.url,
      target.credentialKey,
    );
    if (existing)
      throw conflict(
        'A subscription of this endpoint to this feed URL already exists (a web page and the feed it announces count as one feed).',
        { existing_id: existing },
      );
    checkSubscriptionQuota(ctx, applicationId);
    const feed = upsertFeed(ctx.db, target.url, target.credentials, target.credentialKey, now);
    chargeNewFeedUrl(ctx, applicationId, feed.id, now);
    const sid = newId(now);
    insertSubscription(ctx.db, {
      id: sid,
      application_id: applicationId,
      endpoint_id: body.endpoint,
      feed_id: feed.id,
      url: target.url,
      metadata,
      created_at: now.toISOString(),
    });
    return sid;
  })();
  ctx.nudgePoller();
  return subscriptionView(getSubscription(ctx.db, applicationId, id)!);
}

/** The application's subscription; 404 when unknown or another application's. */
export function requireSubscription(ctx: Ctx, applicationId: string, id: string): SubscriptionView {
  const row = getSubscription(ctx.db, applicationId, id);
  if (!row) throw new ApiError(404, 'Not found', 'Subscription not found.');
  return row;
}

/** One page of subscriptions, newest first, optionally of one endpoint. */
export function listSubscriptionViews(
  ctx: Ctx,
  applicationId: string,
  q: PageQuery & { endpoint?: string | undefined },
): Page<SubscriptionApiView> {
  const page = listSubscriptions(ctx.db, applicationId, q);
  return { data: page.data.map(subscriptionView), next: page.next };
}

/** Changes metadata (null clears it), endpoint (another of the application's) or status (pause/resume). Pausing the
 *  feed's last active subscription restarts its baseline: entries seen while nothing was active are never sent. */
export function updateSubscriptionFromInput(
  ctx: Ctx,
  applicationId: string,
  id: string,
  input: unknown,
  raw: RawParts = {},
): SubscriptionApiView {
  const body = validate(UpdateSubscriptionInput, input);
  const patch: Parameters<typeof updateSubscription>[3] = {};
  if (body.metadata !== undefined) patch.metadata = metadataText(body.metadata, raw.metadata);
  if (body.status !== undefined) patch.status = body.status;
  const row = ctx.db.transaction(() => {
    const current = requireSubscription(ctx, applicationId, id);
    if (body.endpoint !== undefined && body.endpoint !== current.endpoint_id) {
      requireOwnEndpoint(ctx, applicationId, body.endpoint);
      const ck = getFeed(ctx.db, current.feed_id)?.credential_key ?? '';
      const existing = findSubscriptionToSameFeed(ctx.db, body.endpoint, current.url, ck);
      if (existing)
        throw conflict('That endpoint already has a subscription to this feed URL.', {
          existing_id: existing,
        });
      patch.endpoint_id = body.endpoint;
    }
    const now = ctx.clock.now();
    const row = updateSubscription(ctx.db, applicationId, id, patch, now)!;
    if (patch.status === 'paused') {
      restartBaselineIfIdle(ctx.db, current.feed_id, now);
      webSubFeedIdle(ctx.db, current.feed_id, now); // WebSub: unsubscribed from the hub at once
    }
    return row;
  })();
  if (patch.status === 'active') {
    ctx.nudgeDeliverer();
    ctx.nudgePoller(); // a feed resumed after a pause takes its fresh baseline now, not at its next scheduled poll
  }
  return subscriptionView(row);
}

/** Deletes a subscription and its events. Deleting the feed's last active subscription restarts its baseline: a later
 *  subscription to the same URL receives nothing the feed showed before; the feed's last subscription starts its
 *  grace before deletion ([retention] orphaned_feed_days). A backlog of more than EVENT_CHUNK events is deleted a
 *  chunk per transaction, with a turn of the event loop between two, after pausing the subscription (so no event is
 *  sent or made for it meanwhile); a deletion cut short leaves it paused, and deleting it again finishes the job. */
export async function removeSubscription(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<void> {
  const large = ctx.db.transaction(() => {
    const current = requireSubscription(ctx, applicationId, id);
    if (!hasMoreEventsThan(ctx.db, id, EVENT_CHUNK)) return false;
    const now = ctx.clock.now();
    updateSubscription(ctx.db, applicationId, id, { status: 'paused' }, now);
    restartBaselineIfIdle(ctx.db, current.feed_id, now);
    return true;
  })();
  if (large)
    while (deleteSubscriptionEvents(ctx.db, id, EVENT_CHUNK) === EVENT_CHUNK) await nextTurn();
  ctx.db.transaction(() => {
    const current = requireSubscription(ctx, applicationId, id);
    const now = ctx.clock.now();
    deleteSubscription(ctx.db, applicationId, id);
    restartBaselineIfIdle(ctx.db, current.feed_id, now);
    webSubFeedIdle(ctx.db, current.feed_id, now); // WebSub: unsubscribed from the hub at once
    markFeedUnused(ctx.db, current.feed_id, now);
  })();
}

/** The application's endpoint; 404 naming the `endpoint` field when unknown or another application's. */
export function requireOwnEndpoint(
  ctx: Ctx,
  applicationId: string,
  endpointId: string,
): EndpointRow {
  const row = getEndpoint(ctx.db, applicationId, endpointId);
  if (!row) {
    throw new ApiError(404, 'Not found', 'Endpoint not found.', {
      errors: [{ path: 'endpoint', message: 'no endpoint with this id' }],
    });
  }
  return row;
}

/** The metadata's stored text: the client's raw JSON when known, else JSON.stringify; null when absent. 400 past 16 KiB. */
export function metadataText(
  value: Record<string, unknown> | null | undefined,
  rawText: string | undefined,
): string | null {
  if (value === undefined || value === null) return null;
  const text = rawText !== undefined ? minify(rawText) : JSON.stringify(value);
  if (Buffer.byteLength(text) > METADATA_MAX_BYTES)
    throw invalid([
      { path: 'metadata', message: `must be at most ${METADATA_MAX_BYTES} bytes of JSON` },
    ]);
  return text;
}
