// The OpenAPI paths and schemas of subscriptions: a feed URL tied to one endpoint, with metadata; OPML import/export.
import {
  body,
  create,
  id,
  idParam,
  int,
  json,
  list,
  nullable,
  problemResponse,
  read,
  ref,
  str,
  time,
  tooManyOr,
  uri,
  openObject,
  withId,
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';

const status = { enum: ['active', 'paused'] };
// No `default` keyword on request fields: generated clients (openapi-typescript) would make such a field required.
const updates = {
  type: 'boolean',
  description:
    'Receive `subscription.entries_updated` when a known entry’s title, summary, content or updated date changes. Default false.',
};
/** An entry's id: feedsub's key for it. */
const entryId = str({ pattern: '^[0-9a-f]{32}$' });

export const SUBSCRIPTION_PATHS: Paths = {
  '/v1/subscriptions': {
    post: withId(
      'createSubscription',
      create('Subscribe an endpoint to a feed URL', 'SubscriptionCreate', {
        201: json(ref('Subscription'), 'Created'),
        404: problemResponse(
          "The endpoint is unknown or another application's; `errors` names `endpoint`.",
        ),
        409: problemResponse('Duplicate; `existing_id` names it'),
        429: tooManyOr(
          'the application has `quotas.subscriptions_per_application` subscriptions already, or subscribed to `quotas.new_feed_urls_per_hour` feed URLs it did not have within the last hour, or its subscriptions asked for more backfill entries (`backfill`, counted as asked) than `quotas.backfill_entries_per_hour` within the last hour; `detail` then says how many are left.',
        ),
      }),
    ),
    get: withId(
      'listSubscriptions',
      list('List subscriptions, newest first', 'Subscription', {
        name: 'endpoint',
        in: 'query',
        schema: id,
      }),
    ),
  },
  '/v1/subscriptions/import': {
    post: withId(
      'importSubscriptions',
      create('Subscribe an endpoint to every feed of an OPML document', 'SubscriptionImport', {
        200: json(
          ref('SubscriptionImportReport'),
          'One result per feed outline, in document order: quotas and refusals are reported per outline, not as the status of the request.',
        ),
        400: problemResponse(
          'Invalid fields, or an OPML document that cannot be imported (not OPML, cut short or mis-nested, nested more than 50 elements deep, more than 1,000 feeds); `errors` names `opml` with the line. Nothing was imported.',
        ),
        404: problemResponse(
          "The endpoint is unknown or another application's; `errors` names `endpoint`. Nothing was imported.",
        ),
      }),
    ),
  },
  '/v1/subscriptions/export': {
    get: {
      operationId: 'exportSubscriptions',
      summary: 'The subscriptions as an OPML 2.0 document, a folder per endpoint',
      parameters: [
        {
          name: 'endpoint',
          in: 'query',
          description: "Only this endpoint's subscriptions (404 when not one of yours).",
          schema: id,
        },
      ],
      responses: {
        200: {
          description:
            'OPML 2.0, streamed: an outline per subscription (`xmlUrl` = its URL, never credentials; `text` = the feed title or the URL; paused ones carry `feedsubStatus="paused"`) inside a folder outline per endpoint.',
          content: { 'text/x-opml': { schema: str() } },
        },
        404: problemResponse(
          "The `endpoint` filter names an unknown endpoint, or another application's.",
        ),
      },
    },
  },
  '/v1/subscriptions/{id}/entries': {
    get: {
      operationId: 'listSubscriptionEntries',
      summary:
        "The feed's newest entries as webhooks show them (its entry history), newest first, whether or not this subscription was sent them",
      parameters: [
        idParam,
        { name: 'limit', in: 'query', schema: int({ minimum: 1, maximum: 200, default: 50 }) },
        {
          name: 'after',
          in: 'query',
          description:
            'The `next` cursor of the previous page: an entry id (an entry pruned meanwhile ends the list).',
          schema: entryId,
        },
      ],
      responses: {
        200: json({
          type: 'object',
          required: ['data', 'next'],
          properties: {
            data: { type: 'array', items: ref('Entry') },
            next: nullable(entryId),
          },
        }),
      },
    },
  },
  '/v1/subscriptions/{id}/trace': {
    get: {
      operationId: 'traceSubscriptionEntry',
      summary: "Why was (or wasn't) this entry delivered to this subscription?",
      parameters: [
        idParam,
        {
          name: 'entry',
          in: 'query',
          required: true,
          description:
            "The entry's id (the webhook's `entries[].id`), its guid or its URL, as the webhook shows them.",
          schema: str({ minLength: 1, maxLength: 2048 }),
        },
      ],
      responses: {
        200: json(
          ref('EntryTrace'),
          'The stored facts and the decision they add up to; an entry feedsub knows nothing about answers decision `unknown`.',
        ),
      },
    },
  },
  '/v1/subscriptions/{id}': {
    get: withId('getSubscription', read('Read a subscription', 'Subscription')),
    patch: {
      operationId: 'updateSubscription',
      summary: 'Change metadata or endpoint, pause or resume',
      parameters: [idParam],
      requestBody: body(ref('SubscriptionUpdate')),
      responses: {
        200: json(ref('Subscription')),
        409: problemResponse('The new endpoint already has this feed'),
      },
    },
    delete: {
      operationId: 'deleteSubscription',
      summary: 'Delete a subscription and its undelivered events',
      parameters: [idParam],
      responses: { 204: { description: 'Deleted' } },
    },
  },
};

export const SUBSCRIPTION_SCHEMAS: Record<string, Schema> = {
  SubscriptionCreate: {
    type: 'object',
    additionalProperties: false,
    required: ['endpoint', 'url'],
    properties: {
      endpoint: id,
      url: uri,
      metadata: nullable(
        openObject(
          'Your own JSON object, at most 16 KiB; returned and delivered exactly as given.',
        ),
      ),
      backfill: int({
        minimum: 0,
        maximum: 100,
        description:
          "Send the feed's n newest entries this subscription is not sent as new ones (from its history; for a feed not fetched yet, from its first document), in events marked `backfill: true`, queued in the background after the answer: events of entries the feed shows meanwhile may come before, between or after them, in `sequence` order. Counts towards `quotas.backfill_entries_per_hour` as asked. The baseline rule holds for everything else. Default 0.",
      }),
      updates,
    },
  },
  SubscriptionUpdate: {
    type: 'object',
    additionalProperties: false,
    properties: {
      endpoint: id,
      metadata: nullable(openObject('Replaces the metadata; null clears it.')),
      status,
      updates,
    },
  },
  SubscriptionImport: {
    type: 'object',
    additionalProperties: false,
    required: ['endpoint', 'opml'],
    properties: {
      endpoint: id,
      opml: str({
        description:
          'The OPML 1.0 or 2.0 document. Every outline under <body> with an xmlUrl (or typed rss/atom) is a feed, at any folder depth; folders are not kept. At most 1,000 feeds.',
      }),
      metadata: nullable(
        openObject('Given to every subscription created, exactly as given; at most 16 KiB.'),
      ),
    },
  },
  SubscriptionImportReport: {
    type: 'object',
    required: ['results', 'counts'],
    properties: {
      results: { type: 'array', items: ref('SubscriptionImportResult') },
      counts: {
        type: 'object',
        required: ['created', 'exists', 'invalid', 'refused'],
        properties: {
          created: int(),
          exists: int(),
          invalid: int(),
          refused: int(),
        },
      },
    },
  },
  SubscriptionImportResult: {
    type: 'object',
    required: ['url', 'title', 'status'],
    properties: {
      url: nullable(str({ description: "The outline's xmlUrl as written, without credentials." })),
      title: nullable(str({ description: "The outline's title, else its text." })),
      status: {
        enum: ['created', 'exists', 'invalid', 'refused'],
        description:
          '`created`; `exists`: the endpoint already has this feed (`subscription` names it); `invalid`: no usable xmlUrl; `refused`: a private address, or a quota — once one is met, every later valid outline is refused with the same problem.',
      },
      subscription: id,
      error: ref('Problem'),
    },
  },
  Subscription: {
    type: 'object',
    required: ['id', 'application', 'url', 'feed', 'endpoint', 'metadata', 'created_at'],
    properties: {
      id,
      application: id,
      url: str(),
      feed: id,
      endpoint: id,
      metadata: nullable(openObject('Your metadata, byte for byte as you sent it.')),
      status,
      updates,
      feed_url: str({
        description: 'The URL actually fetched (a discovered feed when url is a web page).',
      }),
      feed_status: str(),
      created_at: time,
      updated_at: time,
    },
  },
  EntryTrace: {
    type: 'object',
    required: [
      'query',
      'matched_by',
      'key',
      'key_source',
      'entry',
      'first_seen_at',
      'via',
      'fate',
      'decision',
      'reason',
      'subscription',
      'events',
    ],
    properties: {
      query: str(),
      matched_by: nullable({ enum: ['id', 'guid', 'url'] }),
      key: nullable(entryId),
      key_source: nullable({
        enum: ['guid', 'link', 'enclosure', 'content'],
        description: 'The field the key was computed from.',
      }),
      entry: nullable(ref('Entry')),
      first_seen_at: nullable(
        str({
          format: 'date-time',
          description:
            'When the fetch that first showed it began (a held entry: when it was held).',
        }),
      ),
      via: nullable({ enum: ['poll', 'push'], description: 'The fetch that first showed it.' }),
      fate: nullable({
        enum: ['baseline', 'new', 'revealed', 'held', 'released', 'discarded'],
        description:
          'What feedsub did with it for the feed: recorded by a baseline; sent to the subscriptions active then; recorded by a parser upgrade; held by the churn guard; then released or discarded.',
      }),
      decision: {
        enum: [
          'delivered',
          'pending',
          'dead',
          'held',
          'discarded',
          'before_subscription',
          'baseline',
          'paused',
          'filtered',
          'unknown',
        ],
      },
      reason: str({ description: 'The decision in one sentence, with its dates and ids.' }),
      subscription: {
        type: 'object',
        required: ['id', 'status', 'created_at', 'pauses'],
        properties: {
          id,
          status,
          created_at: time,
          pauses: {
            type: 'array',
            description: 'Its last 20 pauses, oldest first.',
            items: {
              type: 'object',
              required: ['paused_at', 'resumed_at'],
              properties: { paused_at: time, resumed_at: nullable(time) },
            },
          },
        },
      },
      events: {
        type: 'array',
        description: 'Its events that carry the entry (the first 20, in sequence order).',
        items: {
          type: 'object',
          required: [
            'id',
            'type',
            'sequence',
            'status',
            'backfill',
            'created_at',
            'delivered_at',
            'next_attempt_at',
            'attempts',
          ],
          properties: {
            id,
            type: { enum: ['subscription.entries', 'subscription.entries_updated'] },
            sequence: nullable(int()),
            status: { enum: ['pending', 'delivered', 'failed', 'dead'] },
            backfill: { type: 'boolean' },
            created_at: time,
            delivered_at: nullable(time),
            next_attempt_at: nullable(time),
            attempts: { type: 'array', items: ref('Attempt') },
          },
        },
      },
    },
  },
};
