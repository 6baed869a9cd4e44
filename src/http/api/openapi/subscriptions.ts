// The OpenAPI paths and schemas of subscriptions: a feed URL tied to one endpoint, with metadata.
import {
  body,
  create,
  errors,
  id,
  idParam,
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
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';

const status = { enum: ['active', 'paused'] };

export const SUBSCRIPTION_PATHS: Paths = {
  '/v1/subscriptions': {
    post: create('Subscribe an endpoint to a feed URL', 'SubscriptionCreate', {
      201: json(ref('Subscription'), 'Created'),
      409: problemResponse('Duplicate; `existing_id` names it'),
      429: tooManyOr(
        'the application has `quotas.subscriptions_per_application` subscriptions already, or subscribed to `quotas.new_feed_urls_per_hour` feed URLs it did not have within the last hour.',
      ),
    }),
    get: list('List subscriptions, newest first', 'Subscription', {
      name: 'endpoint',
      in: 'query',
      schema: id,
    }),
  },
  '/v1/subscriptions/{id}': {
    get: read('Read a subscription', 'Subscription'),
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
};

export const SUBSCRIPTION_SCHEMAS: Record<string, Schema> = {
  SubscriptionCreate: {
    type: 'object',
    additionalProperties: false,
    required: ['endpoint', 'url'],
    properties: {
      endpoint: id,
      url: uri,
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
      status,
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
      status,
      feed_url: str({
        description: 'The URL actually fetched (a discovered feed when url is a web page).',
      }),
      feed_status: str(),
      created_at: time,
      updated_at: time,
    },
  },
};
