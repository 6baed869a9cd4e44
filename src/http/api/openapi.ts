// The OpenAPI 3.1 document served at /v1/openapi.json; a test checks it lists exactly the routes the app serves.
import { FEEDSUB_VERSION } from '../../version.ts';

type Schema = Record<string, unknown>;
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
const nullable = (s: Schema): Schema => ({ oneOf: [s, { type: 'null' }] });
const id = str({ pattern: '^[0-9a-f]{24}$' });
const time = str({ format: 'date-time' });
const idParam = { name: 'id', in: 'path', required: true, schema: id };
const pageParams = [
  {
    name: 'limit',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
  },
  {
    name: 'after',
    in: 'query',
    description: 'The `next` cursor of the previous page.',
    schema: id,
  },
];
const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
});
const errors = {
  400: problemResponse('Invalid JSON or invalid fields; `errors` lists every one.'),
  401: problemResponse('Missing, unknown or revoked API key.'),
  404: problemResponse("Unknown, or another application's."),
  413: problemResponse('Body too large.'),
  415: problemResponse('Body is not JSON.'),
};
const json = (schema: Schema, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
const body = (schema: Schema) => ({ required: true, content: { 'application/json': { schema } } });
const page = (item: string): Schema => ({
  type: 'object',
  required: ['data', 'next'],
  properties: { data: { type: 'array', items: ref(item) }, next: nullable(id) },
});
const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Same key and body within 24 h returns the first response.',
  schema: str({ maxLength: 255 }),
};

/** Path → method → operation; extended by each resource's section below. */
export const PATHS: Record<string, Record<string, Schema>> = {
  '/v1/endpoints': {
    post: {
      summary: 'Register a webhook endpoint',
      parameters: [idempotencyHeader],
      requestBody: body(ref('EndpointCreate')),
      responses: {
        201: json(
          ref('EndpointWithSecret'),
          'Created; the only response besides GET …/secret that shows the secret',
        ),
        ...errors,
      },
    },
    get: {
      summary: 'List endpoints, newest first',
      parameters: pageParams,
      responses: { 200: json(page('Endpoint')), ...errors },
    },
  },
  '/v1/endpoints/{id}': {
    get: {
      summary: 'Read an endpoint',
      parameters: [idParam],
      responses: { 200: json(ref('Endpoint')), ...errors },
    },
    patch: {
      summary: 'Change title or url, or enable/disable (re-enabling resumes delivery)',
      parameters: [idParam],
      requestBody: body(ref('EndpointUpdate')),
      responses: { 200: json(ref('Endpoint')), ...errors },
    },
    delete: {
      summary: 'Delete an endpoint; 409 while subscriptions use it',
      parameters: [idParam],
      responses: {
        204: { description: 'Deleted' },
        409: problemResponse('Subscriptions use it'),
        ...errors,
      },
    },
  },
  '/v1/endpoints/{id}/secret': {
    get: {
      summary: 'Reveal the signing secret (and the previous one during a rotation)',
      parameters: [idParam],
      responses: { 200: json(ref('EndpointSecret')), ...errors },
    },
  },
  '/v1/endpoints/{id}/rotate-secret': {
    post: {
      summary:
        'Replace the signing secret; the previous one also signs deliveries for delivery.secret_rotation_grace_seconds (24 h)',
      parameters: [idParam, idempotencyHeader],
      responses: { 200: json(ref('EndpointSecret')), ...errors },
    },
  },
  '/v1/endpoints/{id}/test': {
    post: {
      summary: 'Send a signed endpoint.test event now (once, never retried) and return the attempt',
      parameters: [idParam, idempotencyHeader],
      responses: { 200: json(ref('TestEventResult')), ...errors },
    },
  },
  '/v1/endpoints/{id}/recover': {
    post: {
      summary:
        'Queue again every dead or failed event of the endpoint created since a time; returns how many',
      parameters: [idParam, idempotencyHeader],
      requestBody: body(ref('RecoverInput')),
      responses: { 200: json(ref('RecoverResult')), ...errors },
    },
  },
  '/v1/subscriptions': {
    post: {
      summary: 'Subscribe an endpoint to a feed URL',
      parameters: [idempotencyHeader],
      requestBody: body(ref('SubscriptionCreate')),
      responses: {
        201: json(ref('Subscription'), 'Created'),
        409: problemResponse('Duplicate; `existing_id` names it'),
        ...errors,
      },
    },
    get: {
      summary: 'List subscriptions, newest first',
      parameters: [...pageParams, { name: 'endpoint', in: 'query', schema: id }],
      responses: { 200: json(page('Subscription')), ...errors },
    },
  },
  '/v1/subscriptions/{id}': {
    get: {
      summary: 'Read a subscription',
      parameters: [idParam],
      responses: { 200: json(ref('Subscription')), ...errors },
    },
    patch: {
      summary: 'Change metadata or endpoint, pause or resume',
      parameters: [idParam],
      requestBody: body(ref('SubscriptionUpdate')),
      responses: {
        200: json(ref('Subscription')),
        409: problemResponse('The new endpoint already has this feed'),
        ...errors,
      },
    },
    delete: {
      summary: 'Delete a subscription and its undelivered events',
      parameters: [idParam],
      responses: { 204: { description: 'Deleted' }, ...errors },
    },
  },
  '/v1/feeds/{id}': {
    get: {
      summary: 'Read a feed record one of your subscriptions uses',
      parameters: [idParam],
      responses: { 200: json(ref('Feed')), ...errors },
    },
  },
  '/v1/feeds/{id}/accept-identity-change': {
    post: {
      summary: 'Resolve a GUID-churn hold: deliver the held entries or discard them (mark seen)',
      parameters: [idParam],
      requestBody: body({
        type: 'object',
        additionalProperties: false,
        required: ['action'],
        properties: { action: { enum: ['deliver', 'discard'] } },
      }),
      responses: {
        200: json({
          allOf: [
            ref('Feed'),
            {
              type: 'object',
              properties: { released: { type: 'integer' }, events: { type: 'integer' } },
            },
          ],
        }),
        409: problemResponse('Nothing is held'),
        ...errors,
      },
    },
  },
  '/v1/events': {
    get: {
      summary: 'List events, newest first',
      responses: { 200: json(page('Event')), ...errors },
      parameters: [
        ...pageParams,
        { name: 'subscription', in: 'query', schema: id },
        { name: 'endpoint', in: 'query', schema: id },
        {
          name: 'status',
          in: 'query',
          schema: { enum: ['pending', 'delivered', 'failed', 'dead'] },
        },
      ],
    },
  },
  '/v1/events/{id}': {
    get: {
      summary: 'Read an event with its payload and attempts',
      parameters: [idParam],
      responses: { 200: json(ref('EventDetail')), ...errors },
    },
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
  '/v1/openapi.json': {
    get: { summary: 'This document', security: [], responses: { 200: json({ type: 'object' }) } },
  },
};

/** Named schemas; extended by each resource's section. */
export const SCHEMAS: Record<string, Schema> = {
  Problem: {
    type: 'object',
    required: ['type', 'title', 'status', 'detail'],
    properties: {
      type: str(),
      title: str(),
      status: { type: 'integer' },
      detail: str(),
      errors: {
        type: 'array',
        items: { type: 'object', properties: { path: str(), message: str() } },
      },
      existing_id: id,
    },
  },
  EndpointCreate: {
    type: 'object',
    additionalProperties: false,
    required: ['title', 'url'],
    properties: {
      title: str({ minLength: 1, maxLength: 200 }),
      url: str({ format: 'uri', maxLength: 2048 }),
    },
  },
  EndpointUpdate: {
    type: 'object',
    additionalProperties: false,
    properties: {
      title: str({ minLength: 1, maxLength: 200 }),
      url: str({ format: 'uri', maxLength: 2048 }),
      status: { enum: ['active', 'disabled'] },
    },
  },
  Endpoint: {
    type: 'object',
    required: ['id', 'title', 'url', 'status', 'created_at'],
    properties: {
      id,
      title: str(),
      url: str(),
      status: { enum: ['active', 'disabled'] },
      disabled_reason: nullable(str()),
      created_at: time,
      updated_at: time,
    },
  },
  EndpointWithSecret: {
    allOf: [
      ref('Endpoint'),
      { type: 'object', required: ['secret'], properties: { secret: str({ pattern: '^whsec_' }) } },
    ],
  },
  EndpointSecret: {
    type: 'object',
    required: ['secret'],
    properties: {
      secret: str(),
      previous_secret: nullable(str()),
      previous_secret_expires_at: nullable(time),
    },
  },
  SubscriptionCreate: {
    type: 'object',
    additionalProperties: false,
    required: ['endpoint', 'url'],
    properties: {
      endpoint: id,
      url: str({ format: 'uri', maxLength: 2048 }),
      metadata: nullable({
        type: 'object',
        description: 'At most 16 KiB; returned and delivered exactly as given.',
      }),
    },
  },
  SubscriptionUpdate: {
    type: 'object',
    additionalProperties: false,
    properties: {
      endpoint: id,
      metadata: nullable({ type: 'object' }),
      status: { enum: ['active', 'paused'] },
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
      metadata: nullable({ type: 'object' }),
      status: { enum: ['active', 'paused'] },
      feed_url: str({
        description: 'The URL actually fetched (a discovered feed when url is a web page).',
      }),
      feed_status: str(),
      created_at: time,
      updated_at: time,
    },
  },
  Feed: {
    type: 'object',
    required: ['id', 'url', 'status'],
    properties: {
      id,
      url: str(),
      feed_url: str(),
      discovered_url: nullable(str()),
      title: nullable(str()),
      site_url: nullable(str()),
      format: nullable(str()),
      status: { enum: ['pending', 'active', 'error', 'gone', 'identity_changed'] },
      last_polled_at: nullable(time),
      last_success_at: nullable(time),
      next_poll_at: nullable(time),
      interval_seconds: nullable({ type: 'integer' }),
      last_http_status: nullable({ type: 'integer' }),
      error_count: { type: 'integer' },
      network_error_count: { type: 'integer' },
      http_error_count: { type: 'integer' },
      parse_error_count: { type: 'integer' },
      last_error: nullable(str()),
      last_error_at: nullable(time),
      degraded: nullable(str()),
      entry_count: { type: 'integer' },
      held_entries: {
        type: 'integer',
        description:
          "Entries held back because the feed's identities changed (status identity_changed).",
      },
      created_at: time,
      updated_at: time,
    },
  },
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
        enum: ['pending', 'delivered', 'failed', 'dead'],
        description:
          'pending: not tried yet; failed: an attempt failed and a retry is scheduled; dead: every retry failed.',
      },
      endpoint: id,
      subscription: nullable(id),
      sequence: nullable({
        type: 'integer',
        description: '1, 2, 3… per subscription (data.sequence in the payload).',
      }),
      attempt_count: {
        type: 'integer',
        description: 'Attempts since the event was last queued (a resend starts again at 0).',
      },
      next_attempt_at: nullable(time),
      last_status_code: nullable({ type: 'integer' }),
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
      status_code: nullable({ type: 'integer' }),
      duration_ms: { type: 'integer' },
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
            description: 'The webhook body, exactly as sent on every attempt.',
          },
          attempts: { type: 'array', items: ref('Attempt') },
        },
      },
    ],
  },
  TestEventResult: {
    type: 'object',
    required: ['event', 'delivered', 'attempt'],
    properties: { event: id, delivered: { type: 'boolean' }, attempt: ref('Attempt') },
  },
  RecoverInput: {
    type: 'object',
    additionalProperties: false,
    required: ['since'],
    properties: { since: time },
  },
  RecoverResult: {
    type: 'object',
    required: ['count'],
    properties: { count: { type: 'integer' } },
  },
};

/** The whole document. */
export function openapiDocument(): Schema {
  return {
    openapi: '3.1.0',
    info: {
      title: 'feedsub',
      version: FEEDSUB_VERSION,
      description:
        'Feed-to-webhook service. Authenticate with `Authorization: <API_KEY>` (or `Bearer <API_KEY>`).',
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    paths: PATHS,
    components: {
      schemas: SCHEMAS,
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'Authorization' } },
    },
  };
}
