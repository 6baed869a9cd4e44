// The OpenAPI paths and schemas of events (webhook messages), their attempts, resending one, and the webhook bodies
// themselves (OpenAPI 3.1 `webhooks`).
import {
  id,
  idempotencyHeader,
  idParam,
  int,
  json,
  nullable,
  page,
  pageQuery,
  problemResponse,
  read,
  ref,
  str,
  time,
  withId,
  openObject,
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';
import { SUBSCRIPTION_EVENT_TYPES } from '../../../webhook/event.ts';
import { FEED_STATUSES } from '../../../store/feeds.ts';

const statuses = ['pending', 'delivered', 'failed', 'dead'];
const url = nullable(str({ format: 'uri' }));
const text = (description: string) => nullable(str({ description }));
const strings = { type: 'array', items: str() };
const envelope = (type: string, data: Schema): Schema => ({
  type: 'object',
  required: ['type', 'schema_version', 'timestamp', 'data'],
  properties: {
    type: { const: type },
    schema_version: {
      const: 2,
      description:
        'The payload version: 2 since entries carry typed text. Version 1 bodies (still stored for older events) have no schema_version.',
    },
    timestamp: time,
    data,
  },
});

const sequence = int({
  description: '1, 2, 3… per subscription, across every event type it receives.',
});
const subscription: Schema = {
  type: 'object',
  required: ['id', 'url', 'metadata'],
  properties: {
    id,
    url: str({ format: 'uri' }),
    metadata: nullable(openObject('Your metadata, byte for byte, or null.')),
  },
};
const metadata = nullable(openObject("The subscription's metadata, byte for byte, or null."));

/** A feed-health payload: the entries envelope with the feed's health view and the event's own fields. */
const health = (type: string, fields: Record<string, Schema>): Schema =>
  envelope(type, {
    type: 'object',
    required: ['sequence', 'subscription', 'feed', ...Object.keys(fields), 'metadata'],
    properties: { sequence, subscription, feed: ref('HealthFeed'), ...fields, metadata },
  });

// The feed-health payloads (README › Feed health), one per event type, and the feed as they show it.
const HEALTH_SCHEMAS: Record<string, Schema> = {
  HealthFeed: {
    type: 'object',
    required: ['id', 'url', 'title', 'site_url', 'feed_url', 'status'],
    properties: {
      id,
      url: str({
        format: 'uri',
        description: 'The subscribed URL (the feed discovered behind it).',
      }),
      title: nullable(str()),
      site_url: url,
      feed_url: str({ format: 'uri', description: 'The URL fetched (after a move, the new one).' }),
      status: { enum: [...FEED_STATUSES] },
    },
  },
  FeedFailingPayload: health('feed.failing', {
    consecutive_failures: int({ description: 'Failed polls in a row (poll.failing_after).' }),
    last_error: text('The last error.'),
    last_http_status: nullable(int({ description: 'null when nothing answered.' })),
    last_error_at: nullable(time),
    last_success_at: nullable(time),
    next_poll_at: time,
  }),
  FeedRecoveredPayload: health('feed.recovered', {
    recovered_from: { enum: ['feed.failing', 'feed.gone'] },
    alerted_at: nullable(time),
    consecutive_failures: int({ description: 'Failed polls in a row before this success.' }),
    last_error: text('The last error of the outage.'),
    last_http_status: nullable(int({ description: 'The successful answer: 200 or 304.' })),
  }),
  FeedGonePayload: health('feed.gone', {
    last_http_status: nullable(int()),
    last_error: text('Why polling stopped.'),
  }),
  FeedMovedPayload: health('feed.moved', {
    from: str({ format: 'uri' }),
    to: str({ format: 'uri' }),
  }),
  FeedIdentityHoldPayload: health('feed.identity_hold', {
    held_entries: int({ description: 'Entries held back.' }),
    identity_key: { enum: ['guid', 'link', 'enclosure', 'content'] },
    release: {
      type: 'object',
      required: ['method', 'path', 'actions'],
      description:
        'How to release them: POST {"action": "deliver"} or {"action": "discard"} to path.',
      properties: {
        method: { const: 'POST' },
        path: str(),
        actions: { type: 'array', items: { enum: ['deliver', 'discard'] } },
      },
    },
  }),
  FeedOverBudgetPayload: health('feed.over_budget', {
    held_at: time,
    used_bytes: int({ description: 'What the application keeps now (GET /v1/storage).' }),
    budget_bytes: int({ description: 'quotas.storage_bytes_per_application.' }),
    feed_bytes: int({ description: 'What this feed keeps (its stored_bytes).' }),
  }),
  FeedWithinBudgetPayload: health('feed.within_budget', {
    held_at: time,
    used_bytes: int({
      description: 'What the application keeps now; 0 when no budget counts the feed any more.',
    }),
    budget_bytes: int({
      description:
        'quotas.storage_bytes_per_application; 0 when no budget counts the feed any more (it is shared with another application now, or the budget was removed).',
    }),
  }),
};

/** An entries payload (new entries, or new versions of known ones) with the given optional fields after `entries`. */
function entriesPayload(type: string, extra: Record<string, Schema>): Schema {
  return envelope(type, {
    type: 'object',
    required: ['sequence', 'subscription', 'feed', 'entries', 'metadata'],
    properties: {
      sequence,
      subscription,
      feed: {
        type: 'object',
        required: ['id', 'url', 'title', 'site_url'],
        properties: { id, url: str({ format: 'uri' }), title: nullable(str()), site_url: url },
      },
      entries: { type: 'array', maxItems: 100, items: ref('Entry') },
      ...extra,
      metadata,
    },
  });
}

// The Standard Webhooks headers of every webhook request (README › Webhooks).
const WEBHOOK_HEADERS = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id, the same on every retry: dedupe on it.',
    schema: id,
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds of this attempt; refuse one too far from your clock.',
    schema: str({ pattern: '^[0-9]+$' }),
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` with the endpoint secret; during a rotation two signatures, space separated.',
    schema: str({ pattern: '^v1,' }),
  },
];

// One webhook request: the POST of a payload to the endpoint, signed with its secret rather than an API key.
function webhook(operationId: string, summary: string, payload: string): Schema {
  return {
    operationId,
    summary,
    security: [],
    parameters: WEBHOOK_HEADERS,
    requestBody: { required: true, content: json(ref(payload)).content },
    responses: { '2XX': { description: 'Delivered. Anything else is retried on the schedule.' } },
  };
}

// The bodies of the webhook requests (Standard Webhooks; built once, sent byte for byte on every attempt).
const WEBHOOK_SCHEMAS: Record<string, Schema> = {
  Enclosure: {
    type: 'object',
    required: ['url', 'type', 'length'],
    properties: { url: str({ format: 'uri' }), type: nullable(str()), length: nullable(int()) },
  },
  Entry: {
    type: 'object',
    required: [
      'id',
      'guid',
      'url',
      'title',
      'summary',
      'summary_html',
      'content_html',
      'content_text',
      'image',
      'authors',
      'categories',
      'enclosures',
      'published_at',
      'updated_at',
    ],
    properties: {
      id: str({
        description: "feedsub's key for the entry (32 hex), stable across polls: dedupe on it.",
      }),
      guid: text("The feed's own id (RSS guid, Atom id, JSON Feed id)."),
      url: url,
      title: text(
        'Plain text on one line (HTML titles are rendered, literal text kept as written).',
      ),
      summary: text('Plain text of the summary.'),
      summary_html: text(
        'The summary as HTML: absolute URLs, sanitized unless delivery.sanitize_html = false.',
      ),
      content_html: text(
        'The full content as HTML: absolute URLs, sanitized unless delivery.sanitize_html = false.',
      ),
      content_text: text('Plain text of the content.'),
      image: nullable(
        str({
          format: 'uri',
          description:
            'media:thumbnail, itunes:image, a media:content image or the JSON Feed image.',
        }),
      ),
      authors: strings,
      categories: strings,
      enclosures: { type: 'array', items: ref('Enclosure') },
      published_at: str({
        format: 'date-time',
        description: 'When feedsub first saw it, if the feed gives no date.',
      }),
      updated_at: nullable(time),
      truncated: {
        const: true,
        description: 'Present when the entry was too large: summary and content fields are null.',
      },
    },
  },
  SubscriptionEntriesPayload: entriesPayload('subscription.entries', {
    backfill: {
      const: true,
      description:
        'Present on the events of the backfill a subscription asked for when it was created (`backfill: n`): its feed’s n newest entries it is not sent as new ones (first seen before it was created, or recorded by the baseline it waited for), oldest first.',
    },
  }),
  SubscriptionEntriesUpdatedPayload: entriesPayload('subscription.entries_updated', {}),
  ...HEALTH_SCHEMAS,
  EndpointTestPayload: envelope('endpoint.test', {
    type: 'object',
    required: ['endpoint', 'message'],
    properties: {
      endpoint: { type: 'object', required: ['id'], properties: { id } },
      message: str(),
    },
  }),
};

export const EVENT_PATHS: Paths = {
  '/v1/events': {
    // Not list(): this one has always named its responses before its parameters, and the JSON keeps that order.
    get: {
      operationId: 'listEvents',
      summary: 'List events, newest first',
      responses: { 200: json(page('Event')) },
      parameters: pageQuery(
        { name: 'subscription', in: 'query', schema: id },
        { name: 'endpoint', in: 'query', schema: id },
        { name: 'status', in: 'query', schema: { enum: statuses } },
      ),
    },
  },
  '/v1/events/{id}': {
    get: withId('getEvent', read('Read an event with its payload and attempts', 'EventDetail')),
  },
  '/v1/events/{id}/resend': {
    post: {
      operationId: 'resendEvent',
      summary:
        'Queue a delivered, dead or failed event again (same webhook-id and body, fresh retry schedule, in sequence order)',
      parameters: [idParam, idempotencyHeader],
      responses: {
        200: json(ref('Event')),
        409: problemResponse('Not tried yet, or being sent right now'),
      },
    },
  },
};

export const EVENT_SCHEMAS: Record<string, Schema> = {
  Event: {
    type: 'object',
    required: [
      'id',
      'type',
      'status',
      'endpoint',
      'subscription',
      'sequence',
      'attempt_count',
      'created_at',
    ],
    properties: {
      id,
      type: { enum: [...SUBSCRIPTION_EVENT_TYPES, 'endpoint.test'] },
      status: {
        enum: statuses,
        description:
          'pending: not tried yet; failed: an attempt failed and a retry is scheduled; dead: every retry failed.',
      },
      endpoint: id,
      subscription: nullable(id),
      sequence: nullable(
        int({ description: '1, 2, 3… per subscription (data.sequence in the payload).' }),
      ),
      attempt_count: int({
        description: 'Attempts since the event was last queued (a resend starts again at 0).',
      }),
      next_attempt_at: nullable(time),
      last_status_code: nullable(int()),
      last_error: nullable(str()),
      created_at: time,
      delivered_at: nullable(time),
      updated_at: time,
    },
  },
  Attempt: {
    type: 'object',
    required: ['started_at', 'status_code', 'duration_ms', 'error', 'response_body'],
    properties: {
      started_at: time,
      status_code: nullable(int()),
      duration_ms: int(),
      error: nullable(str()),
      response_body: nullable(str({ description: "The first 4 KiB of the receiver's answer." })),
    },
  },
  EventDetail: {
    allOf: [
      ref('Event'),
      {
        type: 'object',
        required: ['payload', 'attempts'],
        properties: {
          payload: openObject(
            'The webhook body, exactly as sent on every attempt: the payload of its type under `webhooks` (`schema_version` 2; bodies built before version 2 stay as they were, without it).',
          ),
          attempts: { type: 'array', items: ref('Attempt') },
        },
      },
    ],
  },
  ...WEBHOOK_SCHEMAS,
};

/** The webhook requests feedsub sends (OpenAPI 3.1 `webhooks`): POSTs to your endpoint, signed (README › Webhooks). */
export const WEBHOOKS: Paths = {
  'subscription.entries': {
    post: webhook(
      'subscriptionEntries',
      'New entries of a subscribed feed',
      'SubscriptionEntriesPayload',
    ),
  },
  'subscription.entries_updated': {
    post: webhook(
      'subscriptionEntriesUpdated',
      'New versions of known entries (title, summary, content or updated date changed), to subscriptions with `updates: true`',
      'SubscriptionEntriesUpdatedPayload',
    ),
  },
  'feed.failing': {
    post: webhook(
      'feedFailing',
      'The feed failed poll.failing_after polls in a row',
      'FeedFailingPayload',
    ),
  },
  'feed.recovered': {
    post: webhook(
      'feedRecovered',
      'The first success after feed.failing or feed.gone',
      'FeedRecoveredPayload',
    ),
  },
  'feed.gone': {
    post: webhook('feedGone', 'The feed answered 410 Gone: polling stopped', 'FeedGonePayload'),
  },
  'feed.moved': {
    post: webhook('feedMoved', 'Permanent redirects moved the URL fetched', 'FeedMovedPayload'),
  },
  'feed.identity_hold': {
    post: webhook(
      'feedIdentityHold',
      'The churn guard held entries back until a subscriber releases them',
      'FeedIdentityHoldPayload',
    ),
  },
  'feed.over_budget': {
    post: webhook(
      'feedOverBudget',
      'The application is over its storage budget: the feed is held (not polled) until there is room',
      'FeedOverBudgetPayload',
    ),
  },
  'feed.within_budget': {
    post: webhook(
      'feedWithinBudget',
      'The feed held for the storage budget is polled again; what it showed meanwhile follows as entries',
      'FeedWithinBudgetPayload',
    ),
  },
  'endpoint.test': {
    post: webhook(
      'endpointTest',
      'A test message (POST /v1/endpoints/{id}/test)',
      'EndpointTestPayload',
    ),
  },
};
