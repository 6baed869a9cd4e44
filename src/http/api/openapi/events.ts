// The OpenAPI paths and schemas of events (webhook messages), their attempts, resending one, and the webhook bodies
// themselves (OpenAPI 3.1 `webhooks`).
import {
  errors,
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
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';

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

// One webhook request: the signed POST of a payload to the endpoint.
function webhook(summary: string, payload: string): Schema {
  return {
    summary,
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
  SubscriptionEntriesPayload: envelope('subscription.entries', {
    type: 'object',
    required: ['sequence', 'subscription', 'feed', 'entries', 'metadata'],
    properties: {
      sequence: int({ description: '1, 2, 3… per subscription.' }),
      subscription: {
        type: 'object',
        required: ['id', 'url', 'metadata'],
        properties: {
          id,
          url: str({ format: 'uri' }),
          metadata: { description: 'Your metadata, byte for byte, or null.' },
        },
      },
      feed: {
        type: 'object',
        required: ['id', 'url', 'title', 'site_url'],
        properties: { id, url: str({ format: 'uri' }), title: nullable(str()), site_url: url },
      },
      entries: { type: 'array', maxItems: 100, items: ref('Entry') },
      metadata: { description: "The subscription's metadata, byte for byte, or null." },
    },
  }),
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
      summary: 'List events, newest first',
      responses: { 200: json(page('Event')), ...errors },
      parameters: pageQuery(
        { name: 'subscription', in: 'query', schema: id },
        { name: 'endpoint', in: 'query', schema: id },
        { name: 'status', in: 'query', schema: { enum: statuses } },
      ),
    },
  },
  '/v1/events/{id}': {
    get: read('Read an event with its payload and attempts', 'EventDetail'),
  },
  '/v1/events/{id}/resend': {
    post: {
      summary:
        'Queue a delivered, dead or failed event again (same webhook-id and body, fresh retry schedule, in sequence order)',
      parameters: [idParam, idempotencyHeader],
      responses: {
        200: json(ref('Event')),
        409: problemResponse('Not tried yet, or being sent right now'),
        ...errors,
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
      type: { enum: ['subscription.entries', 'endpoint.test'] },
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
          payload: {
            type: 'object',
            description:
              'The webhook body, exactly as sent on every attempt: a SubscriptionEntriesPayload or an EndpointTestPayload (`schema_version` 2; bodies built before version 2 stay as they were, without it).',
          },
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
    post: webhook('New entries of a subscribed feed', 'SubscriptionEntriesPayload'),
  },
  'endpoint.test': {
    post: webhook('A test message (POST /v1/endpoints/{id}/test)', 'EndpointTestPayload'),
  },
};
