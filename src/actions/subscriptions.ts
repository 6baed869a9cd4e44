// Subscription use-cases shared by the API, the dashboard and the CLI.
import * as v from 'valibot';
import { ApiError, conflict, invalid } from '../errors.ts';
import { newId } from '../ids.ts';
import { minify, RawJson } from '../rawjson.ts';
import { getEndpoint, type EndpointRow } from '../store/endpoints.ts';
import { deleteSubscriptionEvents, hasMoreEventsThan } from '../store/events.ts';
import {
  getFeed,
  markFeedUnused,
  restartBaselineIfIdle,
  upsertFeed,
  wakeFeed,
} from '../store/feeds.ts';
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
import { transaction, type Ctx } from '../context.ts';
import type { Filter } from '../feed/filter/rules.ts';
import { BACKFILL_MAX, endSubscriptionBackfill } from './backfills.ts';
import { retryHeldFeeds } from './budget.ts';
import { EVENT_CHUNK, nextTurn } from './chunks.ts';
import { filterText, filterView, FilterInput, refuseArrayFilter } from './filter.ts';
import { chargeBackfill, chargeNewFeedUrl, checkSubscriptionQuota } from './quotas.ts';
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
  updates: boolean;
  filter: Filter | null;
  entries_filtered: number;
  feed_url: string;
  feed_status: string;
  created_at: string;
  updated_at: string;
};

/** A JSON object, not an array: what metadata holds (the OpenAPI document says it in JSON Schema, which a custom
 *  schema is beyond). */
export const JsonObject = v.custom<Record<string, unknown>>(
  (m) => typeof m === 'object' && m !== null && !Array.isArray(m),
  'must be a JSON object',
);
/** Metadata as a request gives it: a JSON object, or null for none. */
export const Metadata = v.nullable(JsonObject, undefined);

/** Whether the subscription receives subscription.entries_updated. */
export const Updates = v.pipe(
  v.boolean('must be true or false'),
  v.description(
    'Receive `subscription.entries_updated` when a known entry’s title, summary, content or updated date changes. Default false.',
  ),
);
/** A subscription's status. */
export const SubscriptionStatus = v.picklist(['active', 'paused'], 'must be "active" or "paused"');

// No `default` on optional request fields: a generated client (openapi-typescript) would make such a field required,
// so defaults are told in descriptions.
export const CreateSubscriptionInput = v.strictObject({
  endpoint: IdString,
  url: HttpUrl,
  metadata: v.optional(
    v.pipe(
      Metadata,
      v.description(
        'Your own JSON object, at most 16 KiB; returned and delivered exactly as given.',
      ),
    ),
  ),
  backfill: v.optional(
    v.pipe(
      v.number(`must be an integer from 0 to ${BACKFILL_MAX}`),
      v.integer(`must be an integer from 0 to ${BACKFILL_MAX}`),
      v.minValue(0, `must be an integer from 0 to ${BACKFILL_MAX}`),
      v.maxValue(BACKFILL_MAX, `must be an integer from 0 to ${BACKFILL_MAX}`),
      v.description(
        "Send the feed's n newest entries this subscription is not sent as new ones (from its history; for a feed not fetched yet, from its first document), in events marked `backfill: true`, queued in the background after the answer: events of entries the feed shows meanwhile may come before, between or after them, in `sequence` order. Counts towards `quotas.backfill_entries_per_hour` as asked. The baseline rule holds for everything else. Default 0.",
      ),
    ),
  ),
  updates: v.optional(Updates),
  filter: v.optional(v.nullable(FilterInput)),
});
export const UpdateSubscriptionInput = v.strictObject({
  endpoint: v.optional(IdString),
  metadata: v.optional(v.pipe(Metadata, v.description('Replaces the metadata; null clears it.'))),
  status: v.optional(SubscriptionStatus),
  updates: v.optional(Updates),
  filter: v.optional(
    v.pipe(
      v.nullable(FilterInput),
      v.description(
        'Replaces the filter; null removes it. It applies to the entries of every document recorded after the change (a poll in flight when it changes included), and to backfills not started yet.',
      ),
    ),
  ),
});

/** Pauses a subscription remembers for the trace (docs/webhooks.md › Why was (or wasn't) this entry delivered?). */
export const PAUSES_KEPT = 20;
/** A pause: when it began, and when it ended (null while paused). */
export type Pause = [pausedAt: string, resumedAt: string | null];

/** The subscription's pauses as stored (oldest first); a malformed value reads as none. */
export function readPauses(text: string | null): Pause[] {
  if (text === null) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? (value as Pause[]) : [];
  } catch {
    return [];
  }
}

/** The pauses after a change of status at `now`: pausing opens one, resuming closes the open one; the last
 *  PAUSES_KEPT are kept. Pure. */
export function notePause(text: string | null, status: 'active' | 'paused', now: Date): string {
  const pauses = readPauses(text);
  const t = now.toISOString();
  const open = pauses.at(-1);
  if (status === 'paused' && (open === undefined || open[1] !== null)) pauses.push([t, null]);
  if (status === 'active' && open !== undefined && open[1] === null) open[1] = t;
  return JSON.stringify(pauses.slice(-PAUSES_KEPT));
}

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
    updates: row.updates === 1,
    filter: filterView(row.entry_filter),
    entries_filtered: Number(row.entries_filtered),
    feed_url: row.feed_discovered_url ?? row.feed_fetch_url,
    feed_status: row.feed_status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Creates a subscription (sharing the feed record of the same normalized URL) and wakes the poller. A `backfill`
 *  is only noted here: ready now when the feed has its baseline (else its baseline makes it ready), it is queued from
 *  the feed's history by the backfill loop, which this wakes (actions/backfills.ts).
 *  404 for an endpoint that is not the application's; 409 with the existing id when the endpoint already receives
 *  this feed (the same URL, or a web page and the feed it announces; see findSubscriptionToSameFeed); 429 past the
 *  application's subscriptions, new feed URLs per hour or backfill entries per hour. */
export async function createSubscription(
  ctx: Ctx,
  applicationId: string,
  input: unknown,
  raw: RawParts = {},
): Promise<SubscriptionApiView> {
  refuseArrayFilter(input);
  const body = validate(CreateSubscriptionInput, input);
  const metadata = metadataText(body.metadata, raw.metadata);
  const filter = filterText(body.filter);
  ctx.filters.get(filter); // compiled now, off the poll's transaction, which finds it compiled
  const target = normalizeFeedUrl(body.url);
  const issue = privateHostIssue('url', target.url, ctx.config.network.allow_private);
  if (issue) throw invalid([issue]);
  const now = ctx.clock.now();
  const backfill = body.backfill ?? 0;
  const id = await transaction(ctx, async (tx) => {
    await requireOwnEndpoint(tx, applicationId, body.endpoint);
    const existing = await findSubscriptionToSameFeed(
      tx.db,
      body.endpoint,
      target.url,
      target.credentialKey,
    );
    if (existing)
      throw conflict(
        'A subscription of this endpoint to this feed URL already exists (a web page and the feed it announces count as one feed).',
        { existing_id: existing },
      );
    await checkSubscriptionQuota(tx, applicationId);
    const feed = await upsertFeed(tx.db, target.url, target.credentials, target.credentialKey, now);
    await chargeNewFeedUrl(tx, applicationId, feed.id, now);
    await chargeBackfill(tx, applicationId, backfill, now);
    await wakeFeed(tx.db, feed.id, now); // a feed whose subscriptions were all paused or deleted is due again
    const sid = newId(now);
    await insertSubscription(tx.db, {
      id: sid,
      application_id: applicationId,
      endpoint_id: body.endpoint,
      feed_id: feed.id,
      url: target.url,
      metadata,
      created_at: now.toISOString(),
      updates: body.updates === true ? 1 : 0,
      entry_filter: filter,
      entry_filter_at: filter === null ? null : now.toISOString(),
      backfill,
      // A feed others watch has its history now; a new one (or one waiting for a fresh baseline) has it then.
      backfill_at: backfill > 0 && feed.baseline_at !== null ? now.toISOString() : null,
    });
    return sid;
  });
  ctx.nudgePoller();
  if (backfill > 0) ctx.nudgeBackfiller();
  return subscriptionView((await getSubscription(ctx.db, applicationId, id))!);
}

/** The application's subscription; 404 when unknown or another application's. */
export async function requireSubscription(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<SubscriptionView> {
  const row = await getSubscription(ctx.db, applicationId, id);
  if (!row) throw new ApiError(404, 'Not found', 'Subscription not found.');
  return row;
}

/** One page of subscriptions, newest first, optionally of one endpoint. */
export async function listSubscriptionViews(
  ctx: Ctx,
  applicationId: string,
  q: PageQuery & { endpoint?: string | undefined },
): Promise<Page<SubscriptionApiView>> {
  const page = await listSubscriptions(ctx.db, applicationId, q);
  return { data: page.data.map(subscriptionView), next: page.next };
}

/** Changes metadata (null clears it), endpoint (another of the application's), status (pause/resume) or filter (null
 *  removes it; a change notes its time, which the trace reads). Pausing the
 *  feed's last active subscription restarts its baseline: entries seen while nothing was active are never sent.
 *  Pausing ends a backfill not queued yet, or not whole: a paused subscription gets nothing new. */
export async function updateSubscriptionFromInput(
  ctx: Ctx,
  applicationId: string,
  id: string,
  input: unknown,
  raw: RawParts = {},
): Promise<SubscriptionApiView> {
  refuseArrayFilter(input);
  const body = validate(UpdateSubscriptionInput, input);
  const patch: Parameters<typeof updateSubscription>[3] = {};
  if (body.metadata !== undefined) patch.metadata = metadataText(body.metadata, raw.metadata);
  if (body.status !== undefined) patch.status = body.status;
  if (body.updates !== undefined) patch.updates = body.updates ? 1 : 0;
  const filter = body.filter === undefined ? undefined : filterText(body.filter);
  if (filter !== undefined) ctx.filters.get(filter); // compiled now, off the poll's transaction
  const row = await transaction(ctx, async (tx) => {
    const current = await requireSubscription(tx, applicationId, id);
    if (filter !== undefined && filter !== current.entry_filter) {
      patch.entry_filter = filter;
      patch.entry_filter_at = tx.clock.now().toISOString();
    }
    if (body.status !== undefined && body.status !== current.status)
      patch.pauses = notePause(current.pauses, body.status, tx.clock.now());
    if (body.endpoint !== undefined && body.endpoint !== current.endpoint_id) {
      await requireOwnEndpoint(tx, applicationId, body.endpoint);
      const ck = (await getFeed(tx.db, current.feed_id))?.credential_key ?? '';
      const existing = await findSubscriptionToSameFeed(tx.db, body.endpoint, current.url, ck);
      if (existing)
        throw conflict('That endpoint already has a subscription to this feed URL.', {
          existing_id: existing,
        });
      patch.endpoint_id = body.endpoint;
    }
    const now = tx.clock.now();
    const row = (await updateSubscription(tx.db, applicationId, id, patch, now))!;
    if (patch.status === 'active') await wakeFeed(tx.db, current.feed_id, now);
    if (patch.status === 'paused') {
      await endSubscriptionBackfill(tx, id);
      await restartBaselineIfIdle(tx.db, current.feed_id, now);
      await webSubFeedIdle(tx.db, current.feed_id, now); // WebSub: unsubscribed from the hub at once
    }
    return row;
  });
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
 *  sent or made for it meanwhile); a deletion cut short leaves it paused, and deleting it again finishes the job. The
 *  room it took in the application's storage budget may resume the feeds held for it (retryHeldFeeds). */
export async function removeSubscription(
  ctx: Ctx,
  applicationId: string,
  id: string,
): Promise<void> {
  const large = await transaction(ctx, async (tx) => {
    const current = await requireSubscription(tx, applicationId, id);
    if (!(await hasMoreEventsThan(tx.db, id, EVENT_CHUNK))) return false;
    const now = tx.clock.now();
    await updateSubscription(tx.db, applicationId, id, { status: 'paused' }, now);
    await restartBaselineIfIdle(tx.db, current.feed_id, now);
    return true;
  });
  if (large)
    while ((await deleteSubscriptionEvents(ctx.db, id, EVENT_CHUNK)) === EVENT_CHUNK)
      await nextTurn();
  await transaction(ctx, async (tx) => {
    const current = await requireSubscription(tx, applicationId, id);
    const now = tx.clock.now();
    await deleteSubscription(tx.db, applicationId, id);
    await restartBaselineIfIdle(tx.db, current.feed_id, now);
    await webSubFeedIdle(tx.db, current.feed_id, now); // WebSub: unsubscribed from the hub at once
    await markFeedUnused(tx.db, current.feed_id, now);
  });
  await retryHeldFeeds(ctx, applicationId);
}

/** The application's endpoint; 404 naming the `endpoint` field when unknown or another application's. */
export async function requireOwnEndpoint(
  ctx: Ctx,
  applicationId: string,
  endpointId: string,
): Promise<EndpointRow> {
  const row = await getEndpoint(ctx.db, applicationId, endpointId);
  if (!row) {
    throw new ApiError(404, 'Not found', 'Endpoint not found.', {
      errors: [{ path: 'endpoint', message: 'no endpoint with this id' }],
    });
  }
  return row;
}

/** True when every string and member name in `value` is well-formed text without a NUL character. */
function readableText(value: unknown): boolean {
  const ok = (s: string) => !/\p{Cs}/u.test(s) && !s.includes('\0'); // \p{Cs}: a surrogate not in a pair
  if (typeof value === 'string') return ok(value);
  if (Array.isArray(value)) return value.every(readableText);
  if (value !== null && typeof value === 'object')
    return Object.entries(value).every(([k, v]) => ok(k) && readableText(v));
  return true;
}

/** The metadata's stored text: the client's raw JSON when known, else JSON.stringify; null when absent. 400 past 16
 *  KiB, and 400 for a string (or a member's name) holding the NUL character or half of a surrogate pair: JSON may
 *  spell them (\u0000, \ud800), but no text can be read from them (PostgreSQL's JSON functions refuse them), and the
 *  metadata is sent back in every event. */
export function metadataText(
  value: Record<string, unknown> | null | undefined,
  rawText: string | undefined,
): string | null {
  if (value === undefined || value === null) return null;
  if (!readableText(value))
    throw invalid([
      {
        path: 'metadata',
        message:
          'must not hold the NUL character (\\u0000) or half of a surrogate pair in a string',
      },
    ]);
  const text = rawText !== undefined ? minify(rawText) : JSON.stringify(value);
  if (Buffer.byteLength(text) > METADATA_MAX_BYTES)
    throw invalid([
      { path: 'metadata', message: `must be at most ${METADATA_MAX_BYTES} bytes of JSON` },
    ]);
  return text;
}
