// The OpenAPI paths and schemas of webhook endpoints: CRUD, the signing secret, test sends and recovery.
import {
  body,
  create,
  id,
  idempotencyHeader,
  idParam,
  int,
  json,
  list,
  nullable,
  ok,
  problemResponse,
  read,
  ref,
  str,
  time,
  tooManyOr,
  uri,
  withId,
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';
import { SUBSCRIPTION_EVENT_TYPES } from '../../../webhook/event.ts';
import {
  MAX_HEADER_BYTES,
  MAX_HEADERS,
  MAX_RATE_LIMIT,
  RESERVED_HEADERS,
} from '../../../actions/endpoint-options.ts';

const title = str({ minLength: 1, maxLength: 200 });
const status = { enum: ['active', 'disabled'] };
const filterTypes = {
  oneOf: [
    {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { enum: [...SUBSCRIPTION_EVENT_TYPES] },
    },
    { type: 'null' },
  ],
  description:
    'The event types the endpoint receives; null (the default) for every type, including types added later. An event of another type is not created for it at all (no event, no sequence number); endpoint.test is always sent.',
};

const headers = {
  oneOf: [
    {
      type: 'object',
      maxProperties: MAX_HEADERS,
      propertyNames: { pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$" },
      additionalProperties: str({ pattern: '^[\\x21-\\x7e]([\\x20-\\x7e\\t]*[\\x21-\\x7e])?$' }),
    },
    { type: 'null' },
  ],
  description: `Extra headers sent with every attempt (and the test event), name → value; null (the default) for none. Names are RFC 9110 tokens, values visible ASCII with inner spaces or tabs; at most ${MAX_HEADERS} headers and ${MAX_HEADER_BYTES} bytes in all (each counted as "name: value" and its line end). Case-insensitively refused: ${RESERVED_HEADERS.join(', ')}, every webhook-* name, and __proto__, constructor and prototype (names JavaScript objects reserve). Shown in full in answers.`,
};

const rateLimit = {
  oneOf: [int({ minimum: 1, maximum: MAX_RATE_LIMIT }), { type: 'null' }],
  description:
    'Attempts the endpoint may start in any one second; null (the default) for no limit. Events over the rate wait their turn (in order per subscription) without delaying other endpoints; test events are not counted.',
};

export const ENDPOINT_PATHS: Paths = {
  '/v1/endpoints': {
    post: withId(
      'createEndpoint',
      create('Register a webhook endpoint', 'EndpointCreate', {
        201: json(
          ref('EndpointWithSecret'),
          'Created; the only response besides GET …/secret that shows the secret',
        ),
        429: tooManyOr(
          'the application has `quotas.endpoints_per_application` endpoints already (delete some, or have the limit raised).',
        ),
      }),
    ),
    get: withId('listEndpoints', list('List endpoints, newest first', 'Endpoint')),
  },
  '/v1/endpoints/{id}': {
    get: withId('getEndpoint', read('Read an endpoint', 'Endpoint')),
    patch: {
      operationId: 'updateEndpoint',
      summary:
        'Change title, url, filter_types, headers or rate_limit, or enable/disable (re-enabling resumes delivery)',
      parameters: [idParam],
      requestBody: body(ref('EndpointUpdate')),
      responses: ok('Endpoint'),
    },
    delete: {
      operationId: 'deleteEndpoint',
      summary: 'Delete an endpoint; 409 while subscriptions use it',
      parameters: [idParam],
      responses: {
        204: { description: 'Deleted' },
        409: problemResponse('Subscriptions use it'),
      },
    },
  },
  '/v1/endpoints/{id}/secret': {
    get: withId(
      'getEndpointSecret',
      read('Reveal the signing secret (and the previous one during a rotation)', 'EndpointSecret'),
    ),
  },
  '/v1/endpoints/{id}/rotate-secret': {
    post: {
      operationId: 'rotateEndpointSecret',
      summary:
        'Replace the signing secret; the previous one also signs deliveries for delivery.secret_rotation_grace_seconds (24 h)',
      parameters: [idParam, idempotencyHeader],
      responses: ok('EndpointSecret'),
    },
  },
  '/v1/endpoints/{id}/test': {
    post: {
      operationId: 'testEndpoint',
      summary: 'Send a signed endpoint.test event now (once, never retried) and return the attempt',
      parameters: [idParam, idempotencyHeader],
      responses: {
        ...ok('TestEventResult'),
        429: tooManyOr(
          'the application sent `quotas.test_events_per_minute` test events within the last minute; nothing was sent.',
        ),
      },
    },
  },
  '/v1/endpoints/{id}/recover': {
    post: {
      operationId: 'recoverEndpoint',
      summary:
        'Queue again every dead or failed event of the endpoint created since a time; returns how many',
      parameters: [idParam, idempotencyHeader],
      requestBody: body(ref('RecoverInput')),
      responses: ok('RecoverResult'),
    },
  },
};

export const ENDPOINT_SCHEMAS: Record<string, Schema> = {
  EndpointCreate: {
    type: 'object',
    additionalProperties: false,
    required: ['title', 'url'],
    properties: { title, url: uri, filter_types: filterTypes, headers, rate_limit: rateLimit },
  },
  EndpointUpdate: {
    type: 'object',
    additionalProperties: false,
    properties: {
      title,
      url: uri,
      status,
      filter_types: filterTypes,
      headers,
      rate_limit: rateLimit,
    },
  },
  Endpoint: {
    type: 'object',
    required: ['id', 'title', 'url', 'status', 'created_at'],
    properties: {
      id,
      title: str(),
      url: str(),
      status,
      disabled_reason: nullable(str()),
      filter_types: filterTypes,
      headers,
      rate_limit: rateLimit,
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
};

// The schemas of the test and recover actions. The document has always listed them last, after the event schemas,
// and the served JSON keeps its order, so they are spread in apart from ENDPOINT_SCHEMAS.
export const ENDPOINT_ACTION_SCHEMAS: Record<string, Schema> = {
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
    properties: { count: int() },
  },
};
