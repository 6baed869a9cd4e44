// The OpenAPI paths and schemas of events (webhook messages), their attempts, resending one, and the webhook bodies
// themselves (OpenAPI 3.1 `webhooks`).
import * as v from 'valibot';
import { EventStatusFilter, EventStatusValue } from '../../../actions/events.ts';
import { JsonObject } from '../../../actions/subscriptions.ts';
import { FEED_STATUSES } from '../../../store/feeds.ts';
import { SUBSCRIPTION_EVENT_TYPES, type FeedHealthEvent } from '../../../webhook/event.ts';
import { IdFilter } from '../../body.ts';
import { queryParameter } from './convert.ts';
import {
  described,
  Id,
  idempotencyHeader,
  idParam,
  Int,
  json,
  openObject,
  page,
  pageQuery,
  problemResponse,
  read,
  Time,
  Uri,
  withId,
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';

/** The source an entry's key comes from (a feed's identity_key, a trace's key_source). */
export const KeySource = v.picklist(['guid', 'link', 'enclosure', 'content']);

/** A nullable string with a description. */
const text = (description: string) => described(v.nullable(v.string()), description);
const strings = v.array(v.string());

/** The envelope of every webhook body: its type, the payload version, when it was built, and its data. */
const envelope = <T extends string, D extends v.GenericSchema>(type: T, data: D) =>
  v.object({
    type: v.literal(type),
    schema_version: described(
      v.literal(2),
      'The payload version: 2 since entries carry typed text. Version 1 bodies (still stored for older events) have no schema_version.',
    ),
    timestamp: Time,
    data,
  });

const sequence = described(Int, '1, 2, 3… per subscription, across every event type it receives.');
const subscription = v.object({
  id: Id,
  url: Uri,
  metadata: openNullable('Your metadata, byte for byte, or null.'),
});
const metadata = openNullable("The subscription's metadata, byte for byte, or null.");

/** A JSON object of the client's own, or null. */
function openNullable(description: string) {
  return described(v.nullable(JsonObject), description);
}

/** The feed as health events show it (webhook/event.ts HealthFeed). */
export const HealthFeed = v.object({
  id: Id,
  url: described(Uri, 'The subscribed URL (the feed discovered behind it).'),
  title: v.nullable(v.string()),
  site_url: v.nullable(Uri),
  feed_url: described(Uri, 'The URL fetched (after a move, the new one).'),
  status: v.picklist(FEED_STATUSES),
});

/** Each feed-health event's own fields (docs/webhooks.md › Feed health), by type: webhook/event.ts FeedHealthEvent. */
export const HEALTH_FIELDS = {
  'feed.failing': v.object({
    consecutive_failures: described(Int, 'Failed polls in a row (poll.failing_after).'),
    last_error: text('The last error.'),
    last_http_status: described(v.nullable(Int), 'null when nothing answered.'),
    last_error_at: v.nullable(Time),
    last_success_at: v.nullable(Time),
    next_poll_at: Time,
  }),
  'feed.recovered': v.object({
    recovered_from: v.picklist(['feed.failing', 'feed.gone']),
    alerted_at: v.nullable(Time),
    consecutive_failures: described(Int, 'Failed polls in a row before this success.'),
    last_error: text('The last error of the outage.'),
    last_http_status: described(v.nullable(Int), 'The successful answer: 200 or 304.'),
  }),
  'feed.gone': v.object({
    last_http_status: v.nullable(Int),
    last_error: text('Why polling stopped.'),
  }),
  'feed.moved': v.object({ from: Uri, to: Uri }),
  'feed.identity_hold': v.object({
    held_entries: described(Int, 'Entries held back.'),
    identity_key: KeySource,
    release: described(
      v.object({
        method: v.literal('POST'),
        path: v.string(),
        actions: v.array(v.picklist(['deliver', 'discard'])),
      }),
      'How to release them: POST {"action": "deliver"} or {"action": "discard"} to path.',
    ),
  }),
  'feed.over_budget': v.object({
    held_at: Time,
    used_bytes: described(Int, 'What the application keeps now (GET /v1/storage).'),
    budget_bytes: described(Int, 'quotas.storage_bytes_per_application.'),
    feed_bytes: described(Int, 'What this feed keeps (its stored_bytes).'),
  }),
  'feed.within_budget': v.object({
    held_at: Time,
    used_bytes: described(
      Int,
      'What the application keeps now; 0 when no budget counts the feed any more.',
    ),
    budget_bytes: described(
      Int,
      'quotas.storage_bytes_per_application; 0 when no budget counts the feed any more (it is shared with another application now, or the budget was removed).',
    ),
  }),
} satisfies Record<FeedHealthEvent['type'], v.GenericSchema>;

/** A feed-health payload: the entries envelope with the feed's health view and the event's own fields. */
const health = <T extends FeedHealthEvent['type']>(type: T) =>
  envelope(
    type,
    v.object({
      sequence,
      subscription,
      feed: HealthFeed,
      ...HEALTH_FIELDS[type].entries,
      metadata,
    }),
  );

/** A file an entry links to. */
export const Enclosure = v.object({
  url: Uri,
  type: v.nullable(v.string()),
  length: v.nullable(Int),
});
/** An entry as webhooks carry it (webhook/event.ts EventEntry, without the key's source text). */
export const Entry = v.object({
  id: described(
    v.string(),
    "feedsub's key for the entry (32 hex), stable across polls: dedupe on it.",
  ),
  guid: text("The feed's own id (RSS guid, Atom id, JSON Feed id)."),
  url: v.nullable(Uri),
  title: text('Plain text on one line (HTML titles are rendered, literal text kept as written).'),
  summary: text('Plain text of the summary.'),
  summary_html: text(
    'The summary as HTML: absolute URLs, sanitized unless delivery.sanitize_html = false.',
  ),
  content_html: text(
    'The full content as HTML: absolute URLs, sanitized unless delivery.sanitize_html = false.',
  ),
  content_text: text('Plain text of the content.'),
  image: described(
    v.nullable(Uri),
    'media:thumbnail, itunes:image, a media:content image or the JSON Feed image.',
  ),
  authors: strings,
  categories: strings,
  enclosures: v.array(Enclosure),
  published_at: described(Time, 'When feedsub first saw it, if the feed gives no date.'),
  updated_at: v.nullable(Time),
  truncated: v.optional(
    described(
      v.literal(true),
      'Present when the entry was too large: summary and content fields are null.',
    ),
  ),
});

/** An entries payload (new entries, or new versions of known ones) with the given optional fields after `entries`. */
const entriesPayload = <T extends string, E extends v.ObjectEntries>(type: T, extra: E) =>
  envelope(
    type,
    v.object({
      sequence,
      subscription,
      feed: v.object({
        id: Id,
        url: Uri,
        title: v.nullable(v.string()),
        site_url: v.nullable(Uri),
      }),
      entries: v.pipe(v.array(Entry), v.maxLength(100)),
      ...extra,
      metadata,
    }),
  );

// The Standard Webhooks headers of every webhook request (docs/webhooks.md).
const WEBHOOK_HEADERS = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id, the same on every retry: dedupe on it.',
    schema: Id,
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds of this attempt; refuse one too far from your clock.',
    schema: v.pipe(v.string(), v.regex(/^[0-9]+$/)),
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` with the endpoint secret; during a rotation two signatures, space separated.',
    schema: v.pipe(v.string(), v.startsWith('v1,')),
  },
];

// One webhook request: the POST of a payload to the endpoint, signed with its secret rather than an API key.
function webhook(operationId: string, summary: string, payload: v.GenericSchema): Schema {
  return {
    operationId,
    summary,
    security: [],
    parameters: WEBHOOK_HEADERS,
    requestBody: { required: true, content: json(payload).content },
    responses: { '2XX': { description: 'Delivered. Anything else is retried on the schedule.' } },
  };
}

export const SubscriptionEntriesPayload = entriesPayload('subscription.entries', {
  backfill: v.optional(
    described(
      v.literal(true),
      'Present on the events of the backfill a subscription asked for when it was created (`backfill: n`): its feed’s n newest entries it is not sent as new ones (first seen before it was created, or recorded by the baseline it waited for), oldest first.',
    ),
  ),
});
export const SubscriptionEntriesUpdatedPayload = entriesPayload('subscription.entries_updated', {});
export const FeedFailingPayload = health('feed.failing');
export const FeedRecoveredPayload = health('feed.recovered');
export const FeedGonePayload = health('feed.gone');
export const FeedMovedPayload = health('feed.moved');
export const FeedIdentityHoldPayload = health('feed.identity_hold');
export const FeedOverBudgetPayload = health('feed.over_budget');
export const FeedWithinBudgetPayload = health('feed.within_budget');
export const EndpointTestPayload = envelope(
  'endpoint.test',
  v.object({ endpoint: v.object({ id: Id }), message: v.string() }),
);

// The bodies of the webhook requests (Standard Webhooks; built once, sent byte for byte on every attempt).
const WEBHOOK_SCHEMAS = {
  Enclosure,
  Entry,
  SubscriptionEntriesPayload,
  SubscriptionEntriesUpdatedPayload,
  HealthFeed,
  FeedFailingPayload,
  FeedRecoveredPayload,
  FeedGonePayload,
  FeedMovedPayload,
  FeedIdentityHoldPayload,
  FeedOverBudgetPayload,
  FeedWithinBudgetPayload,
  EndpointTestPayload,
};

/** An event as the API shows it (actions' EventView); its body is only in the detail. */
export const Event = v.object({
  id: Id,
  type: v.picklist([...SUBSCRIPTION_EVENT_TYPES, 'endpoint.test']),
  status: described(
    EventStatusValue,
    'pending: not tried yet; failed: an attempt failed and a retry is scheduled; dead: every retry failed.',
  ),
  endpoint: Id,
  subscription: v.nullable(Id),
  sequence: described(v.nullable(Int), '1, 2, 3… per subscription (data.sequence in the payload).'),
  attempt_count: described(
    Int,
    'Attempts since the event was last queued (a resend starts again at 0).',
  ),
  next_attempt_at: v.nullable(Time),
  last_status_code: v.nullable(Int),
  last_error: v.nullable(v.string()),
  created_at: Time,
  delivered_at: v.nullable(Time),
  updated_at: Time,
});
/** One HTTP try of an event (actions' AttemptView). */
export const Attempt = v.object({
  started_at: Time,
  status_code: v.nullable(Int),
  duration_ms: Int,
  error: v.nullable(v.string()),
  response_body: text("The first 4 KiB of the receiver's answer."),
});
/** An event with its body and its attempts (actions' EventDetailView). */
export const EventDetail = v.intersect([
  Event,
  v.object({
    payload: openObject(
      'The webhook body, exactly as sent on every attempt: the payload of its type under `webhooks` (`schema_version` 2; bodies built before version 2 stay as they were, without it).',
    ),
    attempts: v.array(Attempt),
  }),
]);

export const EVENT_PATHS: Paths = {
  '/v1/events': {
    // Not list(): the published document names this one's responses before its parameters, and the JSON keeps that
    // order.
    get: {
      operationId: 'listEvents',
      summary: 'List events, newest first',
      responses: { 200: json(page(Event)) },
      parameters: pageQuery(
        queryParameter('subscription', IdFilter),
        queryParameter('endpoint', IdFilter),
        queryParameter('status', EventStatusFilter),
      ),
    },
  },
  '/v1/events/{id}': {
    get: withId('getEvent', read('Read an event with its payload and attempts', EventDetail)),
  },
  '/v1/events/{id}/resend': {
    post: {
      operationId: 'resendEvent',
      summary:
        'Queue a delivered, dead or failed event again (same webhook-id and body, fresh retry schedule, in sequence order)',
      parameters: [idParam, idempotencyHeader],
      responses: {
        200: json(Event),
        409: problemResponse('Not tried yet, or being sent right now'),
      },
    },
  },
};

/** The event schemas, then the webhook bodies, in the document's order. */
export const EVENT_SCHEMAS = { Event, Attempt, EventDetail, ...WEBHOOK_SCHEMAS };

/** The webhook requests feedsub sends (OpenAPI 3.1 `webhooks`): POSTs to your endpoint, signed (docs/webhooks.md). */
export const WEBHOOKS: Paths = {
  'subscription.entries': {
    post: webhook(
      'subscriptionEntries',
      'New entries of a subscribed feed',
      SubscriptionEntriesPayload,
    ),
  },
  'subscription.entries_updated': {
    post: webhook(
      'subscriptionEntriesUpdated',
      'New versions of known entries (title, summary, content or updated date changed), to subscriptions with `updates: true`',
      SubscriptionEntriesUpdatedPayload,
    ),
  },
  'feed.failing': {
    post: webhook(
      'feedFailing',
      'The feed failed poll.failing_after polls in a row',
      FeedFailingPayload,
    ),
  },
  'feed.recovered': {
    post: webhook(
      'feedRecovered',
      'The first success after feed.failing or feed.gone',
      FeedRecoveredPayload,
    ),
  },
  'feed.gone': {
    post: webhook('feedGone', 'The feed answered 410 Gone: polling stopped', FeedGonePayload),
  },
  'feed.moved': {
    post: webhook('feedMoved', 'Permanent redirects moved the URL fetched', FeedMovedPayload),
  },
  'feed.identity_hold': {
    post: webhook(
      'feedIdentityHold',
      'The churn guard held entries back until a subscriber releases them',
      FeedIdentityHoldPayload,
    ),
  },
  'feed.over_budget': {
    post: webhook(
      'feedOverBudget',
      'The application is over its storage budget: the feed is held (not polled) until there is room',
      FeedOverBudgetPayload,
    ),
  },
  'feed.within_budget': {
    post: webhook(
      'feedWithinBudget',
      'The feed held for the storage budget is polled again; what it showed meanwhile follows as entries',
      FeedWithinBudgetPayload,
    ),
  },
  'endpoint.test': {
    post: webhook(
      'endpointTest',
      'A test message (POST /v1/endpoints/{id}/test)',
      EndpointTestPayload,
    ),
  },
};
